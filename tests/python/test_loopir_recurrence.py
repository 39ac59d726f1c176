"""Recurrences of the loop language (docs/loop-language.md, "Recurrences"): a nest that reads
what it writes one step before along one loop, or a step loop around nests, is lifted to one
repeat op whose body is one step. The work is the body's once per step (linear), the loop
interpreter runs the steps in order, and the lifted graph agrees with it."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import solar
import solar.loopir as loopir

HEADER = "from solar.loopir import *\n"


def program(tmp_path, body: str, name: str = "prog.py") -> str:
    path = tmp_path / name
    path.write_text(HEADER + textwrap.dedent(body))
    return str(path)


def totals(path: str, **kw) -> dict:
    return loopir.analyze(path, arch="H100_SXM", cache_aware=False, **kw).to_dict()["totals"]


def repeats(path: str, **kw) -> list:
    graph = json.loads(loopir.lift(path, **kw).to_json())
    return [op for op in graph["ops"] if op["kind"] == "repeat"]


def validated(path: str, **kw) -> dict:
    v = loopir.validate(path, **kw)
    assert v["status"] == "passed", json.dumps(v, indent=1)
    return v


def refused(path: str, kind: str, words: str, line: int) -> None:
    with pytest.raises(solar.UserError) as e:
        loopir.analyze(path)
    assert e.value.kind == kind, str(e.value)
    assert words in str(e.value)
    assert f"{path}:{line}:" in str(e.value)


# ---------------------------------------------------------------- a prefix sum

PREFIX_SUM = """
B, N = 3, 50
x = Tensor("B, N", role="input")
y = Tensor("B, N", role="output")

@kernel
def cumsum(x, y):
    for b in range(B):
        y[b, 0] = x[b, 0]
    for b in range(B):
        for i in range(N):
            if i >= 1:
                y[b, i] = y[b, i - 1] + x[b, i]

def model():
    cumsum(x, y)
"""


def test_a_prefix_sum_is_a_recurrence_with_linear_work(tmp_path):
    path = program(tmp_path, PREFIX_SUM)
    B, N = 3, 50
    t = totals(path)
    assert t["vector_flops"] == B * (N - 1)  # one add per element after the first of a row
    assert t["macs"] == t["special_ops"] == 0
    (rep,) = repeats(path)
    assert rep["trips"] == N - 1  # the guard i >= 1 leaves steps 1 .. N-1
    x = np.random.default_rng(1).standard_normal((B, N))
    np.testing.assert_allclose(loopir.run(path, inputs={"x": x})["y"], np.cumsum(x, axis=1),
                               rtol=1e-5, atol=1e-5)  # y is f32
    validated(path)


def test_linear_at_any_size(tmp_path):
    path = program(tmp_path, PREFIX_SUM)
    for n in (2, 7, 1000):
        assert totals(path, set={"N": n})["vector_flops"] == 3 * (n - 1)


# ---------------------------------------------------------------- a step loop

ONLINE_SOFTMAX = """
R, C = 4, 16
x = Tensor("R, C", role="input")
y = Tensor("R, C", role="output")

@kernel
def online_softmax(x, y):
    m = Tensor("R, C + 1", fill=-inf)   # the running max, m[:, 0] = -inf
    d = Tensor("R, C + 1")              # the running sum of exp(x - m), d[:, 0] = 0
    for j in range(C):                  # the step loop
        for r in range(R):
            m[r, j + 1] = max(m[r, j], x[r, j])
        for r in range(R):
            d[r, j + 1] = d[r, j] * exp(m[r, j] - m[r, j + 1]) + exp(x[r, j] - m[r, j + 1])
    for r in range(R):
        for j in range(C):
            y[r, j] = exp(x[r, j] - m[r, C]) / d[r, C]

def model():
    online_softmax(x, y)
"""


def test_online_softmax_is_a_step_loop(tmp_path):
    path = program(tmp_path, ONLINE_SOFTMAX)
    R, C = 4, 16
    t = totals(path)
    # per step and row: max 1; d: sub, mul, sub, add 4 (and 2 exps); then y: sub, div (1 exp)
    assert t["vector_flops"] == R * C * (1 + 4) + R * C * 2
    assert t["special_ops"] == R * C * 2 + R * C
    (rep,) = repeats(path)
    assert rep["trips"] == C
    x = np.random.default_rng(2).standard_normal((R, C))
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(loopir.run(path, inputs={"x": x})["y"],
                               e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    validated(path)


COUPLED = """
N = 6
x = Tensor("N", role="input")
y = Tensor("N", role="output")

