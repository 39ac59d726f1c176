"""Static log-log charts as inline SVG, drawn from the chart data of solar.html.charts.

Every chart of the HTML report is drawn here too, so the page shows its charts without
JavaScript (a mail attachment, a browser with scripts off, a printout) and the interactive
plotly version is an extra. Axes are logarithmic: every quantity charted (FLOP/s, FLOP per
byte, bytes, seconds) spans decades. Labels are kept inside the canvas: a label that would
run past the right edge is anchored at its end instead.
"""

from __future__ import annotations

import itertools
import math
from html import escape
from typing import List, Sequence, Tuple

from .fmt import si

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")

WIDTH, HEIGHT = 640, 400
_CLIP_IDS = itertools.count()  # unique clip-path ids among the charts of one page
LEFT, RIGHT, TOP, BOTTOM = 90, 16, 34, 48


def _decade_ticks(lo: float, hi: float) -> List[float]:
    """Tick values between lo and hi (> 0): powers of ten, or 1-2-5 steps when the range
    covers less than two decades."""
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    steps = (1.0,) if b - a >= 2 else (1.0, 2.0, 5.0)
    ticks = [m * 10.0 ** e for e in range(a, b + 1) for m in steps]
    return [t for t in ticks if lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9)]


def _range(values: Sequence[float]) -> Tuple[float, float]:
    """A log range around positive values, padded a little; one value gets a decade."""
    pos = [v for v in values if v > 0 and math.isfinite(v)]
    if not pos:
        return 1.0, 10.0
    lo, hi = min(pos), max(pos)
    if hi / lo < 1.0001:
        return lo / math.sqrt(10), hi * math.sqrt(10)
    pad = (hi / lo) ** 0.04
    return lo / pad, hi * pad


