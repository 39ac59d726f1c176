"""A sweep's plots (docs/sweep.md, "Plots"): for each program and each grid key with two or
more values, the SOL against that key, one line per device (solid: fused SOL; dashed, same
colour: cache-aware SOL where the device has the level), the other grid keys held at their
first value. Static SVG (matplotlib, Agg, as headroom.plot), written beside the table.

Each device's line is an SVG group with a stable id, `sweep-fused-<ARCH>` and
`sweep-cache-aware-<ARCH>`, so the lines can be found in the file.
"""

from __future__ import annotations

import io
import math
import os
import re
from typing import Any, Dict, List, Sequence, Tuple

from ..atomic_write import write_atomically


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "program"


def file_names(programs: Sequence[str]) -> Dict[str, str]:
    """A short file-name part per program: its file stem (hf:NAME: hf_NAME), or its whole
    path made safe when two programs share a stem."""
    def stem(ref: str) -> str:
        if ref.startswith("hf:"):
            return _safe(ref)
        base = os.path.basename(ref)
        if base == "config.json":
            return _safe(os.path.basename(os.path.dirname(os.path.abspath(ref))) or ref)
        return _safe(os.path.splitext(base)[0])

    stems = {p: stem(p) for p in programs}
    counts: Dict[str, int] = {}
    for s in stems.values():
        counts[s] = counts.get(s, 0) + 1
    return {p: (s if counts[s] == 1 else _safe(p)) for p, s in stems.items()}


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def write_plots(folder: str, programs: Sequence[str], grid: Dict[str, List[Any]],
                archs: Sequence[str], points: Sequence[Any],
                rows: Dict[Tuple[str, str], Dict[str, Any]]) -> List[str]:
    """Writes FOLDER/sweep-<program>-<key>.svg for each program and each grid key with two
    or more values; returns the paths. points: the spec's points (their program.ref,
    settings and key); rows: {(point key, arch): row}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    axes = [k for k, v in grid.items() if len(v) >= 2]
    if not axes:
        return []
    by_settings = {(p.program.ref, p.settings): p.key for p in points}
    names = file_names(programs)
    paths = []
    with matplotlib.rc_context({"svg.hashsalt": "solar-sweep", "svg.fonttype": "none"}):
        for program in programs:
            for axis in axes:
                fixed = {k: v[0] for k, v in grid.items() if k != axis}
                xs = list(grid[axis])

                def value(arch: str, x: Any, column: str) -> float:
                    settings = tuple((k, x if k == axis else fixed[k]) for k in grid)
                    row = rows.get((by_settings.get((program, settings)), arch))
                    v = None if row is None or row.get("status") != "ok" else row.get(column)
                    return math.nan if v is None else float(v)

                numeric = _numeric(xs)
                pos = [float(x) for x in xs] if numeric else list(range(len(xs)))
                fig, ax = plt.subplots(figsize=(6.4, 4.6), dpi=100)
                ys_all: List[float] = []
                for i, arch in enumerate(archs):
                    colour = f"C{i % 10}"
                    fused = [value(arch, x, "fused_seconds") for x in xs]
                    aware = [value(arch, x, "cache_aware_seconds") for x in xs]
                    ax.plot(pos, fused, marker="o", color=colour, linewidth=1.4,
                            label=f"{arch} fused", gid=f"sweep-fused-{arch}")
                    if any(not math.isnan(y) for y in aware):
                        ax.plot(pos, aware, marker="s", color=colour, linewidth=1.1,
                                linestyle="--", markersize=4, label=f"{arch} cache-aware",
                                gid=f"sweep-cache-aware-{arch}")
                    ys_all += [y for y in fused + aware if not math.isnan(y)]
                if ys_all and min(ys_all) > 0:
                    ax.set_yscale("log")
                if numeric and min(pos) > 0 and max(pos) / min(pos) >= 8:
                    ax.set_xscale("log")
                    ax.minorticks_off()
                ax.set_xticks(pos)
                ax.set_xticklabels([str(x) for x in xs], fontsize=8)
                ax.set_xlabel(axis)
                ax.set_ylabel("SOL (seconds)")
                title = f"{program}: SOL against {axis}"
                if fixed:
                    title += "\n" + ", ".join(f"{k}={v}" for k, v in fixed.items())
                ax.set_title(title, fontsize=9)
                if not ys_all:
                    ax.text(0.5, 0.5, "no point of this line succeeded", ha="center",
                            va="center", transform=ax.transAxes)
                ax.grid(True, which="major", linewidth=0.4, alpha=0.5)
                ax.legend(fontsize=7, loc="best")
                fig.tight_layout()
                buf = io.StringIO()
                fig.savefig(buf, format="svg", metadata={"Date": None})
                plt.close(fig)
                path = os.path.join(folder, f"sweep-{names[program]}-{_safe(axis)}.svg")
                write_atomically(path, buf.getvalue())
                paths.append(path)
    return paths
