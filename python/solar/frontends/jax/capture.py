"""The JAX recorder: a jaxpr walked equation by equation into an OpTrace (solar.optrace.v1,
`"frontend": "jax"`), one op per primitive equation (`jax::dot_general`, ...).

The program is traced with `jax.make_jaxpr` on abstract values (shapes and dtypes, no data,
any size). Nested jaxprs are inlined: `jit`/`pjit`, `closed_call`, `custom_jvp_call`,
`custom_vjp_call`, `remat`/`checkpoint`, single-device `shard_map`. Loops are unrolled so
that every iteration's work is in the graph exactly: `scan` (and `fori_loop`, which JAX
turns into a scan when its bounds are static) emits its body `length` times; a
`while_loop` whose condition can be evaluated at capture time (constant folding of small
integer values: the loop counter of a `fori_loop` with traced bounds) is unrolled the same
way. A `while_loop` whose trip count depends on data, and a `cond`/`switch` whose branch
does, need real inputs: the capture is redone on the real values (`values=True`, every
equation evaluated eagerly as it is recorded), or, with abstract inputs only, the loop or
branch is recorded as one op that lowering reports as `unanalyzed` with the reason.

Op encoding (docs/jax-frontend.md): `args` holds `operands` (a list: `{"tensor": id}`, with
`"value"` when capture knows the value of a small integer tensor, or a JSON number for a
literal) and every primitive parameter by its name (tuples as lists, dtypes as
`{"dtype": name}`, dimension-number records as objects, enums by name, anything else as
`{"repr": ...}`).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import os
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

SCHEMA = "solar.optrace.v1"
# Upper bound on the ops one capture emits by unrolling loops: past it a loop is recorded as
# one op (unanalyzed, with the reason) instead of growing the trace without limit.
UNROLL_CAP = 200_000
# Capture evaluates equations whose inputs are all known and whose outputs are at most this
# many elements (loop counters, slice starts, iota), to resolve trip counts and offsets.
_FOLD_ELEMENTS = 64

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


class NeedsValues(Exception):
    """The jaxpr has control flow whose trip count or branch depends on data."""


class ProgramFormatError(ValueError):
    """A JAX program file that does not define forward/get_inputs or Model/get_inputs."""


# ---------------------------------------------------------------- encoding


def _dtype_name(dtype) -> str:
    return np.dtype(dtype).name if not _is_key(dtype) else "uint32"


def _is_key(dtype) -> bool:
    try:
        import jax

        return jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)
    except Exception:
        return False


def _aval_shape_dtype(aval) -> Tuple[List[int], str]:
    """Shape and dtype name of an abstract value; PRNG keys as their uint32 key data."""
    shape = [int(d) for d in aval.shape]
    if _is_key(aval.dtype):
        try:
            shape += [int(d) for d in aval.dtype._impl.key_shape]
        except Exception:
            shape += [2]
        return shape, "uint32"
    return shape, np.dtype(aval.dtype).name


def _encode(v: Any, depth: int = 0) -> Any:
    """A primitive parameter as JSON (docs/jax-frontend.md)."""
    if depth > 8:
        return {"repr": repr(v)[:200]}
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isfinite(f):
            return f
        return {"float": "nan" if math.isnan(f) else ("inf" if f > 0 else "-inf")}
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, enum.Enum):
        return v.name
    if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
        return {"dtype": _dtype_name(v)}
    if hasattr(v, "_fields") and isinstance(v, tuple):  # NamedTuple (ConvDimensionNumbers)
        return {k: _encode(getattr(v, k), depth + 1) for k in v._fields}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):  # Gather/ScatterDimensionNumbers
        return {f.name: _encode(getattr(v, f.name), depth + 1) for f in dataclasses.fields(v)}
    if isinstance(v, (tuple, list)):
        return [_encode(x, depth + 1) for x in v]
    if isinstance(v, np.ndarray) and v.size <= 64:
        return _encode(v.tolist(), depth + 1)
    try:
        dt = np.dtype(v)
        if type(v).__name__.endswith("DType") or isinstance(v, np.dtype):
            return {"dtype": dt.name}
    except Exception:
        pass
    return {"repr": repr(v)[:200]}


def _source(eqn) -> Tuple[str, int]:
    """The innermost user frame of an equation (outside jax, flax and Solar)."""
    try:
        from jax._src import source_info_util

        frame = source_info_util.user_frame(eqn.source_info)
        if frame is not None:
            return frame.file_name, int(frame.start_line)
    except Exception:
        pass
    return "", 0


def _is_literal(v) -> bool:
    return type(v).__name__ == "Literal"


def _is_drop(v) -> bool:
    return type(v).__name__ == "DropVar"


# ---------------------------------------------------------------- the recorder


class _Lit:
    """A literal (a Python or numpy scalar, or a small array) standing in for a jaxpr var."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class Recorder:
    """Records ops and tensors; with `values`, evaluates every equation on real arrays."""

    def __init__(self, values: bool, unroll_cap: int = UNROLL_CAP, name: str = "program",
                 source: str = ""):
        self.tensors: List[Dict[str, Any]] = []
        self.ops: List[Dict[str, Any]] = []
        self.with_values = values
        self.values: Dict[int, Any] = {}  # tensor id -> array (values mode)
        self.known: Dict[int, Any] = {}  # tensor id -> small folded value
        self.unroll_cap = unroll_cap
        self.name = name
        self.source = source
        self.given_ops: List[int] = []  # ops whose values validation feeds (iota, RNG)
        self.notes: List[str] = []
        self.file_line: Tuple[str, int] = ("", 0)

    # --- tensors
    def tensor(self, aval, role: str, name: Optional[str] = None) -> int:
        shape, dtype = _aval_shape_dtype(aval)
        tid = len(self.tensors)
        t = {"id": tid, "shape": shape, "dtype": dtype, "role": role}
        if name:
            t["name"] = name
        self.tensors.append(t)
        return tid

    def source_tensor(self, value, role: str, name: Optional[str] = None) -> int:
        """A graph source (input, parameter, constant) with its value when known."""
        aval = _aval_of(value)
        tid = self.tensor(aval, role, name)
        if _concrete(value):
            # Raw values (numpy or jax arrays; PRNG keys stay key arrays so that equations
            # can be evaluated on them): validation converts them for the executor.
            self.values[tid] = value
            if math.prod(aval.shape) <= _FOLD_ELEMENTS and not _is_key(aval.dtype):
                self.known[tid] = np.asarray(value)
        return tid

    def mark(self) -> Tuple[int, int, int]:
        return len(self.tensors), len(self.ops), len(self.given_ops)

    def rollback(self, m: Tuple[int, int, int]) -> None:
        nt, no, ng = m
        del self.tensors[nt:]
        del self.ops[no:]
        del self.given_ops[ng:]
        for d in (self.values, self.known):
            for k in [k for k in d if k >= nt]:
                del d[k]

    # --- operands
    def _operand_json(self, ref) -> Any:
        if isinstance(ref, _Lit):
            v = np.asarray(ref.value)
            if v.ndim == 0:
                return _encode(v.item())
            return {"repr": "array literal"}
        o = {"tensor": ref}
        k = self.known.get(ref)
        if k is not None and np.asarray(k).size == 1:
            v = np.asarray(k).reshape(())
            if np.issubdtype(v.dtype, np.integer) or v.dtype == np.bool_:
                o["value"] = int(v)
            elif np.issubdtype(v.dtype, np.floating):
                o["value"] = _encode(float(v))
        elif k is not None and (np.issubdtype(np.asarray(k).dtype, np.integer)):
            o["values"] = [int(x) for x in np.asarray(k).reshape(-1)]  # row-major
        return o

    def _value(self, ref):
        """The concrete value of an operand, or None."""
        if isinstance(ref, _Lit):
            return ref.value
        if ref in self.values:
            return self.values[ref]
        return self.known.get(ref)

    def ref_for_literal(self, ref, aval) -> int:
        """A tensor for a literal that must be a tensor (a loop output): a constant."""
        if not isinstance(ref, _Lit):
            return ref
        tid = self.tensor(aval, "constant")
        arr = np.asarray(ref.value, dtype=_np_dtype(aval.dtype))
        self.known[tid] = arr
        self.values[tid] = arr
        return tid

    # --- ops
    def emit(self, name: str, in_refs: Sequence[Any], out_avals: Sequence[Any],
             params: Dict[str, Any], extra: Optional[Dict[str, Any]] = None,
             given: bool = False) -> List[int]:
        args = {"operands": [self._operand_json(r) for r in in_refs]}
        for k, v in params.items():
            if k in args:
                k = f"param_{k}"
            args[k] = _encode(v)
        if extra:
            args.update(extra)
        outs = [self.tensor(a, "intermediate") for a in out_avals]
        op = {"op": f"jax::{name}", "args": args, "outputs": outs}
        f, line = self.file_line
        if f:
            op["file"] = f
            op["line"] = line
        if given:
            self.given_ops.append(len(self.ops))
        self.ops.append(op)
        return outs

    def trace(self) -> Dict[str, Any]:
        return {"schema": SCHEMA, "name": self.name, "frontend": "jax", "source": self.source,
                "tensors": self.tensors, "ops": self.ops}


