"""Aten-level capture of a PyTorch program into an OpTrace (schema solar.optrace.v1).

A TorchDispatchMode sits above a FakeTensorMode: every aten op the program runs passes
through the recorder with its schema-named arguments, then runs on fake tensors, which have
shapes, dtypes and strides but no data, so capture allocates no memory for activations or
weights. Tensors are identified by Python object and version: an in-place op (schema alias
info with a write) gives its result a new tensor id, so every id is written once. Views
are told from copies by the op schema (outputs that alias an input) and by storage identity.

A CaptureRecord passed to capture keeps what validation and the FlopCounterMode cross-check
need besides the trace: on real tensors, detached clones of tensor values by trace id, and
the FLOPs FlopCounterMode (stacked under the recorder, so it sees exactly the recorded ops)
counted for each recorded op.
"""

from __future__ import annotations

import ast
import contextlib
import math
import os
import types
import warnings
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensor,
    FakeTensorMode,
)

from ...program_source import OverrideError  # noqa: F401  (re-exported)
from ...program_source import ProgramFormatError, inject_overrides
from ...ranks import unsupported
from . import distributed, fake_shortcuts
from .buffer_band import ConstructionRecord, band_of
from .lazy_torch import dispatch_without_dynamo, fake_mode
from .quiet import torch_logging_silenced
from .recurrent_calls import recurrent_ops_recorded
from .selective_scan import selective_scans_recorded
from .source_location import source_location

OPTRACE_SCHEMA = "solar.optrace.v1"

# Frames inside the solar package (capture, the CLI) are not the program's lines.


def _dtype_name(dt: torch.dtype) -> str:
    return str(dt).removeprefix("torch.")


def _op_name(func) -> str:
    # torch._ops.OpOverload: "aten::mm" + overload "default" -> "aten::mm.default"
    return f"{func._schema.name}.{func._overloadname}"


_SOURCE_ROLES = ("input", "parameter", "buffer", "constant")
# Dropout ops are random only when they drop something: in eval mode or with p = 0 they are
# the identity, and the aten table lowers them so.
_DROPOUT_OPS = ("aten::native_dropout", "aten::dropout", "aten::feature_dropout",
                "aten::alpha_dropout", "aten::feature_alpha_dropout")


def _is_random(func, named: Dict[str, Any]) -> bool:
    """Whether the op draws from a random generator (schema tag nondeterministic_seeded),
    except a dropout that drops nothing (train=False or p=0) and attention with
    dropout_p=0 (SDPA ops carry the tag for their optional dropout)."""
    if torch.Tag.nondeterministic_seeded not in getattr(func, "tags", ()):
        return False
    if "dropout_p" in named:
        return named["dropout_p"] != 0
    if func._schema.name in _DROPOUT_OPS:
        train, p = named.get("train", True), named.get("p", 0.5)
        if train is False or p == 0:
            return False
    return True


class CaptureRecord:
    """What a capture keeps besides the trace (pass one to capture / capture_program).

    values: "none"; "io" keeps a detached clone of every source tensor (input, parameter,
    buffer, constant) when the trace first sees it, of every program output at the end, and
    of the outputs of random ops (validation gives those to the executor); "all" also keeps
    every op output right after its op (to locate the first divergent op). Clones, because
    in-place ops change the objects later. Values need real tensors (fake=False).

    flop_counter: stacks torch.utils.flop_counter.FlopCounterMode under the recorder;
    counter_flops then holds, per recorded op index, the FLOPs the counter counted while
    that op ran (ops it counted nothing for are absent)."""

    def __init__(self, values: str = "none", flop_counter: bool = False) -> None:
        if values not in ("none", "io", "all"):
            raise ValueError(f"values={values!r}: expected 'none', 'io' or 'all'")
        self.values_mode = values
        self.flop_counter = flop_counter
        self.reset()

    def reset(self) -> None:
        """Forgets what an earlier (failed) capture attempt recorded."""
        self.values: Dict[int, torch.Tensor] = {}  # trace tensor id -> value
        self.random_ops: List[int] = []  # indices of random ops in trace["ops"]
        self.counter_flops: Dict[int, int] = {}  # op index -> FLOPs FlopCounterMode counted
        self.counter_total = 0  # FlopCounterMode's total FLOPs over the capture
        self.counter_by_packet: Dict[str, int] = {}  # "aten::mm" -> FLOPs, the counter's own view
        self.returned: List[int] = []  # trace ids of the tensors the program (step) returned
        self.counter_errors: Dict[str, str] = {}  # "aten::mm" -> why its formula raised

    @property
    def keeps_values(self) -> bool:
        return self.values_mode != "none"

    def keep(self, tid: int, t: torch.Tensor) -> None:
        self.values[tid] = t.detach().clone()


# Arguments an op writes in training mode without its schema saying so: the running
# statistics of aten::native_batch_norm.
_UNDECLARED_WRITES = frozenset((("aten::native_batch_norm", "running_mean"),
                                ("aten::native_batch_norm", "running_var")))


