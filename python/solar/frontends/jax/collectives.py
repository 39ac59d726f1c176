"""One rank of a shard_map over a mesh of several devices: the body walked at the rank's
local shapes, and the jaxpr collectives in it recorded as that rank's collective ops
(src/lower/jax_collective.cc), their groups named by the mesh axes.

Ranks are the mesh's devices in row-major order of its axes (`mesh.devices.flat`): rank r
has the coordinates `np.unravel_index(r, mesh.devices.shape)`. A collective over axes A runs
among the ranks that differ only along A (size: the product of their extents); JAX numbers a
position along several axes row-major in the order the collective names them, and so does
this module (axis_index, ppermute's pairs).

Each rank's graph is captured on its own: `axis_index` is folded into the rank's coordinate
(a constant of its graph) and a `ppermute` is a send to the rank's target and a recv from
its source, so the ranks' graphs differ by those constants and peers, never by their
counts. The program's inputs must reach the shard_map directly and its outputs come from
it; anything else is refused (ops outside the shard_map run on global shapes, under XLA's
partitioner, which this route does not read).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...ranks import unsupported as refused
from .recorder import FOLD_ELEMENTS, Lit

# The IR's collective kind and reduction of each reducing primitive.
_REDUCING = {"psum": "sum", "psum_invariant": "sum", "pmax": "max", "pmin": "min"}


@dataclasses.dataclass
class MeshRank:
    """The rank being captured and, once the shard_map is met, its mesh."""

    rank: int
    devices: int  # the ranks the program declares (DEVICES)
    axis_names: Tuple[str, ...] = ()
    axis_sizes: Tuple[int, ...] = ()
    in_specs: Tuple[Any, ...] = ()
    out_specs: Tuple[Any, ...] = ()
    inside: bool = False  # walking the shard_map body
    done: bool = False  # the shard_map was walked

    def coords(self, rank: Optional[int] = None) -> Dict[str, int]:
        idx = np.unravel_index(self.rank if rank is None else rank, self.axis_sizes)
        return {a: int(i) for a, i in zip(self.axis_names, idx)}

    def extent(self, axes: Sequence[str]) -> int:
        sizes = dict(zip(self.axis_names, self.axis_sizes))
        return math.prod(sizes[a] for a in axes)

    def position(self, axes: Sequence[str]) -> int:
        """This rank's position along `axes`, row-major in the order given."""
        sizes, c = dict(zip(self.axis_names, self.axis_sizes)), self.coords()
        p = 0
        for a in axes:
            p = p * sizes[a] + c[a]
        return p

    def rank_at(self, axes: Sequence[str], position: int) -> int:
        """The rank that is at `position` along `axes` and where this rank is elsewhere."""
        sizes, c = dict(zip(self.axis_names, self.axis_sizes)), self.coords()
        for a in reversed(list(axes)):
            c[a] = position % sizes[a]
            position //= sizes[a]
        return int(np.ravel_multi_index([c[a] for a in self.axis_names], self.axis_sizes))

    def replica_groups(self, axes: Sequence[str]) -> List[int]:
        """Every group over `axes`, one after another (the IR's replica_groups): the ranks
        that differ only along `axes`, each group in its position order along them."""
        n = math.prod(self.axis_sizes)
        groups: Dict[Tuple[int, ...], List[int]] = {}
        for r in range(n):
            other = MeshRank(r, self.devices, self.axis_names, self.axis_sizes)
            key = tuple(v for a, v in other.coords().items() if a not in axes)
            groups.setdefault(key, [0] * self.extent(axes))[other.position(axes)] = r
        return [r for key in sorted(groups) for r in groups[key]]

    def consecutive(self, axes: Sequence[str]) -> bool:
        """Whether the group over `axes` is a block of consecutive ranks (axes of extent 1
        aside, the innermost axes of the mesh in mesh order)."""
        big = [a for a, s in zip(self.axis_names, self.axis_sizes) if s > 1]
        mine = [a for a in axes if dict(zip(self.axis_names, self.axis_sizes))[a] > 1]
        return not mine or big[len(big) - len(mine):] == mine


def _axes(v) -> Tuple[str, ...]:
    return tuple(v) if isinstance(v, (tuple, list)) else (v,)


def spec_axes(spec, ndim: int) -> List[Tuple[str, ...]]:
    """A PartitionSpec's mesh axes per dimension (() for a replicated dimension)."""
    entries = list(spec) if spec is not None else []
    entries += [None] * (ndim - len(entries))
    return [() if e is None else _axes(e) for e in entries[:ndim]]