def _is_int(dtype) -> bool:
    try:
        return np.issubdtype(np.dtype(dtype), np.integer) or np.dtype(dtype) == np.bool_
    except TypeError:
        return False


def _np_dtype(dtype):
    try:
        return np.dtype(dtype)
    except TypeError:
        return np.uint32


def _aval_of(value):
    import jax

    if hasattr(value, "aval"):
        return value.aval
    if isinstance(value, jax.ShapeDtypeStruct):
        return value
    arr = np.asarray(value)
    return jax.ShapeDtypeStruct(arr.shape, arr.dtype)


def _concrete(value) -> bool:
    import jax

    if isinstance(value, jax.ShapeDtypeStruct):
        return False
    return not type(value).__name__.endswith("Tracer")


def _key_data(value):
    import jax

    return np.asarray(jax.random.key_data(value))


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

    def __init__(self, rec: Recorder, need_values_raises: bool):
        self.rec = rec
        self._iotas: Dict[int, int] = {}  # tensor id -> the dimension an iota counts along
        # With abstract inputs that could be made real, data-dependent control flow raises
        # NeedsValues (capture redoes the walk on values); otherwise it is recorded as one op.
        self.need_values_raises = need_values_raises
        self.budget = rec.unroll_cap

    # env: var -> tensor id or _Lit
    def read(self, env, v):
        if _is_literal(v):
            # Scalars stay literals (constants in the combine); an array literal is a constant.
            return _Lit(v.val) if np.ndim(v.val) == 0 else self.const(v.val)
        return env[v]

    def walk(self, jaxpr, consts: Sequence[Any], args: Sequence[Any],
             const_refs: Optional[Sequence[Any]] = None) -> List[Any]:
        """Records the equations of `jaxpr` on `args` (refs: tensor ids or _Lit); `consts`
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
                if not _is_drop(v):
                    env[v] = o
        return [self.read(env, v) for v in jaxpr.outvars]

    def const(self, c, role: str = "constant", name: Optional[str] = None):
        """A ref for a constant of a closed jaxpr (its value is known): scalars as literals,
        arrays as source tensors."""
        if np.ndim(c) == 0 and not _is_key(getattr(c, "dtype", np.float32)):
            return _Lit(np.asarray(c))
        return self.rec.source_tensor(c, role, name)

    # --- one equation
    def equation(self, eqn, ins: List[Any]) -> List[Any]:
        name = eqn.primitive.name
        saved = self.rec.file_line
        f, line = _source(eqn)
        if f:
            self.rec.file_line = (f, line)
        try:
            if name in _INLINE:
                return self.inline(eqn, ins)
            if name in _IDENTITY and len(eqn.invars) == len(eqn.outvars):
                return list(ins)
            if name == "scan":
                return self.scan(eqn, ins)
            if name == "while":
                return self.while_loop(eqn, ins)
            if name == "cond":
                return self.cond(eqn, ins)
            return self.leaf(eqn, ins)
        finally:
            self.rec.file_line = saved

    def leaf(self, eqn, ins: List[Any], params=None, extra=None) -> List[Any]:
        name = eqn.primitive.name
        params = dict(eqn.params if params is None else params)
        for k in [k for k, v in params.items() if hasattr(v, "eqns") or hasattr(v, "jaxpr")]:
            params[k] = {"repr": f"<jaxpr: {len(_sub_jaxpr_of(params[k]).eqns)} equations>"}
        avals = [v.aval for v in eqn.outvars]
        given = name in ("iota", "random_bits", "random_seed", "random_wrap", "random_unwrap",
                         "random_fold_in", "random_split", "threefry2x32", "rng_bit_generator",
                         "rng_uniform")
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
        known = all(v is not None for v in vals)
        # Folding (without eager values) is for small integer values and scalars only: loop
        # counters, slice starts, branch indices, pad values; each fold runs the primitive
        # once on the host.
        small = all((math.prod(a.shape) <= _FOLD_ELEMENTS and _is_int(a.dtype))
                    or (math.prod(a.shape) == 1 and not _is_key(a.dtype)) for a in avals)
        if known and (self.rec.with_values or small):
            res = eqn.primitive.bind(*vals, **eqn.params)
            res = res if eqn.primitive.multiple_results else [res]
            for tid, r, a in zip(outs, res, avals):
                if self.rec.with_values:
                    self.rec.values[tid] = r
                if math.prod(a.shape) <= _FOLD_ELEMENTS and not _is_key(a.dtype):
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
        idx = np.arange(shape[dim], dtype=_np_dtype(aval.dtype))
        view = [1] * len(shape)
        view[dim] = shape[dim]
        arr = np.broadcast_to(idx.reshape(view), shape)
        self.rec.values[tid] = arr
        if arr.size <= _FOLD_ELEMENTS:
            self.rec.known[tid] = np.array(arr)

    def _is_iota(self, ref, dimension: int) -> bool:
        return isinstance(ref, int) and self._iotas.get(ref) == dimension

    def inline(self, eqn, ins):
        sub = _sub_jaxpr(eqn)
        if sub is None:
            return self.leaf(eqn, ins)
        jaxpr, consts = sub
        name = eqn.primitive.name
        if name == "shard_map":
            mesh = eqn.params.get("mesh")
            size = getattr(mesh, "size", 1)
            if size != 1:
                return self.opaque_loop(eqn, ins, f"shard_map over a {size}-device mesh: the "
                                        "body runs once per shard (not unrolled yet)")
        n_skip = int(eqn.params.get("num_consts", 0)) if name == "custom_vjp_call_jaxpr" else 0
        args = ins[n_skip:] if len(jaxpr.invars) == len(ins) - n_skip else ins
        if len(jaxpr.invars) != len(args):
            args = ins[len(ins) - len(jaxpr.invars):]
        return self.walk(jaxpr, consts, args)

    def opaque_loop(self, eqn, ins, reason: str):
        """A loop or branch recorded as one op: lowering reports it unanalyzed with reason."""
        self.rec.notes.append(f"jax::{eqn.primitive.name}: {reason}")
        params = {k: v for k, v in eqn.params.items()
                  if not (hasattr(v, "eqns") or hasattr(v, "jaxpr") or isinstance(v, (list, tuple))
                          and v and (hasattr(v[0], "eqns") or hasattr(v[0], "jaxpr")))}
        return self.leaf(eqn, ins, params=params, extra={"reason": reason})

    # --- scan: the body once per iteration
    def scan(self, eqn, ins):
        p = eqn.params
        length = int(p["length"])
        body = p["jaxpr"]
        nc, ncarry = int(p["num_consts"]), int(p["num_carry"])
        per_iter = _count_equations(body.jaxpr) + 2 * (len(body.jaxpr.invars) - nc - ncarry)
        total = length * per_iter
        if length == 0:
            return self.opaque_loop(eqn, ins, "scan of length 0 (empty stacked outputs)")
        if total > self.budget:
            return self.opaque_loop(eqn, ins, f"scan of {length} iterations x {per_iter} ops "
                                    f"exceeds the unroll cap ({self.rec.unroll_cap} ops)")
        consts, carry, xs = ins[:nc], ins[nc:nc + ncarry], ins[nc + ncarry:]
        xs_avals = [v.aval for v in eqn.invars[nc + ncarry:]]
        ys_per_iter: List[List[Any]] = []
        order = range(length - 1, -1, -1) if p.get("reverse", False) else range(length)
        body_jaxpr, body_consts = body.jaxpr, list(body.consts)
        x_avals = [v.aval for v in body_jaxpr.invars[nc + ncarry:]]
        for i in order:
            x_i = [self.take(x, a, xa, i) for x, a, xa in zip(xs, xs_avals, x_avals)]
            outs = self.walk(body_jaxpr, body_consts, list(consts) + list(carry) + x_i)
            carry = outs[:ncarry]
            ys_per_iter.append(outs[ncarry:])
        if p.get("reverse", False):
            ys_per_iter.reverse()
        y_avals = [v.aval for v in eqn.outvars[ncarry:]]
        y_body_avals = [v.aval for v in body_jaxpr.outvars[ncarry:]]
        ys = [self.stack([it[k] for it in ys_per_iter], y_avals[k], y_body_avals[k])
              for k in range(len(y_avals))]
        carry = [self.rec.ref_for_literal(c, v.aval) for c, v in zip(carry, eqn.outvars)]
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
                self.rec.with_values or all(math.prod(a.shape) <= _FOLD_ELEMENTS for a in avals)):
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
            if res.size <= _FOLD_ELEMENTS:
                self.rec.known[outs[0]] = res
        return outs

    # --- while: unrolled when the condition is known each iteration
    def while_loop(self, eqn, ins):
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
                if self.need_values_raises:
                    raise NeedsValues("while_loop whose trip count depends on data")
                return self.opaque_loop(eqn, ins, "while_loop whose trip count is known only "
                                        "at run time: analyze with real inputs to count it")
            if not bool(np.asarray(value)):
                break
            if per_iter > self.budget:
                self.rec.rollback(m)
                self.budget = budget
                return self.opaque_loop(eqn, ins, f"while_loop past {trips} iterations exceeds "
                                        f"the unroll cap ({self.rec.unroll_cap} ops)")
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


# ---------------------------------------------------------------- entry points


@dataclasses.dataclass
class Capture:
    """One capture: the OpTrace, the top-level outputs' trace ids (in the program's output
    order, None for an output that is a literal), and with values every tensor's value."""

    trace: Dict[str, Any]
    output_ids: List[Optional[int]]
    values: Dict[int, Any]
    given_ops: List[int]
    notes: List[str]
    with_values: bool