# In-place ops that change a tensor's metadata (shape, strides), not its data: no other view
# of the storage sees a change, so they are not writes for _Trace.wrote.
_METADATA_INPLACE = frozenset((
    "aten::t_", "aten::transpose_", "aten::unsqueeze_", "aten::squeeze_", "aten::as_strided_",
    "aten::detach_", "aten::resize_", "aten::resize_as_", "aten::set_", "aten::swapaxes_",
    "aten::swapdims_", "aten::requires_grad_", "aten::_coalesced_"))


def _layout(t: torch.Tensor) -> Tuple[List[int], List[int], int]:
    """(shape, strides, storage offset) of a tensor, in elements."""
    return [int(n) for n in t.shape], [int(s) for s in t.stride()], int(t.storage_offset())


def _span(layout: Tuple[List[int], List[int], int]) -> Optional[Tuple[int, int]]:
    """The first and last storage element a layout reaches; None when it has no element."""
    shape, strides, off = layout
    if any(n == 0 for n in shape):
        return None
    lo = off + sum((n - 1) * st for n, st in zip(shape, strides) if st < 0)
    hi = off + sum((n - 1) * st for n, st in zip(shape, strides) if st > 0)
    return lo, hi


def is_row_major(shape: List[int], strides: List[int]) -> bool:
    """Whether strides (in elements) are the dense row-major ones of shape (size-1 dimensions
    aside)."""
    want = 1
    for n, st in zip(reversed(shape), reversed(strides)):
        if n != 1 and st != want:
            return False
        want *= n
    return True


def _within(inner: Tuple[int, int], outer_layout) -> bool:
    """Whether a span lies inside the elements of a dense row-major layout."""
    outer = _span(outer_layout)
    return outer is not None and outer[0] <= inner[0] and inner[1] <= outer[1]


