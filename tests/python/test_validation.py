"""solar.validation: what the PyTorch, JAX and loop-language validations share — a check as a
report entry and the one finder of the first diverging op — on stand-ins for the executor's
results, so each rule is seen without running a program."""

from __future__ import annotations

import json
from types import SimpleNamespace as NS

import pytest

from conftest import run_solar
from solar.validation import check_entry, first_divergent_op, validation_trace


class _Graph:
    """The little of a solar.Graph the entries read: ops (name, framework_op), tensors."""

    def __init__(self, ops, tensors):
        self.ops = [NS(name=n, framework_op=f) for n, f in ops]
        self._tensors = tensors

    def tensor(self, name):
        return self._tensors[name]


def _check(name, passed=False, abs_err=0.5):
    return NS(name=name, max_abs_error=abs_err, max_rel_error=float("inf"), atol=1e-5,
              rtol=1e-5, scale=1.0, mismatches=0 if passed else 3, tightest_error=abs_err,
              tightest_allowance=1e-5, passed=passed)


GRAPH = _Graph([("mul_1", "aten::mul.Tensor"), ("nest_2", "loopir::nest")],
               {"y": NS(shape=(2, 3), dtype="DType.f32")})


def test_a_check_entry_writes_dtype_by_name_and_non_finite_errors_as_null():
    e = check_entry(_check("y"), GRAPH, 7)
    assert e == {"name": "y", "trace_id": 7, "shape": [2, 3], "dtype": "f32",
                 "max_abs_error": 0.5, "max_rel_error": None, "atol": 1e-5, "rtol": 1e-5,
                 "scale": 1.0, "mismatches": 3, "tightest_error": 0.5,
                 "tightest_allowance": 1e-5, "passed": False}


def test_no_divergent_op_is_none():
    assert first_divergent_op(NS(first_divergent_op=None), GRAPH, {}, []) is None


@pytest.mark.parametrize("op, want_line", [
    # an op of a framework trace: the op's own line
    ({"op": "aten::mul.Tensor", "args": {}, "outputs": [4, 7], "file": "p.py", "line": 9}, 9),
    # a loop nest writes one tensor per statement: the statement's line
    ({"op": "loopir::nest", "args": {"statements": [{"line": 20}, {"line": 21}]},
      "outputs": [4, 7], "file": "p.py", "line": 18}, 21),
])
def test_the_divergent_op_names_the_line_that_wrote_its_tensor(op, want_line):
    result = NS(first_divergent_op="mul_1", first_divergent_check=_check("y"))
    ops = [{"op": "other", "args": {}, "outputs": [1]}, op]
    got = first_divergent_op(result, GRAPH, {"y": 7}, ops)
    assert got["op"] == "mul_1" and got["framework_op"] == "aten::mul.Tensor"
    assert (got["file"], got["line"]) == ("p.py", want_line)
    assert got["tensor"] == check_entry(_check("y"), GRAPH, 7)


def test_a_tensor_without_a_trace_id_has_no_line_and_the_entry_is_the_callers():
    result = NS(first_divergent_op="gone", first_divergent_check=_check("y"))
    got = first_divergent_op(result, GRAPH, {}, [{"op": "x", "args": {}, "outputs": [None]}],
                             entry=lambda ch, g, tid: {"name": ch.name, "tid": tid})
    assert got == {"op": "gone", "tensor": {"name": "y", "tid": None}}  # no such graph op


def test_the_validation_trace_turns_given_ops_outputs_into_constants():
    trace = {"ops": [{"op": "rand", "outputs": [0]}, {"op": "add", "outputs": [1]}],
             "tensors": [{"id": 0, "role": "intermediate"}, {"id": 1, "role": "output"}]}
    assert validation_trace(trace, []) is trace
    v = validation_trace(trace, [0])
    assert [op["op"] for op in v["ops"]] == ["add"]
    assert [t["role"] for t in v["tensors"]] == ["constant", "output"]
    assert trace["tensors"][0]["role"] == "intermediate"  # the capture's own trace unchanged


def test_validate_states_the_rule_that_passed_and_the_tightest_margin():
    """A passing output's line states the rule (|got - ref| <= atol*scale + rtol*|ref| per
    element) and the element closest to its allowance, so a large max rel error on a near-zero
    reference does not read as a failure."""
    r = run_solar("validate", "examples/torch/activations.py", "--json", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    out = doc["validation"]["outputs"][0]
    assert out["passed"] and 0 < out["tightest_error"] <= out["tightest_allowance"]
    # the allowance of one element: atol * scale + rtol * |ref| >= atol * scale
    assert out["tightest_allowance"] >= out["atol"] * out["scale"]
    text = run_solar("validate", "examples/torch/activations.py").stdout
    line = next(ln for ln in text.splitlines() if ln.startswith("  ok "))
    assert "every element within |got - ref| <= 1e-05 + 0.0001*|ref|" in line
    assert "tightest element" in line and "of its allowance" in line
