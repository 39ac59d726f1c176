"""The JAX capture's recorder: the ops and tensors of an OpTrace (solar.optrace.v1,
`"frontend": "jax"`) as the walker emits them, with the small values it folds; and the
recorder of a loop body walked once on symbolic params (one `jax::scan_repeat` op)."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ... import _core
from .encoding import aval_of, aval_shape_dtype, concrete, encode, is_key, key_data, np_dtype

SCHEMA = "solar.optrace.v1"
# Capture evaluates equations whose inputs are all known and whose outputs are at most this
# many elements (loop counters, slice starts, iota), to resolve trip counts and offsets.
FOLD_ELEMENTS = 64


class Lit:
    """A literal (a Python or numpy scalar, or a small array) standing in for a jaxpr var."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class Recorder:
    """Records ops and tensors; with `values`, evaluates every equation on real arrays."""

    def __init__(self, values: bool, unroll_cap: int, name: str = "program",
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
        shape, dtype = aval_shape_dtype(aval)
        tid = len(self.tensors)
        t = {"id": tid, "shape": shape, "dtype": dtype, "role": role}
        if name:
            t["name"] = name
        self.tensors.append(t)
        return tid

    def source_tensor(self, value, role: str, name: Optional[str] = None) -> int:
        """A graph source (input, parameter, constant) with its value when known."""
        aval = aval_of(value)
        tid = self.tensor(aval, role, name)
        if concrete(value):
            # Raw values (numpy or jax arrays; a typed PRNG key as its uint32 key data, which
            # is what the capture records and evaluates RNG ops on): validation converts them
            # for the executor.
            if is_key(aval.dtype):
                value = key_data(value)
            self.values[tid] = value
            if math.prod(np.shape(value)) <= FOLD_ELEMENTS:
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
        if isinstance(ref, Lit):
            v = np.asarray(ref.value)
            if v.ndim == 0:
                return encode(v.item())
            return {"repr": "array literal"}
        o = {"tensor": ref}
        k = self.known.get(ref)
        if k is not None and np.asarray(k).size == 1:
            v = np.asarray(k).reshape(())
            if np.issubdtype(v.dtype, np.integer) or v.dtype == np.bool_:
                o["value"] = int(v)
            elif np.issubdtype(v.dtype, np.floating):
                o["value"] = encode(float(v))
        elif k is not None and (np.issubdtype(np.asarray(k).dtype, np.integer)):
            o["values"] = [int(x) for x in np.asarray(k).reshape(-1)]  # row-major
        return o

    def _value(self, ref):
        """The concrete value of an operand, or None."""
        if isinstance(ref, Lit):
            return ref.value
        if ref in self.values:
            return self.values[ref]
        return self.known.get(ref)

    def ref_for_literal(self, ref, aval) -> int:
        """A tensor for a literal that must be a tensor (a loop output): a constant."""
        if not isinstance(ref, Lit):
            return ref
        tid = self.tensor(aval, "constant")
        arr = np.asarray(ref.value, dtype=np_dtype(aval.dtype))
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
            args[k] = encode(v)
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


class Unroll(Exception):
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


class BodyRecorder(Recorder):
    """Records a loop body once, on fresh symbolic params (docs/jax-frontend.md, "Loops").

    Its tensor ids are its own. Constants the body makes (a closed jaxpr's arrays, a literal
    that must be a tensor) are hoisted: made in the outer recorder and bound to a body param
    as an invariant input. Params of carried and sliced inputs are *varying*: their values
    change per iteration, so an op whose lowering needs the value of an operand that derives
    from them (a dynamic_slice by the loop counter) cannot be recorded once (Unroll)."""

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
        if not isinstance(ref, Lit):
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
            raise Unroll(f"jax::{name} draws random bits that validation is given per op")
        which = _VALUE_OPERANDS.get(name)
        if which is not None:
            for k in which(len(in_refs)):
                if k < len(in_refs) and self._value(in_refs[k]) is None \
                        and self.is_varying(in_refs[k]):
                    raise Unroll(f"jax::{name} reads the value of operand {k}, which changes "
                                  "per iteration (a loop counter)")
        if name != REPEAT_OP and not _jax_op_known(name):
            raise Unroll(f"jax::{name} has no lowering (unanalyzed: unrolled so the rest of "
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

