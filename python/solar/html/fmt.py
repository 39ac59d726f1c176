"""Numbers as the HTML report shows them: SI prefixes for reading, exact values kept beside
them (data-value attributes) so that a reader or a test can recover the report's own number."""

from __future__ import annotations

import math
from typing import Any

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""),
             (1e-3, "m"), (1e-6, "u"), (1e-9, "n"), (1e-12, "p"))


def as_number(value: Any) -> float:
    """A count of the report (a JSON integer, or a decimal string above 2^64) as a float."""
    if isinstance(value, str):
        return float(int(value))
    return float(value)


def si(value: Any, unit: str = "") -> str:
    """4 significant digits with a decimal SI prefix: 68.72 GMAC, 138.9 us, 2.5 kB."""
    if value is None:
        return "n/a"
    x = as_number(value)
    if x == 0 or not math.isfinite(x):
        return f"{x:g} {unit}".strip()
    for scale, prefix in _PREFIXES:
        if abs(x) >= scale * 0.99995:
            return f"{x / scale:.4g} {prefix}{unit}".strip()
    return f"{x:.3g} {unit}".strip()


def seconds(value: Any) -> str:
    return si(value, "s")


def exact(value: Any) -> str:
    """The report's own value as text for a data-value attribute: integers (and the decimal
    strings of large counts) exactly, floats at full round-trip precision."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def grouped(value: Any) -> str:
    """An exact count with thousands separators: 68,719,476,736."""
    return f"{int(value):,}" if value is not None else "n/a"
