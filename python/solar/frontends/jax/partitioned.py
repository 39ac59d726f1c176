"""One rank of a `jit` program sharded by its in_shardings/out_shardings or
with_sharding_constraint (no shard_map), read from what XLA's SPMD partitioner made of it:
the program traced at the rank's local input shapes (each input's shard), and the
collectives the partitioner inserted, read from the compiled (partitioned) HLO with their
replica groups, attached after the jaxpr equation their `op_name` metadata and source line
name (docs/distributed.md, "jit shardings").

This route reads the collectives that complete a sharded computation in place (an
all-reduce of partial sums after a contraction over a sharded dimension, the shape of that
equation's local result), and those that reshard the program's results to its out_shardings
(reshard.py: all-gather, all-to-all, collective-permute, reduce-scatter). A collective that
reshards a value inside the program, or one whose equation or result is not found, is
refused with its kind, op_name and line: the local trace would not compute what XLA's
partitioned program computes.
"""

from __future__ import annotations

import math
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .collectives import _group, group_axes, refused
from .reshard import RESHARDS, attach_reshards

_COLLECTIVE = re.compile(
    r"^\s*(?:ROOT )?%(?P<name>\S+) = (?P<shape>\(.*?\)|\S+) (?P<kind>all-reduce|all-gather|"
    r"reduce-scatter|all-to-all|collective-permute)(?:-start)?\((?P<ops>[^)]*)\)(?P<rest>.*)$")
_GTE = re.compile(r"^\s*(?:ROOT )?%\S+ = \S+ get-tuple-element\(%(?P<of>\S+)\), "
                  r"index=(?P<index>\d+)(?P<rest>.*)$")
_ARRAY = re.compile(r"(?P<dtype>[a-z]+\d*)\[(?P<dims>[\d,]*)\]")
_ROOT = re.compile(r"^\s*ROOT %\S+ = \S+ (?P<op>[a-z-]+)\(")
_REDUCTIONS = {"add": "sum", "maximum": "max", "minimum": "min", "multiply": "prod"}
_BYTES = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "s64": 8, "s32": 4, "s16": 2, "s8": 1,
          "u64": 8, "u32": 4, "u16": 2, "u8": 1, "pred": 1}


def _frames(hlo: str) -> Dict[int, int]:
    """stack_frame_id -> source line (the frame's own location)."""
    locations: Dict[int, int] = {}
    frames: Dict[int, int] = {}
    section = ""
    for line in hlo.splitlines():
        s = line.strip()
        if s in ("FileLocations", "StackFrames", "FileNames", "FunctionNames"):
            section = s
            continue
        m = re.match(r"^(\d+) \{(.*)\}$", s)
        if not m:
            if s.startswith("%") or s.startswith("ENTRY") or s.startswith("HloModule"):
                section = ""
            continue
        fields = dict(re.findall(r"(\w+)=(\d+)", m.group(2)))
        if section == "FileLocations" and "line" in fields:
            locations[int(m.group(1))] = int(fields["line"])
        elif section == "StackFrames" and "file_location_id" in fields:
            frames[int(m.group(1))] = locations.get(int(fields["file_location_id"]), 0)
    return frames


def _metadata(rest: str, frames: Dict[int, int]) -> Tuple[str, int]:
    op_name = re.search(r'op_name="([^"]*)"', rest)
    frame = re.search(r"stack_frame_id=(\d+)", rest)
    return (op_name.group(1) if op_name else "",
            frames.get(int(frame.group(1)), 0) if frame else 0)


