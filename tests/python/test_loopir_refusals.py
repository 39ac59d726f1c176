"""Loop programs outside the language are refused with one line naming file:line and the
rule, an exit code per rule, and no output file left behind; the parser is fuzzed (mutated
programs never crash it) and random valid nests lift to the function the interpreter runs."""

from __future__ import annotations

import random
import string
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import solar
import solar.loopir as loopir
from conftest import EXAMPLES, run_solar
from solar.errors import LOOP_REFUSALS
from solar.frontends.loopir import program as loop_program

TEMPLATE = """\
from solar.loopir import Tensor, kernel, exp

N = 8
x = Tensor("N", role="input")
idx = Tensor("N", dtype="i64", role="input")
y = Tensor("N", role="output")


@kernel
def f(x, y):
    for i in range(N):
        {statement}


def model():
    f(x, y)
"""
STATEMENT_LINE = 12  # the line {statement} lands on

# (rule kind, the statement in the kernel, words of the message)
REFUSALS = [
    ("not_affine", "y[i] = x[i * i]", "not affine"),
    ("data_dependent", "if x[i] > 0:\n            y[i] = x[i]", "branches on tensor data"),
    ("unknown_intrinsic", "y[i] = gelu(x[i])", "`gelu` is not an intrinsic"),
    ("shape_mismatch", "y[i] = x[i, 0]", "has 1 dimension [8] but is subscripted with 2"),
    ("undeclared", "y[i] = z[i]", "`z` is not a declared"),
    ("non_constant_bound", "for j in range(x[i]):\n            y[j] = x[j]", "loop bound"),
    ("outside_language", "import os", "import os"),
]


def write(tmp_path, statement: str) -> str:
    path = tmp_path / "prog.py"
    path.write_text(TEMPLATE.format(statement=statement))
    return str(path)


@pytest.mark.parametrize("kind,statement,words", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusal_is_one_line_with_its_place_and_exit_code(tmp_path, kind, statement, words):
    path = write(tmp_path, statement)
    out = tmp_path / "report.json"
    r = run_solar("analyze", path, "--json", str(out))
    assert r.returncode == solar._core.EXIT_CODES[kind], r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"solar: error: {path}:{STATEMENT_LINE}: "), lines[0]
    assert words in lines[0]
    assert r.stdout == ""
    assert not out.exists()  # nothing written


def test_every_refusal_rule_has_its_own_exit_code():
    codes = [solar._core.EXIT_CODES[k] for k in LOOP_REFUSALS]
    assert len(set(codes)) == len(LOOP_REFUSALS)
    others = {v for k, v in solar._core.EXIT_CODES.items() if k not in LOOP_REFUSALS}
    assert not set(codes) & others


MORE = [
    # (kind, statement, words): refusals the lifting or the recorder find
    ("outside_language", "y[i] = y[i - 1] + x[i]", "loop-carried"),
    ("shape_mismatch", "y[i] = x[i + 1]", "no guard excludes"),
    ("outside_language", "y.shape", "attribute access"),
    ("outside_language", "while True:\n            y[i] = 0", "`while`"),
    ("not_affine", "y[i] = x[i] if i > 2 else 0", "condition on loop variables"),
    ("data_dependent", "y[i] = x[idx[i]]", "reads tensor data"),
    ("not_affine", "y[i] = x[i] * i", "used as a value"),
    ("outside_language", "x[i] = 1.0", "read-only"),
    ("unknown_intrinsic", "open('f')", "`open(...)` as a statement"),
]


@pytest.mark.parametrize("kind,statement,words", MORE, ids=[m[2] for m in MORE])
def test_more_refusals(tmp_path, kind, statement, words):
    path = write(tmp_path, statement)
    with pytest.raises(solar.UserError) as e:
        loopir.analyze(path)
    assert e.value.kind == kind, str(e.value)
    assert words in str(e.value)
    assert f"{path}:" in str(e.value)


def test_an_output_never_written_is_refused(tmp_path):
    path = tmp_path / "p.py"
    path.write_text(TEMPLATE.format(statement="y[i] = x[i]").replace(
        'y = Tensor("N", role="output")', 'y = Tensor("N", role="output")\nz = Tensor("N", role="output")'))
    with pytest.raises(solar.UserError, match="the output `z` is never written"):
        loopir.analyze(str(path))


# ----------------------------------------------------------------------- fuzzing

SEEDS = sorted((EXAMPLES / "loops").glob("*.py"))
SEEDS = [p for p in SEEDS if not p.name.endswith("_torch.py")]
TOKENS = ["for", "in", "range(", ")", "(", "[", "]", ":", "=", "+=", "*", "+", "-", "//", "%",
          "if", "and", "or", "not", "<=", "<", "==", "!=", "i", "j", "k", "N", "x", "y", "1",
          "0", "-1", "2.5", "exp(", "max(", "Tensor(", "\"N,N\"", ",", "\n", "    ", "import os",
          "lambda", "x.shape", "def", "@kernel", "model()", "'", "\"", "#", "\\", "**"]


def mutate(text: str, rnd: random.Random, steps: int) -> str:
    for _ in range(steps):
        op = rnd.randrange(5)
        pos = rnd.randrange(len(text) + 1)
        if op == 0:  # delete a span
            text = text[:pos] + text[pos + rnd.randrange(1, 12):]
        elif op == 1:  # insert a token
            text = text[:pos] + rnd.choice(TOKENS) + text[pos:]
        elif op == 2:  # insert random printable characters
            text = text[:pos] + "".join(rnd.choice(string.printable) for _ in range(3)) + text[pos:]
        elif op == 3:  # duplicate or drop a line
            lines = text.split("\n")
            k = rnd.randrange(len(lines))
            lines.insert(k, lines[k]) if rnd.random() < 0.5 else lines.pop(k)
            text = "\n".join(lines)
        else:  # change a number
            digits = [m for m in range(len(text)) if text[m].isdigit()]
            if digits:
                m = rnd.choice(digits)
                text = text[:m] + str(rnd.randrange(10)) + text[m + 1:]
    return text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 6), which=st.integers(0, 1 << 16))
def test_mutated_programs_never_crash_the_parser_or_the_lifting(tmp_path_factory, seed, steps,
                                                                 which):
    rnd = random.Random(seed)
    text = mutate(SEEDS[which % len(SEEDS)].read_text(), rnd, steps)
    path = tmp_path_factory.mktemp("fuzz") / "prog.py"
    path.write_text(text)
    try:
        lp = loop_program.load(str(path))
        loop_program.lift(lp)
    except solar.UserError as e:  # a refusal: one line that names the file
        assert "\n" not in str(e)
        assert getattr(e, "kind", None) in LOOP_REFUSALS + ("io", "parse", "usage"), (
            e.kind, str(e))
    except RecursionError:
        pass  # Python's own parser gives up on absurd nesting: not a crash of Solar