class _Trace:
    """Tensors and ops recorded so far.

    Writes through views. The trace versions tensors by Python object, so an in-place op
    on one view of a storage (x[:, 0].fill_(0), x[1:3].copy_(y), a KV-cache slot) gives only
    that view a new id. Every other object over the same storage (the base x, other views)
    has then changed too: when such a stale object is next read (as an op argument or as a
    program output), the trace first records its new version, computed from the write:
      - the stale object is dense row-major and contains the written elements:
        aten::as_strided_scatter(stale, written, written's size, strides, offset relative
        to the stale object) -- torch's own functional form of the write;
      - the written tensor is dense row-major and contains the stale object's elements:
        aten::as_strided(written, stale's size, strides, storage offset);
      - otherwise, through a dense object over the storage that contains both (the base),
        brought up to date first; without one, an op "solar::write_through_view" that no
        table lowers, so the reader is unanalyzed rather than silently stale.
    Objects only read after being brought up to date, lazily, so views nobody reads again
    cost nothing."""

    def __init__(self, record: Optional[CaptureRecord] = None) -> None:
        self.record = record
        self.tensors: List[Dict[str, Any]] = []
        self.ops: List[Dict[str, Any]] = []
        # The paths of the modules whose forward is running, innermost last ("" is the
        # program's own module): each op records the innermost (docs/torch-frontend.md).
        self.module_stack: List[str] = []
        self._ids: Dict[int, int] = {}  # id(tensor object) -> current trace id
        self._keep: List[torch.Tensor] = []  # keeps objects alive so id() is not reused
        self._storages: Dict[int, int] = {}
        # Writes through views (see the class comment), per trace storage id: the objects
        # over it and the in-place writes so far as (object, its new trace id, its layout);
        # per object, how many of its storage's writes its current id already reflects.
        self._objects: Dict[int, List[torch.Tensor]] = {}
        self._writes: Dict[int, List[Tuple[torch.Tensor, int, Any]]] = {}
        self._seen: Dict[int, int] = {}
        self._storage_of: Dict[int, int] = {}  # id(tensor object) -> trace storage id
        # The program's inputs, parameters and buffers with their first ids: one it writes in
        # place has changed state, an effect like its result. (Constants are objects it made
        # itself, such as an optimizer's step counter created on the first step.)
        self.state: List[Tuple[torch.Tensor, int]] = []

    def _storage_id(self, t: torch.Tensor) -> int:
        try:
            key = t.untyped_storage()._cdata
        except Exception:  # a tensor without storage (sparse, nested): its own storage
            key = ("solo", id(t))
        return self._storages.setdefault(key, len(self._storages))

    def new_tensor(self, t: torch.Tensor, role: str, name: str = "") -> int:
        tid = len(self.tensors)
        entry: Dict[str, Any] = {
            "id": tid,
            "shape": [int(s) for s in t.shape],
            "dtype": _dtype_name(t.dtype),
            "role": role,
        }
        try:
            entry["strides"] = [int(s) for s in t.stride()]
            entry["storage_offset"] = int(t.storage_offset())
        except Exception:
            pass
        entry["storage"] = sid = self._storage_id(t)
        if name:
            entry["name"] = name
        self.tensors.append(entry)
        if id(t) not in self._ids:
            self._objects.setdefault(sid, []).append(t)
        self._ids[id(t)] = tid
        self._storage_of[id(t)] = sid
        self._seen[id(t)] = len(self._writes.get(sid, ()))
        self._keep.append(t)
        if role in ("input", "parameter", "buffer"):
            self.state.append((t, tid))
        if role in _SOURCE_ROLES and self.record is not None and self.record.keeps_values:
            self.record.keep(tid, t)
        return tid

    def id_of(self, t: torch.Tensor) -> int:
        """The current id of a tensor; a tensor the trace has not seen (a constant the
        program made outside the capture) is recorded as a constant. A tensor whose storage
        was written through another view since its id was made gets a new version first
        (see the class comment)."""
        tid = self._ids.get(id(t))
        if tid is None:
            return self.new_tensor(t, "constant")
        sid = self._storage_of.get(id(t))
        if sid is not None and self._seen[id(t)] < len(self._writes.get(sid, ())):
            tid = self._refresh(t, sid)
        return tid

    def wrote(self, t: torch.Tensor) -> None:
        """Notes that an in-place op wrote `t` (whose new id new_tensor just made)."""
        sid = self._storage_of.get(id(t))
        if sid is None or len(self._objects.get(sid, ())) < 2:
            return  # no other object over this storage: nothing can go stale
        writes = self._writes.setdefault(sid, [])
        writes.append((t, self._ids[id(t)], _layout(t)))
        self._seen[id(t)] = len(writes)

    def _record_version(self, t: torch.Tensor, op: str, args: Dict[str, Any]) -> int:
        """Appends a recorded (not executed) op that makes the next version of `t`."""
        return self.append_made(op, args, [t])[0]

    def append_made(self, op: str, args: Dict[str, Any], outs: List[torch.Tensor]) -> List[int]:
        """Records op `op` (its arguments encoded) whose results `outs` Solar made itself, not
        a dispatched op (a version write, a recurrent layer, a selective scan): each a new
        intermediate, its value kept when the record keeps every value. Their ids."""
        ids = [self.new_tensor(o, "intermediate") for o in outs]
        if self.record is not None and self.record.values_mode == "all":
            for tid, t in zip(ids, outs):
                self.record.keep(tid, t)
        self.append_op({"op": op, "args": args, "outputs": ids})
        return ids

    def tag_module(self, entry: Dict[str, Any]) -> None:
        if self.module_stack and self.module_stack[-1]:
            entry["module"] = self.module_stack[-1]

    def append_op(self, entry: Dict[str, Any], located: bool = True) -> None:
        """Records `entry` with the module it runs in and, when `located`, the program's line
        that issued it."""
        if located:
            file, line = source_location()
            if file:
                entry["file"] = file
                entry["line"] = line
        self.tag_module(entry)
        self.ops.append(entry)

    def _refresh(self, x: torch.Tensor, sid: int) -> int:
        """Brings object x up to date with the writes through other views of its storage."""
        writes = self._writes[sid]
        xid = self._ids[id(x)]
        xl = _layout(x)
        xspan = _span(xl)
        for w, wid, wl in writes[self._seen[id(x)]:]:
            wspan = _span(wl)
            if w is x or xspan is None or wspan is None or wspan[1] < xspan[0] \
                    or xspan[1] < wspan[0]:
                continue  # its own write (already its id), or no element in common
            if is_row_major(*xl[:2]) and _within(wspan, xl):
                xid = self._record_version(x, "aten::as_strided_scatter.default", {
                    "self": {"tensor": xid}, "src": {"tensor": wid}, "size": wl[0],
                    "stride": wl[1], "storage_offset": wl[2] - xl[2]})
                continue
            if is_row_major(*wl[:2]) and _within(xspan, wl):
                xid = self._record_version(x, "aten::as_strided.default", {
                    "self": {"tensor": wid}, "size": xl[0], "stride": xl[1],
                    "storage_offset": xl[2]})
                continue
            base = None
            for b in self._objects.get(sid, ()):
                bl = _layout(b)
                if (b is not x and is_row_major(*bl[:2]) and _within(xspan, bl)
                        and _within(wspan, bl)):
                    base = b
                    break
            if base is None:
                xid = self._record_version(x, "solar::write_through_view", {
                    "self": {"tensor": xid}, "src": {"tensor": wid}})
            else:
                bid = self.id_of(base)  # base up to date with every write so far
                xid = self._record_version(x, "aten::as_strided.default", {
                    "self": {"tensor": bid}, "size": xl[0], "stride": xl[1],
                    "storage_offset": xl[2]})
            break  # x now derives from a tensor that reflects every write
        self._seen[id(x)] = len(writes)
        return xid

    def encode(self, v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return {"tensor": self.id_of(v)}
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, int):
            return int(v)
        if isinstance(v, float):
            if math.isfinite(v):
                return v
            return {"float": "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")}
        if isinstance(v, (torch.SymInt,)):
            return int(v)
        if isinstance(v, (torch.SymFloat,)):
            return float(v)
        if isinstance(v, complex):
            return {"complex": [v.real, v.imag]}
        if isinstance(v, torch.dtype):
            return {"dtype": _dtype_name(v)}
        if isinstance(v, torch.device):
            return {"device": str(v)}
        if isinstance(v, torch.layout):
            return {"layout": str(v).removeprefix("torch.")}
        if isinstance(v, torch.memory_format):
            return {"memory_format": str(v).removeprefix("torch.")}
        if isinstance(v, (list, tuple)):
            return [self.encode(x) for x in v]
        return {"repr": repr(v)}


