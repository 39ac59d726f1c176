"""The JAX recorder: a jaxpr walked equation by equation into an OpTrace (solar.optrace.v1,
`"frontend": "jax"`), one op per primitive equation (`jax::dot_general`, ...).

The program is traced with `jax.make_jaxpr` on abstract values (shapes and dtypes, no data,
any size). Nested jaxprs are inlined: `jit`/`pjit`, `closed_call`, `custom_jvp_call`,
`custom_vjp_call`, `remat`/`checkpoint`, single-device `shard_map`. Loops are kept as
loops: a `scan` (and `fori_loop`, which JAX turns into a scan when its bounds are static)
and a `while_loop` whose trip count is known at capture (its condition and the part of the
body it depends on evaluated by constant folding: the counter of a `fori_loop` with traced
bounds) are one `jax::scan_repeat` op whose body is a nested trace walked once on fresh
symbolic params (lowered to one repeat op). A body that needs per-iteration values (a
`dynamic_slice` by the loop counter, a `cond` on it) is unrolled instead, the body emitted
once per iteration, as every loop is with `unroll=True` (`--unroll`); the capture notes
say which loops were kept and which unrolled, and why (docs/jax-frontend.md, "Loops").
A `while_loop` whose trip count depends on data, and a `cond`/`switch` whose branch
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

import ast
import dataclasses
import enum
import math
import os
import re
import sys
import types
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ... import _core
from ...program_source import OverrideError  # noqa: F401  (re-exported)
from ...program_source import ProgramFormatError, inject_overrides
from ...program_source import is_jax_program  # noqa: F401  (re-exported)

SCHEMA = "solar.optrace.v1"
# Upper bound on the ops one capture emits by unrolling loops: past it a loop is recorded as
# one op (unanalyzed, with the reason) instead of growing the trace without limit.
UNROLL_CAP = int(os.environ.get("SOLAR_JAX_UNROLL_CAP", "200000"))
# The most iterations capture counts by evaluating a while_loop's condition (and the part of
# its body the condition depends on) to keep it as one repeat op; past it, the loop unrolls.
_MAX_COUNTED_TRIPS = 1_000_000
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


# Collectives over named mesh axes: inside a one-device shard_map (every axis of size 1) they
# are identities (Walker.collective).
_COLLECTIVES = {"psum", "pmax", "pmin", "ppermute", "pbroadcast", "psum_invariant", "pvary",
                "axis_index", "all_gather", "all_to_all", "psum_scatter", "reduce_scatter"}
# Key data in, key data out: keys are held as their uint32 data throughout.
_KEY_IDENTITY = {"random_wrap", "random_unwrap"}
# RNG primitives replaced by their implementation (integer ops on the key data).
_EXPAND = {"random_bits", "random_split", "random_fold_in", "random_seed", "threefry2x32",
           "iota_2x32_shape"}


# About the ops one expanded RNG primitive records (threefry2x32: 20 rounds of 5 ops, key
# injections, the counter and the folding of its words), for the unroll-cap estimate.
_EXPANDED_OPS = 140


class _NotExpandable(Exception):
    """An RNG primitive whose implementation the capture cannot expand (the reason)."""


def _prng():
    try:
        from jax._src.random import prng
    except ImportError:  # older JAX
        from jax._src import prng
    return prng


def _threefry():
    try:
        from jax._src.random import threefry2x32 as t
    except ImportError:  # older JAX: threefry lives in prng
        from jax._src import prng as t
    return t


def _physical_aval(aval):
    """A key-typed aval as its uint32 key data (shape + key shape); others unchanged."""
    import jax

    shape, dtype = _aval_shape_dtype(aval)
    return jax.ShapeDtypeStruct(tuple(shape), np.dtype(dtype)) if _is_key(aval.dtype) else aval


def _key_shape(aval) -> Tuple[int, ...]:
    try:
        return tuple(int(d) for d in aval.dtype._impl.key_shape)
    except Exception:
        return (2,)


def _expansion(eqn):
    """The function on physical values (key data) that implements an RNG primitive."""
    import jax.numpy as jnp
    from jax import lax

    name, p = eqn.primitive.name, eqn.params
    prng = _prng()
    if name in ("random_bits", "random_split", "random_fold_in"):
        aval = eqn.invars[0].aval
        impl = aval.dtype._impl
        if impl.name != "threefry2x32":
            raise _NotExpandable(f"jax::{name} of the {impl.name} generator (only threefry2x32 "
                                 "is expanded)")
        if name == "random_bits":
            return lambda kd: prng.random_bits_impl_base(impl, kd, aval.ndim,
                                                         bit_width=p["bit_width"],
                                                         shape=p["shape"])
        if name == "random_split":
            return lambda kd: prng.random_split_impl_base(impl, kd, aval.ndim, shape=p["shape"])
        return lambda kd, m: prng.random_fold_in_impl_base(impl, kd, m, aval.shape)
    if name == "random_seed":
        impl = p["impl"]
        if impl.name != "threefry2x32":
            raise _NotExpandable(f"jax::random_seed of the {impl.name} generator")
        return lambda s: prng.random_seed_impl_base(s, impl=impl)
    if name == "threefry2x32":
        t = _threefry()

        def threefry(k1, k2, x1, x2):
            # The counts take the output's shape; the keys keep theirs (scalars, or a batch
            # under vmap) and broadcast in each op, so the key schedule is computed once.
            shape = np.broadcast_shapes(*(np.shape(a) for a in (k1, k2, x1, x2)))
            x1, x2 = jnp.broadcast_to(x1, shape), jnp.broadcast_to(x2, shape)
            return list(t._threefry2x32_lowering(k1, k2, x1, x2, use_rolled_loops=False))

        return threefry
    if name == "iota_2x32_shape":
        shape = tuple(int(d) for d in p["shape"])
        if math.prod(shape) >= 2 ** 32:
            raise _NotExpandable("jax::iota_2x32_shape of 2^32 or more elements")
        strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]

        def iota_2x32():
            # The row-major flat index, as (high, low) 32-bit words; below 2^32 elements the
            # high word is 0.
            lo = None
            for d, st in enumerate(strides):
                t = lax.broadcasted_iota(np.uint32, shape, d)
                if st != 1:
                    t = t * np.uint32(st)
                lo = t if lo is None else lo + t
            return [lax.full(shape, 0, np.uint32), lo]

        return iota_2x32
    raise _NotExpandable(f"jax::{name} has no expansion")


def _physical_params(eqn):
    """Parameters of a structural primitive on typed keys, extended over the trailing key
    dimensions; None for a primitive without a rule here."""
    name, p = eqn.primitive.name, dict(eqn.params)
    key = next(v.aval for v in list(eqn.invars) + list(eqn.outvars)
               if hasattr(v, "aval") and _is_key(v.aval.dtype))
    ks = _key_shape(key)
    if name == "slice":
        p["start_indices"] = tuple(p["start_indices"]) + (0,) * len(ks)
        p["limit_indices"] = tuple(p["limit_indices"]) + ks
        if p.get("strides") is not None:
            p["strides"] = tuple(p["strides"]) + (1,) * len(ks)
        return p
    if name in ("squeeze", "concatenate", "rev", "copy", "copy_p"):
        return p
    if name == "reshape":
        if p.get("dimensions") is not None:
            return None
        p["new_sizes"] = tuple(p["new_sizes"]) + ks
        return p
    if name == "broadcast_in_dim":
        r = len(p["shape"])
        p["shape"] = tuple(p["shape"]) + ks
        p["broadcast_dimensions"] = tuple(p["broadcast_dimensions"]) + tuple(
            r + k for k in range(len(ks)))
        return p
    if name == "transpose":
        r = len(p["permutation"])
        p["permutation"] = tuple(p["permutation"]) + tuple(r + k for k in range(len(ks)))
        return p
    if name == "dynamic_slice":
        # keys[i] with a traced i: one more start (0) for each key dimension (key_op adds
        # the operands).
        p["slice_sizes"] = tuple(p["slice_sizes"]) + ks
        return p
    return None


class NeedsValues(Exception):
    """The jaxpr has control flow whose trip count or branch depends on data."""


def refused(message: str):
    """A solar.UnsupportedError (exit code 7, `unsupported`) for a program construct the
    capture refuses as a whole (a loop past the unroll cap, a multi-device shard_map)."""
    e = _core.UnsupportedError(message)
    e.exit_code = _core.EXIT_CODES["unsupported"]
    return e


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

        try:  # JAX >= 0.5 takes the traceback, older versions the SourceInfo
            frame = source_info_util.user_frame(eqn.source_info.traceback)
        except (AttributeError, TypeError):
            frame = source_info_util.user_frame(eqn.source_info)
        if frame is not None:
            return frame.file_name, int(frame.start_line)
    except Exception:
        pass
    return "", 0


_TRANSFORM = re.compile(r"^[A-Za-z_]\w*\((.*)\)$")
_AUTO_NAME = re.compile(r"^([A-Za-z_]\w*?)_\d+$")


def _name_stack(eqn) -> str:
    """The equation's name stack ("Net/MLP_0/fc1": Flax module names and jax.named_scope
    scopes) as a module path ("Net.MLP_0.fc1"), transformation wrappers (jvp(...),
    transpose(...)) and jit scopes left out."""
    try:
        text = str(eqn.source_info.name_stack)
    except Exception:
        return ""
    parts = []
    for p in text.split("/"):
        while True:
            m = _TRANSFORM.match(p)
            if not m:
                break
            p = m.group(1)
        if p:
            parts.append(p)
    return ".".join(parts)


def _join_module(prefix: str, inner: str) -> str:
    """A nested jaxpr's name stack is relative to the equation that holds it."""
    if not prefix or inner == prefix or inner.startswith(prefix + "."):
        return inner or prefix
    return f"{prefix}.{inner}" if inner else prefix


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
        self.module = ""  # the module path of the equation being recorded (its name stack)
        self.expanding: List[str] = []  # shared with the Walker: RNG expansions under way

    def note(self, text: str) -> None:
        """A capture note, once (a loop inside an unrolled loop is met once per iteration)."""
        if text not in self.notes:
            self.notes.append(text)

    def where(self) -> str:
        """The program location of the equation being recorded ("file:line: " or "")."""
        f, line = self.file_line
        return f"{f}:{line}: " if f else ""

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
            # Raw values (numpy or jax arrays; a typed PRNG key as its uint32 key data, which
            # is what the capture records and evaluates RNG ops on): validation converts them
            # for the executor.
            if _is_key(aval.dtype):
                value = _key_data(value)
            self.values[tid] = value
            if math.prod(np.shape(value)) <= _FOLD_ELEMENTS:
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
        if self.expanding:
            args["expanded_from"] = self.expanding[0]
        outs = [self.tensor(a, "intermediate") for a in out_avals]
        op = {"op": f"jax::{name}", "args": args, "outputs": outs}
        f, line = self.file_line
        if f:
            op["file"] = f
            op["line"] = line
        if self.module:
            op["module"] = self.module
        if given:
            self.given_ops.append(len(self.ops))
        self.ops.append(op)
        return outs

    def trace(self) -> Dict[str, Any]:
        return {"schema": SCHEMA, "name": self.name, "frontend": "jax", "source": self.source,
                "tensors": self.tensors, "ops": self.ops}


