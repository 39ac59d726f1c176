"""A sweep's plots (docs/sweep.md, "Plots"): for each program and each grid key with two or
more values, the SOL against that key, one line per device and value of the other swept keys
(solid: fused SOL; dashed, same colour: cache-aware SOL where the device has the level and the
chart has one line per device), each point labeled with its value, points that do not fit the
device's DRAM ringed red, a labeled tick at every decade of the log axis, and tokens per second
beside the seconds for model programs. Static SVG (matplotlib, Agg, as headroom.plot), written
beside the table.

Each line is an SVG group with a stable id, `sweep-fused-<ARCH>` (with `-<KEY>=<VALUE>` for
each other swept key when there are several lines per device), `sweep-tokens-<ARCH>...` and
`sweep-cache-aware-<ARCH>`, so the lines can be found in the file.
"""

from __future__ import annotations

import io
import itertools
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


# Lines of one chart at most per device: the other keys' combinations beyond it are held at
# their first values (the chart says so).
MAX_LINES = 6
_MARKERS = ("o", "s", "^", "D", "v", "P")


def log_ticks(lo: float, hi: float) -> List[float]:
    """Ticks for a log axis from lo to hi (> 0): every decade, with 2 and 5 between them when
    the range spans fewer than two decades, so that at least two ticks are labeled."""
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    for steps in ((1.0,), (1.0, 2.0, 5.0), (1.0, 1.5, 2.0, 3.0, 5.0, 7.0)):
        ticks = [m * 10.0 ** e for e in range(a, b + 1) for m in steps]
        ticks = [t for t in ticks if lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9)]
        if len(ticks) >= 2 or steps[-1] == 7.0:
            break
    if len(ticks) < 2:  # a range inside one step: its ends
        ticks = [lo, hi]
    return ticks


def si(value: float, unit: str) -> str:
    """4 significant digits with an SI prefix: 1.25 ms, 3.2e+04 tokens/s as 32 ktokens/s."""
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""),
                          (1e-3, "m"), (1e-6, "u"), (1e-9, "n"), (1e-12, "p")):
        if abs(value) >= scale * 0.99995:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _log_axis(ax: Any, values: Sequence[float], unit: str) -> None:
    """A log y axis over `values` with a labeled tick at every decade (and 2, 5 between them
    on a narrow range), in SI units."""
    pos = [v for v in values if v > 0 and math.isfinite(v)]
    if not pos:
        return
    lo, hi = min(pos) / 1.6, max(pos) * 1.6
    ax.set_yscale("log")
    ax.set_ylim(lo, hi)
    ticks = log_ticks(lo, hi)
    ax.set_yticks(ticks)
    ax.set_yticklabels([si(t, unit) for t in ticks], fontsize=7)
    ax.minorticks_off()


def _label_points(ax: Any, values: Sequence[Tuple[float, float, str, str]]) -> None:
    """Each point's value just above it, where the label's box (in the axes' pixels) clears
    the labels placed before it: crowded points keep their tooltips-free markers unlabeled
    rather than print over one another."""
    placed: List[Tuple[float, float, float, float]] = []
    for x, y, text, colour in values:
        px, py = ax.transData.transform((x, y))
        w, h = 4.2 * len(text), 9.0  # 6 pt text at 100 dpi, pixels
        box = (px - w / 2, py + 3, px + w / 2, py + 3 + h)
        if any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3]
               for b in placed):
            continue
        placed.append(box)
        ax.annotate(text, (x, y), textcoords="offset points", xytext=(0, 4), ha="center",
                    fontsize=6, color=colour)


