"""Tensor parallelism as a graph rewrite: one rank's graph of a captured program, sharded.

The captured graph (solar.graph.v1 JSON) is sharded the way GSPMD propagates a sharding,
through the graph's explicit einsum indices (docs/parallel.md, "Parallel plans"):

- the weights a rule names are split in contiguous blocks along one dimension over the `tp`
  ranks (column-parallel: output features; row-parallel: input features; vocab-parallel:
  the vocabulary rows of an embedding or head);
- a sharded dimension read by an einsum index shards that index (extent / tp), and the
  outputs along it; an index that is sharded and reduced makes the output a partial
  reduction, which a collective completes (an all_reduce, or with sequence parallelism a
  reduce_scatter along the tokens) before the first consumer;
- a reshape maps a sharded dimension to the output dimension with the same prefix of
  elements (H*D -> H, D shards H); slices over the whole dimension, casts, copies,
  permutations and concatenations along another axis keep it;
- a replicated operand read along a sharded index is sliced locally (free: its rank's
  block); two operands sharded along different indices of one einsum keep the weight's
  and gather the other (the all_gather before a column-parallel linear under --sp);
- anything the rules above do not cover (an opaque op, a mask over a sharded index, a
  dimension that does not divide) gets its inputs whole (all_gather) and runs replicated:
  never a wrong local graph.

The result is one graph per rank: ranks differ only in the offsets of their local slices
and of the vocab-parallel embedding's index range. Every rank's graph is costed like any
graph, and run together by the multi-rank executor they must reproduce the unsharded
graph's outputs (tests/python/test_parallel.py).
"""

from __future__ import annotations

import copy
import dataclasses
import re
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

Spec = Optional[Tuple[str, Any]]  # None | ("shard", dim) | ("partial", reduction)

REDUCTIONS = {"sum": "sum", "max": "max", "min": "min", "prod": "prod"}


def _prod(xs: Sequence[int]) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


def _terms(expr: str) -> Optional[List[Tuple[Optional[str], int]]]:
    """An affine subscript as [(index or None for a constant, coefficient)]."""
    out: List[Tuple[Optional[str], int]] = []
    for sign, term in re.findall(r"([+-]?)([^+-]+)", expr.replace(" ", "")):
        k = -1 if sign == "-" else 1
        parts = term.split("*")
        idx = [p for p in parts if not re.fullmatch(r"\d+", p)]
        for p in parts:
            if re.fullmatch(r"\d+", p):
                k *= int(p)
        if len(idx) > 1:
            return None
        out.append((idx[0] if idx else None, k))
    return out


@dataclasses.dataclass(frozen=True)
class WeightRule:
    """A weight split in tp blocks along `dim` (`kind`: column, row, vocab, head)."""

    kind: str
    dim: int


@dataclasses.dataclass
class Sharded:
    """One rank's graph (JSON dict) and what the rewrite did to it."""

    graph: Dict[str, Any]
    rank: int
    tp: int
    sharded_weights: Dict[str, WeightRule]
    collectives: List[Tuple[str, str, str]]  # (kind, tensor, why)
    replicated_ops: List[str]  # ops run whole on every rank, with the reason


class ShardError(ValueError):
    """A plan that cannot shard this graph (a dimension that does not divide)."""


