"""The loop language's smaller constructs (docs/loop-language.md): chained assignment, `pi`,
tuple-valued size constants (with --set and --shrink), refusals inside a dims string at their
line, assignments at composite subscripts, and guards that keep a plain loop-variable
subscript inside its tensor."""

from __future__ import annotations

import json
import math
import textwrap

import numpy as np
import pytest

import solar
import solar.loopir as loopir
from conftest import run_solar

HEADER = "from solar.loopir import *\n"


def program(tmp_path, body: str, name: str = "prog.py") -> str:
    path = tmp_path / name
    path.write_text(HEADER + textwrap.dedent(body))
    return str(path)


def totals(path: str, **kw) -> dict:
    return loopir.analyze(path, arch="H100_SXM", cache_aware=False, **kw).to_dict()["totals"]


def validated(path: str, **kw) -> dict:
    v = loopir.validate(path, **kw)
    assert v["status"] == "passed", json.dumps(v, indent=1)
    return v


# ---------------------------------------------------------------- constants

KERNELBENCH_STYLE = """
batch_size = 4
H = W = 8                       # a chained assignment, as KernelBench writes sizes
input_shape = (6,)              # a tuple-valued size constant
N = input_shape[0]
x = Tensor("batch_size, H, W", role="input")
v = Tensor("batch_size, input_shape[0]", role="input")
y = Tensor("batch_size, H, W", role="output")
z = Tensor("batch_size, N", role="output")

@kernel
def scale(x, y):
    for b in range(batch_size):
        for h in range(H):
            for w in range(W):
                y[b, h, w] = x[b, h, w] * (2 * pi)

@kernel
def shift(v, z, n):
    for b in range(batch_size):
        for i in range(input_shape[-1]):
            z[b, i] = v[b, i] + n

def model():
    scale(x, y)
    shift(v, z, input_shape[0])
"""


def test_chained_assignment_pi_and_tuple_constants(tmp_path):
    path = program(tmp_path, KERNELBENCH_STYLE)
    x = np.arange(4 * 8 * 8, dtype=float).reshape(4, 8, 8)
    v = np.ones((4, 6))
    out = loopir.run(path, inputs={"x": x, "v": v})
    np.testing.assert_allclose(out["y"], x * 2 * math.pi)
    np.testing.assert_allclose(out["z"], v + 6)
    t = totals(path)
    # y: one multiply by the folded constant 2*pi per element; z: one add per element
    assert t["vector_flops"] == 4 * 8 * 8 + 4 * 6
    validated(path)


def test_a_tuple_constant_is_set_and_shrunk_as_one_tuple(tmp_path):
    path = program(tmp_path, KERNELBENCH_STYLE)
    t = totals(path, set={"input_shape": (3,)})
    assert t["vector_flops"] == 4 * 8 * 8 + 4 * 3
    with pytest.raises(solar.UserError, match="numbers or tuples of numbers"):
        totals(path, set={"input_shape": "(a,)"})
    out = tmp_path / "r.json"
    r = run_solar("analyze", path, "--shrink", "4", "--no-cache-aware", "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "input_shape=(4,)" in r.stderr  # shrunk with the other sizes, back as one tuple
    # H = W = 4, input_shape = (4,) and the batch at 2 (shrink.py's rule for a batch size)
    assert json.loads(out.read_text())["totals"]["vector_flops"] == 2 * 4 * 4 + 2 * 4


@pytest.mark.parametrize("body,words", [
    ('x = y = Tensor("4", role="input")', "declare each tensor with its own"),
    ("a, b = c = 1, 2", "chained assignment binds names"),
    ("shape = (4, 2)\nN = shape", "a tuple of 2 constants"),
    ("shape = (4, 2)\nN = shape[2]", "has 2 elements, index 2"),
    ("shape = ()", "an empty tuple"),
])
def test_constant_refusals(tmp_path, body, words):
    path = program(tmp_path, body + "\ndef model():\n    pass\n")
    with pytest.raises(solar.UserError, match=words):
        loopir.load_trace(path)


def test_a_refusal_inside_a_dims_string_names_its_line(tmp_path):
    path = program(tmp_path, """
        N = 4


        x = Tensor("N, Q", role="input")

        def model():
            pass
        """)
    with pytest.raises(solar.UserError) as e:
        loopir.load_trace(path)
    assert f"{path}:6: " in str(e.value)  # the Tensor(...) line, not line 1 of the string
    assert "`Q` is not a declared constant" in str(e.value)


# ---------------------------------------------------------------- composite subscripts

GROUPED = """
B, NG, G, S = 2, 3, 4, 5
x = Tensor("B, NG, G, S", role="input")
e = Tensor("B, NG * G, S", role="output")

@kernel
def regroup(x, e):
    for b in range(B):
        for g in range(NG):
            for r in range(G):
                for q in range(S):
                    e[b, g*G + r, q] = exp(x[b, g, r, q])

def model():
    regroup(x, e)
"""


def test_an_assignment_at_a_composite_subscript_that_writes_each_element_once(tmp_path):
    path = program(tmp_path, GROUPED)
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5))
    np.testing.assert_allclose(loopir.run(path, inputs={"x": x})["e"],
                               np.exp(x).reshape(2, 12, 5))
    t = totals(path)
    assert t["special_ops"] == 2 * 3 * 4 * 5  # one exp per element written
    validated(path)


def test_an_assignment_at_a_composite_subscript_that_overlaps_is_refused(tmp_path):
    # g*2 + r with r over 4 values: elements 2..3 are written by g = 0 and g = 1
    path = program(tmp_path, GROUPED.replace("g*G + r", "g*2 + r").replace(
        '"B, NG * G, S"', '"B, 2 * NG + 2, S"'))
    with pytest.raises(solar.UserError, match="writes each element once") as e:
        loopir.analyze(path)
    assert e.value.kind == "outside_language"


# ---------------------------------------------------------------- guards on plain subscripts

GUARDED_PLAIN = """
B, D = 3, 5
x = Tensor("B, D", role="input")
y = Tensor("B, D", role="output")
z = Tensor("B, D", role="output")

@kernel
def shifted(x, y, z):
    for b in range(B):
        for t in range(D + 1):
            if t < D:
                y[b, t] = x[b, t] * 2.0
            if t >= 1:
                z[b, t - 1] = x[b, t - 1] + 1.0

def model():
    shifted(x, y, z)
"""


def test_a_guard_keeps_a_plain_subscript_inside_its_tensor(tmp_path):
    """`for t in range(D + 1): if t < D: x[b, t]` reads and writes inside x and y, as
    `x[b, t - 1]` under `if t >= 1` does."""
    path = program(tmp_path, GUARDED_PLAIN)
    x = np.arange(15.0).reshape(3, 5)
    out = loopir.run(path, inputs={"x": x})
    np.testing.assert_allclose(out["y"], 2 * x)
    np.testing.assert_allclose(out["z"], x + 1)
    assert totals(path)["vector_flops"] == 2 * 3 * 5  # one op per element of y and of z
    validated(path)


def test_a_guard_that_leaves_a_plain_subscript_outside_is_still_refused(tmp_path):
    path = program(tmp_path, GUARDED_PLAIN.replace("if t < D:", "if t < D + 1:"))
    with pytest.raises(solar.UserError, match="index 5 of dimension 1 of size 5") as e:
        loopir.analyze(path)
    assert e.value.kind == "shape_mismatch"
