"""External measurements joined with a suite's bounds: per-problem headroom, per-level
summaries, violations, and the measured-vs-SOL scatter plot.

Timings come in the KernelBench timing format, `{level: {problem_file: {mean, min, ...}}}`
in milliseconds (`null` where the run failed); a program of the suite matches a timing by
its folder (`level1`, ...) and file name. Headroom at a SOL level = measured / SOL; a
measured `min` below a bound level (fused, cache-aware) is a violation (solar.bench).
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
from typing import Any, Dict, Iterable, List, Optional, Tuple

from .atomic_write import atomic_file
from .bench import BOUND_LEVELS, REFERENCE_LEVELS
from .errors import user_error
from .html.charts import headroom_points as plot_data  # also the HTML chart's

LEVELS = REFERENCE_LEVELS + BOUND_LEVELS
_LEVEL_DIR = re.compile(r"^level\d+$")


def load_timings(path: str) -> Dict[str, Dict[str, Optional[Dict[str, float]]]]:
    """Reads a KernelBench timing file; raises solar.UserError (parse) naming what is wrong."""
    with open(path, encoding="utf-8") as f:
        try:
            doc = json.load(f)
        except json.JSONDecodeError as e:
            raise user_error(f"{path}: not JSON: {e}", "parse") from None
    if not isinstance(doc, dict):
        raise user_error(f"{path}: expected {{level: {{file: timing}}}}", "parse")
    for level, problems in doc.items():
        if not isinstance(problems, dict):
            raise user_error(f"{path}: '{level}' is not an object of problems", "parse")
        for name, t in problems.items():
            if t is None:
                continue
            if not isinstance(t, dict) or not all(
                    isinstance(t.get(k), (int, float)) and t[k] > 0 for k in ("min", "mean")):
                raise user_error(
                    f"{path}: {level}/{name}: a timing needs positive 'min' and 'mean' (ms)",
                    "parse")
    return doc


def problem_key(source: str) -> Optional[Tuple[str, str]]:
    """(level, file) of a program path: its nearest `levelN` folder and its file name."""
    parts = os.path.normpath(source).split(os.sep)
    for folder in reversed(parts[:-1]):
        if _LEVEL_DIR.match(folder):
            return folder, parts[-1]
    return None


def _geomean(xs: List[float]) -> float:
    return math.exp(statistics.fmean(math.log(x) for x in xs))


def join(programs: Iterable[Dict[str, Any]], timings: Dict[str, Any], arch: str) -> Dict[str, Any]:
    """Joins suite entries (report JSON dicts, or failure entries with `error`) with timings
    for device `arch`. Returns {"arch", "rows", "levels", "violations", "unmatched"}."""
    rows: List[Dict[str, Any]] = []
    matched = set()
    unmatched: List[Dict[str, str]] = []
    for entry in programs:
        source = entry.get("program", {}).get("source", "")
        key = problem_key(source)
        if key is None:
            unmatched.append({"source": source, "reason": "not in a levelN folder"})
            continue
        level, name = key
        timing = timings.get(level, {}).get(name, "absent")
        if timing == "absent":
            unmatched.append({"source": source, "reason": "no timing for this problem"})
            continue
        matched.add(key)
        if timing is None:
            unmatched.append({"source": source, "reason": "the timing run failed (null)"})
            continue
        if "error" in entry:
            unmatched.append({"source": source, "reason": f"analysis failed: "
                              f"{entry['error'].get('cause', 'error')}"})
            continue
        dev = entry.get("devices", {}).get(arch)
        if dev is None:
            raise user_error(f"the suite has no bounds for device '{arch}' "
                                  f"(analyze it with --arch {arch})", "usage")
        measured_ms = float(timing["min"])
        row: Dict[str, Any] = {
            "level": level, "problem": name, "source": source,
            "measured_min_ms": measured_ms, "measured_mean_ms": float(timing["mean"]),
            "unanalyzed": entry.get("coverage", {}).get("unanalyzed", 0),
            "sol_ms": {}, "headroom": {}, "violations": [],
        }
        for lv in LEVELS:
            sol = dev.get(lv)
            if not isinstance(sol, dict) or sol.get("seconds") is None:
                continue
            sol_ms = float(sol["seconds"]) * 1e3
            if sol_ms <= 0:  # no work Solar could price: no ratio (the JSON has no inf)
                continue
            row["sol_ms"][lv] = sol_ms
            row["headroom"][lv] = measured_ms / sol_ms
            if lv in BOUND_LEVELS and measured_ms < sol_ms:
                row["violations"].append(lv)
        rows.append(row)
    for level, problems in timings.items():
        for name in problems:
            if (level, name) not in matched:
                unmatched.append({"source": f"{level}/{name}", "reason": "not in the suite"})
    levels: Dict[str, Dict[str, Any]] = {}
    for level in sorted({r["level"] for r in rows}, key=lambda s: int(s[5:])):
        mine = [r for r in rows if r["level"] == level]
        summary: Dict[str, Any] = {"problems": len(mine),
                                   "violations": sum(bool(r["violations"]) for r in mine)}
        for lv in LEVELS:
            hs = [r["headroom"][lv] for r in mine if lv in r["headroom"]]
            if hs:
                summary[lv] = {"median_headroom": statistics.median(hs),
                               "geomean_headroom": _geomean(hs), "problems": len(hs)}
        levels[level] = summary
    violations = [{"source": r["source"], "levels": r["violations"],
                   "measured_min_ms": r["measured_min_ms"], "sol_ms": r["sol_ms"]}
                  for r in rows if r["violations"]]
    return {"arch": arch, "rows": rows, "levels": levels, "violations": violations,
            "unmatched": unmatched}


def plot(joined: Dict[str, Any], prefix: str, level: str = "fused", title: str = "") -> List[str]:
    """Writes PREFIX.svg and PREFIX.png: measured vs SOL (log-log), the diagonal (a point
    below it is a violation), one colour per KernelBench level. Returns the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = plot_data(joined, level)
    if not series:
        raise user_error(f"nothing to plot: no problem has both a timing and a {level} SOL",
                              "usage")
    fig, ax = plt.subplots(figsize=(6.4, 5.6), dpi=120)
    lo, hi = math.inf, 0.0
    for (name, pts), colour in zip(sorted(series.items()), ("tab:blue", "tab:orange", "tab:green",
                                                            "tab:red", "tab:purple")):
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        lo, hi = min(lo, *xs, *ys), max(hi, *xs, *ys)
        ax.scatter(xs, ys, s=14, alpha=0.75, color=colour, label=f"{name} ({len(pts)})")
    ax.plot([lo / 2, hi * 2], [lo / 2, hi * 2], color="black", linewidth=0.8,
            label="measured = SOL")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"{level} SOL on {joined['arch']} (ms)")
    ax.set_ylabel("measured min (ms)")
    ax.set_title(title or f"Measured vs {level} SOL, {joined['arch']} "
                          f"({len(joined['violations'])} violations)")
    ax.grid(True, which="major", linewidth=0.4, alpha=0.5)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    paths = []
    for ext in ("svg", "png"):
        path = f"{prefix}.{ext}"
        with atomic_file(path, binary=True) as f:
            fig.savefig(f, format=ext)
        paths.append(path)
    plt.close(fig)
    return paths


