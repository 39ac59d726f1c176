"""Aten-level capture of a PyTorch program into an OpTrace (schema solar.optrace.v1).

A TorchDispatchMode sits above a FakeTensorMode: every aten op the program runs passes
through the recorder with its schema-named arguments, then runs on fake tensors, which have
shapes, dtypes and strides but no data, so capture allocates no memory for activations or
weights. Tensors are identified by Python object and version: an in-place op (schema alias
info with a write) gives its result a new tensor id, so every id is written once. Views
are told from copies by the op schema (outputs that alias an input) and by storage identity.
"""

from __future__ import annotations

import math
import os
import sys
import types
import warnings
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensorMode,
)

OPTRACE_SCHEMA = "solar.optrace.v1"

_THIS_DIR = os.path.dirname(os.path.abspath(__file__))
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))


def _dtype_name(dt: torch.dtype) -> str:
    return str(dt).removeprefix("torch.")


def _op_name(func) -> str:
    # torch._ops.OpOverload: "aten::mm" + overload "default" -> "aten::mm.default"
    return f"{func._schema.name}.{func._overloadname}"


class _Trace:
    """Tensors and ops recorded so far."""

    def __init__(self) -> None:
        self.tensors: List[Dict[str, Any]] = []
        self.ops: List[Dict[str, Any]] = []
        self._ids: Dict[int, int] = {}  # id(tensor object) -> current trace id
        self._keep: List[torch.Tensor] = []  # keeps objects alive so id() is not reused
        self._storages: Dict[int, int] = {}

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
        entry["storage"] = self._storage_id(t)
        if name:
            entry["name"] = name
        self.tensors.append(entry)
        self._ids[id(t)] = tid
        self._keep.append(t)
        return tid

    def id_of(self, t: torch.Tensor) -> int:
        """The current id of a tensor; a tensor the trace has not seen (a constant the
        program made outside the capture) is recorded as a constant."""
        tid = self._ids.get(id(t))
        if tid is None:
            tid = self.new_tensor(t, "constant")
        return tid

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


def _source_location() -> Tuple[str, int]:
    """The innermost Python frame outside torch and this package: the program's line."""
    f = sys._getframe(2)
    while f is not None:
        path = os.path.abspath(f.f_code.co_filename)
        if not path.startswith(_TORCH_DIR) and not path.startswith(_THIS_DIR) and not path.startswith("<"):
            return path, f.f_lineno
        f = f.f_back
    return "", 0


class _Recorder(TorchDispatchMode):
    def __init__(self, trace: _Trace, source_lines: bool = True) -> None:
        super().__init__()
        self.trace = trace
        self.source_lines = source_lines

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        schema = func._schema
        # Schema-named arguments, encoded before the op runs (an in-place op changes the
        # version of its argument).
        named: Dict[str, Any] = {}
        written: List[torch.Tensor] = []
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
            if a.alias_info is not None and a.alias_info.is_write and isinstance(v, torch.Tensor):
                written.append(v)
        out = func(*args, **kwargs)
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
        for o in outs:
            if o is None:
                ids.append(None)
                continue
            # A fresh result, a view (a new object over an input's storage), or an in-place
            # result (the input object itself): each gets a new id, a new version.
            ids.append(self.trace.new_tensor(o, "intermediate"))
        for w in written:  # mutated arguments not returned (e.g. running stats): new versions
            if not any(o is w for o in outs if o is not None):
                ids.append(self.trace.new_tensor(w, "intermediate"))
        if not ids:
            return out  # no tensor result and no mutation (prim::device, asserts): no effect
        entry: Dict[str, Any] = {"op": _op_name(func), "args": named, "outputs": ids}
        if self.source_lines:
            file, line = _source_location()
            if file:
                entry["file"] = file
                entry["line"] = line
        self.trace.ops.append(entry)
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
    _fake_mode: Optional[FakeTensorMode] = None,
) -> Dict[str, Any]:
    """Runs `fn(*inputs)` (an nn.Module or a function) under the recorder and returns the
    OpTrace as a dict. Inputs, parameters and buffers become fake tensors unless fake=False
    (then the program runs on real data). Returns the trace dict (docs/optrace.md).

    train: records a training step instead of inference: the forward pass with autograd on
    (parameters, or the floating inputs of a module without parameters, require grad), the
    loss `loss_fn(output, *inputs)` (default: the sum of every floating output), the real
    backward pass autograd runs, and with `optimizer` ("sgd", "adam", "adamw") the
    optimizer's update step. Gradients and updated parameters are program outputs."""
    if optimizer is not None and optimizer not in _OPTIMIZERS:
        raise ValueError(f"optimizer {optimizer!r}: expected one of {', '.join(_OPTIMIZERS)}")
    if optimizer is not None and not train:
        raise ValueError("an optimizer step needs train=True")
    # torch.compile wrappers: analyze the program they compile.
    fn = getattr(fn, "_orig_mod", fn)
    fn = getattr(fn, "_torchdynamo_orig_callable", fn)
    trace = _Trace()
    mode = _fake_mode or (FakeTensorMode(allow_non_fake_inputs=True) if fake else None)
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
            q = p if _is_fake(p) else to_fake(p.detach())
            if train and p.requires_grad:
                q = q.detach().requires_grad_(True)
                trainable.append(q)
            params[pname] = q
            trace.new_tensor(q, "parameter", pname)
        for bname, b in module.named_buffers():
            params[bname] = to_fake(b) if not _is_fake(b) else b
            trace.new_tensor(params[bname], "buffer", bname)
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

    def run():
        if not train:
            with torch.no_grad():
                with _Recorder(trace):
                    return forward()
        if not trainable:
            raise ValueError("--train: the program has no parameters and no floating inputs "
                             "to differentiate")
        opt = None
        if optimizer is not None:
            # foreach=False: one update op per parameter, as the CPU default; the state
            # (momentum, moments) is created by the first step, inside the recorder.
            opt = getattr(torch.optim, _OPTIMIZERS[optimizer])(trainable, lr=1e-3, foreach=False)
        with _Recorder(trace):
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
    for t in _flatten(result):
        tid = trace._ids.get(id(t))
        if tid is not None and trace.tensors[tid]["role"] == "intermediate":
            trace.tensors[tid]["role"] = "output"
    doc: Dict[str, Any] = {
        "schema": OPTRACE_SCHEMA,
        "name": name,
        "frontend": "torch",
        "tensors": trace.tensors,
        "ops": trace.ops,
    }
    if source:
        doc["source"] = source
    return doc