class _Sharder:
    def __init__(self, g: Dict[str, Any], tp: int, rank: int, weights: Dict[str, WeightRule],
                 state: Dict[str, int], sp: bool, group: Dict[str, Any]):
        self.g, self.tp, self.rank, self.sp = g, tp, rank, sp
        self.group = group
        self.t = {t["name"]: dict(t) for t in g["tensors"]}
        self.order = [t["name"] for t in g["tensors"]]
        self.spec: Dict[str, Spec] = {}
        self.ops: List[Dict[str, Any]] = []
        self.collectives: List[Tuple[str, str, str]] = []
        self.replicated: List[str] = []
        self.whole: Dict[str, str] = {}  # tensor -> its gathered / reduced name
        self.local_slices: Dict[Tuple[str, int], str] = {}
        self.local_offsets: Set[str] = set()
        self.alias: Dict[str, str] = {}  # a dropped reshape -> its source
        self.view_src: Dict[str, str] = {}  # a sharded reshape -> its sharded source
        self.consumers: Dict[str, List[Dict[str, Any]]] = {}
        self.weights = weights
        self.grad_like = {(tuple(self.t[n]["shape"]), r.dim) for n, r in weights.items()}
        for name, rule in weights.items():
            self._shard_source(name, rule.dim)
        for name, dim in state.items():
            self._shard_source(name, dim)

    # -- tensors ------------------------------------------------------------------------
    def _shard_source(self, name: str, dim: int) -> None:
        shape = self.t[name]["shape"]
        if shape[dim] % self.tp:
            raise ShardError(f"{name}: dimension {dim} of {shape} does not divide over "
                             f"tp={self.tp}")
        self.spec[name] = ("shard", dim)
        self.t[name]["shape"] = shape[:dim] + [shape[dim] // self.tp] + shape[dim + 1:]

    def _new(self, name: str, like: str, shape: List[int], dtype: Optional[str] = None) -> str:
        base, i = name, 0
        while name in self.t:
            i += 1
            name = f"{base}{i}"
        self.t[name] = {"name": name, "shape": list(shape), "dtype": dtype or self.t[like]["dtype"],
                        "role": "intermediate"}
        self.order.append(name)
        return name

    def full_shape(self, name: str) -> List[int]:
        s = list(self.t[name]["shape"])
        spec = self.spec.get(name)
        if spec and spec[0] == "shard":
            s[spec[1]] *= self.tp
        return s

    def _coll(self, kind: str, x: str, out: str, why: str, **attrs) -> None:
        op = {"kind": "collective", "collective": kind, "group": dict(self.group),
              "inputs": [x], "outputs": [out], "name": out}
        op.update(attrs)
        self.ops.append(op)
        self.collectives.append((kind, x, why))

    def whole_of(self, x: str, why: str) -> str:
        """x replicated: gathered if sharded, reduced if partial (once per tensor)."""
        spec = self.spec.get(x)
        if spec is None:
            return x
        if x in self.whole:
            return self.whole[x]
        if x in self.local_offsets or spec[0] == "flat":
            raise ShardError(f"{x}: offsets into a rank's block cannot be gathered")
        if x in self.view_src:
            # A reshape of a sharded tensor: gather the source once (q, k and v read views
            # of the same normalized activations) and reshape the whole.
            src = self.whole_of(self.view_src[x], why)
            out = self._new(f"{x}.whole", x, self.full_shape(x))
            self.ops.append({"kind": "move", "move": "view", "name": out, "inputs": [src],
                             "outputs": [out]})
        elif spec[0] == "partial":
            out = self._new(f"{x}.reduced", x, self.t[x]["shape"])
            self._coll("all_reduce", x, out, why, reduction=spec[1])
        else:
            out = self._new(f"{x}.whole", x, self.full_shape(x))
            self._coll("all_gather", x, out, why, axis=spec[1])
        self.spec[out] = None
        self.whole[x] = out
        return out

    def settle(self, x: str, why: str) -> str:
        """x with no pending reduction: a partial sum reduced (under --sp, scattered along
        its first dimension when the tokens divide)."""
        spec = self.spec.get(x)
        if not spec or spec[0] != "partial":
            return x
        if x in self.whole:
            return self.whole[x]
        shape = self.t[x]["shape"]
        # The tokens: the first dimension that divides, before the features (the last).
        d = next((k for k in range(len(shape) - 1) if shape[k] > 1 and shape[k] % self.tp == 0),
                 None)
        if self.sp and spec[1] == "sum" and d is not None:
            out = self._new(f"{x}.scattered", x,
                            shape[:d] + [shape[d] // self.tp] + shape[d + 1:])
            self._coll("reduce_scatter", x, out, why, reduction="sum", axis=d)
            self.spec[out] = ("shard", d)
        else:
            return self.whole_of(x, why)
        self.whole[x] = out
        return out

    def local_slice(self, x: str, dim: int) -> str:
        """This rank's block of a replicated x along dim (a local slice: no communication)."""
        key = (x, dim)
        if key not in self.local_slices:
            shape = list(self.t[x]["shape"])
            n = shape[dim] // self.tp
            starts = [0] * len(shape)
            ends = list(shape)
            starts[dim], ends[dim] = self.rank * n, (self.rank + 1) * n
            out = self._new(f"{x}.rank_block", x, shape[:dim] + [n] + shape[dim + 1:])
            self.ops.append({"kind": "move", "move": "slice", "name": out, "inputs": [x],
                             "outputs": [out], "attrs": {"starts": starts, "ends": ends,
                                                          "steps": [1] * len(shape)}})
            self.spec[out] = ("shard", dim)
            self.local_slices[key] = out
        return self.local_slices[key]

    def replicate(self, op: Dict[str, Any], why: str) -> None:
        op = dict(op)
        if any(self.spec.get(x) for x in op["inputs"]):
            self.replicated.append(f"{op.get('name', op['outputs'][0])}: {why}")
        op["inputs"] = [self.whole_of(x, why) for x in op["inputs"]]
        for o in op["outputs"]:
            self.spec[o] = None
        self.ops.append(op)

    def _set_out(self, out: str, spec: Spec) -> None:
        self.spec[out] = spec
        if spec and spec[0] == "shard":
            s = self.t[out]["shape"]
            self.t[out]["shape"] = s[:spec[1]] + [s[spec[1]] // self.tp] + s[spec[1] + 1:]

    def _view_dim(self, x: str, d: int, dst: List[int]) -> Optional[int]:
        """The dimension of a reshape of x (sharded along d) into dst that holds the same
        blocks: the one after the same number of elements, if the ranks divide it."""
        prefix = _prod(self.full_shape(x)[:d])
        return next((e for e in range(len(dst)) if _prod(dst[:e]) == prefix
                     and dst[e] > 1 and dst[e] % self.tp == 0), None)

    # -- ops ----------------------------------------------------------------------------
    def run(self) -> None:
        self.consumers: Dict[str, List[Dict[str, Any]]] = {}
        for op in self.g["ops"]:
            for x in op["inputs"]:
                self.consumers.setdefault(x, []).append(op)
        self.wanted = self._wanted_gradients()
        offsets_of = self._strided_offset_targets()
        for op in self.g["ops"]:
            kind = op["kind"]
            if kind == "einsum":
                self.einsum(op)
            elif kind == "move":
                self.move(op)
            elif kind == "opaque" and op.get("function") == "strided_offsets" \
                    and op["outputs"][0] in offsets_of:
                self.strided_offsets(op, offsets_of[op["outputs"][0]])
            else:
                self.replicate(op, f"a {kind} op has no sharding rule")

    def einsum(self, op: Dict[str, Any]) -> None:
        op = copy.deepcopy(op)
        op["inputs"] = [self.settle(x, f"{op['name']} needs the reduced value")
                        for x in op["inputs"]]
        extents = {i["name"]: i["extent"] for i in op["indices"]}

        def var_at(sub: str, size: int) -> Optional[str]:
            terms = _terms(sub)
            if not terms:
                return None
            if any(v is None and k != 0 for v, k in terms):
                return None
            # An index of extent 1 reads only 0: its term says nothing of the layout.
            vars_ = [(v, k) for v, k in terms if v is not None and extents[v] > 1]
            if not vars_:
                return None
            outer = max(vars_, key=lambda vk: vk[1])
            # A mixed-radix composition outer*c + inner... with the outer index on top.
            if _prod(extents[v] for v, _ in vars_) != size or outer[1] * extents[outer[0]] != size:
                return None
            return outer[0]

        cands: List[Tuple[str, int, bool]] = []  # (var, operand, from a weight)
        for n, x in enumerate(op["inputs"]):
            spec = self.spec.get(x)
            if spec and spec[0] == "flat":
                v = self._flat_operand(op, n, spec, extents)
                cands.append((v, n, False))
            elif spec:
                sub = op["operands"][n]["subscript"][spec[1]]
                v = var_at(sub, self.full_shape(x)[spec[1]])
                if v is None:
                    op["inputs"][n] = self.whole_of(x, f"{op['name']} reads it along no index")
                else:
                    cands.append((v, n, self.t[x]["role"] == "weight"))
        if not cands:
            out = op["outputs"][0]
            if out in self.wanted and self._shard_wanted(op, extents, self.wanted[out]):
                return
            self.ops.append(op)
            self._set_out(out, None)
            return
        chosen = next((c for c in cands if c[2]), cands[0])[0]
        for v, n, _ in cands:
            if v != chosen:
                op["inputs"][n] = self.whole_of(op["inputs"][n],
                                                f"{op['name']} is sharded along another index")
        mask = " ".join(op.get("mask", []))
        if extents[chosen] % self.tp or re.search(rf"\b{re.escape(chosen)}\b", mask):
            self.replicate(op, f"index {chosen} does not divide or is masked")
            return
        for n, x in enumerate(op["inputs"]):
            if self.spec.get(x):
                continue
            for d, sub in enumerate(op["operands"][n]["subscript"]):
                if re.search(rf"\b{re.escape(chosen)}\b", sub):
                    if var_at(sub, self.t[x]["shape"][d]) != chosen:
                        self.replicate(op, f"{x} reads index {chosen} in {sub}")
                        return
                    op["inputs"][n] = self.local_slice(x, d)
        for i in op["indices"]:
            if i["name"] == chosen:
                i["extent"] //= self.tp
        out = op["outputs"][0]
        out_dim = next((d for d, sub in enumerate(op["output"])
                        if re.search(rf"\b{re.escape(chosen)}\b", sub)), None)
        if out_dim is not None:
            if var_at(op["output"][out_dim], self.t[out]["shape"][out_dim]) != chosen:
                self.replicate(op, f"its output reads index {chosen} in {op['output'][out_dim]}")
                return
            self._set_out(out, ("shard", out_dim))
        elif op["reduce"] in REDUCTIONS:
            self._set_out(out, ("partial", REDUCTIONS[op["reduce"]]))
        else:
            self.replicate(op, f"a {op['reduce']} reduction over a sharded index")
            return
        self.ops.append(op)

    def _flat_operand(self, op: Dict[str, Any], n: int, spec, extents) -> str:
        """An einsum reading a rank's flattened block through one strided subscript (a
        transpose written over the flat view): the subscript rewritten to the block's own
        strides; the index of the sharded dimension returned."""
        _, root, d = spec
        subs = op["operands"][n]["subscript"]
        terms = _terms(subs[0]) if len(subs) == 1 else None
        if not terms or any(v is None for v, _ in terms):
            raise ShardError(f"{op['name']}: reads a rank's flattened block through {subs}")
        full = [_prod(root[j + 1:]) for j in range(len(root))]
        local_root = list(root)
        local_root[d] //= self.tp
        local = [_prod(local_root[j + 1:]) for j in range(len(root))]
        dims = {}
        for v, k in terms:
            if extents[v] == 1:  # always 0: its term reads nothing
                continue
            js = [j for j in range(len(root)) if full[j] == k and j not in dims.values()]
            js = [j for j in js if root[j] == extents[v]] or js
            if not js:
                raise ShardError(f"{op['name']}: term {v}*{k} of {subs[0]} strides no dimension")
            dims[v] = js[0]
        sharded = [v for v, j in dims.items() if j == d]
        if len(sharded) != 1:
            raise ShardError(f"{op['name']}: {subs[0]} does not read the sharded dimension")
        op["operands"][n]["subscript"] = ["+".join(
            f"{v}*{local[dims[v]] if v in dims else k}" for v, k in terms)]
        return sharded[0]

    def _shard_wanted(self, op: Dict[str, Any], extents, d: int) -> bool:
        """A weight's gradient made from replicated operands only (the head's, from the
        loss's all-ones gradient): each rank computes its block of it, reading its slice of
        the operands along the index of the weight's sharded dimension."""
        sub = op["output"][d]
        if sub not in extents or extents[sub] % self.tp or op.get("mask"):
            return False
        reads = []
        for n, x in enumerate(op["inputs"]):
            for k, osub in enumerate(op["operands"][n]["subscript"]):
                if osub == sub:
                    reads.append((n, k))
                elif re.search(rf"\b{re.escape(sub)}\b", osub):
                    return False
        for n, k in reads:
            op["inputs"][n] = self.local_slice(op["inputs"][n], k)
        for i in op["indices"]:
            if i["name"] == sub:
                i["extent"] //= self.tp
        self.ops.append(op)
        self._set_out(op["outputs"][0], ("shard", d))
        return True

    def _wanted_gradients(self) -> Dict[str, int]:
        """einsum output -> the dimension along which a graph output it becomes (through
        views and copies of the same shape) is a sharded weight's gradient."""
        producer = {o: op for op in self.g["ops"] for o in op["outputs"]}
        out = {}
        for t in self.g["tensors"]:
            if t["role"] != "output":
                continue
            dims = [d for shape, d in self.grad_like if tuple(t["shape"]) == shape]
            if not dims:
                continue
            x = t["name"]
            while x in producer and producer[x]["kind"] == "move" \
                    and producer[x]["move"] in ("view", "copy") and len(producer[x]["inputs"]) == 1:
                x = producer[x]["inputs"][0]
            if x in producer and producer[x]["kind"] == "einsum" \
                    and self.t[x]["shape"] == t["shape"]:
                out[x] = dims[0]
            elif x in producer and producer[x]["kind"] == "move" \
                    and producer[x]["move"] == "scatter" and dims[0] == 0 \
                    and producer[x].get("attrs", {}).get("mode") == "take" \
                    and producer[x].get("attrs", {}).get("axis", 0) == 0:
                # An embedding's gradient: rows added into a table of zeros.
                out[x] = 0
                base = producer[x]["inputs"][0]
                if base in producer and producer[base]["kind"] == "einsum" \
                        and not producer[base]["inputs"]:
                    out[base] = 0
        return out

    def move(self, op: Dict[str, Any]) -> None:
        op = copy.deepcopy(op)
        kind, out = op["move"], op["outputs"][0]
        why = f"{op['name']} ({kind}) needs it whole"
        op["inputs"] = [self.settle(self.alias.get(x, x), f"{op['name']} needs the reduced value")
                        for x in op["inputs"]]
        if kind != "view" and any(x in self.alias for x in op["inputs"]):
            raise AssertionError("an aliased view read by a non-view")
        ins = op["inputs"]
        specs = [self.spec.get(x) for x in ins]
        if kind == "scatter" and out in self.wanted and specs[0] == ("shard", 0) \
                and not specs[1] and not specs[2]:
            return self.vocab_scatter(op)
        if not any(specs):
            self.ops.append(op)
            self._set_out(out, None)
            return
        attrs = op.get("attrs", {})
        if kind == "view" and specs[0][0] == "flat":
            _, root, d = specs[0]
            if list(self.t[out]["shape"]) == list(root):
                self.ops.append(op)
                return self._set_out(out, ("shard", d))
            raise ShardError(f"{op['name']}: a reshape of a rank's flattened block")
        if kind in ("cast", "copy") or (kind == "view" and len(ins) == 1):
            d = specs[0][1]
            if kind == "view":
                d = self._view_dim(ins[0], d, self.t[out]["shape"])
                if d is None and self.consumers.get(out) \
                        and all(c["kind"] == "move" and c["move"] == "view"
                                for c in self.consumers[out]):
                    # A reshape into a shape that splits the block (a transpose of a size-1
                    # dimension written as flatten + view): its consumers reshape the
                    # source directly, the same elements in the same order.
                    self.alias[out] = ins[0]
                    return None
                if d is None and len(self.t[out]["shape"]) == 1:
                    # A flattening (the element view of an in-place update): this rank's
                    # block flattened, read only by element scatters into it and by the
                    # reshape back (its offsets are the rank's own: strided_offsets).
                    full = self.full_shape(ins[0])
                    self.ops.append(op)
                    self.spec[out] = ("flat", full, specs[0][1])
                    self.t[out]["shape"] = [_prod(self.t[ins[0]]["shape"])]
                    if ins[0] in self.local_offsets:
                        self.local_offsets.add(out)
                    return None
            if d is None:
                return self.replicate(op, f"{op['name']} (view) splits the sharded dimension")
            if kind == "view" and specs[0][0] == "shard":
                self.view_src[out] = ins[0]
            self.ops.append(op)
            return self._set_out(out, ("shard", d))
        if kind == "permute":
            d = list(attrs["perm"]).index(specs[0][1])
            self.ops.append(op)
            return self._set_out(out, ("shard", d))
        if kind == "slice":
            d = specs[0][1]
            full = self.full_shape(ins[0])[d]
            if attrs["starts"][d] == 0 and attrs["ends"][d] >= full and attrs["steps"][d] == 1:
                attrs["ends"][d] = full // self.tp
                self.ops.append(op)
                return self._set_out(out, ("shard", d))
            return self.replicate(op, why)
        if kind == "pad" and specs[0][0] == "shard" and len(ins) == 1:
            d = specs[0][1]
            pads = attrs.get("pads", [])
            if len(pads) == 2 * len(self.t[out]["shape"]) and pads[2 * d] == 0 \
                    and pads[2 * d + 1] == 0:  # padded along other dimensions only
                self.ops.append(op)
                return self._set_out(out, ("shard", d))
            return self.replicate(op, why)
        if kind == "concat" and len(set(specs)) == 1 and specs[0][1] != attrs.get("axis", 0):
            self.ops.append(op)
            return self._set_out(out, specs[0])
        if kind == "gather" and attrs.get("mode") == "take" and attrs.get("axis", 0) == 0 \
                and specs[0] == ("shard", 0) and not specs[1]:
            return self.vocab_gather(op)
        if kind == "scatter" and attrs.get("mode") == "elements" \
                and specs == [("shard", 0)] * 3 and ins[1] in self.local_offsets:
            self.ops.append(op)
            return self._set_out(out, ("shard", 0))
        if kind == "scatter" and attrs.get("mode") == "elements" and specs[0] \
                and specs[0][0] == "flat" and ins[1] in self.local_offsets \
                and all(sp_ and sp_[0] == "flat" for sp_ in specs):
            self.ops.append(op)
            self.spec[out] = specs[0]
            self.t[out]["shape"] = list(self.t[ins[0]]["shape"])
            return None
        self.replicate(op, why)

    def _local_rows(self, ids: str, rows: int, dtype: str) -> Tuple[str, str]:
        """(ids into this rank's block of `rows` rows, clamped to 0 outside it; a `dtype`
        mask, 1 where an id is in the block) for a vocab-parallel table."""
        lo, hi = self.rank * rows, (self.rank + 1) * rows
        idx_shape = self.t[ids]["shape"]
        names = [f"i{k}" for k in range(len(idx_shape))]
        box = [{"name": n, "extent": e} for n, e in zip(names, idx_shape)]
        inside = f"mul(ge($0,{lo}),lt($0,{hi}))"
        # The id arithmetic in f32 (exact below 2^24 rows; devices publish f32 vector
        # rates, not integer ones), the local ids cast back for the gather.
        if hi > 2 ** 24:
            raise ShardError(f"{ids}: {hi} rows are past f32's exact integers")
        fids = self._new(f"{ids}.f32", ids, idx_shape, "f32")
        self.ops.append({"kind": "move", "move": "cast", "name": fids, "inputs": [ids],
                         "outputs": [fids]})
        flocal = self._new(f"{ids}.local_rows_f32", ids, idx_shape, "f32")
        self.ops.append({"kind": "einsum", "name": flocal, "inputs": [fids],
                         "outputs": [flocal], "indices": box,
                         "operands": [{"subscript": names}], "output": names,
                         "reduce": "none", "combine": f"select({inside},sub($0,{lo}),0)"})
        local = self._new(f"{ids}.local_rows", ids, idx_shape)
        self.ops.append({"kind": "move", "move": "cast", "name": local, "inputs": [flocal],
                         "outputs": [local]})
        keep = self._new(f"{ids}.in_rows", ids, idx_shape, dtype)
        self.ops.append({"kind": "einsum", "name": keep, "inputs": [fids], "outputs": [keep],
                         "indices": box, "operands": [{"subscript": names}], "output": names,
                         "reduce": "none", "combine": f"select({inside},1,0)"})
        return local, keep

    def vocab_scatter(self, op: Dict[str, Any]) -> None:
        """An embedding's gradient, vocab-parallel: this rank adds the rows of the ids in
        its block into its block of the table (the others' rows masked to zero)."""
        base, ids, vals = op["inputs"]
        out = op["outputs"][0]
        local, keep = self._local_rows(ids, self.t[base]["shape"][0], self.t[vals]["dtype"])
        vshape = self.t[vals]["shape"]
        names = [f"i{k}" for k in range(len(vshape))]
        masked = self._new(f"{vals}.in_rows", vals, vshape)
        self.ops.append({"kind": "einsum", "name": masked, "inputs": [vals, keep],
                         "outputs": [masked],
                         "indices": [{"name": n, "extent": e} for n, e in zip(names, vshape)],
                         "operands": [{"subscript": names},
                                      {"subscript": names[:len(self.t[ids]["shape"])]}],
                         "output": names, "reduce": "none", "combine": "mul($0,$1)"})
        self.ops.append({**op, "inputs": [base, local, masked]})
        self._set_out(out, ("shard", 0))

    def vocab_gather(self, op: Dict[str, Any]) -> None:
        """A vocab-parallel embedding: this rank looks up the ids in its block of rows and
        gives zeros for the others (Megatron's VocabParallelEmbedding); the sum over ranks
        is the lookup."""
        table, ids = op["inputs"]
        out = op["outputs"][0]
        local, keep = self._local_rows(ids, self.t[table]["shape"][0], self.t[out]["dtype"])
        idx_shape = self.t[ids]["shape"]
        raw = self._new(f"{out}.rows", out, self.t[out]["shape"])
        self.ops.append({**op, "name": raw, "inputs": [table, local], "outputs": [raw]})
        oshape = self.t[out]["shape"]
        onames = [f"i{k}" for k in range(len(oshape))]
        obox = [{"name": n, "extent": e} for n, e in zip(onames, oshape)]
        self.ops.append({"kind": "einsum", "name": out, "inputs": [raw, keep], "outputs": [out],
                         "indices": obox,
                         "operands": [{"subscript": onames},
                                      {"subscript": onames[:len(idx_shape)]}],
                         "output": onames, "reduce": "none", "combine": "mul($0,$1)",
                         "origin": op.get("origin", {})})
        self._set_out(out, ("partial", "sum"))

    def _strided_offset_targets(self) -> Dict[str, str]:
        """strided_offsets output -> the tensor its scatter writes into (through views)."""
        producer = {o: op for op in self.g["ops"] for o in op["outputs"]}

        def base(x: str) -> str:
            while x in producer and producer[x]["kind"] == "move" \
                    and producer[x]["move"] == "view":
                x = producer[x]["inputs"][0]
            return x

        found = {}
        for op in self.g["ops"]:
            if op["kind"] == "move" and op["move"] == "scatter" and len(op["inputs"]) == 3:
                offs = base(op["inputs"][1])
                if offs in producer and producer[offs].get("function") == "strided_offsets":
                    found[offs] = base(op["inputs"][0])
        return found

    def strided_offsets(self, op: Dict[str, Any], target: str) -> None:
        """The element offsets of a window of `target` (an in-place cache update): with the
        target sharded along a dimension the window spans whole, the offsets are this
        rank's, into its block (local strides)."""
        spec = self.spec.get(target)
        out = op["outputs"][0]
        attrs = op.get("attrs", {})
        full = self.full_shape(target)
        win = self.t[out]["shape"]
        if not spec or spec[0] != "shard" or len(win) != len(full) \
                or win[spec[1]] != full[spec[1]]:
            return self.replicate(op, "the offsets of a window of a tensor that is not sharded")
        d = spec[1]
        strides = list(attrs["strides"])
        rest = attrs.get("offset", 0)
        start = []
        for s in strides:
            start.append(rest // s)
            rest %= s
        local = list(full)
        local[d] //= self.tp
        new_strides = [_prod(local[k + 1:]) for k in range(len(local))]
        op = copy.deepcopy(op)
        op["attrs"]["strides"] = new_strides
        op["attrs"]["offset"] = sum(a * s for a, s in zip(start, new_strides))
        for key in ("vector_flops", "bytes"):
            if isinstance(op.get(key), int):
                op[key] //= self.tp
        self.ops.append(op)
        self._set_out(out, ("shard", d))
        self.local_offsets.add(out)
        self._mark_offsets_views(out)

    def _mark_offsets_views(self, x: str) -> None:
        for op in self.g["ops"]:
            if op["kind"] == "move" and op["move"] == "view" and op["inputs"] == [x]:
                self.local_offsets.add(op["outputs"][0])
                self._mark_offsets_views(op["outputs"][0])

    # -- outputs ------------------------------------------------------------------------
    def finish(self, keep_sharded: Set[str]) -> Dict[str, Any]:
        renames: Dict[str, str] = {}
        for name in [n for n in self.order if self.t[n]["role"] == "output"]:
            spec = self.spec.get(name)
            if not spec or (spec[0] == "shard" and name in keep_sharded):
                continue
            # A weight's gradient stays with its shard (each rank updates its own block).
            if spec[0] == "shard" and (tuple(self.full_shape(name)), spec[1]) in self.grad_like:
                continue
            local = self._new(f"{name}.local", name, self.t[name]["shape"])
            self.spec[local] = spec
            renames[name] = local
        for op in self.ops:
            op["outputs"] = [renames.get(o, o) for o in op["outputs"]]
            op["inputs"] = [renames.get(i, i) for i in op["inputs"]]
            if op.get("name") in renames:
                op["name"] = renames[op["name"]]
        for name, local in renames.items():
            self.t[name]["shape"] = self.full_shape(local) if self.spec[local][0] == "shard" \
                else self.t[local]["shape"]
            spec = self.spec[local]
            why = "the step's output is whole"
            if spec[0] == "partial":
                self._coll("all_reduce", local, name, why, reduction=spec[1])
            else:
                self._coll("all_gather", local, name, why, axis=spec[1])
            self.spec[name] = None
        used = {x for op in self.ops for x in op["inputs"]} | \
            {x for op in self.ops for x in op["outputs"]}
        g = dict(self.g)
        g["tensors"] = [self.t[n] for n in self.order if n in used
                        or self.t[n]["role"] in ("input", "weight", "constant", "output")]
        g["ops"] = self.ops
        return g


def remove_dead_ops(g: Dict[str, Any]) -> Dict[str, Any]:
    """The graph without the ops no output depends on (the analysis drops them too)."""
    live = {t["name"] for t in g["tensors"] if t["role"] == "output"}
    keep = []
    for op in reversed(g["ops"]):
        if op["kind"] == "collective" and op.get("collective") in ("send", "recv") \
                or any(o in live for o in op["outputs"]):
            keep.append(op)
            live.update(op["inputs"])
    out = dict(g)
    out["ops"] = list(reversed(keep))
    used = {x for op in keep for x in op["inputs"] + op["outputs"]}
    out["tensors"] = [t for t in g["tensors"] if t["name"] in used or t["role"] == "output"]
    return out


def shard_graph(g: Dict[str, Any], tp: int, rank: int, weights: Dict[str, WeightRule],
                state: Optional[Dict[str, int]] = None, sp: bool = False,
                group: Optional[Dict[str, Any]] = None) -> Sharded:
    """Rank `rank` of `tp` of graph g (solar.graph.v1 JSON, dead ops removed first):
    `weights` the sharded weights by name, `state` the state inputs (a KV cache) sharded
    along a dimension and kept sharded in the outputs that update them in place."""
    if tp < 1 or not 0 <= rank < tp:
        raise ShardError(f"rank {rank} of tp={tp}")
    g = remove_dead_ops(g)
    state = dict(state or {})
    s = _Sharder(g, tp, rank, weights, state, sp, group or {"size": tp, "name": "tp"})
    if tp > 1:
        s.run()
    else:
        s.ops = copy.deepcopy(g["ops"])
    keep = _state_outputs(g, set(state))
    return Sharded(s.finish(keep), rank, tp, dict(weights), s.collectives, s.replicated)


def _state_outputs(g: Dict[str, Any], state: Set[str]) -> Set[str]:
    """Outputs written into a state input (through views and scatters): they stay sharded."""
    producer = {o: op for op in g["ops"] for o in op["outputs"]}
    out = set()
    for t in g["tensors"]:
        if t["role"] != "output":
            continue
        x = t["name"]
        while x in producer and producer[x]["kind"] == "move" \
                and producer[x]["move"] in ("view", "scatter", "copy"):
            x = producer[x]["inputs"][0]
        if x in state:
            out.add(t["name"])
    return out