def block(mr: MeshRank, spec, value, local_shape) -> Any:
    """The rank's block of a global array under a PartitionSpec."""
    arr = value
    idx = []
    for d, axes in enumerate(spec_axes(spec, len(local_shape))):
        n = int(local_shape[d])
        k = mr.position(axes) if axes else 0
        idx.append(slice(k * n, (k + 1) * n))
    return arr[tuple(idx)]


def enter(walker, eqn, ins, jaxpr, consts, args) -> List[Any]:
    """The shard_map equation on this rank: its inputs (the program's own) resized to the
    rank's block and their values sliced, the body walked with collectives recorded."""
    mr: MeshRank = walker.mesh_rank
    rec = walker.rec
    mesh = eqn.params["mesh"]
    where = rec.where()
    if mr.done or mr.inside:
        raise refused(f"{where}a second jax::shard_map: a sharded program is one shard_map "
                      "(call it once, with the whole per-device program as its body)")
    if int(mesh.size) != mr.devices:
        raise refused(f"{where}jax::shard_map over a {mesh.size}-device mesh in a program that "
                      f"declares DEVICES = {mr.devices}: declare the mesh's size")
    mr.axis_names = tuple(str(a) for a in mesh.axis_names)
    mr.axis_sizes = tuple(int(s) for s in mesh.devices.shape)
    mr.in_specs = tuple(eqn.params["in_specs"])
    mr.out_specs = tuple(eqn.params["out_specs"])
    if rec.ops:
        raise refused(f"{where}ops before the jax::shard_map ({rec.ops[0]['op']}): a sharded "
                      "program's inputs go into the shard_map as they are")
    for r, v, spec in zip(args, jaxpr.invars, mr.in_specs):
        if isinstance(r, Lit):
            continue
        t = rec.tensors[r]
        local = [int(d) for d in v.aval.shape]
        if r in rec.values:
            rec.values[r] = block(mr, spec, rec.values[r], local)
            rec.known.pop(r, None)
            if math.prod(local) <= FOLD_ELEMENTS:
                rec.known[r] = np.asarray(rec.values[r])
        elif r in rec.known:
            rec.known[r] = np.asarray(block(mr, spec, rec.known[r], local))
        t["shape"] = local
    mr.inside = True
    try:
        outs = walker.walk(jaxpr, consts, args)
    finally:
        mr.inside = False
    mr.done = True
    return outs


def record(walker, eqn, ins) -> List[Any]:
    """One collective equation of the body on this rank."""
    mr: MeshRank = walker.mesh_rank
    name = eqn.primitive.name
    p = eqn.params
    if name == "pvary":
        return list(ins)
    if name == "axis_index":
        return [Lit(np.asarray(mr.position(_axes(p["axis_name"])), dtype=np.int32))]
    if p.get("axis_index_groups") is not None:
        return _unsupported(walker, eqn, ins, "axis_index_groups (groups within an axis) are "
                            "not supported")
    if name in _REDUCING:
        axes = _axes(p["axes"])
        return [_reduce(walker, eqn, r, vo, axes) for r, vo in zip(ins, eqn.outvars)]
    if name in ("all_gather", "reduce_scatter", "psum_scatter", "all_to_all", "pbroadcast"):
        axes = _axes(p["axis_name"])
        r, vi, vo = ins[0], eqn.invars[0], eqn.outvars[0]
        r = walker.rec.ref_for_literal(r, vi.aval)
        n = mr.extent(axes)
        if name == "all_gather":
            d = int(p["all_gather_dimension"])
            if not p.get("tiled", False):  # a new dimension of n: gathered along a 1
                r = _reshape(walker, r, list(vi.aval.shape[:d]) + [1] + list(vi.aval.shape[d:]),
                             vi.aval)
            return [_emit(walker, eqn, r, vo.aval, axes, "all_gather", axis=d)]
        if name in ("reduce_scatter", "psum_scatter"):
            d = int(p["scatter_dimension"])
            if p.get("tiled", False):
                return [_emit(walker, eqn, r, vo.aval, axes, "reduce_scatter", axis=d,
                              reduction="sum")]
            shape = list(vi.aval.shape)
            shape[d] = shape[d] // n  # 1: the dimension of n that is dropped
            part = _emit(walker, eqn, r, _like(vo.aval, shape), axes, "reduce_scatter", axis=d,
                         reduction="sum")
            return [_reshape(walker, part, list(vo.aval.shape), _like(vo.aval, shape))]
        if name == "all_to_all":
            if not p.get("tiled", False):
                return _unsupported(walker, eqn, ins, "all_to_all with tiled=False is not "
                                    "supported (tiled=True is)")
            return [_emit(walker, eqn, r, vo.aval, axes, "all_to_all",
                          axis=int(p["split_axis"]), concat_axis=int(p["concat_axis"]))]
        return [_emit(walker, eqn, r, vo.aval, axes, "broadcast", root=int(p["source"]))]
    if name == "ppermute":
        return [_ppermute(walker, eqn, r, vi, vo, _axes(p["axis_name"]), p["perm"])
                for r, vi, vo in zip(ins, eqn.invars, eqn.outvars)]
    return _unsupported(walker, eqn, ins, f"the collective jax::{name} is not supported")