def write_plots(folder: str, programs: Sequence[str], grid: Dict[str, List[Any]],
                archs: Sequence[str], points: Sequence[Any],
                rows: Dict[Tuple[str, str], Dict[str, Any]]) -> List[str]:
    """Writes FOLDER/sweep-<program>-<key>.svg for each program and each grid key with two
    or more values; returns the paths. points: the spec's points (their program.ref,
    settings and key); rows: {(point key, arch): row}.

    Each chart has one line per device and value of the other swept keys (up to MAX_LINES
    per device; past that the other keys are held at their first value), each point labeled
    with its value; a point whose program does not fit the device's DRAM is ringed red; a
    second panel has tokens per second where the rows carry tokens (model programs)."""
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
                others = [k for k in grid if k != axis]
                combos = list(itertools.product(*(grid[k] for k in others)))
                held = len(combos) > MAX_LINES
                if held:
                    combos = [tuple(grid[k][0] for k in others)]
                xs = list(grid[axis])

                def row_at(arch: str, x: Any, combo: Tuple[Any, ...]) -> Dict[str, Any]:
                    fixed = dict(zip(others, combo))
                    settings = tuple((k, x if k == axis else fixed[k]) for k in grid)
                    row = rows.get((by_settings.get((program, settings)), arch))
                    return row if row is not None and row.get("status") == "ok" else {}

                def value(row: Dict[str, Any], column: str) -> float:
                    v = row.get(column)
                    return math.nan if v is None else float(v)

                tokens = any(row_at(a, x, c).get("tokens_per_second") for a in archs
                             for x in xs for c in combos)
                numeric = _numeric(xs)
                pos = [float(x) for x in xs] if numeric else list(range(len(xs)))
                lines = len(archs) * len(combos)
                fig, panels = plt.subplots(1, 2 if tokens else 1, dpi=100,
                                           figsize=(11.5 if tokens else 6.4,
                                                    4.8 + 0.12 * lines), squeeze=False)
                panels = list(panels[0])
                columns = [("fused_seconds", "SOL (seconds)", "s")]
                if tokens:
                    columns.append(("tokens_per_second", "tokens/s at the fused SOL", "tokens/s"))
                any_unfit = False
                for (column, ylabel, unit), ax in zip(columns, panels):
                    ys_all: List[float] = []
                    values: List[Tuple[float, float, str, str]] = []  # labels of the points
                    for i, arch in enumerate(archs):
                        colour = f"C{i % 10}"
                        for j, combo in enumerate(combos):
                            at = [row_at(arch, x, combo) for x in xs]
                            ys = [value(r, column) for r in at]
                            tag = "" if len(combos) == 1 else "-".join(
                                f"{k}={v}" for k, v in zip(others, combo))
                            label = arch + ("" if len(combos) == 1 else " " + ", ".join(
                                f"{k}={v}" for k, v in zip(others, combo)))
                            level = "fused" if column == "fused_seconds" else "tokens"
                            ax.plot(pos, ys, marker=_MARKERS[j % len(_MARKERS)], color=colour,
                                    linewidth=1.4, markersize=4.5, alpha=1 - 0.12 * j,
                                    label=f"{label} fused" if level == "fused" else label,
                                    gid=f"sweep-{level}-{arch}" + (f"-{_safe(tag)}" if tag else ""))
                            for x, y, r in zip(pos, ys, at):
                                if math.isnan(y):
                                    continue
                                values.append((x, y, si(y, unit), colour))
                                if r.get("fits") is False:
                                    any_unfit = True
                                    ax.plot([x], [y], marker="o", markersize=11,
                                            markerfacecolor="none", markeredgecolor="#d62728",
                                            markeredgewidth=1.5, linestyle="none")
                            if column == "fused_seconds" and len(combos) == 1:
                                aware = [value(r, "cache_aware_seconds") for r in at]
                                if any(not math.isnan(y) for y in aware):
                                    ax.plot(pos, aware, marker="s", color=colour, linewidth=1.1,
                                            linestyle="--", markersize=4,
                                            label=f"{arch} cache-aware",
                                            gid=f"sweep-cache-aware-{arch}")
                                    ys_all += [y for y in aware if not math.isnan(y)]
                            ys_all += [y for y in ys if not math.isnan(y)]
                    _log_axis(ax, ys_all, unit)
                    if numeric and min(pos) > 0 and max(pos) / min(pos) >= 8:
                        ax.set_xscale("log")
                        ax.minorticks_off()
                    _label_points(ax, values)
                    ax.set_xticks(pos)
                    ax.set_xticklabels([str(x) for x in xs], fontsize=8)
                    ax.set_xlabel(axis)
                    ax.set_ylabel(ylabel)
                    if not ys_all:
                        ax.text(0.5, 0.5, "no point of this line succeeded", ha="center",
                                va="center", transform=ax.transAxes)
                    ax.grid(True, which="major", linewidth=0.4, alpha=0.5)
                    # below the plot, where it hides no line
                    ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.14),
                              ncol=min(3, max(1, len(archs) * len(combos) // 4 + 1)),
                              frameon=False)
                title = f"{program}: SOL against {axis}"
                if held:
                    title += "\n" + ", ".join(f"{k}={grid[k][0]}" for k in others) + " (held)"
                if any_unfit:
                    title += "\nred ring: the program does not fit the device's DRAM"
                fig.suptitle(title, fontsize=9)
                fig.tight_layout()
                buf = io.StringIO()
                fig.savefig(buf, format="svg", metadata={"Date": None})
                plt.close(fig)
                path = os.path.join(folder, f"sweep-{names[program]}-{_safe(axis)}.svg")
                write_atomically(path, buf.getvalue())
                paths.append(path)
    return paths