def render(chart: dict, width: int = WIDTH, height: int = HEIGHT) -> str:
    """The chart (solar.html.charts format: title, x_label, y_label, series, vlines,
    x_range/y_range optional) as an <svg> element."""
    xs = [x for s in chart["series"] for x in s["x"]] + [v["x"] for v in chart.get("vlines", [])]
    ys = [y for s in chart["series"] for y in s["y"]]
    x0, x1 = chart.get("x_range") or _range(xs)
    y0, y1 = chart.get("y_range") or _range(ys)
    pw, ph = width - LEFT - RIGHT, height - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + pw * (math.log10(x) - math.log10(x0)) / (math.log10(x1) - math.log10(x0))

    def py(y: float) -> float:
        return TOP + ph * (1 - (math.log10(y) - math.log10(y0)) / (math.log10(y1) - math.log10(y0)))

    def inside(x: float, y: float) -> bool:
        return x0 <= x <= x1 and y0 <= y <= y1

    items = [(s["name"], s.get("color") or PALETTE[i % len(PALETTE)],
              "dash" if s.get("dash") and s["mode"] == "lines"
              else "x" if s.get("symbol") == "x" else s["mode"])
             for i, s in enumerate(chart["series"]) if s.get("legend", True)]
    placed, lx, row = [], float(LEFT), 0
    for name, colour, mode in items:
        w = 34 + 6.2 * len(name)
        if lx + w > width - RIGHT and lx > LEFT:
            row, lx = row + 1, float(LEFT)
        placed.append((lx, row, name, colour, mode))
        lx += w
    full = height + (15 * (row + 1) + 4 if items else 0)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="solar-chart" role="img" '
           f'viewBox="0 0 {width} {full}" width="{width}" height="{full}" '
           f'font-family="sans-serif" font-size="11">',
           f'<title>{escape(chart["title"])}</title>',
           f'<rect x="0" y="0" width="{width}" height="{full}" fill="white"/>',
           f'<text x="{width / 2}" y="18" text-anchor="middle" font-size="13" '
           f'font-weight="bold">{escape(chart["title"])}</text>']
    # grid and ticks
    for t in _decade_ticks(x0, x1):
        x = px(t)
        out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + ph}" stroke="#e5e5e5"/>')
        out.append(f'<text x="{x:.1f}" y="{TOP + ph + 14}" text-anchor="middle">'
                   f'{escape(si(t, chart.get("x_unit", "")))}</text>')
    for t in _decade_ticks(y0, y1):
        y = py(t)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + pw}" y2="{y:.1f}" stroke="#e5e5e5"/>')
        out.append(f'<text x="{LEFT - 4}" y="{y + 4:.1f}" text-anchor="end">'
                   f'{escape(si(t, chart.get("y_unit", "")))}</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>')
    out.append(f'<text x="{LEFT + pw / 2}" y="{height - 10}" text-anchor="middle">'
               f'{escape(chart["x_label"])}</text>')
    out.append(f'<text transform="translate(14 {TOP + ph / 2}) rotate(-90)" '
               f'text-anchor="middle">{escape(chart["y_label"])}</text>')
    clip = f"solar-clip-{next(_CLIP_IDS)}"
    out.append(f'<clipPath id="{clip}"><rect x="{LEFT}" y="{TOP}" width="{pw}" '
               f'height="{ph}"/></clipPath><g clip-path="url(#{clip})">')
    for i, s in enumerate(chart["series"]):
        colour = s.get("color") or PALETTE[i % len(PALETTE)]
        pts = [(x, y) for x, y in zip(s["x"], s["y"]) if x > 0 and y > 0]
        if s["mode"] == "lines":
            if len(pts) >= 2:
                d = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
                dash = ' stroke-dasharray="5 3"' if s.get("dash") else ""
                out.append(f'<polyline points="{d}" fill="none" stroke="{colour}" '
                           f'stroke-width="1.6"{dash}><title>{escape(s["name"])}</title></polyline>')
        else:
            labels = s.get("text") or [""] * len(pts)
            radii = s.get("radius") or [3.5] * len(pts)
            for (x, y), label, r in zip(pts, labels, radii):
                if inside(x, y):
                    tip = (f"<title>{escape(f'{label}: ' if label else '')}"
                           f'{escape(si(x, chart.get("x_unit", "")))}, '
                           f'{escape(si(y, chart.get("y_unit", "")))}</title>')
                    cx, cy = px(x), py(y)
                    if s.get("symbol") == "x":  # measured points: a cross
                        out.append(f'<path d="M{cx - r:.1f},{cy - r:.1f}L{cx + r:.1f},{cy + r:.1f}'
                                   f'M{cx - r:.1f},{cy + r:.1f}L{cx + r:.1f},{cy - r:.1f}" '
                                   f'stroke="{colour}" stroke-width="2">{tip}</path>')
                    else:
                        out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r:.1f}" '
                                   f'fill="{colour}" fill-opacity="0.6" stroke="{colour}">'
                                   f'{tip}</circle>')
    out.append("</g>")
    # the heaviest points' labels, placed so that none overlaps another (solar.html.labels)
    if (width, height) == (WIDTH, HEIGHT):
        for lab in chart.get("placed_labels") or []:
            out.append(f'<text class="point-label" x="{px(lab["x"]) + lab["dx"]:.1f}" '
                       f'y="{py(lab["y"]) + lab["dy"]:.1f}" text-anchor="{lab["anchor"]}" '
                       f'font-size="10" fill="#222">{escape(lab["text"])}</text>')
    for j, v in enumerate(chart.get("vlines", [])):
        if not x0 <= v["x"] <= x1:
            continue
        x = px(v["x"])
        colour = v.get("color", "#555")
        out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + ph}" stroke="{colour}" '
                   f'stroke-dasharray="2 3"/>')
        # Labels stack down the line; near the right edge they end at it (inside the canvas).
        anchor, dx = ("end", -3) if x > LEFT + pw * 0.7 else ("start", 3)
        out.append(f'<text x="{x + dx:.1f}" y="{TOP + 12 + 12 * j}" text-anchor="{anchor}" '
                   f'fill="{colour}">{escape(v["label"])}</text>')
    # the legend below the chart, in rows: it never hides a curve or a point
    for lx, row, name, colour, mode in placed:
        yy = height + 6 + 15 * row
        if mode in ("lines", "dash"):
            dash = ' stroke-dasharray="5 3"' if mode == "dash" else ""
            out.append(f'<line x1="{lx:.0f}" y1="{yy}" x2="{lx + 16:.0f}" y2="{yy}" '
                       f'stroke="{colour}" stroke-width="2"{dash}/>')
        elif mode == "x":
            out.append(f'<path d="M{lx + 4:.0f},{yy - 4}L{lx + 12:.0f},{yy + 4}M{lx + 4:.0f},'
                       f'{yy + 4}L{lx + 12:.0f},{yy - 4}" stroke="{colour}" stroke-width="2"/>')
        else:
            out.append(f'<circle cx="{lx + 8:.0f}" cy="{yy}" r="3.5" fill="{colour}"/>')
        out.append(f'<text x="{lx + 22:.0f}" y="{yy + 4}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out)
