"""Labels beside chart points that never overlap each other: each label tries a few places
around its point (right, left, above, below) and takes the first whose box stays inside the
plot and clear of the labels placed before it; a label with no such place is left out (its
point keeps its tooltip). Placed heaviest first, so the points that matter most get theirs.

Offsets are in pixels of a plot area PLOT_W x PLOT_H (the static chart's); the interactive
chart shifts its annotations by the same pixels on a plot area at least as large, so its
labels do not overlap either.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

PLOT_W, PLOT_H = 534, 318  # svg.WIDTH - LEFT - RIGHT, svg.HEIGHT - TOP - BOTTOM
CHAR_W, LINE_H = 6.0, 12.0  # 10 px sans-serif: an upper estimate of a character's width
MAX_CHARS = 40

# (dx, dy of the text's baseline start or end, anchor) around a point, in order of preference.
_PLACES = ((7, -5, "start"), (-7, -5, "end"), (7, 13, "start"), (-7, 13, "end"),
           (4, -14, "start"), (-4, -14, "end"), (4, 22, "start"), (-4, 22, "end"))


def short(text: str) -> str:
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS - 1] + "…"


def box(px: float, py: float, dx: float, dy: float, anchor: str,
        text: str) -> Tuple[float, float, float, float]:
    """The (left, top, right, bottom) pixels of a label's text."""
    w = CHAR_W * len(text)
    left = px + dx if anchor == "start" else px + dx - w
    return (left, py + dy - LINE_H + 2, left + w, py + dy + 2)


def overlaps(a: Tuple[float, float, float, float], b: Tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def place(points: List[Tuple[float, float, str]]) -> List[Dict]:
    """`points`: (x, y pixels inside the plot area, 0..PLOT_W and 0..PLOT_H from its top
    left; text), heaviest first. Returns [{index, text, dx, dy, anchor}] for the labels
    placed (text shortened to MAX_CHARS)."""
    placed: List[Tuple[float, float, float, float]] = []
    out = []
    for i, (px, py, text) in enumerate(points):
        text = short(text)
        for dx, dy, anchor in _PLACES:
            b = box(px, py, dx, dy, anchor, text)
            if b[0] < 0 or b[1] < 0 or b[2] > PLOT_W or b[3] > PLOT_H:
                continue
            if any(overlaps(b, other) for other in placed):
                continue
            placed.append(b)
            out.append({"index": i, "text": text, "dx": dx, "dy": dy, "anchor": anchor})
            break
    return out