def _default_loss(out: Any) -> torch.Tensor:
    """The sum of every floating output: a scalar whose gradient reaches every output."""
    terms = [t.sum() for t in _flatten(out) if t.is_floating_point() and t.requires_grad]
    if not terms:
        raise ValueError("--train: no floating output depends on a trainable tensor")
    loss = terms[0]
    for t in terms[1:]:
        loss = loss + t
    return loss


def _is_fake(t: torch.Tensor) -> bool:
    return isinstance(t, torch._subclasses.fake_tensor.FakeTensor)


def _parse_value(text: str) -> Any:
    import ast

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


class ProgramFormatError(ValueError):
    """A Python file that is not a KernelBench-format program (no Model or get_inputs)."""


class OverrideError(ValueError):
    """A --set NAME the program file does not assign at module level (a usage error)."""


def load_program(path: str, overrides: Optional[Dict[str, str]] = None) -> types.ModuleType:
    """Executes a KernelBench-format file as a module, once. `overrides` (NAME -> VALUE
    text, a Python literal or else a string) replace module-level constants: `NAME = VALUE`
    is injected right after each top-level statement that assigns NAME, so later constants
    and get_inputs()/get_init_inputs() see the new value. A NAME the file never assigns at
    top level raises OverrideError."""
    import ast

    path = os.path.abspath(path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    tree = ast.parse(text, filename=path)
    values = {k: _parse_value(v) for k, v in (overrides or {}).items()}
    if values:
        assigned = set()
        body = []
        for stmt in tree.body:
            body.append(stmt)
            targets = []
            if isinstance(stmt, ast.Assign):
                targets = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                targets = [stmt.target.id]
            for name in targets:
                if name in values:
                    assigned.add(name)
                    fix = ast.parse(f"{name} = {values[name]!r}").body[0]
                    body.append(ast.copy_location(fix, stmt))
        missing = sorted(set(values) - assigned)
        if missing:
            raise OverrideError(
                f"{path}: --set names {', '.join(missing)}, which the file does not assign "
                "at module level"
            )
        tree.body = body
        ast.fix_missing_locations(tree)
    mod = types.ModuleType(os.path.splitext(os.path.basename(path))[0])
    mod.__file__ = path
    code = compile(tree, path, "exec")
    exec(code, mod.__dict__)
    return mod


def capture_program(
    path: str,
    overrides: Optional[Dict[str, str]] = None,
    fake: bool = True,
    train: bool = False,
    optimizer: Optional[str] = None,
) -> Dict[str, Any]:
    """Captures a KernelBench-format file: Model(*get_init_inputs()) on get_inputs().
    train/optimizer: a training step (see capture); the file's own `loss_fn(output,
    *inputs)`, when it defines one, is the loss."""
    step = {"train": train, "optimizer": optimizer}
    mod = load_program(path, overrides)
    for need in ("Model", "get_inputs"):
        if not hasattr(mod, need):
            raise ProgramFormatError(
                f"{path}: a KernelBench-format program defines class Model, get_inputs() and "
                f"get_init_inputs(); '{need}' is missing"
            )
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


def _capture_loaded(
    mod: types.ModuleType, path: str, fake: bool, train: bool, optimizer: Optional[str]
) -> Dict[str, Any]:
    mode = FakeTensorMode(allow_non_fake_inputs=True) if fake else None
    init = list(mod.get_init_inputs()) if hasattr(mod, "get_init_inputs") else []
    if mode is not None:
        # Built and fed under the fake mode: parameters and inputs allocate no data.
        with mode:
            model = mod.Model(*init)
            inputs = list(mod.get_inputs())
    else:
        model = mod.Model(*init)
        inputs = list(mod.get_inputs())
    if isinstance(model, torch.nn.Module):
        model.train(train)
    name = os.path.splitext(os.path.basename(path))[0]
    return capture(model, *inputs, name=name, fake=fake, source=path, train=train,
                   loss_fn=getattr(mod, "loss_fn", None) if train else None,
                   optimizer=optimizer, _fake_mode=mode)
