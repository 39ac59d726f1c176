"""Mamba's selective scan recorded as one op: transformers' `mamba_selective_scan` runs the
state recurrence as a Python loop over the tokens on a CPU (a mul, an add, a cast, a matmul
and a select per token: ~5,000 trace ops a layer for 1,024 tokens), so while capturing it is
replaced by the same computation with the loop recorded as ONE `solar::selective_scan` op,
which the lowering lifts to a repeat op over the tokens (src/lower/aten_scan.cc,
docs/torch-frontend.md "Selective scans"). Everything before the loop (the discretization)
and after it (the D skip, the gate) runs as the original's torch ops.

One difference from the loop, stated in the docs: the state starts at the dtype the
recurrence gives it (f32, as the CUDA kernels keep it) where transformers starts it at the
input's dtype and the first token's step promotes it; for an f32 model the two are the same
program. Anything other than the recurrent branch (mambapy's pscan, the associative scan
under compilation), a call autograd records (--train), and `--unroll` run the original."""

from __future__ import annotations

import contextlib
import inspect
import sys
from typing import Any, Callable, List

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensor
from torch.utils._python_dispatch import _disable_current_modes

OP = "solar::selective_scan"
MODULE = "transformers.models.mamba.modeling_mamba"
FUNCTION = "mamba_selective_scan"
# The signature this replacement mirrors; another one (a later transformers) runs as it is.
_PARAMETERS = ("hidden_states", "dt", "A", "B", "C", "D", "z", "delta_bias", "delta_softplus",
               "return_last_state", "use_mambapy", "use_associative_scan", "kwargs")


def _loop(decay, inputs, readout, state, out_dtype) -> List[torch.Tensor]:
    """The recurrence itself (the original's loop), for real tensors: outputs [B, D, L] and
    the last state."""
    outs = []
    for t in range(decay.shape[2]):
        state = decay[:, :, t] * state + inputs[:, :, t]
        outs.append(torch.matmul(state.to(out_dtype), readout[:, :, t].unsqueeze(-1))[:, :, 0])
    return [torch.stack(outs, dim=-1), state]


def _record(trace: Any, decay, inputs, readout, state, out_dtype) -> List[torch.Tensor]:
    """The scan as one trace op; its results made directly (empty on fake tensors, the loop's
    values on real ones, computed with no recorder)."""
    args = {"deltaA": decay, "deltaB_u": inputs, "C": readout, "state": state}
    encoded = {k: trace.encode(v) for k, v in args.items()}
    b, d, _, _ = decay.shape
    if isinstance(decay, FakeTensor):
        with _disable_current_modes(), decay.fake_mode:
            outs = [torch.empty((b, d, decay.shape[2]), dtype=out_dtype, device=decay.device),
                    torch.empty(tuple(state.shape), dtype=state.dtype, device=decay.device)]
    else:
        with _disable_current_modes():
            outs = _loop(decay, inputs, readout, state, out_dtype)
    trace.append_made(OP, encoded, outs)
    return outs


def _scan_wrapper(original: Callable, module: Any, trace: Any) -> Callable:
    def scan(hidden_states, dt, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False,
             return_last_state=False, use_mambapy=False, use_associative_scan=False, **kwargs):
        tensors = [t for t in (hidden_states, dt, A, B, C, D, z, delta_bias) if t is not None]
        if (kwargs or (use_mambapy and module.is_mambapy_available()) or
                (use_associative_scan and module.is_torchdynamo_compiling()) or
                (torch.is_grad_enabled() and any(t.requires_grad for t in tensors))):
            return original(hidden_states, dt, A, B, C, D, z, delta_bias, delta_softplus,
                            return_last_state, use_mambapy, use_associative_scan, **kwargs)
        # The original's discretization, op for op.
        batch, inner, _ = hidden_states.shape
        input_dtype = hidden_states.dtype
        if delta_bias is not None:
            dt = dt + delta_bias.to(dt.dtype)[..., None]
        if delta_softplus:
            dt = F.softplus(dt)
        B = B.transpose(1, 2)
        decay = torch.exp(A[None, :, None, :] * dt[:, :, :, None])
        discrete_B = dt[:, :, :, None] * B[:, None, :, :].float()
        inputs = discrete_B * hidden_states[:, :, :, None].float()
        state_dtype = torch.promote_types(torch.promote_types(decay.dtype, input_dtype),
                                          inputs.dtype)
        state = torch.zeros(batch, inner, A.shape[-1], dtype=state_dtype,
                            device=hidden_states.device)
        # C arrives as [B, N, L] (the original transposes it to [B, L, N] and reads C[:, t]):
        # the op reads C[:, :, t], the same elements.
        scan_output, state = _record(trace, decay, inputs, C, state, input_dtype)
        if D is not None:
            scan_output = scan_output + hidden_states * D[None, :, None]
        if z is not None:
            scan_output = scan_output * F.silu(z)
        return (scan_output, state) if return_last_state else scan_output

    return scan


def _known(function: Callable) -> bool:
    """Whether `function` (transformers wraps it in a module whose forward is the reference
    implementation) has the signature this replacement mirrors."""
    try:
        reference = inspect.unwrap(getattr(function, "forward", function))
        return tuple(inspect.signature(reference).parameters) == _PARAMETERS
    except (TypeError, ValueError):
        return False


@contextlib.contextmanager
def selective_scans_recorded(trace: Any, enabled: bool):
    """transformers' Mamba scan replaced (see the module's docstring) while capturing, when
    transformers' Mamba is imported (this never imports it)."""
    module = sys.modules.get(MODULE)
    original = getattr(module, FUNCTION, None) if module is not None else None
    if not enabled or original is None or not _known(original):
        yield
        return
    setattr(module, FUNCTION, _scan_wrapper(original, module, trace))
    try:
        yield
    finally:
        setattr(module, FUNCTION, original)