class _Unroll(Exception):
    """A loop body that one symbolic walk cannot capture (the reason): the loop is unrolled."""


# Operands whose value the lowering reads (dynamic_slice starts, a scatter's box indices, a
# padding value): by op name, the operand positions from the operand count.
_VALUE_OPERANDS = {
    "dynamic_slice": lambda n: range(1, n),
    "dynamic_update_slice": lambda n: range(2, n),
    "pad": lambda n: [1],
    "scatter": lambda n: [1],
    "scatter-add": lambda n: [1],
    "scatter_add": lambda n: [1],
}
# The loop op the recorder writes for a scan or while_loop kept as a loop.
REPEAT_OP = "scan_repeat"


class _BodyRecorder(Recorder):
    """Records a loop body once, on fresh symbolic params (docs/jax-frontend.md, "Loops").

    Its tensor ids are its own. Constants the body makes (a closed jaxpr's arrays, a literal
    that must be a tensor) are hoisted: made in the outer recorder and bound to a body param
    as an invariant input. Params of carried and sliced inputs are *varying*: their values
    change per iteration, so an op whose lowering needs the value of an operand that derives
    from them (a dynamic_slice by the loop counter) cannot be recorded once (_Unroll)."""

    def __init__(self, outer: Recorder):
        super().__init__(False, outer.unroll_cap, outer.name, outer.source)
        self.outer = outer
        self.expanding = outer.expanding
        self.file_line = outer.file_line
        self.module = outer.module
        self.notes = outer.notes  # a nested loop's note is the program's
        self.hoisted: List[Tuple[int, int]] = []  # (outer tensor, body param), invariants
        self._param_of: Dict[int, int] = {}  # outer tensor -> its hoisted param
        self.varying: set = set()  # body tensors whose value changes per iteration

    def param(self, aval, varying: bool) -> int:
        tid = self.tensor(aval, "input")
        if varying:
            self.varying.add(tid)
        return tid

    def bind_outer(self, outer_tid: int) -> int:
        """The body param bound (invariant) to an outer tensor; its known value carried over."""
        if outer_tid in self._param_of:
            return self._param_of[outer_tid]
        t = self.outer.tensors[outer_tid]
        tid = len(self.tensors)
        self.tensors.append({"id": tid, "shape": list(t["shape"]), "dtype": t["dtype"],
                             "role": "input"})
        if outer_tid in self.outer.known:
            self.known[tid] = self.outer.known[outer_tid]
        if outer_tid in self.outer.values:
            self.values[tid] = self.outer.values[outer_tid]
        self.hoisted.append((outer_tid, tid))
        self._param_of[outer_tid] = tid
        return tid

    def source_tensor(self, value, role: str, name: Optional[str] = None) -> int:
        return self.bind_outer(self.outer.source_tensor(value, role, name))

    def ref_for_literal(self, ref, aval) -> int:
        if not isinstance(ref, _Lit):
            return ref
        return self.bind_outer(self.outer.ref_for_literal(ref, aval))

    def mark(self):
        return super().mark() + (len(self.hoisted),)

    def rollback(self, m) -> None:
        super().rollback(m[:3])
        nt = m[0]
        for outer_tid, tid in self.hoisted[m[3]:]:
            self._param_of.pop(outer_tid, None)
        del self.hoisted[m[3]:]
        self.varying = {t for t in self.varying if t < nt}

    def is_varying(self, ref) -> bool:
        return isinstance(ref, int) and ref in self.varying

    def emit(self, name, in_refs, out_avals, params, extra=None, given=False):
        if given:
            raise _Unroll(f"jax::{name} draws random bits that validation is given per op")
        which = _VALUE_OPERANDS.get(name)
        if which is not None:
            for k in which(len(in_refs)):
                if k < len(in_refs) and self._value(in_refs[k]) is None \
                        and self.is_varying(in_refs[k]):
                    raise _Unroll(f"jax::{name} reads the value of operand {k}, which changes "
                                  "per iteration (a loop counter)")
        if name != REPEAT_OP and not _jax_op_known(name):
            raise _Unroll(f"jax::{name} has no lowering (unanalyzed: unrolled so the rest of "
                          "the body is counted)")
        outs = super().emit(name, in_refs, out_avals, params, extra, given)
        if any(self.is_varying(r) for r in in_refs):
            self.varying.update(outs)
        return outs

    def body(self, outputs: Sequence[int]) -> Dict[str, Any]:
        """The nested trace: body tensors produced by an op and read as loop outputs are
        marked `output`."""
        for o in outputs:
            if self.tensors[o]["role"] == "intermediate":
                self.tensors[o]["role"] = "output"
        return {"tensors": self.tensors, "ops": self.ops}


