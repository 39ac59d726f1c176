"""What every frontend's validation by execution shares (report section `validation`,
docs/validation.md): the trace the executor runs, an executor check written as a report
entry, and the first op whose result leaves tolerance.

No NumPy and no framework here: the PyTorch, JAX and loop-language frontends each run their
program their own way, then report what the executor found in the same words.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Optional, Sequence


def validation_trace(trace: Dict[str, Any], given_ops: Sequence[int]) -> Dict[str, Any]:
    """The trace the executor runs to validate a capture: `trace` without the ops whose values
    the framework gives (random draws, JAX's iota and random bits: the executor cannot
    reproduce them), their outputs turned into constants fed with the framework's values."""
    if not given_ops:
        return trace
    drop = set(given_ops)
    given = set()
    for i in drop:
        given.update(t for t in trace["ops"][i]["outputs"] if t is not None)
    out = dict(trace)
    out["ops"] = [op for i, op in enumerate(trace["ops"]) if i not in drop]
    out["tensors"] = [dict(t, role="constant") if t["id"] in given else t
                      for t in trace["tensors"]]
    return out


def finite(x: float) -> Optional[float]:
    """JSON has no inf/NaN: a non-finite error is written as null (report convention)."""
    x = float(x)
    return x if math.isfinite(x) else None


def enum_name(value: Any) -> str:
    """"f32" for DType.f32, "output" for Role.output, "move" for OpKind.move."""
    return str(value).rsplit(".", 1)[-1]


def check_entry(check: Any, graph: Any, trace_id: Optional[int]) -> Dict[str, Any]:
    """One executor check (solar.Check) of a graph tensor as a `validation` entry."""
    t = graph.tensor(check.name)
    return {"name": check.name, "trace_id": trace_id, "shape": list(t.shape),
            "dtype": enum_name(t.dtype), "max_abs_error": finite(check.max_abs_error),
            "max_rel_error": finite(check.max_rel_error), "atol": check.atol,
            "rtol": check.rtol, "scale": check.scale, "mismatches": int(check.mismatches),
            "tightest_error": finite(check.tightest_error),
            "tightest_allowance": finite(check.tightest_allowance),
            "passed": bool(check.passed)}


def first_divergent_op(result: Any, graph: Any, trace_ids: Dict[str, int],
                       trace_ops: List[Dict[str, Any]],
                       entry: Callable[[Any, Any, Optional[int]], Dict[str, Any]] = check_entry
                       ) -> Optional[Dict[str, Any]]:
    """The `first_divergent_op` of a failed validation: the first graph op whose result leaves
    tolerance (from the executor's intermediate checks), its framework op, the program line
    of the trace op that wrote the tensor (a loop nest's: the statement's line) and the
    tensor's check as `entry` writes it. None when the executor names no such op."""
    if result.first_divergent_op is None:
        return None
    op = next((o for o in graph.ops if o.name == result.first_divergent_op), None)
    out: Dict[str, Any] = {"op": result.first_divergent_op}
    if op is not None:
        out["framework_op"] = op.framework_op
    check = result.first_divergent_check
    if check is not None:
        tid = trace_ids.get(check.name)
        for top in trace_ops:
            if tid is not None and tid in top["outputs"]:
                statements = (top.get("args") or {}).get("statements")
                out["file"] = top.get("file", "")
                out["line"] = (statements[top["outputs"].index(tid)]["line"] if statements
                               else top.get("line", 0))
                break
        out["tensor"] = entry(check, graph, tid)
    return out
