"""The collectives XLA's SPMD partitioner inserts to reshard a `jit` program's results to its
out_shardings (partitioned.py; docs/distributed.md, "jit shardings"): an all-gather, an
all-to-all, a collective-permute or a reduce-scatter whose operand is a result the rank
computed at its local shapes and whose result is that output's block under its out sharding.
Each is attached after the equation that computes the result, the output reading the
collective's; a result the rank holds whole while its out sharding splits it (an all-reduce
then a dynamic-slice, how this CPU backend scatters a sum) gets the slice of its block.

Only results are resharded here: a collective that reshards a value the program goes on to
compute with changes the shapes of everything after it, which the trace at the rank's local
input shapes does not know; it is refused (partitioned.attach), as is a collective that
matches no result.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .collectives import _group, group_axes, refused

RESHARDS = ("all-gather", "all-to-all", "collective-permute", "reduce-scatter")


def _operand_shape(c: Dict[str, Any]) -> Optional[List[int]]:
    """The shape of the rank's operand of one collective (None for a tuple all-to-all: its
    pieces are the operand's blocks)."""
    shape, n, d = list(c["shape"]), len(c["groups"][0]), c.get("dimension")
    if c["kind"] == "all-gather":
        shape[d] //= n
        return shape
    if c["kind"] == "reduce-scatter":
        shape[d] *= n
        return shape
    if c["kind"] == "all-to-all" and c.get("pieces", 1) > 1:
        return None
    return shape


def _a2a_axes(local: Sequence[int], want: Sequence[int], n: int) -> Optional[Tuple[int, int]]:
    """(split axis, concat axis) of an all-to-all over n ranks taking `local` to `want`: the
    one dimension divided by n and the one multiplied by n."""
    if len(local) != len(want):
        return None
    shrink = [d for d, (a, b) in enumerate(zip(local, want)) if a == b * n and a != b]
    grow = [d for d, (a, b) in enumerate(zip(local, want)) if b == a * n and a != b]
    rest = [d for d, (a, b) in enumerate(zip(local, want)) if a != b]
    if len(shrink) == 1 and len(grow) == 1 and len(rest) == 2:
        return shrink[0], grow[0]
    return None


def _flat(groups: List[List[int]]) -> List[int]:
    return [r for g in groups for r in g]


def _consecutive(groups: List[List[int]]) -> bool:
    return all(g == list(range(k * len(g), (k + 1) * len(g))) for k, g in enumerate(groups))


def _new_tensor(trace: Dict[str, Any], like: int, shape: Sequence[int]) -> int:
    t = dict(trace["tensors"][like])
    t["id"] = len(trace["tensors"])
    t["shape"] = list(shape)
    t["role"] = "intermediate"
    t.pop("name", None)
    trace["tensors"].append(t)
    return t["id"]


def _op(trace: Dict[str, Any], after: Optional[Dict[str, Any]], name: str,
        operands: List[int], args: Dict[str, Any], out: int) -> Dict[str, Any]:
    op = {"op": f"jax::{name}", "args": {"operands": [{"tensor": t} for t in operands], **args},
          "outputs": [out]}
    for key in ("file", "line", "module"):
        if after is not None and key in after:
            op[key] = after[key]
    return op