def _leaves_with_names(tree, prefix: str, is_param: bool) -> Tuple[List[Any], List[str]]:
    """Leaves of a pytree argument and their names: a parameter by its pytree path
    (`params/Dense_0/kernel`), an input by the argument's name (and path when nested)."""
    import jax

    flat, _ = jax.tree_util.tree_flatten_with_path(tree)
    leaves, names = [], []
    for path, leaf in flat:
        leaves.append(leaf)
        key = jax.tree_util.keystr(path, simple=True, separator="/") if path else ""
        names.append(key if (is_param and key) else (f"{prefix}/{key}" if key else prefix))
    return leaves, names


def capture(fn, *args, values: Optional[bool] = None, name: Optional[str] = None,
            source: str = "", param_argnums: Sequence[int] = (),
            unroll_cap: int = UNROLL_CAP, arg_names: Optional[Sequence[str]] = None) -> Capture:
    """Captures `fn(*args)` (args: pytrees of arrays or jax.ShapeDtypeStruct).

    values: None records on abstract values and redoes the walk on the real ones when the
    program has data-dependent control flow (and every argument is concrete); True records
    with values (needed for validation); False never evaluates (data-dependent loops and
    branches stay unanalyzed). param_argnums: arguments whose leaves are parameters
    (role `parameter`, named by their pytree path) rather than inputs."""
    import jax

    leaves, names, roles = [], [], []
    for k, a in enumerate(args):
        is_param = k in param_argnums
        prefix = (arg_names[k] if arg_names else ("params" if is_param else f"arg{k}"))
        ls, ns = _leaves_with_names(a, prefix, is_param)
        leaves += ls
        names += ns
        roles += ["parameter" if is_param else "input"] * len(ls)
    treedef = jax.tree_util.tree_structure(args)

    def flat_fn(*flat):
        return fn(*jax.tree_util.tree_unflatten(treedef, flat))

    abstract = [x if isinstance(x, jax.ShapeDtypeStruct)
                else jax.ShapeDtypeStruct(np.shape(x), x.dtype) for x in leaves]
    closed = jax.make_jaxpr(flat_fn)(*abstract)
    all_concrete = all(_concrete(x) for x in leaves)
    prog = name or getattr(fn, "__name__", "program")

    def run(with_values: bool, raises: bool) -> Capture:
        rec = Recorder(with_values, unroll_cap, prog, source)
        ins = [rec.source_tensor(x, r, n) for x, r, n in zip(leaves, roles, names)]
        w = Walker(rec, raises)
        # Arrays the program closes over (its parameters, when forward() closes over them)
        # are weights named by position.
        const_refs = [w.const(v, "parameter", f"const{k}") for k, v in enumerate(closed.consts)]
        outs = w.walk(closed.jaxpr, list(closed.consts), ins, const_refs)
        out_ids: List[Optional[int]] = []
        for o in outs:
            if isinstance(o, _Lit):
                out_ids.append(None)
                continue
            t = rec.tensors[o]
            if t["role"] == "intermediate":
                t["role"] = "output"
            out_ids.append(o)
        return Capture(rec.trace(), out_ids, rec.values, rec.given_ops, rec.notes, with_values)

    if values is True:
        if not all_concrete:
            raise ValueError("values=True needs concrete arrays, not abstract shapes")
        return run(True, False)
    if values is False or not all_concrete:
        return run(False, False)
    try:
        return run(False, True)
    except NeedsValues as e:
        import warnings

        warnings.warn(f"solar: {e}: captured again on the real inputs", RuntimeWarning,
                      stacklevel=2)
        return run(True, False)


