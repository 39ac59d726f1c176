"""Loop programs outside the language are refused with one line naming file:line and the
rule, an exit code per rule, and no output file left behind; random valid nests lift to the
function the interpreter runs (mutated and hostile programs: test_loopir_fuzz.py)."""

from __future__ import annotations


import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import solar
import solar.loopir as loopir
from conftest import ROOT, run_solar
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
    ("outside_language", "y[i] = y[i - 2] + x[i]", "loop-carried"),
    ("shape_mismatch", "y[i] = y[i - 1] + x[i]", "the step before the first one"),
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
    outputs = 'y = Tensor("N", role="output")'
    path.write_text(TEMPLATE.format(statement="y[i] = x[i]").replace(
        outputs, outputs + '\nz = Tensor("N", role="output")'))
    with pytest.raises(solar.UserError, match="the output `z` is never written"):
        loopir.analyze(str(path))


# ----------------------------------------------------------------------- random valid nests

VARS = ("i", "j", "k")


@st.composite
def nests(draw):
    """A random valid loop program: 1-3 loops, reads at random affine subscripts sized to
    stay inside their tensors (some through guards), a random expression, and an assignment
    or a sum/max/min/prod reduction into a target indexed by a subset of the loop variables."""
    n = draw(st.integers(1, 3))
    names = VARS[:n]
    ext = {v: draw(st.integers(1, 4)) for v in names}
    kind = draw(st.sampled_from(["assign", "sum", "max", "min", "prod"]))
    if kind == "assign":
        tvars = draw(st.permutations(list(names)))
    else:
        tvars = [v for v in names if draw(st.booleans())]
    guards, decls, loads = [], [], []
    for r in range(draw(st.integers(1, 3))):
        dims, subs = [], []
        for _ in range(draw(st.integers(1, 2))):
            coefs = {v: draw(st.integers(-2, 2)) for v in names}
            lo = sum(min(0, c * (ext[v] - 1)) for v, c in coefs.items())
            hi = sum(max(0, c * (ext[v] - 1)) for v, c in coefs.items())
            shift = -lo + draw(st.integers(-1, 1))  # -1: the guard below keeps it inside
            expr = " + ".join(f"{c}*{v}" for v, c in coefs.items() if c) or "0"
            expr = f"{expr} + {shift}"
            size = hi + shift + 1 + draw(st.integers(0, 1))
            if shift < -lo:
                guards.append(f"0 <= {expr}")
            size = max(size, 1)
            if hi + shift >= size:
                guards.append(f"{expr} < {size}")
            dims.append(str(size))
            subs.append(expr)
        decls.append(f'r{r} = Tensor("{", ".join(dims)}", role="input")')
        loads.append(f"r{r}[{', '.join(subs)}]")
    ops = ["+", "-", "*"]
    value = loads[0]
    for ld in loads[1:]:
        value = f"({value} {draw(st.sampled_from(ops))} {ld})"
    wrap = draw(st.sampled_from(["{}", "tanh({})", "max({}, 0.25)", "where({} > 0, {}, 0.5)"]))
    value = wrap.replace("{}", value)
    if kind == "prod":
        value = f"(1.0 + 0.1 * tanh({value}))"  # keeps products of many terms finite
    used = set(tvars) | {v for ld in loads for v in names if f"*{v}" in ld}
    assume(all(v in used or ext[v] == 1 for v in names))  # else refused: repeated work
    tdims = ", ".join(str(ext[v]) for v in tvars)
    target = f"y[{', '.join(tvars)}]" if tvars else "y[()]"
    fill = {"max": ", fill=-inf", "min": ", fill=inf", "prod": ", fill=1.0"}.get(kind, "")
    statement = {"assign": f"{target} = {value}", "sum": f"{target} += {value}",
                 "prod": f"{target} *= {value}",
                 "max": f"{target} = max({target}, {value})",
                 "min": f"{target} = min({value}, {target})"}[kind]
    if guards and kind == "assign":
        fill = ""  # a guarded assignment writes into the fill of 0
    params = ", ".join([f"r{r}" for r in range(len(decls))] + ["y"])
    lines = ["from solar.loopir import *", *decls, f'y = Tensor("{tdims}", role="output"{fill})',
             "", "@kernel", f"def f({params}):"]
    indent = "    "
    for v in names:
        lines.append(f"{indent}for {v} in range({ext[v]}):")
        indent += "    "
    if guards:
        lines.append(f"{indent}if {' and '.join(guards)}:")
        indent += "    "
    lines.append(indent + statement)
    lines += ["", "def model():", f"    f({params})"]
    return "\n".join(lines) + "\n"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=nests())
def test_random_nests_lift_to_the_function_the_interpreter_runs(tmp_path_factory, source):
    path = tmp_path_factory.mktemp("nest") / "prog.py"
    path.write_text(source)
    v = loopir.validate(str(path))
    assert v["status"] == "passed", source + "\n" + str(v)


# ----------------------------------------------------------------------- the lifting's checks


def test_a_write_that_can_leave_its_tensor_is_refused(tmp_path):
    """A write outside its tensor (an output has no pad value) is refused with the rule
    instead of building an invalid op (it was exit 7, "a lowering bug")."""
    path = write(tmp_path, "y[i - 1] = x[i]")
    with pytest.raises(solar.UserError) as e:
        loopir.analyze(path)
    assert e.value.kind == "shape_mismatch", str(e.value)
    assert f"{path}:{STATEMENT_LINE}: " in str(e.value)
    assert "narrow the loop's range, or guard its loop variables" in str(e.value)


def test_a_guard_on_the_loop_variable_narrows_a_write(tmp_path):
    """`if i >= 1: y[i - 1] = x[i]` writes y[0 .. N-2]: a guard on the write's loop variable
    alone narrows its range, as it keeps a read inside."""
    import numpy as np

    path = write(tmp_path, "if i >= 1:\n            y[i - 1] = x[i]")
    x = np.arange(8.0)
    np.testing.assert_allclose(loopir.run(path, inputs={"x": x})["y"], list(x[1:]) + [0.0])
    assert loopir.validate(path)["status"] == "passed"


REGRESSIONS = sorted((ROOT / "tests" / "fuzz" / "corpus" / "fuzz_loopir_lift").glob("regress_*"))


@pytest.mark.parametrize("seed", REGRESSIONS, ids=[p.stem for p in REGRESSIONS])
def test_malformed_traces_are_refused_never_lifted_wrong(seed):
    """OpTraces the fuzzer (tests/fuzz/fuzz_loopir_lift.cc) found crashing or mis-lifting: a
    field missing or of the wrong type, a nest reading its own output, integers past 64
    bits, a write outside its tensor, an expression too deep, tensors no program declares.
    Each is a one-line UserError, never an op left unanalyzed or a crash."""
    with pytest.raises(solar.UserError) as e:
        solar._core.lower_optrace(seed.read_text(), str(seed), True)
    assert e.value.kind in ("parse",) + LOOP_REFUSALS, str(e.value)
    assert "\n" not in str(e.value)
