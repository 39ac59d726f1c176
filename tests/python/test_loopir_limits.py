"""The loop language's limits (docs/loop-language.md, "Limits"): constant size, the step budget
of model(), the trace size, nesting depth, terms, and validation's work budget and time limit.
Each is a refusal in one line, with file:line, the right kind and exit code, reached quickly
and before anything is computed or allocated past it; below them, large programs work (a sum
of hundreds of terms lifts and validates)."""

from __future__ import annotations

import textwrap
import time

import pytest

import solar
import solar.loopir as loopir
from conftest import run_solar
from solar import programs
from solar.frontends.loopir import checks
from solar.frontends.loopir import language as lang

HEADER = "from solar.loopir import *\n"

# A kernel whose only nest writes y[i] from STATEMENT; its line is STATEMENT_LINE.
KERNEL = """\
from solar.loopir import *

N = 8
x = Tensor("N, {columns}", role="input")
y = Tensor("N", role="output")


@kernel
def f(x, y):
    for i in range(N):
        {statement}


def model():
    f(x, y)
"""
STATEMENT_LINE = 11


def program(tmp_path, body: str, name: str = "prog.py") -> str:
    path = tmp_path / name
    path.write_text(HEADER + textwrap.dedent(body))
    return str(path)


def kernel_program(tmp_path, statement: str, columns: int = 1) -> str:
    path = tmp_path / "prog.py"
    path.write_text(KERNEL.format(statement=statement, columns=columns))
    return str(path)


def refused(path: str, kind: str, *words: str, **kw) -> str:
    """The message of the refusal of `path` (analyzed), checked for its kind and words."""
    with pytest.raises(solar.UserError) as e:
        loopir.analyze(path, arch="H100_SXM", cache_aware=False, **kw)
    message = str(e.value)
    assert e.value.kind == kind, message
    assert e.value.exit_code == solar._core.EXIT_CODES[
        "usage" if kind == "too_large" else kind], message
    assert "\n" not in message
    for w in words:
        assert w in message, message
    return message


def flops(path: str) -> int:
    t = loopir.analyze(path, arch="H100_SXM", cache_aware=False).to_dict()["totals"]
    return int(t["flops"])


# ----------------------------------------------------------------------- constants


@pytest.mark.parametrize("expr", ["10 ** 10 ** 8", "2 ** 63", "(2 ** 62) * 4",
                                  "99999999999999999999", "-(2 ** 62) * 2 - 1"])
def test_integer_constants_past_64_bits_are_refused_before_they_are_computed(tmp_path, expr):
    path = program(tmp_path, f"N = 8\nBIG = {expr}\n")
    start = time.monotonic()
    refused(path, "too_large", f"{path}:3: ", "64-bit")
    assert time.monotonic() - start < 5  # 10 ** 10 ** 8 is never computed


def test_large_constants_within_64_bits_and_floats_are_allowed(tmp_path):
    path = program(tmp_path, """
        N = 4
        BIG = 2 ** 62 + (2 ** 62 - 1)
        HUGE = 2.0 ** 1000
        x = Tensor("N", role="input")
        y = Tensor("N", role="output")

        @kernel
        def f(x, y):
            for i in range(N):
                y[i] = x[i] * HUGE + BIG

        def model():
            f(x, y)
        """)
    assert flops(path) == 2 * 4  # a multiply and an add per element


def test_a_huge_integer_in_a_kernel_is_refused_at_its_line(tmp_path):
    path = kernel_program(tmp_path, "y[i] = x[i * 99999999999999999999, 0]")
    refused(path, "too_large", f"{path}:{STATEMENT_LINE}: ", "64-bit")
    path = kernel_program(tmp_path, "y[i] = x[i * 2 ** 62 * 4, 0]")
    refused(path, "too_large", f"{path}:{STATEMENT_LINE}: ", "2^62")


@pytest.mark.parametrize("expr,words", [("10.0 ** 400", "out of range"),
                                        ("(-8) ** 0.5", "not a real number")])
def test_constants_that_are_no_finite_real_number_are_refused(tmp_path, expr, words):
    path = program(tmp_path, f"N = 8\nC = {expr}\n")
    refused(path, "outside_language", f"{path}:3: ", words)


# ----------------------------------------------------------------------- model()'s steps


def test_a_model_loop_past_the_step_budget_is_refused_before_it_runs(tmp_path):
    path = kernel_program(tmp_path, "y[i] = x[i, 0]")
    text = open(path).read().replace("    f(x, y)\n", "    f(x, y)\n    for i in range(10**12):\n"
                                                        "        pass\n")
    open(path, "w").write(text)
    start = time.monotonic()
    refused(path, "too_large", f"{path}:16: ", "step budget", f"{lang.MAX_STEPS:,}")
    assert time.monotonic() - start < 5