# ---------------------------------------------------------------- program files


from .detect import is_jax_program  # noqa: E402,F401  (re-exported)


class OverrideError(ValueError):
    """A --set NAME the program file does not assign at module level (a usage error)."""


def _parse_value(text: str) -> Any:
    import ast

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def load_program(path: str, overrides: Optional[Dict[str, str]] = None):
    """Executes the program file as a module. `overrides` (NAME -> VALUE text, a Python
    literal or else a string) inject `NAME = VALUE` right after each top-level assignment of
    NAME, as the PyTorch frontend does; a NAME the file never assigns raises OverrideError."""
    import ast
    import types

    path = os.path.abspath(path)
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    values = {k: _parse_value(v) for k, v in (overrides or {}).items()}
    if values:
        assigned, body = set(), []
        for stmt in tree.body:
            body.append(stmt)
            targets = []
            if isinstance(stmt, ast.Assign):  # NAME = ... and A, B = ... alike
                for t in stmt.targets:
                    elts = t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]
                    targets += [e.id for e in elts if isinstance(e, ast.Name)]
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                targets = [stmt.target.id]
            for name in targets:
                if name in values:
                    assigned.add(name)
                    fix = ast.parse(f"{name} = {values[name]!r}").body[0]
                    body.append(ast.copy_location(fix, stmt))
        missing = sorted(set(values) - assigned)
        if missing:
            raise OverrideError(f"{path}: --set names {', '.join(missing)}, which the file "
                                "does not assign at module level")
        tree.body = body
        ast.fix_missing_locations(tree)
    # Registered under a private name: dataclasses (Flax modules) look their module up.
    name = "_solar_jax_program_" + "".join(
        ch if ch.isalnum() else "_" for ch in os.path.splitext(os.path.basename(path))[0])
    mod = types.ModuleType(name)
    mod.__file__ = path
    sys.modules[name] = mod
    exec(compile(tree, path, "exec"), mod.__dict__)
    return mod