def _jax_op_known(name: str) -> bool:
    fn = getattr(_core, "jax_op_known", None)
    return True if fn is None else bool(fn(f"jax::{name}"))


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
        elif name in _EXPAND:
            n += _EXPANDED_OPS  # threefry's unrolled rounds and key schedule
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
        self.in_body = isinstance(rec, _BodyRecorder)
        self._iotas: Dict[int, int] = {}  # tensor id -> the dimension an iota counts along
        # With abstract inputs that could be made real, data-dependent control flow raises
        # NeedsValues (capture redoes the walk on values); otherwise it is recorded as one op.
        self.need_values_raises = need_values_raises
        self.budget = rec.unroll_cap
        self._expanding = rec.expanding  # the RNG primitives being expanded (innermost last)
        self._one_device_mesh = 0  # depth of one-device shard_map bodies being walked

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
        saved_module = self.rec.module
        f, line = _source(eqn)
        if f and not self._expanding:
            self.rec.file_line = (f, line)
        if not self._expanding:  # an expansion's equations belong to the expanded one
            self.rec.module = _join_module(saved_module, _name_stack(eqn))
        try:
            if name in _KEY_IDENTITY and len(ins) == 1:
                return list(ins)  # keys are held as their key data already
            if name in _EXPAND:
                return self.expand(eqn, ins)
            if name in _INLINE:
                return self.inline(eqn, ins)
            if self._one_device_mesh and name in _COLLECTIVES:
                return self.collective(eqn, ins)
            if name in _IDENTITY and len(eqn.invars) == len(eqn.outvars):
                return list(ins)
            if name == "scan":
                return self.scan(eqn, ins)
            if name == "while":
                return self.while_loop(eqn, ins)
            if name == "cond":
                return self.cond(eqn, ins)
            if any(_is_key(v.aval.dtype) for v in list(eqn.invars) + list(eqn.outvars)
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
        if (evaluate and ins and all(isinstance(r, _Lit) for r in ins)
                and all(np.ndim(r.value) == 0 for r in ins)
                and all(a.shape == () and not _is_key(a.dtype) for a in avals)):
            # Scalar arithmetic on literals (threefry's key-schedule constants, masks): folded
            # into a literal, as XLA folds it; no op is recorded.
            res = eqn.primitive.bind(*[r.value for r in ins],
                                     **(eqn.params if bind_params is None else bind_params))
            res = res if eqn.primitive.multiple_results else [res]
            return [_Lit(np.asarray(r)) for r in res]
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
        small = all((math.prod(a.shape) <= _FOLD_ELEMENTS and _is_int(a.dtype))
                    or (math.prod(a.shape) == 1 and not _is_key(a.dtype)) for a in avals)
        if evaluate and known and (self.rec.with_values or small):
            res = eqn.primitive.bind(*vals, **(eqn.params if bind_params is None else bind_params))
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

    def expand(self, eqn, ins):
        """An RNG primitive replaced by its implementation on the keys' uint32 data (the
        jaxpr of the function JAX lowers it with), so the graph computes the same bits with
        integer ops; ops recorded inside carry `expanded_from` and the primitive's location."""
        import jax

        name = eqn.primitive.name
        try:
            f = _expansion(eqn)
        except _NotExpandable as e:
            return self.unsupported(eqn, ins, str(e))
        avals = [_physical_aval(v.aval) for v in eqn.invars]
        closed = jax.make_jaxpr(f)(*avals)
        self._expanding.append(name)
        try:
            outs = self.walk(closed.jaxpr, list(closed.consts), ins)
        finally:
            self._expanding.pop()
        return [self.rec.ref_for_literal(o, _physical_aval(v.aval))
                for o, v in zip(outs, eqn.outvars)]

    def key_op(self, eqn, ins):
        """A structural primitive (slice, squeeze, reshape, ...) on a typed PRNG key array:
        recorded on the key data, its parameters extended over the trailing key dimension."""
        params = _physical_params(eqn)
        if params is None:
            return self.unsupported(eqn, ins, f"jax::{eqn.primitive.name} on a typed PRNG key "
                                    "array is not supported (slice, squeeze, reshape, "
                                    "broadcast_in_dim, concatenate, transpose, rev and "
                                    "dynamic_slice are)")
        if eqn.primitive.name == "dynamic_slice":
            key = eqn.invars[0].aval
            ins = list(ins) + [_Lit(np.int32(0))] * len(_key_shape(key))
        return self.leaf(eqn, ins, params=params, bind_params=params)

    def unsupported(self, eqn, ins, reason: str):
        """An equation the capture cannot record faithfully: one `jax::unsupported` op that
        lowering reports as unanalyzed with the reason (never evaluated)."""
        self.rec.notes.append(f"jax::{eqn.primitive.name}: {reason}")
        avals = [_physical_aval(v.aval) for v in eqn.outvars]
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
            if size != 1:
                shape = getattr(mesh, "shape", {})
                axes = ", ".join(f"{k}={v}" for k, v in dict(shape).items()) if shape else "?"
                raise refused(
                    f"{self.rec.where()}jax::shard_map over a {size}-device mesh ({axes}) is "
                    "not analyzable: each device runs the body on its own shard and the "
                    "collectives in it (psum, all_gather, ppermute, ...) move data between "
                    "devices, which a single-device EinsumGraph does not model; analyze the "
                    "per-device body, or the program without shard_map, instead")
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
            return [_Lit(np.int32(0))]
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
    def _body_walker(self, brec: "_BodyRecorder") -> "Walker":
        w = Walker(brec, False, self.unroll)
        w.in_body = True
        w.budget = self.budget
        w._one_device_mesh = self._one_device_mesh
        return w

    def repeat(self, eqn, ins, body, consts, carry, xs, trips: int, reverse: bool,
               what: str, finals: Optional[Dict[int, Any]] = None) -> List[Any]:
        """One `jax::scan_repeat` op: `body` (a closed jaxpr over consts + carry + x slices,
        returning the next carry + `stacked` per-iteration values) walked once on fresh
        params. Raises _Unroll when the body cannot be recorded that way."""
        rec = self.rec
        bj = body.jaxpr
        nc, ncarry = len(consts), len(carry)
        in_avals = [_physical_aval(v.aval) for v in bj.invars]
        m = rec.mark()
        budget = self.budget
        try:
            brec = _BodyRecorder(rec)
            bw = self._body_walker(brec)
            args: List[Any] = []
            carried: List[Tuple[int, int]] = []  # (outer tensor, body param)
            sliced: List[Tuple[int, int]] = []
            for k, ref in enumerate(consts):
                # A scalar literal stays a literal (a constant of the combine), as unrolled.
                args.append(ref if isinstance(ref, _Lit) else brec.bind_outer(ref))
            for k, ref in enumerate(carry):
                outer = rec.ref_for_literal(ref, in_avals[nc + k])
                pid = brec.param(in_avals[nc + k], varying=True)
                carried.append((outer, pid))
                args.append(pid)
            for k, ref in enumerate(xs):
                outer = rec.ref_for_literal(ref, _physical_aval(eqn.invars[-len(xs) + k].aval))
                pid = brec.param(in_avals[nc + ncarry + k], varying=True)
                sliced.append((outer, pid))
                args.append(pid)
            outs = bw.walk(bj, list(body.consts), args)
            out_avals = [_physical_aval(v.aval) for v in bj.outvars]
            outs = [brec.ref_for_literal(o, a) for o, a in zip(outs, out_avals)]
            values = self._loop_values(eqn, ins)
        except _Unroll:
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
        avals = [_physical_aval(v.aval) for v in eqn.outvars]
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
            if math.prod(a.shape) <= _FOLD_ELEMENTS and _is_int(a.dtype):
                rec.known[tid] = np.asarray(v)
        rec.note(f"{rec.where()}jax::{eqn.primitive.name}{what}: kept as a loop (one repeat "
                 f"op of {trips} iterations over a {len(brec.ops)}-op body)")
        return res

    def _loop_values(self, eqn, ins) -> Optional[List[Any]]:
        """The loop's outputs evaluated on its inputs' values: every output in values mode
        (else _Unroll), small integer ones (a counter's final value) when every input is
        known; None otherwise."""
        rec = self.rec
        vals = [rec._value(r) for r in ins]
        small = all(math.prod(v.aval.shape) <= _FOLD_ELEMENTS and _is_int(v.aval.dtype)
                    for v in eqn.outvars)
        if any(v is None for v in vals) or not (rec.with_values or small):
            if rec.with_values:
                raise _Unroll("values mode without every input's value")
            return None
        try:
            res = eqn.primitive.bind(*vals, **eqn.params)
        except Exception as e:  # noqa: BLE001 (typed keys and the like: unrolled instead)
            if rec.with_values:
                raise _Unroll(f"evaluating the loop failed: {e}") from None
            return None
        return [np.asarray(r) if not rec.with_values else r for r in res]

    # --- scan: one repeat op, or the body once per iteration
    def scan(self, eqn, ins):
        p = eqn.params
        length = int(p["length"])
        if not self.unroll and length > 0:
            nc, ncarry = int(p["num_consts"]), int(p["num_carry"])
            try:
                return self.repeat(eqn, ins, p["jaxpr"], ins[:nc], ins[nc:nc + ncarry],
                                   ins[nc + ncarry:], length, bool(p.get("reverse", False)), "")
            except _Unroll as e:
                self.rec.note(f"{self.rec.where()}jax::scan of {length} iterations "
                              f"unrolled: {e}")
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
        xs_avals = [_physical_aval(v.aval) for v in eqn.invars[nc + ncarry:]]
        ys_per_iter: List[List[Any]] = []
        order = range(length - 1, -1, -1) if p.get("reverse", False) else range(length)
        body_jaxpr, body_consts = body.jaxpr, list(body.consts)
        x_avals = [_physical_aval(v.aval) for v in body_jaxpr.invars[nc + ncarry:]]
        for i in order:
            x_i = [self.take(x, a, xa, i) for x, a, xa in zip(xs, xs_avals, x_avals)]
            outs = self.walk(body_jaxpr, body_consts, list(consts) + list(carry) + x_i)
            carry = outs[:ncarry]
            ys_per_iter.append(outs[ncarry:])
        if p.get("reverse", False):
            ys_per_iter.reverse()
        y_avals = [_physical_aval(v.aval) for v in eqn.outvars[ncarry:]]
        y_body_avals = [_physical_aval(v.aval) for v in body_jaxpr.outvars[ncarry:]]
        ys = [self.stack([it[k] for it in ys_per_iter], y_avals[k], y_body_avals[k])
              for k in range(len(y_avals))]
        carry = [self.rec.ref_for_literal(c, _physical_aval(v.aval))
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
            v = ref.value if isinstance(ref, _Lit) else self.rec.known.get(ref)
            if v is None:
                return None
            a = np.asarray(v)
            return v if (a.size <= _FOLD_ELEMENTS and _is_int(a.dtype)) or a.size == 1 else None

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
                try:
                    return self.repeat(eqn, ins, p["body_jaxpr"], ins[cn:cn + bn],
                                       ins[cn + bn:], [], trips, False, "", finals)
                except _Unroll as e:
                    self.rec.note(f"{self.rec.where()}jax::while of {trips} iterations "
                                  f"unrolled: {e}")
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
                    raise _Unroll("a while_loop in the body whose trip count is not known "
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
                raise _Unroll("a cond/switch in the body whose branch is not known when the "
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
            unroll_cap: int = UNROLL_CAP, arg_names: Optional[Sequence[str]] = None,
            unroll: bool = False) -> Capture:
    """Captures `fn(*args)` (args: pytrees of arrays or jax.ShapeDtypeStruct).

    values: None records on abstract values and redoes the walk on the real ones when the
    program has data-dependent control flow (and every argument is concrete); True records
    with values (needed for validation); False never evaluates (data-dependent loops and
    branches stay unanalyzed). param_argnums: arguments whose leaves are parameters
    (role `parameter`, named by their pytree path) rather than inputs. unroll: every loop
    unrolled (`--unroll`); by default a scan or a while_loop with a static trip count whose
    body can be recorded once is one `jax::scan_repeat` op (docs/jax-frontend.md, "Loops")."""
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
        w = Walker(rec, raises, unroll)
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
        return Capture(_with_modules(rec.trace(), getattr(fn, "solar_root_module", "")),
                       out_ids, rec.values, rec.given_ops, rec.notes, with_values)

    if values is True:
        if not all_concrete:
            raise ValueError("values=True needs concrete arrays, not abstract shapes")
        return run(True, False)
    if values is False or not all_concrete:
        return run(False, False)
    try:
        return run(False, True)
    except NeedsValues as e:
        warnings.warn(f"solar: {e}: captured again on the real inputs", RuntimeWarning,
                      stacklevel=2)
        return run(True, False)


def _with_modules(trace: Dict[str, Any], root: str) -> Dict[str, Any]:
    """The trace's `modules` table. A Flax model's name stacks start with its own class name
    (`root`): that component is the program itself and is dropped. Flax names a submodule
    it numbers after its class (MLP_0 -> MLP); other names (fc1, a named_scope) have no
    known class."""
    prefix = root + "."
    modules: Dict[str, str] = {}

    def ops_of(ops):  # a loop body's ops too
        for op in ops:
            yield op
            body = op.get("args", {}).get("body")
            if op["op"] == f"jax::{REPEAT_OP}" and isinstance(body, dict):
                yield from ops_of(body.get("ops", []))

    for op in ops_of(trace["ops"]):
        path = op.get("module", "")
        if root and (path == root or path.startswith(prefix)):
            path = path[len(prefix):] if path != root else ""
        if path:
            op["module"] = path
        else:
            op.pop("module", None)
        parts = path.split(".") if path else []
        for k in range(len(parts)):
            sub = ".".join(parts[:k + 1])
            if sub not in modules:
                m = _AUTO_NAME.match(parts[k])
                modules[sub] = m.group(1) if m else ""
    if root:
        modules[""] = root
    modules = {k: v for k, v in modules.items() if v}
    if modules:
        trace["modules"] = modules
    return trace


# ---------------------------------------------------------------- program files


def load_program(path: str, overrides: Optional[Dict[str, str]] = None):
    """Executes the program file as a module. `overrides` (NAME -> VALUE text, a Python
    literal or else a string) inject `NAME = VALUE` right after each top-level assignment of
    NAME, as the PyTorch frontend does; a NAME the file never assigns raises OverrideError."""
    path = os.path.abspath(path)
    with open(path, encoding="utf-8") as f:
        tree = inject_overrides(ast.parse(f.read(), filename=path), path, overrides)
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

        apply.solar_root_module = type(model).__name__  # the name stacks' first component

        return Program(apply, variables, xs, name)
    raise ProgramFormatError(f"{path}: a JAX program defines forward(*inputs) or a Flax Model "
                             "class next to get_inputs()")
