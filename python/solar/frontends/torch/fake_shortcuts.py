"""Fake-tensor results made directly, for the few ops whose fake implementation is a slow
Python decomposition.

On fake tensors torch computes an op's result metadata by running its meta kernel, or, for
ops without one, a Python decomposition into a dozen smaller ops, each dispatched through
the fake mode (and cached per shape only after the first run). Two such ops cost most of a
convolutional network's capture: `native_batch_norm` (twenty-odd ops; DenseNet201's 103
batch norms were about a third of its capture) and the in-place random fills parameter
initialisation runs (`uniform_`, `normal_`: a fresh random tensor copied in). Their results
follow from the arguments' metadata alone, and `result` makes them so; anything outside the
cases below, or with real tensors, returns None and runs as usual. tests/python/
test_fake_shortcuts.py checks every case against torch's own fake result (shape, strides,
dtype, device, version counters), and that the arguments refused here run as torch runs
them (an error where torch's fake path raises one).
"""

from __future__ import annotations

import math
from typing import Any, Dict, Optional, Sequence, Tuple

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.utils._python_dispatch import TorchDispatchMode

_aten = torch.ops.aten


def _floating_fake(t: Any) -> bool:
    return isinstance(t, FakeTensor) and t.is_floating_point()


def _dense(x: torch.Tensor) -> bool:
    """Whether x's elements fill its storage span exactly once, in some order of its
    dimensions (c10's is_non_overlapping_and_dense: dimensions of size 1 do not count).
    torch._prims_common has it too, but its guards import sympy."""
    if x.numel() == 0:
        return False
    expected = 1
    for stride, size in sorted((st, s) for s, st in zip(x.shape, x.stride()) if s > 1):
        if stride != expected:
            return False
        expected *= size
    return True


def _batch_norm(args: Sequence[Any], kwargs: Dict[str, Any]) -> Optional[Any]:
    """native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
    eps) -> (output, save_mean, save_invstd), as torch's decomposition
    (torch._decomp.decompositions.native_batch_norm_helper) makes it on the CPU device:
    the output has the input's dtype and, for a dense input, its strides; save_mean and
    save_invstd have the input's dtype and C elements when training, none otherwise.
    Training updates the running statistics in place, below the dispatcher's version
    counting (their counters stay), which on fake tensors changes nothing else."""
    if kwargs or len(args) != 8:
        return None
    x, weight, bias, running_mean, running_var, training, _, _ = args
    if not _floating_fake(x) or x.device.type != "cpu" or x.dim() < 2:
        return None
    channels = x.shape[1]
    stats = (running_mean, running_var)
    for t in (weight, bias) + stats:
        if t is not None and not (_floating_fake(t) and t.device == x.device
                                  and t.numel() == channels):
            return None  # the decomposition raises, or broadcasts in a way not mirrored here
    if not training and (running_mean is None or running_var is None):
        return None  # the decomposition's own error
    if not _dense(x):
        return None
    # Made from the input (a fake tensor makes fake tensors) whatever modes are active.
    out = x.new_empty_strided(x.shape, x.stride())
    saved = channels if training else 0
    save_mean, save_invstd = x.new_empty((saved,)), x.new_empty((saved,))
    return out, save_mean, save_invstd


def _fill_arguments(args: Sequence[Any],
                    kwargs: Dict[str, Any]) -> Optional[Tuple[Any, float, float]]:
    """(self, a, b) of a random in-place fill (self, a=0, b=1, generator=None; the
    dispatcher leaves trailing defaults out), when self is a floating fake tensor, no
    generator is given, and a and b are finite numbers inside self's dtype range."""
    x = args[0]
    if not _floating_fake(x) or len(args) > 3 or kwargs.get("generator") is not None:
        return None
    a, b = (tuple(args[1:]) + (0.0, 1.0)[len(args) - 1:])
    big = torch.finfo(x.dtype).max
    if not all(isinstance(v, (int, float)) and math.isfinite(v) and abs(v) <= big
               for v in (a, b)):
        return None
    return x, a, b


def _uniform(args: Sequence[Any], kwargs: Dict[str, Any]) -> Optional[Any]:
    """uniform_(self, from, to) on a floating fake tensor is `self`, its metadata unchanged
    (the dispatcher has already moved its version counter); from > to, or a range wider
    than the dtype holds, runs as torch runs it."""
    fill = _fill_arguments(args, kwargs)
    if fill is None:
        return None
    x, low, high = fill
    return x if low <= high and high - low <= torch.finfo(x.dtype).max else None


def _normal(args: Sequence[Any], kwargs: Dict[str, Any]) -> Optional[Any]:
    """normal_(self, mean, std): as uniform_; std < 0 runs as torch runs it."""
    fill = _fill_arguments(args, kwargs)
    return fill[0] if fill is not None and fill[2] >= 0 else None


_SHORTCUTS = {
    _aten.native_batch_norm.default: _batch_norm,
    _aten.uniform_.default: _uniform,
    _aten.normal_.default: _normal,
}


def result(func: Any, args: Sequence[Any], kwargs: Dict[str, Any]) -> Optional[Any]:
    """func(*args, **kwargs)'s fake result made directly, or None: run func as usual."""
    shortcut = _SHORTCUTS.get(func)
    return shortcut(args, kwargs) if shortcut is not None else None


class FakeShortcuts(TorchDispatchMode):
    """`result` for every op run under it (a program's constructor: its parameters'
    initialisation), the op itself for the rest."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = result(func, args, kwargs)
        return func(*args, **kwargs) if out is None else out
