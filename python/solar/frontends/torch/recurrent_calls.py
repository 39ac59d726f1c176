"""PyTorch's recurrent layers recorded as one op per layer call: torch._VF's lstm, gru and
rnn functions wrapped while capturing, so that the lowering lifts each to the graph's repeat
form (docs/torch-frontend.md) instead of one aten op per step."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Dict, List, Optional

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.utils._python_dispatch import _disable_current_modes


# `trace` below: capture._Trace, the trace being recorded (encode, append_made).


# Recurrent layers (docs/torch-frontend.md, "Recurrent layers"). nn.LSTM/GRU/RNN.forward call
# torch._VF.lstm / gru / rnn_tanh / rnn_relu, whose CPU kernel runs every time step as its
# own aten ops (thousands of ops for a long sequence). While capturing, those four _VF
# functions are wrapped: a call with the dense-input overload is recorded as ONE trace op
# (`aten::lstm.input`, ...) with the schema's arguments, and its outputs are made directly
# (on fake tensors: empty tensors of the right shapes; on real tensors: torch's own result,
# computed with no mode recording it); the aten table lowers the op to one repeat op per
# layer and direction (src/lower/aten_rnn.cc). Anything else runs as before, one aten op per
# step: PackedSequence inputs, dropout between layers in training mode, dtypes other than
# f32/f64/f16/bf16, and any call that autograd records (--train), whose backward the repeat
# form does not express. `unroll=True` (`--unroll`) wraps nothing.
_RNN_FUNCTIONS = {"lstm": "aten::lstm.input", "gru": "aten::gru.input",
                  "rnn_tanh": "aten::rnn_tanh.input", "rnn_relu": "aten::rnn_relu.input"}
_RNN_ARGS = ("input", "hx", "params", "has_biases", "num_layers", "dropout", "train",
             "bidirectional", "batch_first")
_RNN_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def _rnn_call(name: str, args: tuple, kwargs: dict) -> Optional[Dict[str, Any]]:
    """The schema-named arguments of a _VF recurrent call this capture records as one op, or
    None for a call it leaves to torch (run one aten op per step)."""
    if kwargs or len(args) != len(_RNN_ARGS):
        return None
    named = dict(zip(_RNN_ARGS, args))
    x, hx, params = named["input"], named["hx"], named["params"]
    hx_list = list(hx) if isinstance(hx, (list, tuple)) else [hx]
    if name == "lstm" and not isinstance(hx, (list, tuple)):
        return None  # the PackedSequence overload (data, batch_sizes, hx, params, ...)
    if name != "lstm" and not isinstance(params, (list, tuple)):
        return None
    tensors = [x] + hx_list + list(params)
    if not all(isinstance(t, torch.Tensor) for t in tensors) or x.dim() != 3:
        return None
    if any(t.dtype != x.dtype for t in tensors) or x.dtype not in _RNN_DTYPES:
        return None
    if not all(isinstance(named[k], bool) for k in ("has_biases", "train", "bidirectional",
                                                     "batch_first")):
        return None
    if named["train"] and named["dropout"] and named["num_layers"] > 1:
        return None  # dropout between layers draws random masks: the per-step form has them
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return None  # autograd records it (--train): the per-step form has its backward
    return named


def _rnn_outputs(name: str, named: Dict[str, Any]) -> List[torch.Tensor]:
    """Empty tensors shaped as the call's results (output, h_n[, c_n]), made under the
    input's fake mode only (no recorder sees them)."""
    x = named["input"]
    hx = list(named["hx"]) if name == "lstm" else [named["hx"]]
    batch_first = named["batch_first"]
    T, B = (x.shape[1], x.shape[0]) if batch_first else (x.shape[0], x.shape[1])
    D = 2 if named["bidirectional"] else 1
    P = int(hx[0].shape[-1])  # hidden size, or LSTM's proj_size
    with _disable_current_modes(), x.fake_mode:
        out = torch.empty((int(T), int(B), D * P), dtype=x.dtype, device=x.device)
        if batch_first:
            out = out.transpose(0, 1)
        results = [out] + [torch.empty([int(n) for n in h.shape], dtype=x.dtype,
                                       device=x.device) for h in hx]
    return results


def _rnn_wrapper(name: str, original: Callable, trace: Any) -> Callable:
    def call(*args, **kwargs):
        named = _rnn_call(name, args, kwargs)
        if named is None:
            return original(*args, **kwargs)
        encoded = {k: trace.encode(v) for k, v in named.items()}
        if isinstance(named["input"], FakeTensor):
            outs = _rnn_outputs(name, named)
        else:
            with _disable_current_modes():
                res = original(*args)
            outs = list(res)
        trace.append_made(_RNN_FUNCTIONS[name], encoded, outs)
        return tuple(outs)

    return call


@contextlib.contextmanager
def recurrent_ops_recorded(trace: Any, enabled: bool):
    """torch._VF's recurrent functions wrapped (see _RNN_FUNCTIONS) while capturing."""
    vf = torch._VF
    if not enabled:
        yield
        return
    saved = {n: vf.__dict__.get(n) for n in _RNN_FUNCTIONS}
    try:
        for n in _RNN_FUNCTIONS:
            setattr(vf, n, _rnn_wrapper(n, getattr(torch._C._VariableFunctions, n), trace))
        yield
    finally:
        for n, f in saved.items():
            if f is None:
                vf.__dict__.pop(n, None)
            else:
                setattr(vf, n, f)