def format_summary(joined: Dict[str, Any]) -> str:
    """The per-level headroom table `solar suite --timings` prints."""
    lines = [f"headroom on {joined['arch']} (measured min / SOL; violations: "
             f"{len(joined['violations'])})",
             f"{'level':<8} {'problems':>8} " + " ".join(
                 f"{lv + ' med':>16} {lv + ' geo':>16}" for lv in LEVELS) + f" {'violations':>10}"]
    for level, s in joined["levels"].items():
        cells = []
        for lv in LEVELS:
            if lv in s:
                cells.append(f"{s[lv]['median_headroom']:>16.3g} {s[lv]['geomean_headroom']:>16.3g}")
            else:
                cells.append(f"{'-':>16} {'-':>16}")
        lines.append(f"{level:<8} {s['problems']:>8} " + " ".join(cells) + f" {s['violations']:>10}")
    for v in joined["violations"]:
        lines.append(f"VIOLATION {v['source']}: measured {v['measured_min_ms']:.4g} ms < "
                     + ", ".join(f"{lv} {v['sol_ms'][lv]:.4g} ms" for lv in v["levels"]))
    if joined["unmatched"]:
        lines.append(f"{len(joined['unmatched'])} problems without a joined timing "
                     "(see `headroom.unmatched` in the JSON)")
    return "\n".join(lines) + "\n"
