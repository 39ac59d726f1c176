"""The JAX capture's jaxpr walker: every equation into the recorder, nested jaxprs inlined,
RNG primitives expanded, loops kept as one repeat op or unrolled, a branch taken when its
index is known (the rules: capture.py's module docstring, docs/jax-frontend.md, "Loops")."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import collectives
from .collectives import refused
from .const_index import arange_jaxpr
from .encoding import (is_drop, is_int, is_key, is_literal, join_module, name_stack, np_dtype,
                       source_location)
from .recorder import FOLD_ELEMENTS, REPEAT_OP, BodyRecorder, Lit, Recorder, Unroll
from .rng import (EXPAND, EXPANDED_OPS, KEY_IDENTITY, NotExpandable, expansion, key_shape,
                  physical_aval, physical_params)

# The most iterations capture counts by evaluating a while_loop's condition (and the part of
# its body the condition depends on) to keep it as one repeat op; past it, the loop unrolls.
_MAX_COUNTED_TRIPS = 1_000_000

# Primitives whose body is inlined: name -> the parameter holding the body.
_INLINE = {
    "pjit": "jaxpr",
    "jit": "jaxpr",
    "closed_call": "call_jaxpr",
    "core_call": "call_jaxpr",
    "remat": "jaxpr",
    "remat2": "jaxpr",
    "checkpoint": "jaxpr",
    "custom_jvp_call": "call_jaxpr",
    "custom_vjp_call": "call_jaxpr",
    "custom_vjp_call_jaxpr": "fun_jaxpr",
    "custom_lin": None,
    "shard_map": "jaxpr",
    "xla_call": "call_jaxpr",
    "named_call": "call_jaxpr",
}
# Identity primitives: their output is their input (sharding annotations and the like).
_IDENTITY = {"stop_gradient", "optimization_barrier", "sharding_constraint", "device_put", "pvary",
             "mesh_cast", "reshard", "name"}


# Collectives over named mesh axes: inside a one-device shard_map (every axis of size 1) they
# are identities (Walker.collective).
_COLLECTIVES = {"psum", "pmax", "pmin", "ppermute", "pbroadcast", "psum_invariant", "pvary",
                "axis_index", "all_gather", "all_to_all", "psum_scatter", "reduce_scatter"}


class NeedsValues(Exception):
    """The jaxpr has control flow whose trip count or branch depends on data."""


def _count_equations(jaxpr, depth: int = 0) -> int:
    """Leaf equations a jaxpr emits when inlined and unrolled (a cost estimate for the cap)."""
    if depth > 32:
        return 1
    n = 0
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name in _INLINE:
            sub = _sub_jaxpr(eqn)
            n += _count_equations(sub[0], depth + 1) if sub else 1
        elif name == "scan":
            body = eqn.params["jaxpr"].jaxpr
            n += int(eqn.params["length"]) * (_count_equations(body, depth + 1) + 2)
        elif name in EXPAND:
            n += EXPANDED_OPS  # threefry's unrolled rounds and key schedule
        else:
            n += 1
    return n


def _sub_jaxpr(eqn):
    """(open jaxpr, consts) of an inlined primitive, or None."""
    key = _INLINE.get(eqn.primitive.name)
    cands = [key] if key else []
    cands += ["jaxpr", "call_jaxpr", "fun_jaxpr"]
    for k in cands:
        j = eqn.params.get(k)
        if j is None:
            continue
        if hasattr(j, "jaxpr") and hasattr(j, "consts"):
            return j.jaxpr, list(j.consts)
        if hasattr(j, "eqns"):
            return j, []
    return None


class Walker:
    """Walks a jaxpr into a Recorder, inlining and unrolling (see the module docstring)."""

    def __init__(self, rec: Recorder, need_values_raises: bool, unroll: bool = False):
        self.rec = rec
        # unroll: every loop unrolled (--unroll); else a scan or a while_loop with a static
        # trip count is one repeat op when its body can be recorded once.
        self.unroll = unroll
        self.in_body = isinstance(rec, BodyRecorder)
        self._iotas: Dict[int, int] = {}  # tensor id -> the dimension an iota counts along
        # With abstract inputs that could be made real, data-dependent control flow raises
        # NeedsValues (capture redoes the walk on values); otherwise it is recorded as one op.
        self.need_values_raises = need_values_raises
        self.budget = rec.unroll_cap
        self._expanding = rec.expanding  # the RNG primitives being expanded (innermost last)
        self._one_device_mesh = 0  # depth of one-device shard_map bodies being walked
        # The rank a sharded capture records (collectives.MeshRank), else None.
        self.mesh_rank = None

    # env: var -> tensor id or Lit
    def read(self, env, v):
        if is_literal(v):
            # Scalars stay literals (constants in the combine); an array literal is a constant.
            return Lit(v.val) if np.ndim(v.val) == 0 else self.const(v.val)
        return env[v]

    def walk(self, jaxpr, consts: Sequence[Any], args: Sequence[Any],
             const_refs: Optional[Sequence[Any]] = None) -> List[Any]:
        """Records the equations of `jaxpr` on `args` (refs: tensor ids or Lit); `consts`
        are the closed jaxpr's constant values, or `const_refs` refs made for them."""
        env: Dict[Any, Any] = {}
        refs = const_refs if const_refs is not None else [self.const(c) for c in consts]
        for v, c in zip(jaxpr.constvars, refs):
            env[v] = c
        for v, a in zip(jaxpr.invars, args):
            env[v] = a
        for eqn in jaxpr.eqns:
            ins = [self.read(env, v) for v in eqn.invars]
            outs = self.equation(eqn, ins)
            for v, o in zip(eqn.outvars, outs):
                if not is_drop(v):
                    env[v] = o
        return [self.read(env, v) for v in jaxpr.outvars]

    def const(self, c, role: str = "constant", name: Optional[str] = None):
        """A ref for a constant of a closed jaxpr (its value is known): scalars as literals,
        arrays as source tensors."""
        if np.ndim(c) == 0 and not is_key(getattr(c, "dtype", np.float32)):
            return Lit(np.asarray(c))
        iota = arange_jaxpr(np.asarray(c)) if not is_key(getattr(c, "dtype", np.float32)) \
            else None
        if iota is not None:  # positions (a local-window mask's): computed, not data
            return self.walk(iota.jaxpr, list(iota.consts), [])[0]
        return self.rec.source_tensor(c, role, name)

    # --- one equation
    def equation(self, eqn, ins: List[Any]) -> List[Any]:
        name = eqn.primitive.name
        saved = self.rec.file_line
        saved_module = self.rec.module
        f, line = source_location(eqn)
        if f and not self._expanding:
            self.rec.file_line = (f, line)
        if not self._expanding:  # an expansion's equations belong to the expanded one
            self.rec.module = join_module(saved_module, name_stack(eqn))
        try:
            if name in KEY_IDENTITY and len(ins) == 1:
                return list(ins)  # keys are held as their key data already
            if name in EXPAND:
                return self.expand(eqn, ins)
            if name in _INLINE:
                return self.inline(eqn, ins)
            if self._one_device_mesh and name in _COLLECTIVES:
                return self.collective(eqn, ins)
            if self.mesh_rank is not None:
                if self.mesh_rank.inside and name in _COLLECTIVES:
                    return collectives.record(self, eqn, ins)
                if not self.mesh_rank.inside:
                    raise refused(f"{self.rec.where()}jax::{name} outside the jax::shard_map: "
                                  "a sharded program is one shard_map from its inputs to its "
                                  "outputs (ops outside it run at global shapes under XLA's "
                                  "partitioner, which this route does not read)")
            if name in _IDENTITY and len(eqn.invars) == len(eqn.outvars):
                return list(ins)
            if name == "scan":
                return self.scan(eqn, ins)
            if name == "while":
                return self.while_loop(eqn, ins)
            if name == "cond":
                return self.cond(eqn, ins)
            if any(is_key(v.aval.dtype) for v in list(eqn.invars) + list(eqn.outvars)
                   if hasattr(v, "aval")):
                return self.key_op(eqn, ins)
            return self.leaf(eqn, ins)
        finally:
            self.rec.file_line = saved
            self.rec.module = saved_module

    def leaf(self, eqn, ins: List[Any], params=None, extra=None, bind_params=None,
             evaluate: bool = True) -> List[Any]:
        """Records one primitive equation (params: as recorded, default eqn.params) and
        evaluates it when its inputs are known (with bind_params, default eqn.params)."""
        name = eqn.primitive.name
        avals = [v.aval for v in eqn.outvars]
        if (evaluate and ins and all(isinstance(r, Lit) for r in ins)
                and all(np.ndim(r.value) == 0 for r in ins)
                and all(a.shape == () and not is_key(a.dtype) for a in avals)):
            # Scalar arithmetic on literals (threefry's key-schedule constants, masks): folded
            # into a literal, as XLA folds it; no op is recorded.
            res = eqn.primitive.bind(*[r.value for r in ins],
                                     **(eqn.params if bind_params is None else bind_params))
            res = res if eqn.primitive.multiple_results else [res]
            return [Lit(np.asarray(r)) for r in res]
        params = dict(eqn.params if params is None else params)
        for k in [k for k, v in params.items() if hasattr(v, "eqns") or hasattr(v, "jaxpr")]:
            params[k] = {"repr": f"<jaxpr: {len(_sub_jaxpr_of(params[k]).eqns)} equations>"}
        # Random bits the executor cannot reproduce (the RBG generators; threefry is expanded
        # into integer ops by `expand`): validation is given JAX's values.
        given = name in ("rng_bit_generator", "rng_uniform")
        if name == "sort":
            extra = dict(extra or {})
            extra["iota_operands"] = [self._is_iota(r, int(params.get("dimension", -1)))
                                      for r in ins]
        outs = self.rec.emit(name, ins, avals, params, extra, given=given)
        self.budget -= 1
        # Values: every equation in values mode; small ones with known inputs always.
        if name == "iota" and not self.rec.with_values:
            self._iota_value(outs[0], avals[0], params)
        vals = [self.rec._value(r) for r in ins]
        # Inside an RNG expansion nothing is folded without values mode: the draws decide no
        # loop or branch, and folding hundreds of threefry ops one by one is slow.
        known = all(v is not None for v in vals) and (self.rec.with_values
                                                      or not self.rec.expanding)
        # Folding (without eager values) is for small integer values and scalars only: loop
        # counters, slice starts, branch indices, pad values; each fold runs the primitive
        # once on the host.
        small = all((math.prod(a.shape) <= FOLD_ELEMENTS and is_int(a.dtype))
                    or (math.prod(a.shape) == 1 and not is_key(a.dtype)) for a in avals)
        if evaluate and known and (self.rec.with_values or small):
            res = eqn.primitive.bind(*vals, **(eqn.params if bind_params is None else bind_params))
            res = res if eqn.primitive.multiple_results else [res]
            for tid, r, a in zip(outs, res, avals):
                if self.rec.with_values:
                    self.rec.values[tid] = r
                if math.prod(a.shape) <= FOLD_ELEMENTS and not is_key(a.dtype):
                    self.rec.known[tid] = np.asarray(r)
        # Which tensors are an iota along which dimension (sort of (keys, iota) = argsort).
        if name == "iota":
            self._iotas[outs[0]] = int(eqn.params.get("dimension", 0))
        elif name == "broadcast_in_dim" and isinstance(ins[0], int) and ins[0] in self._iotas:
            d = self._iotas[ins[0]]
            self._iotas[outs[0]] = int(eqn.params["broadcast_dimensions"][d])
        return outs

    def _iota_value(self, tid: int, aval, params) -> None:
        """iota's value from its parameters (validation is given it: no executor kernel)."""
        shape = tuple(int(d) for d in aval.shape)
        dim = int(params.get("dimension", 0))
        idx = np.arange(shape[dim], dtype=np_dtype(aval.dtype))
        view = [1] * len(shape)
        view[dim] = shape[dim]
        arr = np.broadcast_to(idx.reshape(view), shape)
        self.rec.values[tid] = arr
        if arr.size <= FOLD_ELEMENTS:
            self.rec.known[tid] = np.array(arr)

    def _is_iota(self, ref, dimension: int) -> bool:
        return isinstance(ref, int) and self._iotas.get(ref) == dimension

    def expand(self, eqn, ins):
        """An RNG primitive replaced by its implementation on the keys' uint32 data (the
        jaxpr of the function JAX lowers it with), so the graph computes the same bits with
        integer ops; ops recorded inside carry `expanded_from` and the primitive's location."""
        import jax

        name = eqn.primitive.name
        try:
            f = expansion(eqn)
        except NotExpandable as e:
            return self.unsupported(eqn, ins, str(e))
        avals = [physical_aval(v.aval) for v in eqn.invars]
        closed = jax.make_jaxpr(f)(*avals)
        self._expanding.append(name)
        try:
            outs = self.walk(closed.jaxpr, list(closed.consts), ins)
        finally:
            self._expanding.pop()
        return [self.rec.ref_for_literal(o, physical_aval(v.aval))
                for o, v in zip(outs, eqn.outvars)]

    def key_op(self, eqn, ins):
        """A structural primitive (slice, squeeze, reshape, ...) on a typed PRNG key array:
        recorded on the key data, its parameters extended over the trailing key dimension."""
        params = physical_params(eqn)
        if params is None:
            return self.unsupported(eqn, ins, f"jax::{eqn.primitive.name} on a typed PRNG key "
                                    "array is not supported (slice, squeeze, reshape, "
                                    "broadcast_in_dim, concatenate, transpose, rev and "
                                    "dynamic_slice are)")
        if eqn.primitive.name == "dynamic_slice":
            key = eqn.invars[0].aval
            ins = list(ins) + [Lit(np.int32(0))] * len(key_shape(key))
        return self.leaf(eqn, ins, params=params, bind_params=params)

    def unsupported(self, eqn, ins, reason: str):
        """An equation the capture cannot record faithfully: one `jax::unsupported` op that
        lowering reports as unanalyzed with the reason (never evaluated)."""
        self.rec.notes.append(f"jax::{eqn.primitive.name}: {reason}")
        avals = [physical_aval(v.aval) for v in eqn.outvars]
        outs = self.rec.emit("unsupported", ins, avals, {},
                             {"primitive": eqn.primitive.name, "reason": reason})
        self.budget -= 1
        return outs

    def inline(self, eqn, ins):
        sub = _sub_jaxpr(eqn)
        if sub is None:
            return self.leaf(eqn, ins)
        jaxpr, consts = sub
        name = eqn.primitive.name
        if name == "shard_map":
            mesh = eqn.params.get("mesh")
            size = getattr(mesh, "size", 1)
            if size != 1 and self.mesh_rank is not None:
                n_skip = len(ins) - len(jaxpr.invars)
                return collectives.enter(self, eqn, ins, jaxpr, consts, ins[n_skip:])
            if size != 1:
                shape = getattr(mesh, "shape", {})
                axes = ", ".join(f"{k}={v}" for k, v in dict(shape).items()) if shape else "?"
                raise refused(
                    f"{self.rec.where()}jax::shard_map over a {size}-device mesh ({axes}) is "
                    "not analyzable: each device runs the body on its own shard and the "
                    "collectives in it (psum, all_gather, ppermute, ...) move data between "
                    "devices, which a single-device EinsumGraph does not model; analyze the "
                    "per-device body, or declare the mesh's size (DEVICES = N) to capture "
                    "each rank (docs/distributed.md)")
        n_skip = int(eqn.params.get("num_consts", 0)) if name == "custom_vjp_call_jaxpr" else 0
        args = ins[n_skip:] if len(jaxpr.invars) == len(ins) - n_skip else ins
        if len(jaxpr.invars) != len(args):
            args = ins[len(ins) - len(jaxpr.invars):]
        if name != "shard_map":
            return self.walk(jaxpr, consts, args)
        self._one_device_mesh += 1  # collectives in the body run over axes of size 1
        try:
            return self.walk(jaxpr, consts, args)
        finally:
            self._one_device_mesh -= 1

    def collective(self, eqn, ins):
        """A collective inside a one-device shard_map (every mesh axis of size 1): a sum,
        max, min, permutation, gather or scatter over one device is its input (an untiled
        all_gather or psum_scatter adds or drops a dimension of size 1: a free reshape), and
        the device's index is 0."""
        if eqn.primitive.name == "axis_index":
            return [Lit(np.int32(0))]
        if len(eqn.invars) != len(eqn.outvars):
            return self.unsupported(eqn, ins, f"jax::{eqn.primitive.name} with operands and "
                                    "results that do not pair up")
        outs = []
        for r, vi, vo in zip(ins, eqn.invars, eqn.outvars):
            if tuple(vi.aval.shape) == tuple(vo.aval.shape):
                outs.append(r)
                continue
            r = self.rec.ref_for_literal(r, vi.aval)
            outs.append(self._synth("reshape", [r], [vo.aval],
                                    {"new_sizes": tuple(vo.aval.shape), "dimensions": None})[0])
        return outs

    def opaque_loop(self, eqn, ins, reason: str):
        """A loop or branch recorded as one op: lowering reports it unanalyzed with reason."""
        self.rec.notes.append(f"jax::{eqn.primitive.name}: {reason}")
        params = {k: v for k, v in eqn.params.items()
                  if not (hasattr(v, "eqns") or hasattr(v, "jaxpr") or isinstance(v, (list, tuple))
                          and v and (hasattr(v[0], "eqns") or hasattr(v[0], "jaxpr")))}
        return self.leaf(eqn, ins, params=params, extra={"reason": reason})

    def _cap_message(self, what: str) -> str:
        """Why a loop is refused: the graph has no repeat construct, loops are unrolled, and
        this one would pass the cap (docs/jax-frontend.md, "Loops")."""
        return (f"{self.rec.where()}{what} exceeds the unroll cap of {self.rec.unroll_cap} ops "
                "per capture: this loop is analyzed by unrolling it (--unroll, or a body that "
                "cannot be recorded once: the capture notes say why); analyze fewer "
                "iterations (--set a smaller trip count) or raise the cap "
                "(SOLAR_JAX_UNROLL_CAP=N, or unroll_cap= in solar.analyze_jax)")

    # --- loops kept as loops: one repeat op over a body recorded once
    def _body_walker(self, brec: "BodyRecorder") -> "Walker":
        w = Walker(brec, False, self.unroll)
        w.in_body = True
        w.budget = self.budget
        w._one_device_mesh = self._one_device_mesh
        w.mesh_rank = self.mesh_rank
        return w

    def repeat(self, eqn, ins, body, consts, carry, xs, trips: int, reverse: bool,
               what: str, finals: Optional[Dict[int, Any]] = None) -> List[Any]:
        """One `jax::scan_repeat` op: `body` (a closed jaxpr over consts + carry + x slices,
        returning the next carry + `stacked` per-iteration values) walked once on fresh
        params. Raises Unroll when the body cannot be recorded that way."""
        rec = self.rec
        bj = body.jaxpr
        nc, ncarry = len(consts), len(carry)
        in_avals = [physical_aval(v.aval) for v in bj.invars]
        m = rec.mark()
        budget = self.budget
        try:
            brec = BodyRecorder(rec)
            bw = self._body_walker(brec)
            args: List[Any] = []
            carried: List[Tuple[int, int]] = []  # (outer tensor, body param)
            sliced: List[Tuple[int, int]] = []
            for k, ref in enumerate(consts):
                # A scalar literal stays a literal (a constant of the combine), as unrolled.
                args.append(ref if isinstance(ref, Lit) else brec.bind_outer(ref))
            for k, ref in enumerate(carry):
                outer = rec.ref_for_literal(ref, in_avals[nc + k])
                pid = brec.param(in_avals[nc + k], varying=True)
                carried.append((outer, pid))
                args.append(pid)
            for k, ref in enumerate(xs):
                outer = rec.ref_for_literal(ref, physical_aval(eqn.invars[-len(xs) + k].aval))
                pid = brec.param(in_avals[nc + ncarry + k], varying=True)
                sliced.append((outer, pid))
                args.append(pid)
            outs = bw.walk(bj, list(body.consts), args)
            out_avals = [physical_aval(v.aval) for v in bj.outvars]
            outs = [brec.ref_for_literal(o, a) for o, a in zip(outs, out_avals)]
            values = self._loop_values(eqn, ins)
        except Unroll:
            rec.rollback(m)
            self.budget = budget
            raise
        self.budget = bw.budget - 1
        inputs, operands = [], []
        for outer, pid in brec.hoisted:
            operands.append(outer)
            inputs.append({"how": "invariant", "param": pid})
        for k, (outer, pid) in enumerate(carried):
            operands.append(outer)
            inputs.append({"how": "carried", "param": pid, "next": outs[k]})
        for outer, pid in sliced:
            operands.append(outer)
            inputs.append({"how": "sliced", "param": pid, "axis": 0})
        outputs = [{"how": "last", "value": o} for o in outs[:ncarry]]
        outputs += [{"how": "stacked", "value": o, "axis": 0} for o in outs[ncarry:]]
        avals = [physical_aval(v.aval) for v in eqn.outvars]
        res = rec.emit(REPEAT_OP, operands, avals, {},
                       {"primitive": eqn.primitive.name, "trips": int(trips),
                        "reverse": bool(reverse), "inputs": inputs, "outputs": outputs,
                        "body": brec.body(outs)})
        values = list(values or [None] * len(res))
        for k, v in (finals or {}).items():
            if values[k] is None:
                values[k] = v
        for tid, a, v in zip(res, avals, values):
            if v is None:
                continue
            if rec.with_values:
                rec.values[tid] = v
            if math.prod(a.shape) <= FOLD_ELEMENTS and is_int(a.dtype):
                rec.known[tid] = np.asarray(v)
        rec.note(f"{rec.where()}jax::{eqn.primitive.name}{what}: kept as a loop (one repeat "
                 f"op of {trips} iterations over a {len(brec.ops)}-op body)")
        return res

    def _loop_values(self, eqn, ins) -> Optional[List[Any]]:
        """The loop's outputs evaluated on its inputs' values: every output in values mode
        (else Unroll), small integer ones (a counter's final value) when every input is
        known; None otherwise."""
        rec = self.rec
        vals = [rec._value(r) for r in ins]
        small = all(math.prod(v.aval.shape) <= FOLD_ELEMENTS and is_int(v.aval.dtype)
                    for v in eqn.outvars)
        if any(v is None for v in vals) or not (rec.with_values or small):
            if rec.with_values:
                raise Unroll("values mode without every input's value")
            return None
        try:
            res = eqn.primitive.bind(*vals, **eqn.params)
        except Exception as e:  # noqa: BLE001 (typed keys and the like: unrolled instead)
            if rec.with_values:
                raise Unroll(f"evaluating the loop failed: {e}") from None
            return None
        return [np.asarray(r) if not rec.with_values else r for r in res]

    def _kept_as_loop(self, what: str, record) -> Optional[List[Any]]:
        """record(): the loop as one repeat op; or None, noting why `what` is unrolled
        instead (a body that one symbolic walk cannot capture)."""
        try:
            return record()
        except Unroll as e:
            self.rec.note(f"{self.rec.where()}{what} unrolled: {e}")
            return None

    # --- scan: one repeat op, or the body once per iteration
    def scan(self, eqn, ins):
        p = eqn.params
        length = int(p["length"])
        if not self.unroll and length > 0:
            nc, ncarry = int(p["num_consts"]), int(p["num_carry"])
            outs = self._kept_as_loop(f"jax::scan of {length} iterations", lambda: self.repeat(
                eqn, ins, p["jaxpr"], ins[:nc], ins[nc:nc + ncarry], ins[nc + ncarry:], length,
                bool(p.get("reverse", False)), ""))
            if outs is not None:
                return outs
        return self.scan_unrolled(eqn, ins)

    def scan_unrolled(self, eqn, ins):
        p = eqn.params
        length = int(p["length"])
        body = p["jaxpr"]
        nc, ncarry = int(p["num_consts"]), int(p["num_carry"])
        per_iter = _count_equations(body.jaxpr) + 2 * (len(body.jaxpr.invars) - nc - ncarry)
        total = length * per_iter
        if length == 0:
            return self.opaque_loop(eqn, ins, "scan of length 0 (empty stacked outputs)")
        if total > self.budget:
            raise refused(self._cap_message(f"jax::scan of {length} iterations x {per_iter} "
                                            f"ops ({total} ops)"))
        consts, carry, xs = ins[:nc], ins[nc:nc + ncarry], ins[nc + ncarry:]
        # Typed PRNG keys as their key data: the plumbing slices and stacks that.
        xs_avals = [physical_aval(v.aval) for v in eqn.invars[nc + ncarry:]]
        ys_per_iter: List[List[Any]] = []
        order = range(length - 1, -1, -1) if p.get("reverse", False) else range(length)
        body_jaxpr, body_consts = body.jaxpr, list(body.consts)
        x_avals = [physical_aval(v.aval) for v in body_jaxpr.invars[nc + ncarry:]]
        for i in order:
            x_i = [self.take(x, a, xa, i) for x, a, xa in zip(xs, xs_avals, x_avals)]
            outs = self.walk(body_jaxpr, body_consts, list(consts) + list(carry) + x_i)
            carry = outs[:ncarry]
            ys_per_iter.append(outs[ncarry:])
        if p.get("reverse", False):
            ys_per_iter.reverse()
        y_avals = [physical_aval(v.aval) for v in eqn.outvars[ncarry:]]
        y_body_avals = [physical_aval(v.aval) for v in body_jaxpr.outvars[ncarry:]]
        ys = [self.stack([it[k] for it in ys_per_iter], y_avals[k], y_body_avals[k])
              for k in range(len(y_avals))]
        carry = [self.rec.ref_for_literal(c, physical_aval(v.aval))
                 for c, v in zip(carry, eqn.outvars)]
        return list(carry) + ys

    def take(self, x, aval, x_aval, i: int):
        """Iteration i of a scanned-over operand: a slice of row i, reshaped without it."""
        shape = list(aval.shape)
        start = [i] + [0] * (len(shape) - 1)
        limit = [i + 1] + shape[1:]
        sliced = self._synth("slice", [x], [_with_shape(aval, [1] + shape[1:])],
                             {"start_indices": tuple(start), "limit_indices": tuple(limit),
                              "strides": None})[0]
        return self._synth("reshape", [sliced], [x_aval],
                           {"new_sizes": tuple(shape[1:]), "dimensions": None})[0]

    def stack(self, parts: List[Any], aval, part_aval):
        """The stacked per-iteration outputs of a scan: each viewed as a row, concatenated."""
        rows = []
        for part in parts:
            part = self.rec.ref_for_literal(part, part_aval)
            shape = [1] + list(part_aval.shape)
            rows.append(self._synth("broadcast_in_dim", [part], [_with_shape(part_aval, shape)],
                                    {"shape": tuple(shape),
                                     "broadcast_dimensions": tuple(range(1, len(shape))),
                                     "sharding": None})[0])
        if len(rows) == 1:
            return self._synth("reshape", rows, [aval], {"new_sizes": tuple(aval.shape),
                                                         "dimensions": None})[0]
        return self._synth("concatenate", rows, [aval], {"dimension": 0})[0]

    def _synth(self, name: str, ins, avals, params):
        """An op the recorder adds itself (loop plumbing), evaluated like any equation."""
        outs = self.rec.emit(name, ins, avals, params, {"synthetic": True})
        self.budget -= 1
        vals = [self.rec._value(r) for r in ins]
        if all(v is not None for v in vals) and (
                self.rec.with_values or all(math.prod(a.shape) <= FOLD_ELEMENTS for a in avals)):
            import jax.numpy as jnp

            if name == "slice":
                idx = tuple(slice(s, e) for s, e in zip(params["start_indices"],
                                                        params["limit_indices"]))
                res = np.asarray(vals[0])[idx]
            elif name in ("reshape", "broadcast_in_dim"):
                res = np.asarray(vals[0]).reshape(avals[0].shape)
            else:
                res = np.asarray(jnp.concatenate([jnp.asarray(v) for v in vals], axis=0))
            if self.rec.with_values:
                self.rec.values[outs[0]] = res
            if res.size <= FOLD_ELEMENTS:
                self.rec.known[outs[0]] = res
        return outs

    # --- while: unrolled when the condition is known each iteration
    def _static_trips(self, eqn, ins) -> Optional[Tuple[int, Dict[int, Any]]]:
        """A while_loop's trip count when the carries its condition depends on (and the
        carries those depend on through the body) are known: the condition and that part of
        the body (dead-code eliminated) evaluated iteration by iteration. Also the final
        values of those carries. None when unknown (or past _MAX_COUNTED_TRIPS)."""
        from jax._src import core as jcore
        from jax._src.interpreters import partial_eval as pe

        p = eqn.params
        cn, bn = int(p["cond_nconsts"]), int(p["body_nconsts"])
        ncarry = len(ins) - cn - bn
        cond, body = p["cond_jaxpr"], p["body_jaxpr"]
        try:
            cj = pe.convert_constvars_jaxpr(cond.jaxpr)
            bj0 = pe.convert_constvars_jaxpr(body.jaxpr)
            ncc, nbc = len(cond.consts), len(body.consts)
            cj, used_c = pe.dce_jaxpr(cj, [True])
            need = [bool(used_c[ncc + cn + k]) for k in range(ncarry)]
            while True:
                bj, used_b = pe.dce_jaxpr(bj0, need)
                new = [need[k] or bool(used_b[nbc + bn + k]) for k in range(ncarry)]
                if new == need:
                    break
                need = new
        except Exception:  # noqa: BLE001 (a JAX without these internals: unrolled)
            return None
        # Folded values only (literals, small integers): a trip count that real inputs
        # decide (values mode) is a property of those inputs; that loop unrolls as before.
        def folded(ref):  # what constant folding keeps: small integers, scalars
            v = ref.value if isinstance(ref, Lit) else self.rec.known.get(ref)
            if v is None:
                return None
            a = np.asarray(v)
            return v if (a.size <= FOLD_ELEMENTS and is_int(a.dtype)) or a.size == 1 else None

        cvals = list(cond.consts) + [folded(r) for r in ins[:cn]]
        bvals = list(body.consts) + [folded(r) for r in ins[cn:cn + bn]]
        state = {k: folded(ins[cn + bn + k]) for k in range(ncarry) if need[k]}
        if any(v is None for v, u in zip(cvals, used_c) if u) or \
                any(v is None for v, u in zip(bvals, used_b) if u) or \
                any(v is None for v in state.values()):
            return None
        cargs = [v for v, u in zip(cvals, used_c) if u]
        bargs = [v for v, u in zip(bvals, used_b) if u]
        cread = [k for k in range(ncarry) if used_c[ncc + cn + k]]
        bread = [k for k in range(ncarry) if used_b[nbc + bn + k]]
        bout = [k for k in range(ncarry) if need[k]]
        trips = 0
        try:
            while True:
                (pred,) = jcore.eval_jaxpr(cj, [], *cargs, *[state[k] for k in cread])
                if not bool(np.asarray(pred)):
                    break
                if trips >= _MAX_COUNTED_TRIPS:
                    return None
                outs = jcore.eval_jaxpr(bj, [], *bargs, *[state[k] for k in bread])
                state.update(zip(bout, outs))
                trips += 1
        except Exception:  # noqa: BLE001
            return None
        return trips, {k: np.asarray(v) for k, v in state.items()}

    def while_loop(self, eqn, ins):
        if not self.unroll:
            static = self._static_trips(eqn, ins)
            if static is not None and static[0] > 0:
                trips, finals = static
                p = eqn.params
                cn, bn = int(p["cond_nconsts"]), int(p["body_nconsts"])
                outs = self._kept_as_loop(f"jax::while of {trips} iterations", lambda: self.repeat(
                    eqn, ins, p["body_jaxpr"], ins[cn:cn + bn], ins[cn + bn:], [], trips, False,
                    "", finals))
                if outs is not None:
                    return outs
        return self.while_unrolled(eqn, ins)

    def while_unrolled(self, eqn, ins):
        p = eqn.params
        cn, bn = int(p["cond_nconsts"]), int(p["body_nconsts"])
        cconsts, bconsts, carry = ins[:cn], ins[cn:cn + bn], ins[cn + bn:]
        cond, body = p["cond_jaxpr"], p["body_jaxpr"]
        m = self.rec.mark()
        budget = self.budget
        per_iter = _count_equations(cond.jaxpr) + _count_equations(body.jaxpr)
        trips = 0
        while True:
            (pred,) = self.walk(cond.jaxpr, list(cond.consts), list(cconsts) + list(carry))
            value = self.rec._value(pred)
            if value is None:
                self.rec.rollback(m)
                self.budget = budget
                if self.in_body:
                    raise Unroll("a while_loop in the body whose trip count is not known "
                                  "when the body is recorded once")
                if self.need_values_raises:
                    raise NeedsValues("while_loop whose trip count depends on data")
                return self.opaque_loop(eqn, ins, "while_loop whose trip count is known only "
                                        "at run time: analyze with real inputs to count it")
            if not bool(np.asarray(value)):
                break
            if per_iter > self.budget:
                self.rec.rollback(m)
                self.budget = budget
                raise refused(self._cap_message(f"jax::while past {trips} iterations of "
                                                f"{per_iter} ops"))
            carry = self.walk(body.jaxpr, list(body.consts), list(bconsts) + list(carry))
            trips += 1
        self.rec.notes.append(f"jax::while: {trips} iterations unrolled")
        return [self.rec.ref_for_literal(c, v.aval) for c, v in zip(carry, eqn.outvars)]

    # --- cond/switch: the branch taken
    def cond(self, eqn, ins):
        branches = eqn.params["branches"]
        index, ops = ins[0], ins[1:]
        value = self.rec._value(index)
        if value is None:
            if self.in_body:
                raise Unroll("a cond/switch in the body whose branch is not known when the "
                              "body is recorded once (it depends on the iteration or on data)")
            if self.need_values_raises:
                raise NeedsValues("cond/switch whose branch depends on data")
            sizes = ", ".join(f"branch {k}: {_count_equations(b.jaxpr)} equations"
                              for k, b in enumerate(branches))
            return self.opaque_loop(eqn, ins, "cond/switch whose branch is chosen at run time "
                                    f"({sizes}): analyze with real inputs to take one")
        k = int(np.clip(int(np.asarray(value)), 0, len(branches) - 1))
        self.rec.notes.append(f"jax::cond: branch {k} of {len(branches)} taken")
        b = branches[k]
        outs = self.walk(b.jaxpr, list(b.consts), ops)
        return [self.rec.ref_for_literal(o, v.aval) for o, v in zip(outs, eqn.outvars)]


def _sub_jaxpr_of(v):
    return v.jaxpr if hasattr(v, "jaxpr") and hasattr(v, "consts") else v


def _with_shape(aval, shape):
    import jax

    return jax.ShapeDtypeStruct(tuple(shape), aval.dtype)

