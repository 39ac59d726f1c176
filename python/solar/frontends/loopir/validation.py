"""Validation of a loop program: its own interpreter (interpret.py) and the lifted graph
(Solar's executor) run on the same drawn inputs and compared output by output under each
dtype's tolerance (an output computed through a narrower float intermediate: that one's,
computed_in); with a reference program (reference.py), that program too."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Tuple

import numpy as np

from ... import _core, executor
from ...errors import user_error
from ...validation import first_divergent_op
from . import interpret
from .checks import check_entry, source_tensors
from .language import VALIDATION_SECONDS, is_integer_dtype
from .program import LoopProgram
from .reference import compare_reference

TOOL = "solar loop interpreter and executor"
SEED = 0
TIME_ENV = "SOLAR_LOOP_VALIDATION_SECONDS"


# ----------------------------------------------------------------------- inputs


def make_inputs(lp: LoopProgram, seed: int = SEED) -> Dict[int, np.ndarray]:
    """Data for every source tensor, by trace id: normal values for floats, values below the
    bound for index tensors, small integers otherwise, with the declared sparsity pattern
    (2 zeros in every 4 along the last dimension, or a random fraction of zeros)."""
    rng = np.random.default_rng(seed)
    out = {}
    for t in source_tensors(lp.trace):
        shape, dtype = tuple(t["shape"]), t["dtype"]
        if dtype == "bool":
            x = rng.random(shape) < 0.5
        elif t["id"] in lp.index_bounds:
            x = rng.integers(0, lp.index_bounds[t["id"]], shape)
        elif is_integer_dtype(dtype):
            x = rng.integers(-4, 5, shape)
        else:
            x = rng.standard_normal(shape)
        sp = t.get("sparsity")
        if sp and sp.get("structured_2_4"):
            x = x * _two_of_four(rng, shape)
        elif sp and sp.get("zero_fraction", 0) > 0:
            x = x * (rng.random(shape) >= sp["zero_fraction"])
        out[t["id"]] = interpret.round_to(x, dtype)
    return out


def _two_of_four(rng, shape: Tuple[int, ...]) -> np.ndarray:
    """A 0/1 mask with two zeros in every group of four along the last dimension (a shorter
    last group keeps half its elements, rounded down)."""
    if not shape:
        return np.ones(shape)
    n = shape[-1]
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    keep = np.zeros((rows, n))
    for g in range(0, n, 4):
        width = min(4, n - g)
        picks = np.argsort(rng.random((rows, width)), axis=1)[:, : width // 2]
        np.put_along_axis(keep[:, g:g + width], picks, 1.0, axis=1)
    return keep.reshape(shape)


# ----------------------------------------------------------------------- validation


def _executor_array(x: np.ndarray, dtype: str) -> np.ndarray:
    """The array the executor reads for a tensor of `dtype`: float32 for floats up to f32
    (their values are exact), float64 for f64, integers and bools as they are."""
    # np.require keeps a 0-d array 0-d (np.ascontiguousarray would make it 1-d).
    if dtype == "f64" or is_integer_dtype(dtype):
        return np.require(x, requirements="C")
    return np.require(x, dtype=np.float32, requirements="C")


# Float dtypes by width, for the precision an output was computed in.
_FLOAT_BITS = {"f64": 64, "f32": 32, "tf32": 19, "bf16": 16, "f16": 16, "f8e4m3": 8,
               "f8e5m2": 8, "f6": 6, "f4": 4}


def computed_in(graph) -> Dict[str, str]:
    """{output name: dtype} for each float output computed through a narrower float tensor
    (an f32 intermediate of an f64 output): the narrowest such dtype. Two engines that sum an
    f32 intermediate in different orders differ at f32's precision, which the output's own
    (f64's 1e-9) would call a mismatch."""
    producer = {t: op for op in graph.ops for t in op.outputs}
    dtype = {t.id: str(t.dtype).rsplit(".", 1)[-1] for t in graph.tensors}
    out = {}
    for t in graph.tensors:
        own = dtype[t.id]
        if str(t.role).rsplit(".", 1)[-1] != "output" or own not in _FLOAT_BITS:
            continue
        narrowest, seen, todo = own, set(), [t.id]
        while todo:
            tid = todo.pop()
            if tid in seen or tid not in producer:
                continue  # a source tensor: its values are exact in both engines
            seen.add(tid)
            if _FLOAT_BITS.get(dtype[tid], 99) < _FLOAT_BITS[narrowest]:
                narrowest = dtype[tid]
            todo.extend(producer[tid].inputs)
        if narrowest != own:
            out[t.name] = narrowest
    return out


def _at_computed_precision(graph, inputs, refs, result):
    """([(check, {"compared_at": dtype} or {})], passed): an output outside its own dtype's
    tolerance is compared again at the precision it was computed in (computed_in)."""
    checks = [(ch, {}) for ch in result.outputs]
    narrower = computed_in(graph) if not result.passed else {}
    redo = [i for i, (ch, _) in enumerate(checks) if not ch.passed and ch.name in narrower]
    if redo:
        got = executor.run(graph, inputs)
        for i in redo:
            name = checks[i][0].name
            checks[i] = (_core.compare(name, {
                "got": np.require(got[name], dtype=np.float64, requirements="C"),
                "want": np.require(refs[name], dtype=np.float64, requirements="C")},
                getattr(_core.DType, narrower[name])), {"compared_at": narrower[name]})
    passed = all(ch.passed for ch, _ in checks) and all(
        ch.passed for ch in result.intermediates)
    return checks, passed


def time_limit() -> float:
    """The interpreter's wall-clock limit in seconds: VALIDATION_SECONDS, or
    $SOLAR_LOOP_VALIDATION_SECONDS when set (docs/loop-language.md, "Limits")."""
    text = os.environ.get(TIME_ENV)
    if not text:
        return VALIDATION_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise user_error(f"{TIME_ENV}={text!r}: expected a positive number of seconds", "usage")
    return value


def validate(lp: LoopProgram, graph, trace_ids: Dict[str, int],
             reference=None, sources: Optional[Dict[int, np.ndarray]] = None,
             seconds: Optional[float] = None) -> Dict[str, Any]:
    """The `validation` section: the loop program run by its interpreter and the lifted
    graph run by Solar's executor on the same inputs, every output compared under its
    dtype's tolerance; with `reference` (a program's path, or a ReferenceOutputs computed
    elsewhere), the reference's outputs are compared with both. `sources` gives the data of
    every source tensor by trace id (solar translate: the source program's own inputs and
    weights); by default they are drawn (make_inputs). The interpreter stops after `seconds`
    (default time_limit()) with solar.UserError, kind too_large."""
    section: Dict[str, Any] = {"status": "failed", "tool": TOOL, "seed": SEED, "outputs": []}
    if sources is None:
        sources = make_inputs(lp)
    else:
        section["inputs"] = "given"
    values = interpret.run_trace(lp.trace, sources, time_limit() if seconds is None else seconds)
    dtypes = {t["id"]: t["dtype"] for t in lp.trace["tensors"]}
    inputs, refs, intermediates = {}, {}, {}
    for t in graph.tensors:
        role = str(t.role).rsplit(".", 1)[-1]
        tid = trace_ids.get(t.name)
        if role == "output":
            refs[t.name] = _executor_array(values[tid], dtypes[tid])
        elif role != "intermediate":
            inputs[t.name] = _executor_array(sources[tid], dtypes[tid])
        elif tid is not None:  # every version the program computes locates a divergence
            intermediates[t.name] = _executor_array(values[tid], dtypes[tid])
    result = executor.validate(graph, inputs, refs, intermediates)
    checks, passed = _at_computed_precision(graph, inputs, refs, result)
    section["outputs"] = [dict(check_entry(ch, graph, trace_ids.get(ch.name)), **at)
                          for ch, at in checks]
    section["status"] = "passed" if passed else "failed"
    if not passed:
        section["reason"] = "the lifted graph differs from the loop program: " + ", ".join(
            ch.name for ch, _ in checks if not ch.passed)
        section["first_divergent_op"] = first_divergent_op(result, graph, trace_ids,
                                                           lp.trace["ops"], check_entry)
    if reference is not None:
        section["reference"] = compare_reference(reference, lp, sources, values, graph,
                                                 trace_ids, inputs)
        if section["reference"]["status"] != "passed":
            section["status"] = "failed"
            section.setdefault("reason", "the reference program differs: see `reference`")
    return section