def attach_reshards(trace: Dict[str, Any], output_ids: List[Optional[int]],
                    collectives: List[Dict[str, Any]], mesh_rank, path: str,
                    out_shapes: Sequence[Optional[Sequence[int]]],
                    out_blocks: Sequence[Optional[Sequence[Tuple[int, int]]]]
                    ) -> List[Optional[int]]:
    """Attaches each resharding collective (one per HLO instruction: a tuple all-to-all's
    pieces together) to the result it reshards, then slices each result the rank holds whole
    to its block. out_shapes: each output's block shape under its out sharding; out_blocks:
    this rank's (start, stop) per dimension of it. Returns the new output ids."""
    producer = {o: k for k, op in enumerate(trace["ops"]) for o in op["outputs"]}
    after: Dict[int, List[Dict[str, Any]]] = {}  # op index -> ops to insert after it
    outs = list(output_ids)
    done = set()
    by_instr: Dict[str, List[Dict[str, Any]]] = {}
    for c in collectives:
        if c["kind"] in RESHARDS:
            by_instr.setdefault(c["instruction"], []).append(c)
    for pieces in by_instr.values():
        c = dict(pieces[0], pieces=len(pieces))
        where = f"{path}:{c['line']}: " if c["line"] else f"{path}: "
        what = f"a {c['kind']} ({c['op_name'] or 'no op_name'}, {c['dtype']}{c['shape']})"
        if c["groups"] is None:
            raise refused(f"{where}{what} over replica groups in a form not read")
        if c["kind"] in ("all-gather", "reduce-scatter") and c["dimension"] is None:
            raise refused(f"{where}{what} without a dimension read")
        n = len(c["groups"][0])
        operand = _operand_shape(c)
        elements = sum(math.prod(p["shape"]) for p in pieces)
        prim = c["op_name"].rsplit("/", 1)[-1] if c["op_name"] else ""
        fits = []
        for k, tid in enumerate(outs):
            if tid is None or k in done or out_shapes[k] is None:
                continue
            local = trace["tensors"][tid]["shape"]
            if operand is not None and list(local) != operand:
                continue
            if operand is None and math.prod(local) != elements:
                continue
            result = list(out_shapes[k]) if operand is None else list(c["shape"])
            if result != list(out_shapes[k]):
                continue
            fits.append(k)
        # Of several results that fit, the one whose equation op_name names (an all-gather
        # at the program's root may have no op_name: the first that fits).
        named = [k for k in fits if prim and producer.get(outs[k], -1) >= 0
                 and trace["ops"][producer[outs[k]]]["op"] == f"jax::{prim}"]
        hit = (named or fits or [None])[0]
        if hit is None:
            raise refused(f"{where}XLA's partitioner inserted {what} that reshards no result of "
                          "the program: a reshard inside the program changes the shapes the "
                          "rest of it computes at (write the program with shard_map; "
                          "docs/distributed.md)")
        done.add(hit)
        src = outs[hit]
        local = list(trace["tensors"][src]["shape"])
        anchor = producer.get(src, -1)
        op_at = trace["ops"][anchor] if anchor >= 0 else None
        axes = group_axes(c["groups"], mesh_rank.axis_names, mesh_rank.axis_sizes) \
            if c["kind"] != "collective-permute" else ()
        if axes is None:
            raise refused(f"{where}{what} over replica groups {c['groups']} that are no set of "
                          "mesh axes")
        group: Dict[str, Any] = _group(mesh_rank, axes) if axes else {}
        if axes and not _consecutive(c["groups"]):
            group["replica_groups"] = _flat(c["groups"])  # XLA's group order, as it runs
        new_ops: List[Dict[str, Any]] = []
        if c["kind"] == "collective-permute":
            me = mesh_rank.rank
            dst = [t for s, t in c["pairs"] if s == me]
            srcs = [s for s, t in c["pairs"] if t == me]
            pair = {"group": "permute", "size": 2}
            result = src
            if dst and dst[0] != me:
                sent = _new_tensor(trace, src, local)
                new_ops.append(_op(trace, op_at, "ppermute", [src], {
                    "collective": "send", "peer": dst[0], **pair}, sent))
            if srcs and srcs[0] != me:
                result = _new_tensor(trace, src, local)
                new_ops.append(_op(trace, op_at, "ppermute", [], {
                    "collective": "recv", "peer": srcs[0], **pair}, result))
            elif not srcs:
                raise refused(f"{where}{what}: rank {me} receives nothing (XLA's zeros are not "
                              "read yet)")
        else:
            result = _new_tensor(trace, src, list(out_shapes[hit]) if operand is None
                                 else c["shape"])
            extra: Dict[str, Any]
            if c["kind"] == "all-gather":
                extra = {"collective": "all_gather", "axis": c["dimension"]}
                name = "all_gather"
            elif c["kind"] == "reduce-scatter":
                extra = {"collective": "reduce_scatter", "axis": c["dimension"],
                         "reduction": c["reduction"]}
                name = "reduce_scatter"
                if c["reduction"] is None:
                    raise refused(f"{where}{what} with a reduction not read")
            else:
                dims = ((c["dimension"], c["dimension"]) if operand is not None
                        else _a2a_axes(local, out_shapes[hit], n))
                if dims is None:
                    raise refused(f"{where}{what}: its split and concat dimensions are not "
                                  f"read from {local} -> {list(out_shapes[hit])}")
                extra = {"collective": "all_to_all", "axis": dims[0], "concat_axis": dims[1]}
                name = "all_to_all"
            new_ops.append(_op(trace, op_at, name, [src], {**extra, **group}, result))
        after.setdefault(anchor, []).extend(new_ops)
        outs[hit] = result
    # A result held whole where its out sharding splits it: the rank's block of it.
    for k, tid in enumerate(outs):
        if tid is None or out_shapes[k] is None or out_blocks[k] is None:
            continue
        local = list(trace["tensors"][tid]["shape"])
        if local == list(out_shapes[k]):
            continue
        block = out_blocks[k]
        if [b - a for a, b in block] != list(out_shapes[k]) or \
                any(b > n for (_, b), n in zip(block, local)):
            continue  # not a block of what the rank holds: validation says so
        sliced = _new_tensor(trace, tid, out_shapes[k])
        anchor = producer.get(tid, -1)
        after.setdefault(anchor, []).append(_op(
            trace, trace["ops"][anchor] if anchor >= 0 else None, "slice", [tid], {
                "start_indices": [a for a, _ in block], "limit_indices": [b for _, b in block],
                "strides": None}, sliced))
        outs[k] = sliced
    if after:
        ops = [op for op in after.get(-1, [])]
        for k, op in enumerate(trace["ops"]):
            ops.append(op)
            ops.extend(after.get(k, []))
        trace["ops"] = ops
    for k, tid in enumerate(output_ids):
        if tid is not None and outs[k] != tid:
            if trace["tensors"][tid]["role"] == "output":
                trace["tensors"][tid]["role"] = "intermediate"
            trace["tensors"][outs[k]]["role"] = "output"
    return outs