class _Recorder(TorchDispatchMode):
    def __init__(self, trace: _Trace, source_lines: bool = True, counter: Any = None,
                 fake_mode: Any = None) -> None:
        super().__init__()
        self.trace = trace
        self.source_lines = source_lines
        self.counter = counter  # a FlopCounterMode entered under this mode, or None
        self.fake_mode = fake_mode  # the capture's FakeTensorMode (None on real tensors)

    def _counted(self) -> int:
        return sum(self.counter.flop_counts["Global"].values())

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if distributed.ACTIVE and distributed.dtensor_types(types):
            return NotImplemented  # DTensor's dispatch runs the rank's local ops: recorded
        kwargs = kwargs or {}
        schema = func._schema
        # Schema-named arguments, encoded before the op runs (an in-place op changes the
        # version of its argument).
        named: Dict[str, Any] = {}
        written: List[torch.Tensor] = []
        undeclared: List[torch.Tensor] = []
        for i, a in enumerate(schema.arguments):
            if i < len(args) and not a.kwarg_only:
                v = args[i]
            elif a.name in kwargs:
                v = kwargs[a.name]
            elif a.has_default_value():
                v = a.default_value
            else:
                continue
            named[a.name] = self.trace.encode(v)
            if not isinstance(v, torch.Tensor):
                if (distributed.ACTIVE and isinstance(v, (list, tuple)) and a.alias_info
                        is not None and a.alias_info.is_write):  # FSDP2's copy-out
                    written.extend(x for x in v if isinstance(x, torch.Tensor))
                continue
            if a.alias_info is not None and a.alias_info.is_write:
                written.append(v)
            elif (schema.name, a.name) in _UNDECLARED_WRITES:
                undeclared.append(v)
        if undeclared and named.get("training"):
            written.extend(undeclared)
        if distributed.ACTIVE:  # a collective's group, kind and reduction (distributed.py)
            try:
                named.update(distributed.collective_args(func, args, kwargs) or {})
            except distributed.Refused as e:
                file, line = source_location()
                raise unsupported(f"{file}:{line}: {e}" if file else str(e)) from None
            written.extend(distributed.undeclared_writes(func, args, kwargs))
        before = self._counted() if self.counter is not None else 0
        # A few ops' fake results are made directly (fake_shortcuts); FlopCounterMode, below
        # this mode, has a formula for none of them.
        out = fake_shortcuts.result(func, args, kwargs)
        if out is None:
            out = func(*args, **kwargs)
        if distributed.ACTIVE and distributed.foreign(out, self.fake_mode):
            return out  # DTensor's sharding propagation, not the program
        counted = self._counted() - before if self.counter is not None else 0
        outs: List[Optional[torch.Tensor]] = []
        if isinstance(out, torch.Tensor):
            outs = [out]
        elif isinstance(out, (tuple, list)):
            for o in out:
                if isinstance(o, torch.Tensor):
                    outs.append(o)
                elif isinstance(o, (tuple, list)):
                    outs.extend(x if isinstance(x, torch.Tensor) else None for x in o)
                else:
                    outs.append(None)
        ids: List[Optional[int]] = []
        produced: List[Tuple[int, torch.Tensor]] = []
        for o in outs:
            if o is None:
                ids.append(None)
                continue
            # A fresh result, a view (a new object over an input's storage), or an in-place
            # result (the input object itself): each gets a new id, a new version.
            ids.append(self.trace.new_tensor(o, "intermediate"))
            produced.append((ids[-1], o))
        for w in written:  # mutated arguments not returned (e.g. running stats): new versions
            if not any(o is w for o in outs if o is not None):
                ids.append(self.trace.new_tensor(w, "intermediate"))
                produced.append((ids[-1], w))
        if written and schema.name not in _METADATA_INPLACE:
            for w in written:  # other views of a written storage are now stale
                self.trace.wrote(w)
        if not ids:
            return out  # no tensor result and no mutation (prim::device, asserts): no effect
        record = self.trace.record
        index = len(self.trace.ops)
        if record is not None:
            if counted:
                record.counter_flops[index] = counted
            random = _is_random(func, named)
            if random:
                record.random_ops.append(index)
            if record.values_mode == "all" or (random and record.keeps_values):
                for tid, t in produced:
                    record.keep(tid, t)
        self.trace.append_op({"op": _op_name(func), "args": named, "outputs": ids},
                             located=self.source_lines)
        return out


def _flatten(v: Any) -> Iterable[torch.Tensor]:
    if isinstance(v, torch.Tensor):
        yield v
    elif isinstance(v, (list, tuple)):
        for x in v:
            yield from _flatten(x)
    elif isinstance(v, dict):
        for x in v.values():
            yield from _flatten(x)


_OPTIMIZERS = {"sgd": "SGD", "adam": "Adam", "adamw": "AdamW"}