def test_nested_model_loops_count_every_iteration(tmp_path):
    path = program(tmp_path, """
        def model():
            for a in range(2000):
                for b in range(2000):
                    c = 1
        """)
    # each outer iteration runs 2 + 2 * 2000 steps: past 10**6 after about 250 of them
    refused(path, "too_large", f"{path}:", "step budget")


def test_kernel_calls_past_the_trace_size_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(lang, "MAX_TRACE_NODES", 20_000)
    path = kernel_program(tmp_path, "y[i] = exp(x[i, 0]) * 2.0")
    text = open(path).read().replace("    f(x, y)\n", "    for l in range(100000):\n"
                                                        "        f(x, y)\n")
    open(path, "w").write(text)
    refused(path, "too_large", f"{path}:16: ", "trace grows past 20,000 nodes")


# ----------------------------------------------------------------------- terms and depth


@pytest.mark.parametrize("n", [300, 1000, lang.MAX_TERMS])
def test_a_sum_of_many_terms_lifts_counts_and_validates(tmp_path, n):
    terms = " + ".join(f"x[i, {k}]" for k in range(n))
    path = kernel_program(tmp_path, f"y[i] = {terms}", columns=n)
    assert flops(path) == 8 * (n - 1)  # n - 1 additions per element
    assert loopir.validate(path)["status"] == "passed"


def test_a_reduction_of_many_terms_and_long_chains_lift_and_validate(tmp_path):
    n = 1500
    mixed = " - ".join(f"x[i, {k}]" for k in range(n))
    path = kernel_program(tmp_path, f"y[i] += {mixed}", columns=n)
    assert flops(path) == 8 * (n - 1)  # n - 1 subtractions; y starts at 0, nothing reduced
    assert loopir.validate(path)["status"] == "passed"
    args = ", ".join(f"x[i, {k}]" for k in range(500))
    path = kernel_program(tmp_path, f"y[i] = max({args})", columns=500)
    assert flops(path) == 8 * 499
    assert loopir.validate(path)["status"] == "passed"
    factors = " * ".join(f"(1.0 + 0.01 * x[i, {k}])" for k in range(300))
    path = kernel_program(tmp_path, f"y[i] = {factors}", columns=300)
    assert flops(path) == 8 * (300 * 2 + 299)  # per factor a multiply and an add; 299 products
    assert loopir.validate(path)["status"] == "passed"


def test_terms_past_the_limit_are_refused(tmp_path):
    n = lang.MAX_TERMS + 1
    terms = " + ".join(f"x[i, {k}]" for k in range(n))
    path = kernel_program(tmp_path, f"y[i] = {terms}", columns=n)
    refused(path, "outside_language", f"{path}:{STATEMENT_LINE}: ", f"{n:,} terms",
            f"{lang.MAX_TERMS:,}")


def test_locals_that_double_their_terms_are_refused_quickly(tmp_path):
    body = "t = x[i, 0]\n" + "        t = t + t\n" * 60 + "        y[i] = t"
    path = kernel_program(tmp_path, body)
    start = time.monotonic()
    refused(path, "outside_language", f"{path}:{STATEMENT_LINE + 11}: ", "2,048 terms")
    assert time.monotonic() - start < 5  # 2**60 terms are never written out


def test_expressions_nest_up_to_the_depth_limit(tmp_path):
    ok = kernel_program(tmp_path, "y[i] = " + "exp(" * 80 + "x[i, 0]" + ")" * 80)
    assert loopir.analyze(ok, arch="H100_SXM", cache_aware=False)
    deep = kernel_program(tmp_path, "y[i] = " + "exp(" * 120 + "x[i, 0]" + ")" * 120)
    refused(deep, "outside_language", f"{deep}:{STATEMENT_LINE}: ",
            f"deeper than {lang.MAX_DEPTH} levels")


def test_locals_nest_up_to_the_depth_limit(tmp_path):
    body = "t = x[i, 0]\n" + "        t = exp(t)\n" * 150 + "        y[i] = t"
    path = kernel_program(tmp_path, body)
    refused(path, "outside_language", "the local `t` nests 101 levels deep",
            f"limit of {lang.MAX_DEPTH}")


def test_a_subscript_of_many_terms_is_affine(tmp_path):
    path = kernel_program(tmp_path, "y[i] = x[i" + " + 1" * 900 + " - 900, 0]")
    assert loopir.validate(path)["status"] == "passed"


# ----------------------------------------------------------------------- loop programs


def deep_nest(depth: int) -> str:
    lines = ["from solar.loopir import Tensor, kernel", "N = 2", 'x = Tensor("N", role="input")',
             'y = Tensor("N", role="output")', "", "@kernel", "def f(x, y):"]
    indent = "    "
    for k in range(depth):
        lines.append(f"{indent}for i{k} in range(1):")
        indent += "    "
    lines += [indent + "y[i0] += x[i0]", "", "def model():", "    f(x, y)", ""]
    return "\n".join(lines)