def _groups(rest: str, n: int) -> Optional[List[List[int]]]:
    """replica_groups as lists of device positions ({{0,1},{2,3}}, the iota form
    [G,S]<=[dims]T(perm), or the mesh-axes form mesh['a'=2,'b'=2] {'a'}); no replica_groups:
    every device in one group; a form not read: None."""
    m = re.search(r"replica_groups=\{(\{[\d,]*\}(?:,\{[\d,]*\})*)\}", rest)
    if m:
        return [[int(x) for x in g.split(",") if x] for g in re.findall(r"\{([\d,]*)\}",
                                                                       m.group(1))]
    m = re.search(r"replica_groups=\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", rest)
    if m:
        dims = [int(x) for x in m.group(3).split(",")]
        ids = np.arange(math.prod(dims)).reshape(dims)
        if m.group(4):
            ids = ids.transpose([int(x) for x in m.group(4).split(",")])
        return ids.reshape(int(m.group(1)), int(m.group(2))).tolist()
    m = re.search(r"replica_groups=mesh\[(?P<axes>[^\]]*)\] \{(?P<over>[^}]*)\}(?P<after>\S*)",
                  rest)
    if m:
        # The devices numbered row-major over the mesh's axes; a group: the devices that
        # differ only along the named axes.
        axes = re.findall(r"^'([^']+)'=(\d+)$", "\n".join(m.group("axes").split(",")), re.M)
        over = re.findall(r"'([^']+)'", m.group("over"))
        names = [a for a, _ in axes]
        if (len(axes) != len(m.group("axes").split(",")) or m.group("after").strip(",")
                or not set(over) <= set(names) or len(over) != len(m.group("over").split(","))):
            return None  # sub-axes or a device order not read: refused by the caller
        sizes = [int(s) for _, s in axes]
        ids = np.arange(math.prod(sizes)).reshape(sizes)
        keep = [names.index(a) for a in over]
        rest_axes = [k for k in range(len(names)) if k not in keep]
        ids = ids.transpose(rest_axes + keep)
        return ids.reshape(-1, math.prod(sizes[k] for k in keep)).tolist()
    if "replica_groups=" in rest and "replica_groups={}" not in rest:
        return None
    return [list(range(n))]  # none or {}: every device in one group


def _reduction(hlo: str, rest: str) -> Optional[str]:
    m = re.search(r"to_apply=%(\S+?)[,\s]", rest + " ")
    if not m:
        return None
    body = hlo.split(f"\n%{m.group(1)} (", 1)
    if len(body) < 2:
        return None
    for line in body[1].splitlines()[1:]:  # the computation's lines, up to its closing brace
        if line.strip() == "}":
            break
        r = _ROOT.match(line)
        if r:
            return _REDUCTIONS.get(r.group("op"))
    return None


def read_collectives(hlo: str, devices: int) -> List[Dict[str, Any]]:
    """Every collective of the partitioned HLO, one entry per array it moves (a combined
    tuple all-reduce is one entry per element): kind, reduction, dtype, shape, bytes, groups,
    op_name and source line."""
    frames = _frames(hlo)
    gte: Dict[Tuple[str, int], str] = {}
    for line in hlo.splitlines():
        g = _GTE.match(line)
        if g:
            gte[(g.group("of"), int(g.group("index")))] = g.group("rest")
    out = []
    for line in hlo.splitlines():
        m = _COLLECTIVE.match(line)
        if not m:
            continue
        arrays = _ARRAY.findall(m.group("shape"))
        for k, (dtype, dims) in enumerate(arrays):
            rest = gte.get((m.group("name"), k), m.group("rest")) if len(arrays) > 1 \
                else m.group("rest")
            if "op_name" not in rest:
                rest = m.group("rest")
            op_name, src = _metadata(rest, frames)
            shape = [int(d) for d in dims.split(",") if d]
            kind = m.group("kind")
            dim = re.search(r"dimensions=\{(\d+)\}", m.group("rest"))
            pairs = re.search(r"source_target_pairs=\{((?:\{\d+,\d+\},?)*)\}", m.group("rest"))
            groups = _groups(m.group("rest"), devices)
            entry = {"kind": kind, "reduction": _reduction(hlo, m.group("rest")),
                     "dtype": dtype, "shape": shape,
                     "bytes": math.prod(shape) * _BYTES.get(dtype, 4),
                     "groups": groups, "op_name": op_name, "line": src,
                     "instruction": m.group("name"),
                     "dimension": int(dim.group(1)) if dim else None}
            if kind == "collective-permute":
                entry["pairs"] = [[int(a), int(b)] for a, b in
                                  re.findall(r"\{(\d+),(\d+)\}", pairs.group(1))] \
                    if pairs else []
                entry["groups"] = [list(p) for p in entry["pairs"]] or None
            if kind == "reduce-scatter" and groups:
                entry["bytes"] *= len(groups[0])  # the payload: each rank's whole input
            out.append(entry)
    return out


def _elements(trace: Dict[str, Any], op: Dict[str, Any]) -> Tuple[int, int]:
    """(elements of the op's tensor operands, elements of its results)."""
    ins = sum(math.prod(trace["tensors"][o["tensor"]]["shape"])
              for o in op["args"].get("operands", []) if isinstance(o, dict) and "tensor" in o)
    outs = sum(math.prod(trace["tensors"][t]["shape"]) for t in op["outputs"])
    return ins, outs