def capture(
    fn: Callable,
    *inputs: Any,
    name: Optional[str] = None,
    fake: bool = True,
    source: str = "",
    train: bool = False,
    loss_fn: Optional[Callable] = None,
    optimizer: Optional[str] = None,
    record: Optional[CaptureRecord] = None,
    unroll: bool = False,
    _fake_mode: Optional[FakeTensorMode] = None,
) -> Dict[str, Any]:
    """Runs `fn(*inputs)` (an nn.Module or a function) under the recorder and returns the
    OpTrace as a dict. Inputs, parameters and buffers become fake tensors unless fake=False
    (then the program runs on real data). Returns the trace dict (docs/optrace.md).

    train: records a training step instead of inference: the forward pass with autograd on
    (parameters, or the floating inputs of a module without parameters, require grad), the
    loss `loss_fn(output, *inputs)` (default: the sum of every floating output), the real
    backward pass autograd runs, and with `optimizer` ("sgd", "adam", "adamw") the
    optimizer's update step. Gradients and updated parameters are program outputs.

    record: a CaptureRecord to fill (tensor values on real tensors, FlopCounterMode's counts).

    unroll: nn.LSTM/GRU/RNN recorded one aten op per time step (torch's CPU kernel) instead
    of one op per layer call (see recurrent_calls.py), and transformers' Mamba scan one op
    per token instead of one per call (selective_scan.py)."""
    if optimizer is not None and optimizer not in _OPTIMIZERS:
        raise ValueError(f"optimizer {optimizer!r}: expected one of {', '.join(_OPTIMIZERS)}")
    if optimizer is not None and not train:
        raise ValueError("an optimizer step needs train=True")
    # torch.compile wrappers: analyze the program they compile.
    fn = getattr(fn, "_orig_mod", fn)
    fn = getattr(fn, "_torchdynamo_orig_callable", fn)
    dispatch_without_dynamo()
    mode = _fake_mode or (fake_mode() if fake else None)
    if record is not None:
        record.reset()
        if record.keeps_values and mode is not None:
            raise ValueError("recording tensor values needs a capture on real tensors (fake=False)")
    trace = _Trace(record)
    module = fn if isinstance(fn, torch.nn.Module) else None
    if name is None:
        name = type(fn).__name__ if module is not None else getattr(fn, "__name__", "program")

    def to_fake(t: torch.Tensor) -> torch.Tensor:
        if mode is None or isinstance(t, torch._subclasses.fake_tensor.FakeTensor):
            return t
        return mode.from_tensor(t)

    fake_inputs = [to_fake(x) if isinstance(x, torch.Tensor) else x for x in inputs]
    for x in _flatten(fake_inputs):
        trace.new_tensor(x, "input")
    params: Dict[str, torch.Tensor] = {}
    trainable: List[torch.Tensor] = []  # the leaves gradients are taken for (train)
    if module is not None:
        for pname, p in module.named_parameters():
            if distributed.ACTIVE and distributed.is_dtensor(p):
                # A sharded parameter (DTensor, FSDP2): the rank's shard is what its local
                # ops read; the module keeps its own parameter objects.
                trace.new_tensor(distributed.local(p), "parameter", pname)
                continue
            q = p if _is_fake(p) else to_fake(p.detach())
            if train and p.requires_grad:
                q = q.detach().requires_grad_(True)
                trainable.append(q)
            params[pname] = q
            trace.new_tensor(q, "parameter", pname)
        for bname, b in module.named_buffers():
            params[bname] = to_fake(b) if not _is_fake(b) else b
            tid = trace.new_tensor(params[bname], "buffer", bname)
            # A causal mask built in __init__: its values, or those its construction gives.
            band = getattr(b, "_solar_band", None) if _is_fake(b) else band_of(b)
            if band is not None:
                trace.tensors[tid]["band"] = band
    if train and not trainable:  # a function, or a module without parameters: d/d inputs
        for i, x in enumerate(fake_inputs):
            if isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex()):
                fake_inputs[i] = x.detach().requires_grad_(True)
                trace._ids[id(fake_inputs[i])] = trace._ids.pop(id(x))
                trace._keep.append(fake_inputs[i])
                trainable.append(fake_inputs[i])

    def forward():
        if module is not None:
            return torch.func.functional_call(module, params, tuple(fake_inputs))
        return fn(*fake_inputs)

    counter = None
    if record is not None and record.flop_counter:
        counter = FlopCounterMode(display=False, custom_mapping=_counter_formulas(record))

    def recording():
        """The recorder, with FlopCounterMode entered under it when asked: the counter sees
        each op the recorder passes on (and counts decompositions of composite ops it has no
        formula for under that op), never changing what the recorder sees."""
        stack = contextlib.ExitStack()
        if counter is not None:
            stack.enter_context(counter)
        stack.enter_context(_Recorder(trace, counter=counter, fake_mode=mode))
        return stack

    def run():
        if not train:
            with torch.no_grad():
                with recording():
                    return forward()
        if not trainable:
            raise ValueError("--train: the program has no parameters and no floating inputs "
                             "to differentiate")
        opt = None
        if optimizer is not None:
            # foreach=False: one update op per parameter, as the CPU default; the state
            # (momentum, moments) is created by the first step, inside the recorder.
            opt = getattr(torch.optim, _OPTIMIZERS[optimizer])(trainable, lr=1e-3, foreach=False)
        with recording():
            out = forward()
            loss = loss_fn(out, *fake_inputs) if loss_fn is not None else _default_loss(out)
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                raise ValueError("--train: the loss must be a tensor with one element")
            loss.backward()
            if opt is not None:
                with torch.no_grad():
                    opt.step()
        # What a training step produces: the loss, every gradient, the updated parameters.
        return [loss] + [t.grad for t in trainable if t.grad is not None] + (
            trainable if opt is not None else [])

    # Module paths: forward pre/post hooks on every named submodule keep the trace's module
    # stack (the names of module.named_modules(): "blocks.3.attn.qkv"). Backward ops run
    # outside every forward and record no module.
    module_types: Dict[str, str] = {}
    hooks: List[Any] = []
    if module is not None:
        for mname, m in module.named_modules():
            module_types[mname] = type(m).__name__

            def enter(_m, _args, _path=mname):
                trace.module_stack.append(_path)

            def leave(_m, _args, _out):
                if trace.module_stack:
                    trace.module_stack.pop()

            hooks.append(m.register_forward_pre_hook(enter))
            hooks.append(m.register_forward_hook(leave, always_call=True))

    # nn.MultiheadAttention / TransformerEncoderLayer take a fused "fast path" op in eval
    # mode (aten::_transformer_encoder_layer_fwd, _native_multi_head_attention); turned off
    # while capturing, they run as the aten ops the table decomposes.
    mha = getattr(torch.backends, "mha", None)
    fastpath = mha.get_fastpath_enabled() if mha is not None else None
    # Likewise oneDNN's fused RNN layer (aten::mkldnn_rnn_layer): off, LSTM/GRU/RNN run as
    # their per-step matmuls and gates.
    try:
        if mha is not None:
            mha.set_fastpath_enabled(False)
        with warnings.catch_warnings():
            # flags() also re-sets oneDNN's TF32 switch, which warns on builds without XPU
            warnings.filterwarnings("ignore", message="TF32 acceleration on top of oneDNN")
            mkldnn_off = torch.backends.mkldnn.flags(enabled=False)
            mkldnn_off.__enter__()
        try:
            with torch_logging_silenced(), recurrent_ops_recorded(trace, not unroll), \
                    selective_scans_recorded(trace, not unroll):
                # (torch_logging_silenced: a failing meta kernel logs ~180 lines)
                if mode is not None:
                    with mode:
                        result = run()
                else:
                    result = run()
        finally:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="TF32 acceleration on top of oneDNN")
                mkldnn_off.__exit__(None, None, None)
    finally:
        if mha is not None:
            mha.set_fastpath_enabled(fastpath)
        for h in hooks:
            h.remove()
    for t in _flatten(result):
        if distributed.ACTIVE and distributed.is_dtensor(t):
            t = distributed.local(t)  # a sharded result: the rank's shard
        tid = trace._ids.get(id(t))
        if tid is not None:
            tid = trace.id_of(t)  # a returned view or base written through another view
        if tid is not None and trace.tensors[tid]["role"] == "intermediate":
            trace.tensors[tid]["role"] = "output"
        if tid is not None and record is not None:
            record.returned.append(tid)
            if record.keeps_values:
                record.keep(tid, t)
    # State the program wrote in place (a BatchNorm's running statistics, a cache passed in):
    # its final version is an output too, so that the analysis does not drop the update as
    # dead code.
    for obj, first_id in trace.state:
        if id(obj) not in trace._ids:
            continue  # replaced by a trainable copy (train without parameters)
        tid = trace.id_of(obj)
        if tid != first_id and trace.tensors[tid]["role"] == "intermediate":
            trace.tensors[tid]["role"] = "output"
            if record is not None and record.keeps_values:
                record.keep(tid, obj)
    if counter is not None:
        counts = counter.get_flop_counts().get("Global", {})
        record.counter_by_packet = {_packet_name(k): int(v) for k, v in counts.items()}
        record.counter_total = int(sum(counts.values()))
    doc: Dict[str, Any] = {
        "schema": OPTRACE_SCHEMA,
        "name": name,
        "frontend": "torch",
        "tensors": trace.tensors,
        "ops": trace.ops,
    }
    if module_types:
        doc["modules"] = module_types
    if module is not None:
        doc["mode"] = module_mode(module)
    if source:
        doc["source"] = source
    return doc


