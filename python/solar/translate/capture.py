"""The capture check (docs/translate.md, "What validation proves"): an accepted translation's
work beside Solar's own capture of a PyTorch or JAX source, both at their own sizes.

Validation compares values, not work: a prefix sum written as a triangular reduction matches
the source's outputs while doing n/2 times its additions. So every work kind is compared —
tensor-unit MACs, vector FLOPs, special-function ops — and the compulsory bytes: `agree` only
when all four are equal, else `differ` with the ratio (translation / capture) of each and of
the fused SOL on the first device. A ratio of WARN_RATIO or more in either direction is a
warning that every report of the translation carries; the translation is still accepted
(its values match).
"""

from __future__ import annotations

import json
import math
from typing import Any, Dict, List, Optional

# The counts compared, from a report's totals, and their names in words.
WORK_KINDS = ("macs", "vector_flops", "special_ops", "bytes_fused")
KIND_WORDS = {"macs": "MACs", "vector_flops": "vector FLOPs", "special_ops": "special ops",
              "bytes_fused": "compulsory bytes", "fused_sol_s": "fused SOL"}
# A translation whose work of some kind, or whose fused SOL, is this many times the
# capture's (or this many times smaller) is flagged in every report.
WARN_RATIO = 2.0


def work_summary(report: Any, device: str) -> Dict[str, Any]:
    """{kind: count} for WORK_KINDS, `fused_sol_s` (the fused SOL on `device`, seconds) and
    `device`, from a solar.Report: the same reading for the translation and the capture."""
    doc = json.loads(report.to_json(None, ops=False))
    out: Dict[str, Any] = {k: int(doc["totals"][k]) for k in WORK_KINDS}
    devices = doc.get("devices") or {}
    if device not in devices and devices:  # an id spelled otherwise than the database does
        device = next(iter(devices))
    out["fused_sol_s"] = ((devices.get(device) or {}).get("fused") or {}).get("seconds")
    out["device"] = device
    return out


def ratio(mine: Optional[float], theirs: Optional[float]) -> Optional[float]:
    """mine / theirs; 1.0 when both are 0; None when only the capture's is 0 (or unknown)."""
    if mine is None or theirs is None:
        return None
    if theirs == 0:
        return 1.0 if mine == 0 else None
    return mine / theirs


def _far(r: Optional[float], mine: Any, theirs: Any) -> bool:
    if r is None:  # the capture has none of it, the translation some
        return mine is not None and theirs is not None and mine != theirs
    return r >= WARN_RATIO or r <= 1.0 / WARN_RATIO


def _times(r: Optional[float]) -> str:
    if r is None:
        return "where the capture has none"
    return f"{r:.3g}x" if r >= 1 else f"1/{1 / r:.3g}x"


def compare(mine: Dict[str, Any], cap: Dict[str, Any]) -> Dict[str, Any]:
    """The capture check of a translation's work_summary against the capture's: `agree`
    when every WORK_KINDS count is equal, else `differ` with `differ` (the kinds that do),
    `ratios` (each kind and `fused_sol_s`: translation / capture) and, when some ratio is
    WARN_RATIO or more either way, `warning`."""
    keys = WORK_KINDS + ("fused_sol_s",)
    out: Dict[str, Any] = {"translation": {k: mine.get(k) for k in keys},
                           "capture": {k: cap.get(k) for k in keys}}
    if cap.get("device"):
        out["device"] = cap["device"]
    differ = [k for k in WORK_KINDS if mine.get(k) != cap.get(k)]
    out["status"] = "differ" if differ else "agree"
    if not differ:
        return out
    out["differ"] = differ
    out["ratios"] = {k: ratio(mine.get(k), cap.get(k)) for k in keys}
    far = [k for k in differ + ["fused_sol_s"]
           if _far(out["ratios"][k], mine.get(k), cap.get(k))]
    if far:
        out["warning"] = warning(out, far)
    return out


def warning(check: Dict[str, Any], far: List[str]) -> str:
    """One sentence: which counts are WARN_RATIO or more from the capture's, and by how much."""
    parts = []
    for k in far:
        parts.append(f"{KIND_WORDS[k]} {_times(check['ratios'][k])} "
                     f"({_fmt(check['translation'][k], k)} vs {_fmt(check['capture'][k], k)})")
    return ("the translation's work differs from Solar's capture of the source by "
            f"{WARN_RATIO:g}x or more: " + "; ".join(parts) + ". Its outputs match the "
            "source's, but its counts describe another algorithm: check the translation before "
            "trusting its bounds")


def _fmt(x: Any, kind: str) -> str:
    if x is None:
        return "n/a"
    if kind == "fused_sol_s":
        return _seconds(float(x))
    return f"{int(x):,}"


def _seconds(s: float) -> str:
    if s == 0 or not math.isfinite(s):
        return f"{s:g} s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if s >= scale:
            return f"{s / scale:.4g} {unit}"
    return f"{s / 1e-9:.4g} ns"


def line(check: Dict[str, Any]) -> str:
    """The check as the command prints it (without a leading `capture check:`)."""
    if check["status"] == "skipped":
        return f"skipped ({check['reason']})"
    t, c = check["translation"], check["capture"]
    counts = ", ".join(f"{KIND_WORDS[k]} {_fmt(t[k], k)}"
                       + ("" if t[k] == c[k] else f" (capture {_fmt(c[k], k)})")
                       for k in WORK_KINDS)
    where = f" on {check['device']}" if check.get("device") else ""
    sol = (f"; fused SOL{where} {_fmt(t.get('fused_sol_s'), 'fused_sol_s')} (capture "
           f"{_fmt(c.get('fused_sol_s'), 'fused_sol_s')})")
    return f"{check['status']}: {counts}{sol}"