@kernel
def coupled(x, y):
    a = Tensor("N + 1")
    c = Tensor("N + 1")
    for i in range(N):
        a[i + 1] = c[i] + x[i]
        c[i + 1] = a[i] * 2
    for i in range(N):
        y[i] = a[i + 1] + c[i + 1]

def model():
    coupled(x, y)
"""


def test_two_statements_read_each_other_one_step_before(tmp_path):
    path = program(tmp_path, COUPLED)
    x = np.arange(1.0, 7.0)
    a, c = np.zeros(7), np.zeros(7)
    for i in range(6):  # the loops as Python runs them
        a[i + 1] = c[i] + x[i]
        c[i + 1] = a[i] * 2
    np.testing.assert_allclose(loopir.run(path, inputs={"x": x})["y"], a[1:] + c[1:])
    assert totals(path)["vector_flops"] == 6 * 2 + 6  # a: add, c: mul per step; y: add
    validated(path)


# ---------------------------------------------------------------- refusals

REFUSALS = [
    # (statements under `for b: for i:`, kind, words, the refused line's offset)
    ("if i < N - 1:\n    y[b, i] = y[b, i + 1] + x[b, i]", "outside_language", "loop-carried", 1),
    ("if i >= 2:\n    y[b, i] = y[b, i - 2] + x[b, i]", "outside_language", "loop-carried", 1),
    ("y[b, i] = y[b, i - 1] + x[b, i]", "shape_mismatch", "the step before the first one", 0),
    ("if i >= 1 and b < B - 1:\n    y[b, i] = y[b + 1, i - 1] + x[b, i]", "outside_language",
     "outer loops' own values", 1),
]


@pytest.mark.parametrize("statements,kind,words,offset", REFUSALS,
                         ids=["backwards", "two steps", "no guard", "outer loop ahead"])
def test_recurrence_refusals(tmp_path, statements, kind, words, offset):
    body = textwrap.indent(statements, " " * 12)
    path = program(tmp_path, f"""
B, N = 3, 8
x = Tensor("B, N", role="input")
y = Tensor("B, N", role="output")

@kernel
def k(x, y):
    for b in range(B):
        for i in range(N):
{body}

def model():
    k(x, y)
""")
    refused(path, kind, words, 11 + offset)


def test_a_step_loop_reads_the_step_itself_only_from_a_later_nest(tmp_path):
    path = program(tmp_path, """
B, N = 3, 8
x = Tensor("B, N", role="input")
y = Tensor("B, N", role="output")

@kernel
def k(x, y):
    z = Tensor("B, N")
    for t in range(N):
        for b in range(B):
            z[b, t] = y[b, t] + x[b, t]
        for b in range(B):
            if t >= 1:
                y[b, t] = z[b, t - 1]

def model():
    k(x, y)