def module_mode(module: torch.nn.Module) -> str:
    """"training" when every submodule is in training mode (batch norm normalizes by the
    batch's statistics and updates its running ones, dropout drops), "eval" when none is,
    "mixed" otherwise: the mode the program ran in (docs/torch-frontend.md, "Mode")."""
    flags = {m.training for m in module.modules()}
    return "mixed" if len(flags) > 1 else ("training" if flags.pop() else "eval")


def _default_loss(out: Any) -> torch.Tensor:
    """The sum of every floating output: a scalar whose gradient reaches every output."""
    terms = [t.sum() for t in _flatten(out) if t.is_floating_point() and t.requires_grad]
    if not terms:
        raise ValueError("--train: no floating output depends on a trainable tensor")
    loss = terms[0]
    for t in terms[1:]:
        loss = loss + t
    return loss


def _packet_name(packet: Any) -> str:
    """"aten::mm" for torch.ops.aten.mm (FlopCounterMode keys its counts by packet)."""
    schema_name = getattr(packet, "_qualified_op_name", None)
    return schema_name if isinstance(schema_name, str) else str(packet).replace(".", "::", 1)


def _counter_formulas(record: "CaptureRecord") -> Dict[Any, Any]:
    """FlopCounterMode's formulas, each guarded so that a formula that raises (an assertion on
    shapes it does not expect) records the error in record.counter_errors and counts 0 for
    that op instead of failing the capture; plus the counter's own SDPA formulas for the CPU
    flash-attention ops its registry lacks: on CPU, scaled_dot_product_attention runs as
    _scaled_dot_product_flash_attention_for_cpu(_backward), whose leading arguments (query,
    key, value; grad_out, query, key, value) are those of the CUDA flash op the counter
    covers, so the counter counts the program as it would on a GPU."""
    from torch.utils import flop_counter as fc

    aten = torch.ops.aten
    formulas = dict(fc.flop_registry)  # packet -> formula over tensors (shapes read inside)
    for cpu, gpu in (("_scaled_dot_product_flash_attention_for_cpu",
                      "_scaled_dot_product_flash_attention"),
                     ("_scaled_dot_product_flash_attention_for_cpu_backward",
                      "_scaled_dot_product_flash_attention_backward")):
        if hasattr(aten, cpu) and getattr(aten, gpu, None) in fc.flop_registry:
            formulas[getattr(aten, cpu)] = fc.flop_registry[getattr(aten, gpu)]
    mapping = {}
    for packet, formula in formulas.items():
        def raw(*args, _formula=formula, _name=_packet_name(packet), **kwargs):
            try:
                return _formula(*args, **kwargs)
            except Exception as e:  # the counter's bug must not fail the program's capture
                record.counter_errors.setdefault(_name, f"{type(e).__name__}: {e}")
                return 0

        raw._get_raw = True  # already reads shapes: FlopCounterMode must not wrap it again
        mapping[packet] = raw
    return mapping