def reduces_sharded(local: Dict[str, Any], whole: Optional[Dict[str, Any]], k: int) -> bool:
    """Whether op k of the local trace reduces over a sharded dimension: its operands shrank
    (whole program -> rank) by more than its results did, so its results are partial."""
    if whole is None or k >= len(whole["ops"]) or whole["ops"][k]["op"] != local["ops"][k]["op"]:
        return False
    li, lo = _elements(local, local["ops"][k])
    gi, go = _elements(whole, whole["ops"][k])
    return li * go < gi * lo  # gi / li > go / lo


def attach(trace: Dict[str, Any], output_ids: List[Optional[int]],
           collectives: List[Dict[str, Any]], mesh_rank, path: str,
           whole: Optional[Dict[str, Any]] = None,
           out_shapes: Optional[Sequence[Optional[Sequence[int]]]] = None,
           out_blocks: Optional[Sequence[Optional[Sequence[Tuple[int, int]]]]] = None
           ) -> List[Optional[int]]:
    """Inserts each all-reduce after the trace op it belongs to (same primitive, source line
    and local result shape; of several, the first that reduces over a sharded dimension, as
    the program traced whole, `whole`, tells), its consumers reading its result, then the
    collectives that reshard results (reshard.py: out_shapes and out_blocks are each
    output's block shape under its out sharding and this rank's block of it); returns the
    new output ids."""
    ops = trace["ops"]
    if whole is not None and [o["op"] for o in whole["ops"]] != [o["op"] for o in ops]:
        whole = None  # the program's structure depends on its shapes: no comparison
    placed: Dict[int, List[Dict[str, Any]]] = {}
    used = set()
    for c in collectives:
        where = f"{path}:{c['line']}: " if c["line"] else f"{path}: "
        if c["kind"] in RESHARDS:
            continue  # after the all-reduces, on the results (reshard.py)
        if c["reduction"] is None:
            raise refused(f"{where}XLA's partitioner inserted an all-reduce ({c['op_name']}, "
                          f"{c['dtype']}{c['shape']}) whose reduction is not read")
        if c["groups"] is None:
            raise refused(f"{where}an all-reduce ({c['op_name']}, {c['dtype']}{c['shape']}) "
                          "over replica groups in a form not read")
        prim = c["op_name"].rsplit("/", 1)[-1]
        cands = [k for k, op in enumerate(ops)
                 if k not in used and op["op"] == f"jax::{prim}" and op.get("line") == c["line"]
                 and len(op["outputs"]) == 1
                 and trace["tensors"][op["outputs"][0]]["shape"] == c["shape"]]
        partial = [k for k in cands if reduces_sharded(trace, whole, k)]
        hit = (partial or cands or [None])[0]
        if hit is None:
            raise refused(f"{where}XLA's partitioner inserted an all-reduce ({c['op_name']}, "
                          f"{c['dtype']}{c['shape']}) that matches no equation of the program "
                          "traced at its local shapes")
        used.add(hit)
        axes = group_axes(c["groups"], mesh_rank.axis_names, mesh_rank.axis_sizes)
        if axes is None:
            raise refused(f"{where}an all-reduce over replica groups {c['groups']} that are no "
                          "set of mesh axes")
        placed.setdefault(hit, []).append({"reduction": c["reduction"], "axes": axes})
    rename: Dict[int, int] = {}
    new_ops = []
    for k, op in enumerate(ops):
        for o in op["args"].get("operands", []):
            if isinstance(o, dict) and o.get("tensor") in rename:
                o["tensor"] = rename[o["tensor"]]
        new_ops.append(op)
        for p in placed.get(k, []):
            src = op["outputs"][0]
            t = dict(trace["tensors"][src])
            t["id"] = len(trace["tensors"])
            t.pop("name", None)
            trace["tensors"].append(t)
            if trace["tensors"][src]["role"] == "output":
                trace["tensors"][src]["role"] = "intermediate"
            new = {"op": "jax::psum", "args": {"operands": [{"tensor": src}],
                                                "collective": "all_reduce",
                                                "reduction": p["reduction"],
                                                **_group(mesh_rank, p["axes"])},
                   "outputs": [t["id"]]}
            for key in ("file", "line", "module"):
                if key in op:
                    new[key] = op[key]
            new_ops.append(new)
            rename[src] = t["id"]
    trace["ops"] = new_ops
    outs = [rename.get(o, o) if o is not None else None for o in output_ids]
    n = len(outs)
    return attach_reshards(trace, outs, collectives, mesh_rank, path,
                           out_shapes if out_shapes is not None else [None] * n,
                           out_blocks if out_blocks is not None else [None] * n)
