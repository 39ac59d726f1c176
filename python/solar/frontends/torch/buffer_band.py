"""The values of a module's constant buffer when they form a band (docs/insight.md): a
causal mask built in `__init__` (`register_buffer("bias", torch.tril(torch.ones(T, T)))`,
`torch.triu(..., diagonal=1)` of bools) holds one value on a range of diagonals of its last
two dimensions and another elsewhere. The capture reads the real buffer once and records
that structure in the OpTrace (`band`), so the mask it makes is as structural as one the
program builds in `forward`.

Why values and not the construction: the buffer is a constant of the program (an in-place
write gives it a new trace id, which carries no band), its values are what every run reads,
and a check of them is exact; the construction ran before the capture began, and whatever
built it (tril, a loop, a file) does not matter. A fake buffer (a model built without data)
has no values: it stays an unknown weight, counted dense."""

from __future__ import annotations

import math
from typing import Any, Dict, Optional

from torch.utils._python_dispatch import TorchDispatchMode

# Buffers larger than this are not read (a mask of 8,192 x 8,192 is 2^26 elements).
MAX_ELEMENTS = 1 << 26


def _json_number(v: float) -> Any:
    if math.isinf(v):
        return {"float": "inf" if v > 0 else "-inf"}
    return v


def band_of(t: Any) -> Optional[Dict[str, Any]]:
    """The OpTrace `band` of a real tensor, or None when its values are not one: two values,
    one on the diagonals lower <= c - r <= upper of its last two dimensions (r, c), the other
    elsewhere, the same in every leading index; a bound that every diagonal meets is null."""
    import torch

    if t.dim() < 2 or t.numel() == 0 or t.numel() > MAX_ELEMENTS or t.is_complex():
        return None
    if getattr(t, "is_meta", False) or isinstance(t, torch._subclasses.fake_tensor.FakeTensor):
        return None
    try:
        x = t.detach().to("cpu")
    except Exception:  # a tensor without data
        return None
    rows, cols = x.shape[-2], x.shape[-1]
    first = x.reshape(-1, rows, cols)[0]
    if not bool((x == first).all()):  # differs across leading indices (or holds a NaN)
        return None
    values = torch.unique(first)
    if values.numel() != 2:
        return None
    diag = torch.arange(cols).view(1, cols) - torch.arange(rows).view(rows, 1)  # c - r
    for inside, outside in ((values[1], values[0]), (values[0], values[1])):
        on = first == inside
        lo, hi = int(diag[on].min()), int(diag[on].max())
        if bool((on == ((diag >= lo) & (diag <= hi))).all()):
            return {"lower": lo if lo > -(rows - 1) else None,
                    "upper": hi if hi < cols - 1 else None,
                    "inside": _json_number(float(inside)),
                    "outside": _json_number(float(outside))}
    return None


class ConstructionRecord:
    """The ops a module's constructor ran on fake tensors, kept so that a small buffer's
    values can be computed for real afterwards (`real_value`). Only pure ops are replayed:
    a tensor whose history holds a random, uninitialized or in-place op, or whose storage an
    in-place op wrote, has no value here."""

    def __init__(self) -> None:
        # id(output) -> (func, args, kwargs, output, its storage then)
        self.made: Dict[int, Any] = {}
        self.written: set = set()       # storages an in-place op wrote

    def mode(self) -> Any:
        """A TorchDispatchMode that records, entered above the fake mode."""
        return _Recording(self)

    def note(self, func: Any, args: Any, kwargs: Dict[str, Any], out: Any) -> None:
        import torch

        schema = func._schema
        if schema.is_mutable:  # tril_, masked_fill_, normal_, copy_: written storages
            for a in list(args) + list(kwargs.values()):
                if isinstance(a, torch.Tensor):
                    self.written.add(_storage_key(a))
            return
        name = schema.name
        if any(w in name for w in ("rand", "normal", "bernoulli", "uniform", "empty",
                                   "dropout", "multinomial", "poisson")):
            return
        if isinstance(out, torch.Tensor) and out.numel() <= MAX_ELEMENTS:
            self.made[id(out)] = (func, args, kwargs, out, _storage_key(out))

    def real_value(self, t: Any) -> Optional[Any]:
        """The real value of fake tensor t computed from its recorded history, or None."""
        import torch

        memo: Dict[int, Any] = {}

        def real(x: Any) -> Any:
            if isinstance(x, (list, tuple)):
                return type(x)(real(y) for y in x)
            if not isinstance(x, torch.Tensor):
                return x
            if id(x) in memo:
                return memo[id(x)]
            entry = self.made.get(id(x))
            # Its storage written in place, or swapped since (`t.data = other` dispatches no
            # op): its values are not those of its history.
            if entry is None or _storage_key(x) in self.written or _storage_key(x) != entry[4]:
                raise LookupError("no pure history")
            func, args, kwargs = entry[:3]
            value = func(*real(list(args)), **{k: real(v) for k, v in kwargs.items()})
            memo[id(x)] = value
            return value

        try:
            value = real(t)
        except Exception:  # an op outside the record, or one that fails on real tensors
            return None
        if not isinstance(value, torch.Tensor) or value.shape != t.shape or value.dtype != t.dtype:
            return None
        return value


def _storage_key(t: Any) -> Any:
    try:
        return t.untyped_storage()._cdata
    except Exception:
        return ("solo", id(t))


class _Recording(TorchDispatchMode):
    """ConstructionRecord's mode. Defined when the module is imported, before the capture's
    first fake mode: torch wraps a dispatch mode's __torch_dispatch__ in
    torch._disable_dynamo, and only the wrappers that exist then call it without importing
    torch._dynamo (lazy_torch.dispatch_without_dynamo)."""

    def __init__(self, record: ConstructionRecord) -> None:
        super().__init__()
        self.record = record

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        self.record.note(func, args, kwargs, out)
        return out