def _is_fake(t: torch.Tensor) -> bool:
    return isinstance(t, torch._subclasses.fake_tensor.FakeTensor)


def load_program(path: str, overrides: Optional[Dict[str, str]] = None) -> types.ModuleType:
    """Executes a KernelBench-format file as a module, once. `overrides` (NAME -> VALUE
    text, a Python literal or else a string) replace module-level constants: `NAME = VALUE`
    is injected right after each top-level statement that assigns NAME (alone or in a tuple
    assignment: solar.program_source.inject_overrides), so later constants and
    get_inputs()/get_init_inputs() see the new value. A NAME the file never assigns at top
    level raises OverrideError."""
    path = os.path.abspath(path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    tree = inject_overrides(ast.parse(text, filename=path), path, overrides)
    mod = types.ModuleType(os.path.splitext(os.path.basename(path))[0])
    mod.__file__ = path
    code = compile(tree, path, "exec")
    with _hub_offline(mod, text):
        exec(code, mod.__dict__)
    return mod


# How a program that loads Hugging Face models by name (KernelBench level 4) is loaded and
# built: a context manager factory answering `from_pretrained` offline from Solar's model
# registry. Installed by the one module that loads this frontend (solar.programs gives it
# solar.models.hub.offline), so the frontend needs no model registry of its own.
hub_offline: Optional[Callable[[], Any]] = None


def _hub_offline(mod: types.ModuleType, text: Optional[str] = None):
    """The hub_offline context for a program whose source calls `from_pretrained`; `text`
    (the source, at load) marks the module for its later builds."""
    if text is not None:
        mod._solar_hub = "from_pretrained" in text
    if not getattr(mod, "_solar_hub", False) or hub_offline is None:
        return contextlib.nullcontext()
    return hub_offline()


def capture_program(
    path: str,
    overrides: Optional[Dict[str, str]] = None,
    fake: bool = True,
    train: bool = False,
    optimizer: Optional[str] = None,
    record: Optional[CaptureRecord] = None,
    eval_mode: bool = False,
    unroll: bool = False,
) -> Dict[str, Any]:
    """Captures a KernelBench-format file: Model(*get_init_inputs()) on get_inputs(), or a
    file's module-level forward(*get_inputs()), in the mode the program leaves its module
    in (a fresh nn.Module trains: batch statistics, active dropout), or in eval mode with
    eval_mode (`--eval`: model.eval() first).
    train/optimizer: a training step (see capture); the file's own `loss_fn(output,
    *inputs)`, when it defines one, is the loss. record: see CaptureRecord (tensor values
    need fake=False)."""
    step = {"train": train, "optimizer": optimizer, "record": record, "eval_mode": eval_mode,
            "unroll": unroll}
    mod = load_program(path, overrides)
    check_program(mod, path)
    if fake:
        try:
            return _capture_loaded(mod, path, fake=True, **step)
        except (DataDependentOutputException, DynamicOutputShapeException) as e:
            # The program reads tensor values (.item(), nonzero...): fake tensors have none.
            warnings.warn(
                f"{path}: {type(e).__name__} on fake tensors ({e}); capturing on real tensors",
                RuntimeWarning,
                stacklevel=2,
            )
    return _capture_loaded(mod, path, fake=False, **step)


def check_program(mod: types.ModuleType, path: str) -> None:
    """ProgramFormatError unless the loaded file defines get_inputs and either class Model
    (KernelBench format) or a module-level function forward (as JAX programs may)."""
    form = ("a program defines get_inputs() and either class Model (with get_init_inputs()) "
            "or a function forward(*inputs)")
    if not callable(getattr(mod, "get_inputs", None)):
        raise ProgramFormatError(f"{path}: {form}; 'get_inputs' is missing")
    if not hasattr(mod, "Model") and not callable(getattr(mod, "forward", None)):
        raise ProgramFormatError(f"{path}: {form}; neither 'Model' nor 'forward' is defined")


def build_program(mod: types.ModuleType, path: str, init: List[Any]) -> Any:
    """What a loaded program runs: Model(*init), or its module-level forward function (which
    takes everything from get_inputs(), so a get_init_inputs() with values is refused)."""
    if hasattr(mod, "Model"):
        with _hub_offline(mod):
            return mod.Model(*init)
    if init:
        raise ProgramFormatError(
            f"{path}: get_init_inputs() returns {len(init)} value(s), but the program has no "
            "class Model to build with them (a forward(*inputs) program gets all its "
            "arguments from get_inputs())")
    return mod.forward


@contextlib.contextmanager
def _conversions_in_place():
    """`module.to(dtype)`, `.half()`, `.bfloat16()` in a constructor, on fake parameters:
    torch swaps a fake parameter for its converted copy (torch.utils.swap_tensors), which
    fails on any parameter the fake mode holds a weak reference to (every parameter made
    under it). Where the swap fails, the parameter takes the copy's data in place instead,
    as torch converts real parameters (`param.data = converted`)."""
    swap = torch.utils.swap_tensors

    def swap_or_set(t1, t2):
        try:
            return swap(t1, t2)
        except RuntimeError:
            if not (isinstance(t1, FakeTensor) and isinstance(t2, FakeTensor)):
                raise
            with torch.no_grad():
                t1.data = t2.data

    torch.utils.swap_tensors = swap_or_set
    try:
        yield
    finally:
        torch.utils.swap_tensors = swap


def _build_fake_or_real(mod: types.ModuleType, path: str, init: List[Any],
                        mode: FakeTensorMode) -> Any:
    """The program built under the fake mode, or on real tensors when its constructor reads
    tensor values (`[x.item() for x in torch.linspace(...)]` for per-layer rates): then
    only its parameters hold data, and the capture still runs on fake tensors."""
    record = ConstructionRecord()
    try:
        with mode, fake_shortcuts.FakeShortcuts(), record.mode(), _conversions_in_place():
            model = build_program(mod, path, init)
    except (DataDependentOutputException, DynamicOutputShapeException):
        return build_program(mod, path, init)
    # A buffer built from constants (a causal mask): its values computed for real from the
    # recorded construction, its band kept on the fake tensor for the capture.
    if isinstance(model, torch.nn.Module):
        for _, b in model.named_buffers():
            value = record.real_value(b) if _is_fake(b) and b.dim() >= 2 else None
            band = band_of(value) if value is not None else None
            if band is not None:
                b._solar_band = band
    return model


def capture_loaded(
    mod: types.ModuleType, path: str, fake: bool, train: bool = False,
    optimizer: Optional[str] = None, record: Optional[CaptureRecord] = None,
    eval_mode: bool = False, unroll: bool = False,
) -> Dict[str, Any]:
    """Captures a program load_program already loaded (see capture_program)."""
    return _capture_loaded(mod, path, fake, train, optimizer, record, eval_mode, unroll)


def _capture_loaded(
    mod: types.ModuleType, path: str, fake: bool, train: bool, optimizer: Optional[str],
    record: Optional[CaptureRecord] = None, eval_mode: bool = False, unroll: bool = False,
) -> Dict[str, Any]:
    mode = fake_mode() if fake else None
    init = list(mod.get_init_inputs()) if hasattr(mod, "get_init_inputs") else []
    if mode is not None:
        # Built and fed under the fake mode: parameters and inputs allocate no data.
        with torch_logging_silenced():
            model = _build_fake_or_real(mod, path, init, mode)
            with mode:
                inputs = list(mod.get_inputs())
    else:
        model = build_program(mod, path, init)
        inputs = list(mod.get_inputs())
    # KernelBench's harness runs the module as its constructor left it (a fresh module
    # trains); inference still runs without autograd, only `train` records a backward.
    if isinstance(model, torch.nn.Module) and eval_mode:
        model.eval()
    name = os.path.splitext(os.path.basename(path))[0]
    return capture(model, *inputs, name=name, fake=fake, source=path, train=train,
                   loss_fn=getattr(mod, "loss_fn", None) if train else None,
                   optimizer=optimizer, record=record, unroll=unroll, _fake_mode=mode)