""")
    refused(path, "outside_language", "at the step it writes", 12)


def test_the_validation_budget_counts_each_step(tmp_path):
    """The interpreter runs a recurrence step by step: its work is each nest's box once per
    step (the step loop's every value: guards mask steps, they do not skip them), plus the
    time of a step in points (checks.STEP_POINTS), so a long recurrence of tiny steps is
    estimated by its steps."""
    from solar.frontends.loopir import checks
    path = program(tmp_path, PREFIX_SUM)
    B, N = 3, 50
    trace = loopir.load_trace(path)
    # the copy nest: B points; the recurrence: N steps of a B-point nest
    assert checks.work_points(trace) == B + N * (B + checks.STEP_POINTS)
    with pytest.raises(solar.UserError, match="iteration points with the loop interpreter"):
        loopir.validate(path, set={"B": 1, "N": 200_000})  # 200,000 steps: past the budget


# ---------------------------------------------------------------- random scans

COMBINE = {  # the scan's step, as the program writes it and as Python computes it
    "add": ("{prev} + {x}", lambda p, x: p + x),
    "mul": ("{prev} * (1.0 + 0.1 * {x})", lambda p, x: p * (1.0 + 0.1 * x)),
    "max": ("max({prev}, {x})", max),
    "decay": ("0.5 * {prev} + exp({x})", lambda p, x: 0.5 * p + np.exp(x)),
}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(B=st.integers(1, 3), N=st.integers(2, 9), form=st.sampled_from(["guard", "range", "state"]),
       combine=st.sampled_from(sorted(COMBINE)), outer=st.booleans())
def test_random_scans_run_as_python_runs_the_loops(tmp_path_factory, B, N, form, combine, outer):
    """A scan along i in one of the three forms (a guard `if i >= 1`, `range(1, N)`, a state
    one longer than the sequence), with the step loop outside or inside the loop over b:
    the interpreter's values are the loops' as Python runs them, the lifted graph validates
    against the interpreter, and the work is one step's per step."""
    text, step = COMBINE[combine]
    loops = ["for b in range(B):", "for i in range({lo}, N):"]
    if not outer:
        loops.reverse()
    if form == "state":
        decl = '    s = Tensor("B, N + 1", dtype="f64")\n'
        first = ""
        stmt = "s[b, i + 1] = " + text.format(prev="s[b, i]", x="x[b, i]")
        after = ("    for b in range(B):\n        for i in range(N):\n"
                 "            y[b, i] = s[b, i + 1]\n")
        lo, guard = 0, ""
    else:
        decl = ""
        first = "    for b in range(B):\n        y[b, 0] = x[b, 0]\n"
        stmt = "y[b, i] = " + text.format(prev="y[b, i - 1]", x="x[b, i]")
        after = ""
        lo, guard = (0, "if i >= 1:") if form == "guard" else (1, "")
    body = "    " + loops[0].format(lo=lo) + "\n        " + loops[1].format(lo=lo) + "\n"
    body += ("            " + guard + "\n                " if guard else "            ")
    body += stmt + "\n"
    path = program(tmp_path_factory.mktemp("scan"), f"""
B, N = {B}, {N}
x = Tensor("B, N", dtype="f64", role="input")
y = Tensor("B, N", dtype="f64", role="output")

@kernel
def scan(x, y):
{decl}{first}{body}{after}
def model():
    scan(x, y)
""")
    x = np.random.default_rng(B * 10 + N).standard_normal((B, N))
    want = np.zeros((B, N))
    for b in range(B):
        prev = 0.0 if form == "state" else x[b, 0]
        want[b, 0] = step(prev, x[b, 0]) if form == "state" else x[b, 0]
        prev = want[b, 0]
        for i in range(1, N):
            prev = want[b, i] = step(prev, x[b, i])
    np.testing.assert_allclose(loopir.run(path, inputs={"x": x})["y"], want, rtol=1e-12)
    validated(path)
    (rep,) = repeats(path)
    assert rep["trips"] == (N if form == "state" else N - 1)


def test_a_loop_inside_the_step_loop_reads_any_element_of_the_step_before(tmp_path):
    """`y[j + 1, i - 1]` while writing `y[j, i]`, the loop over j inside the loop over i:
    the whole step before is computed when step i runs."""
    path = program(tmp_path, """
N, J = 6, 5
x = Tensor("J, N", dtype="f64", role="input")
y = Tensor("J, N", dtype="f64", role="output")

@kernel
def diagonal(x, y):
    for i in range(N):
        for j in range(J):
            if i >= 1 and j < J - 1:
                y[j, i] = y[j + 1, i - 1] + x[j, i]

def model():
    diagonal(x, y)
""")
    x = np.random.default_rng(3).standard_normal((5, 6))
    want = np.zeros((5, 6))
    for i in range(6):
        for j in range(5):
            if i >= 1 and j < 4:
                want[j, i] = want[j + 1, i - 1] + x[j, i]
    np.testing.assert_array_equal(loopir.run(path, inputs={"x": x})["y"], want)
    assert totals(path)["vector_flops"] == (6 - 1) * (5 - 1)  # one add per written element
    validated(path)


def test_a_read_of_another_statements_element_of_the_same_step_says_split_the_nest(tmp_path):
    path = program(tmp_path, """
N = 4
x = Tensor("N", role="input")
y = Tensor("N", role="output")

@kernel
def k(x, y):
    a = Tensor("N")
    for i in range(N):
        a[i] = x[i] + 1
        y[i] = a[i] * 2

def model():
    k(x, y)
""")
    refused(path, "outside_language", "split the nest into two", 12)


def test_a_recurrence_that_writes_outside_its_target_is_refused(tmp_path):
    path = program(tmp_path, PREFIX_SUM.replace('y = Tensor("B, N", role="output")',
                                                'y = Tensor("B, N - 3", role="output")'))
    # the steps i = 1 .. N-1 write columns past the N - 3 of y (the first nest's y[b, 0] is
    # inside it)
    refused(path, "shape_mismatch", "outside its size 47", 14)
