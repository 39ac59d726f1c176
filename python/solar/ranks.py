"""What every program that runs on several ranks shares, whatever its frontend
(docs/distributed.md): the ranks it declares (`DEVICES`), the system it is placed on, and
the refusal of what its capture cannot record."""

from __future__ import annotations

import ast
import json
from typing import Any, Dict, NamedTuple, Optional

from . import _core, executor

MAX_DEVICES = 64


def declared_devices(path: str, overrides: Optional[Dict[str, str]] = None) -> Optional[int]:
    """The program's `DEVICES` (a top-level assignment of an integer, or of + - * // over
    integer constants assigned before it, `DEVICES = DP * TP`; `--set NAME=M` of any of them
    wins), or None."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    ints: Dict[str, int] = {}
    ops = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
           ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b if b else None}

    def value(node) -> Optional[int]:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            return ints.get(node.id)
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            a, b = value(node.left), value(node.right)
            return None if a is None or b is None else ops[type(node.op)](a, b)
        return None

    def assign(name: str, node) -> None:
        v = value(node)
        if overrides and name in overrides:
            try:
                v = int(overrides[name])
            except ValueError:
                pass  # the override's own error comes from loading the program
        if v is not None:
            ints[name] = v
        else:
            ints.pop(name, None)

    declared = False
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        tgt = node.targets[0]
        if isinstance(tgt, ast.Name):
            assign(tgt.id, node.value)
            declared = declared or tgt.id == "DEVICES"
        elif (isinstance(tgt, ast.Tuple) and isinstance(node.value, ast.Tuple)
              and len(tgt.elts) == len(node.value.elts)):
            for t, v in zip(tgt.elts, node.value.elts):
                if isinstance(t, ast.Name):
                    assign(t.id, v)
    return ints.get("DEVICES") if declared else None


def unsupported(message: str):
    """A solar.UnsupportedError (exit code 7, `unsupported`) for a program construct the
    capture refuses as a whole (a collective it cannot record, a loop past the unroll cap)."""
    e = _core.UnsupportedError(message)
    e.exit_code = _core.EXIT_CODES["unsupported"]
    return e


class System(NamedTuple):
    """A --system argument (with --nodes) as the core reads it."""

    id: str
    devices: int
    per_domain: int  # devices per scale-up domain
    device: str  # the device id of its ranks


def system_of(system: str, nodes: Optional[int]) -> System:
    """A --system argument (with --nodes) as the core reads it, from the analysis of a
    one-op graph on it."""
    g = _core.parse_graph("x = f32[1] input\n"
                          "y = f32[1]{output} einsum [i=1] none $0 (x[i]) -> [i]")
    report = json.loads(_core.analyze(g, [], "pytorch-default", "cold", cache_aware=False,
                                      system=system, nodes=nodes).to_json())
    s = report["system"]
    return System(s["id"], int(s["devices"]), int(s["devices_per_node"]), s["device"])


def validate_ranks(res: Dict[str, Any], lowered) -> Dict[str, Any]:
    """The `validation` section of a program run on several ranks: the ranks' graphs
    (`lowered`: (graph, _, trace ids) per rank) run together by the executor
    (solar.run_ranks, collectives exchanging buffers) on each rank's inputs, every rank's
    outputs compared with what the framework's own run gave that rank (`res`: inputs,
    expected and output_ids per rank, as the frontends collect them)."""
    import numpy as np  # a validation only: the command line starts without NumPy
    section: Dict[str, Any] = {"status": "failed", "tool": "solar executor (run_ranks)",
                               "seed": 0, "ranks": len(lowered), "outputs": []}
    for graph, _, _ in lowered:
        bad = [op for op in graph.ops if op.kind == _core.OpKind.unanalyzed]
        if bad:
            section["reason"] = (f"the graph is not executable: {len(bad)} unanalyzed op(s): "
                                 + ", ".join(f"{op.framework_op} ({op.origin})" for op in bad))
            return section
    inputs_per_rank, refs_per_rank = [], []
    for r, (graph, _, trace_ids) in enumerate(lowered):
        inputs, refs = {}, {}
        by_id = {tid: res["expected"][r][str(k)] for k, tid in enumerate(res["output_ids"][r])
                 if tid is not None and str(k) in res["expected"][r]}
        for t in graph.tensors:
            role = str(t.role).rsplit(".", 1)[-1]
            tid = trace_ids.get(t.name)
            if role == "output" and tid in by_id:
                refs[t.name] = by_id[tid]
            elif role not in ("output", "intermediate"):
                if str(tid) not in res["inputs"][r]:
                    section["reason"] = f"no value for rank {r}'s graph source {t.name}"
                    return section
                inputs[t.name] = res["inputs"][r][str(tid)]
        inputs_per_rank.append(inputs)
        refs_per_rank.append(refs)
    try:
        outs = executor.run_ranks([g for g, _, _ in lowered], inputs_per_rank)
    except (_core.UnsupportedError, _core.UserError) as e:
        section["reason"] = f"the ranks could not be executed: {e}"
        return section
    failed = []
    for r, (out, refs) in enumerate(zip(outs, refs_per_rank)):
        for name, want in refs.items():
            tol = 1e-4 if np.asarray(want).dtype.itemsize >= 4 else 2e-2  # f32 / bf16, f16
            got = np.asarray(out[name], dtype=np.float64)
            want = np.asarray(want, dtype=np.float64)
            err = float(np.max(np.abs(got - want))) if want.size else 0.0
            scale = float(np.max(np.abs(want))) if want.size else 0.0
            ok = got.shape == want.shape and err <= tol * max(1.0, scale)
            section["outputs"].append({"rank": r, "name": f"rank {r}: {name}",
                                       "shape": list(want.shape), "max_abs_error": err,
                                       "atol": tol * max(1.0, scale), "rtol": 0.0,
                                       "passed": ok})
            if not ok:
                failed.append(f"{name} on rank {r}")
    if not section["outputs"]:
        section["status"] = "inconclusive"
        section["reason"] = "no rank output was compared"
    elif failed:
        section["reason"] = "outputs outside tolerance: " + ", ".join(failed)
    else:
        section["status"] = "passed"
    return section