@dataclasses.dataclass
class Program:
    """A loaded JAX program as a pure function of (parameters, inputs)."""

    fn: Any  # fn(params, *inputs) or fn(*inputs)
    params: Any  # a pytree, or None
    inputs: List[Any]
    name: str


def program_from_module(mod, path: str, abstract: bool) -> Program:
    """The program a file defines: `forward(*inputs)` with `get_inputs()`, or a Flax
    `Model` with `get_init_inputs()` and `get_inputs()` (initialized with PRNGKey(0)).
    abstract: inputs and parameters as shapes only (jax.eval_shape), no data made."""
    import jax

    name = os.path.splitext(os.path.basename(path))[0]
    if not hasattr(mod, "get_inputs"):
        raise ProgramFormatError(f"{path}: a JAX program defines get_inputs() and forward() "
                                 "or a Flax Model")

    def inputs():
        if abstract:
            try:
                return list(jax.eval_shape(lambda: list(mod.get_inputs())))
            except Exception:
                pass
        return list(mod.get_inputs())

    if hasattr(mod, "forward"):
        return Program(mod.forward, None, inputs(), name)
    if hasattr(mod, "Model"):
        init_args = list(mod.get_init_inputs()) if hasattr(mod, "get_init_inputs") else []
        model = mod.Model(*init_args)
        xs = inputs()
        key = jax.random.PRNGKey(0)
        if abstract:
            variables = jax.eval_shape(lambda k, *a: model.init(k, *a), key, *xs)
        else:
            variables = jax.jit(model.init)(key, *xs)  # one compilation, not one per op

        def apply(variables, *a):
            return model.apply(variables, *a)

        return Program(apply, variables, xs, name)
    raise ProgramFormatError(f"{path}: a JAX program defines forward(*inputs) or a Flax Model "
                             "class next to get_inputs()")
