"""Run an EinsumGraph on real arrays and validate it against a framework's outputs.

    out = solar.run(g, {"x": x, "w": w})                 # {name: numpy array}
    r = solar.validate(g, {"x": x, "w": w}, {"y": torch_y},
                       intermediates={"s": torch_s})      # locate the first divergent op
    assert r, r                                           # truthy when it passed; str() explains

Arrays are numpy arrays or anything with ``__dlpack__`` on the CPU (torch tensors, including
bfloat16 and float8). f32/f64/int64 C-contiguous arrays of the tensor's own dtype are read
without a copy; other dtypes are converted (floats rounded to the declared precision). Outputs
are numpy arrays of the declared dtype where numpy has one; bf16, tf32, fp8, fp6 and fp4
outputs come back as float32 (their exact values), int4 as int8. The C++ executor runs with
the GIL released (docs/executor.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, List, Optional, Union

from . import _core

__all__ = ["Check", "ValidationResult", "opaque_functions", "run", "tolerance_for", "validate"]

Check = _core.Check
ValidationResult = _core.ValidationResult


def _array(value: Any) -> Any:
    """A C-contiguous CPU array the bindings can read: torch tensors are detached, moved to
    the CPU and made contiguous (float8 without DLPack support goes as its raw bytes);
    numpy arrays are made contiguous; anything else goes through numpy.asarray."""
    mod = type(value).__module__
    if mod.startswith("torch"):
        t = value.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        t = t.resolve_conj().resolve_neg().contiguous()
        if "float8" in str(t.dtype):
            try:
                t.__dlpack__()
            except (RuntimeError, TypeError, BufferError):  # no DLPack fp8: raw bytes
                return t.view(__import__("torch").uint8).numpy()
        return t
    import numpy as np

    # np.require keeps a 0-d array 0-d (np.ascontiguousarray would make it 1-d).
    if isinstance(value, np.ndarray):
        return np.require(value, requirements="C")
    if hasattr(value, "__dlpack__"):
        return value
    return np.require(np.asarray(value), requirements="C")


def _arrays(values: Optional[Mapping[str, Any]]) -> dict:
    return {str(k): _array(v) for k, v in (values or {}).items()}


def run(
    graph: "_core.Graph",
    inputs: Mapping[str, Any],
    threads: int = 0,
    keep: Iterable[str] = (),
    memory_limit_bytes: int = 0,
) -> dict:
    """Runs `graph` on `inputs` (one array per input, weight and constant, by name) and
    returns {name: numpy array} for every output and every tensor named in `keep`.

    threads: 0 uses every core. memory_limit_bytes: 0 is 80% of physical memory; the
    executor frees intermediates after their last use and refuses (solar.UserError) a run
    whose live tensors would exceed the limit, before allocating anything. An unanalyzed op
    or an unknown opaque function raises solar.UnsupportedError."""
    return _core.run(graph, _arrays(inputs), int(threads), [str(k) for k in keep],
                     int(memory_limit_bytes))


def run_ranks(
    graphs: Union["_core.Graph", Sequence["_core.Graph"]],
    inputs_per_rank: Sequence[Mapping[str, Any]],
    threads: int = 0,
    keep: Iterable[str] = (),
    memory_limit_bytes: int = 0,
) -> List[dict]:
    """Runs the ranks of one program together (docs/executor.md, "Ranks"): graphs[r] (or one
    graph run as every rank) on inputs_per_rank[r], each collective op exchanging the ranks'
    buffers as NCCL would. Returns one {name: numpy array} per rank. Collectives that do not
    match across the ranks, or ranks that wait for each other, raise solar.UserError."""
    if isinstance(graphs, _core.Graph):
        graphs = [graphs] * len(inputs_per_rank)
    return _core.run_ranks(list(graphs), [_arrays(i) for i in inputs_per_rank], int(threads),
                           [str(k) for k in keep], int(memory_limit_bytes))


def validate(
    graph: "_core.Graph",
    inputs: Mapping[str, Any],
    references: Mapping[str, Any],
    intermediates: Optional[Mapping[str, Any]] = None,
    threads: int = 0,
    memory_limit_bytes: int = 0,
) -> "ValidationResult":
    """Runs `graph` and compares every output with `references` (by name) under the
    tolerance of its dtype (solar.tolerance_for). `intermediates` maps other tensor names to
    the framework's values for them: they are compared too, and the result names the first
    op (in graph order) whose output is outside tolerance.

    The result is truthy when everything passed; .outputs and .intermediates hold one
    solar.Check each (max_abs_error, max_rel_error, mismatches, worst_position, ...);
    .first_divergent_op names the op; str(result) explains it in a few lines."""
    return _core.validate(graph, _arrays(inputs), _arrays(references), _arrays(intermediates),
                          int(threads), int(memory_limit_bytes))


def tolerance_for(dtype: Any) -> tuple:
    """(atol, rtol) for a dtype (a solar.DType or its name: "f32", "bf16", ...). An element
    passes when |got - want| <= atol * scale + rtol * |want|, scale = max(1, median |want|)."""
    if isinstance(dtype, str):
        dtype = getattr(_core.DType, dtype)
    return _core.tolerance_for(dtype)


def opaque_functions() -> list:
    """The opaque functions (sort, topk, cumsum, ...) the executor can run."""
    return _core.opaque_functions()