def _like(aval, shape):
    import jax

    return jax.ShapeDtypeStruct(tuple(int(d) for d in shape), aval.dtype)


def _reshape(walker, r, shape, aval) -> int:
    return walker._synth("reshape", [r], [_like(aval, shape)],
                         {"new_sizes": tuple(shape), "dimensions": None})[0]


def _unsupported(walker, eqn, ins, reason: str):
    return walker.unsupported(eqn, ins, reason)


def _group(mr: MeshRank, axes: Sequence[str]) -> Dict[str, Any]:
    out = {"group": ",".join(axes), "size": mr.extent(axes), "axes": list(axes)}
    if not mr.consecutive(axes):  # an outer mesh axis: the executor needs its ranks
        out["replica_groups"] = mr.replica_groups(axes)
    return out


def _emit(walker, eqn, r, aval, axes, kind: str, **attrs) -> int:
    mr: MeshRank = walker.mesh_rank
    extra = {"collective": kind, **_group(mr, axes), **attrs}
    out = walker.rec.emit(eqn.primitive.name, [r], [aval], {}, extra)[0]
    walker.budget -= 1
    return out


def _reduce(walker, eqn, r, vo, axes):
    mr: MeshRank = walker.mesh_rank
    red = _REDUCING[eqn.primitive.name]
    if isinstance(r, Lit):  # psum(1, axis): the axis' size, folded as XLA folds it
        v = np.asarray(r.value)
        return Lit((v * mr.extent(axes) if red == "sum" else v).astype(v.dtype))
    return _emit(walker, eqn, r, vo.aval, axes, "all_reduce", reduction=red)


def _ppermute(walker, eqn, r, vi, vo, axes, perm):
    """A send to the rank this one's block goes to, then a recv from the rank whose block
    comes here; a rank no pair sends to gets zeros (JAX's semantics)."""
    mr: MeshRank = walker.mesh_rank
    me = mr.position(axes)
    dst = [int(d) for s, d in perm if int(s) == me]
    src = [int(s) for s, d in perm if int(d) == me]
    group = _group(mr, axes)
    group.pop("replica_groups", None)  # a send or recv names its peer
    if dst and dst[0] != me:
        r = walker.rec.ref_for_literal(r, vi.aval)
        walker.rec.emit("ppermute", [r], [vi.aval], {},
                        {"collective": "send", "peer": mr.rank_at(axes, dst[0]), **group})
        walker.budget -= 1
    if src and src[0] == me:
        return r
    if src:
        out = walker.rec.emit("ppermute", [], [vo.aval], {},
                              {"collective": "recv", "peer": mr.rank_at(axes, src[0]), **group})
        walker.budget -= 1
        return out[0]
    return walker.rec.ref_for_literal(
        Lit(np.zeros(tuple(vo.aval.shape), dtype=np.dtype(vo.aval.dtype))), vo.aval)


def group_axes(groups: List[List[int]], axis_names: Sequence[str],
               axis_sizes: Sequence[int]) -> Optional[Tuple[str, ...]]:
    """The mesh axes whose groups these are (ranks in mesh.devices.flat order), or None."""
    n = math.prod(axis_sizes)
    coords = np.array(np.unravel_index(np.arange(n), axis_sizes)).T
    want = sorted(sorted(g) for g in groups)
    for mask in range(1, 1 << len(axis_names)):
        axes = [a for k, a in enumerate(axis_names) if mask >> k & 1]
        fixed = [k for k, a in enumerate(axis_names) if a not in axes]
        seen: Dict[Tuple[int, ...], List[int]] = {}
        for r in range(n):
            seen.setdefault(tuple(coords[r, fixed]), []).append(r)
        if sorted(seen.values()) == want:
            return tuple(axes)
    return None