BROKEN = {
    # name: (text, the line named, words)
    "syntax error": ('from solar.loopir import *\nN = 8\nx = Tensor("N", role="input"\n', 3,
                     "not Python syntax"),
    "200-deep nest": (deep_nest(200), 107, "too many levels of indentation"),
    "98-deep nest": (deep_nest(98), 106, f"deeper than {lang.MAX_DEPTH} levels"),
    "parser gives up": ("from solar.loopir import *\nN = " + "-" * 100000 + "1\n", None,
                        "nests too deeply for Python's parser"),
    "import inside a function": ("def model():\n    import solar.loopir\n", 2,
                                 "imports only from solar.loopir"),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_a_file_that_imports_solar_loopir_is_a_loop_program_whatever_is_wrong(tmp_path, name):
    text, line, words = BROKEN[name]
    path = tmp_path / "prog.py"
    path.write_text(text)
    assert programs.is_loop_file(str(path))
    with pytest.raises(solar.UserError) as e:
        programs.analyze_file(str(path))
    where = f"{path}:{line}: " if line else f"{path}: "
    assert e.value.kind == "outside_language" and str(e.value).startswith(where), str(e.value)
    assert words in str(e.value)


def test_a_broken_loop_program_is_never_run_by_another_frontend(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(deep_nest(200))
    r = run_solar("analyze", str(path))
    assert r.returncode == solar._core.EXIT_CODES["outside_language"], r.stderr
    assert r.stderr.strip().splitlines() == [
        f"solar: error: {path}:107: outside the language: not Python syntax: too many levels "
        "of indentation"]
    assert r.stdout == ""


# ----------------------------------------------------------------------- validation


GEMM = """
M, N, K = {M}, {N}, {K}
A = Tensor("M,K", role="input")
B = Tensor("K,N", role="input")
C = Tensor("M,N", role="output")

@kernel
def gemm(A, B, C):
    for m in range(M):
        for n in range(N):
            for k in range(K):
                C[m, n] += A[m, k] * B[k, n]

def model():
    gemm(A, B, C)
"""


def test_validation_past_its_work_budget_is_refused_with_the_shrink_that_fits(tmp_path):
    path = program(tmp_path, GEMM.format(M=1024, N=1024, K=1024))
    start = time.monotonic()
    with pytest.raises(solar.UserError) as e:
        loopir.validate(path)
    message = str(e.value)
    assert e.value.kind == "too_large" and "\n" not in message
    assert f"{1024 ** 3:,} iteration points" in message  # M*N*K points, one statement
    assert f"more than its budget of {lang.MAX_VALIDATION_POINTS:,}" in message
    assert f"--shrink 512 fits ({512 ** 3:,} points)" in message  # 512^3 <= 2e8 < 1024^3
    assert time.monotonic() - start < 10  # estimated, never run


def test_solar_validate_refuses_the_causal_attention_example_at_its_own_sizes(monkeypatch):
    monkeypatch.setenv("SOLAR_MEMORY_LIMIT", "1T")  # the memory check passes: the work is refused
    r = run_solar("validate", "examples/loops/causal_attention.py")
    assert r.returncode == solar._core.EXIT_CODES["usage"], r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "iteration points with the loop interpreter" in lines[0]
    assert "--shrink 128 fits" in lines[0]
    assert r.stdout == ""


def test_work_counts_each_statement_over_its_nests_box(tmp_path):
    path = program(tmp_path, """
        N = 100
        x = Tensor("N", role="input")
        y = Tensor("N", role="output")
        z = Tensor("N", role="output")

        @kernel
        def cumsum(x, y, z):
            for i in range(N):
                for j in range(i + 1):
                    y[i] += x[j]
                    z[i] = max(z[i], x[j])

        def model():
            cumsum(x, y, z)
        """)
    trace = loopir.load_trace(path)
    # the box of a triangular nest is N x N (the interpreter sweeps it, masked): 2 statements
    assert checks.work_points(trace) == 2 * 100 * 100


def test_the_interpreter_stops_at_its_time_limit(tmp_path, monkeypatch):
    path = program(tmp_path, GEMM.format(M=8, N=8, K=8))
    monkeypatch.setenv("SOLAR_LOOP_VALIDATION_SECONDS", "1e-9")
    with pytest.raises(solar.UserError) as e:
        loopir.validate(path)
    assert e.value.kind == "too_large"
    assert f"{path}:13: the loop interpreter ran past its time limit of 1e-09 s" in str(e.value)
    monkeypatch.setenv("SOLAR_LOOP_VALIDATION_SECONDS", "soon")
    with pytest.raises(solar.UserError, match="SOLAR_LOOP_VALIDATION_SECONDS='soon'"):
        loopir.validate(path)
