""""Where the time goes": each device's time by op class and by module (the module tree,
collapsible), at the unfused, framework-kernel and fused levels, as horizontal bars drawn in
HTML (no script needed). Bars share one scale per device: the unfused level's time.

- By class: the unfused level sums its ops' seconds per class; the framework level its
  kernels' seconds, each kernel under the class of its heaviest op; the fused level is one
  kernel (the whole program), so it is one bar named by its bottleneck, not split.
- By module: each module's unfused seconds, its kernels' framework seconds (kernels whose
  module is in the subtree) and its fused seconds (the module as one kernel, at most its
  parent's: docs/report-json.md `modules`).
"""

from __future__ import annotations

from html import escape
from typing import Any, Dict, List, Tuple

from .fmt import seconds
from .svg import PALETTE

LEVELS = ("unfused", "framework", "fused")
# Module rows at most (a 400,000-op model has thousands of modules): the rest stay in the JSON.
MAX_MODULE_ROWS = 400


def _bar(parts: List[Tuple[str, float, str]], scale: float) -> str:
    """A stacked bar: (name, seconds, colour) segments; `scale` seconds fill 100%."""
    spans = "".join(
        f'<span style="width:{100 * s / scale:.3f}%;background:{c}" title="{escape(n)}: '
        f'{escape(seconds(s))}"></span>' for n, s, c in parts if s > 0 and scale > 0)
    return f'<div class="timebar">{spans}</div>'


def by_class(report: Dict[str, Any], device: str) -> Dict[str, Dict[str, float]]:
    """{level: {class: seconds}} for the unfused and framework levels, and the fused level as
    {"whole program (<bottleneck>)": seconds}."""
    ops = report.get("ops", [])
    dev = report["devices"][device]
    out: Dict[str, Dict[str, float]] = {lv: {} for lv in LEVELS}
    for o in ops:
        s = (o.get("seconds") or {}).get(device) or 0.0
        if s > 0:
            out["unfused"][o.get("class", "op")] = out["unfused"].get(o.get("class", "op"), 0.0) + s
    for k in report.get("kernels") or []:
        s = (k.get("seconds") or {}).get(device) or 0.0
        if s <= 0 or not k.get("ops"):
            continue
        heaviest = max(k["ops"], key=lambda i: (ops[i].get("seconds") or {}).get(device) or 0.0)
        cls = ops[heaviest].get("class", "op")
        out["framework"][cls] = out["framework"].get(cls, 0.0) + s
    fused = (dev.get("fused") or {})
    if fused.get("seconds"):
        out["fused"][f"whole program ({fused.get('bottleneck', '?')})"] = fused["seconds"]
    return out


def _kernel_seconds(report: Dict[str, Any], device: str) -> Dict[str, float]:
    """Framework seconds per module path, summed up the tree (a kernel counts in its module
    and every ancestor)."""
    out: Dict[str, float] = {}
    for k in report.get("kernels") or []:
        s = (k.get("seconds") or {}).get(device) or 0.0
        path = k.get("module") or ""
        parts = path.split(".") if path else []
        for i in range(len(parts) + 1):
            key = ".".join(parts[:i])
            out[key] = out.get(key, 0.0) + s
    return out


def _module_rows(node: Dict[str, Any], device: str, framework: Dict[str, float], scale: float,
                 depth: int, budget: List[int]) -> str:
    if budget[0] <= 0:
        return ""
    budget[0] -= 1
    d = (node.get("devices") or {}).get(device) or {}
    path = node.get("path", "")
    label = node.get("name") or "(program)"
    typ = f" ({node['type']})" if node.get("type") else ""
    values = {"unfused": d.get("unfused_seconds") or 0.0,
              "framework": framework.get(path, 0.0),
              "fused": d.get("fused_seconds") or 0.0}
    # one line per module: its name, the three levels as thin stacked bars, their times
    bars = "".join(f'<div class="mbar" data-level="{lv}">'
                   f'{_bar([(lv, values[lv], PALETTE[i])], scale)}</div>'
                   for i, lv in enumerate(LEVELS))
    times = " &middot; ".join(f"{lv} {escape(seconds(values[lv]))}" for lv in LEVELS)
    line = (f'<span class="mname"><b>{escape(label)}</b>{escape(typ)}</span>'
            f'<span class="mbars">{bars}</span><span class="mtimes">{times}</span>')
    children = node.get("children") or []
    if not children:
        return f'<div class="mrow leaf" data-path="{escape(path)}">{line}</div>'
    inner = "".join(_module_rows(c, device, framework, scale, depth + 1, budget) for c in children)
    return (f'<details class="mtree" data-path="{escape(path)}"{" open" if depth < 1 else ""}>'
            f'<summary class="mrow">{line}</summary>{inner}</details>')


def section(report: Dict[str, Any]) -> str:
    blocks = []
    for device, dev in report.get("devices", {}).items():
        scale = (dev.get("unfused") or {}).get("seconds") or 0.0
        if scale <= 0:
            continue
        classes = by_class(report, device)
        names = sorted({c for lv in ("unfused", "framework") for c in classes[lv]})
        colour = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(names)}
        rows = []
        for lv in LEVELS:
            parts = [(c, s, colour.get(c, "#999")) for c, s in sorted(classes[lv].items(),
                                                                     key=lambda kv: -kv[1])]
            total = sum(s for _, s, _ in parts)
            detail = ", ".join(f"{c} {seconds(s)}" for c, s, _ in parts[:6])
            rows.append(f"<tr data-level=\"{lv}\"><td>{lv}</td><td class=\"bar\">"
                        f"{_bar(parts, scale)}</td><td class=\"num\">{escape(seconds(total))}</td>"
                        f"<td>{escape(detail)}</td></tr>")
        legend = "".join(f'<span class="swatch" style="background:{colour[c]}"></span>{escape(c)}'
                         for c in names)
        tree = ""
        root = report.get("modules")
        if root and root.get("children"):
            legend_levels = "".join(f'<span class="swatch" style="background:{PALETTE[i]}">'
                                    f"</span>{lv}" for i, lv in enumerate(LEVELS))
            tree = ('<p class="note">By module (click a module to open it; the bars of each '
                    f"row, top to bottom: {legend_levels}, on the same scale):</p>"
                    + _module_rows(root, device, _kernel_seconds(report, device), scale, 0,
                                   [MAX_MODULE_ROWS]))
        blocks.append(
            f'<figure class="time-chart" id="time-{escape(device)}" data-chart="time-{escape(device)}">'
            f"<figcaption><b>{escape(device)}</b>: time by op class at each level "
            f"(bars: share of the unfused SOL, {escape(seconds(scale))}) {legend}</figcaption>"
            '<table class="time"><thead><tr><th>level</th><th>time by op class</th>'
            "<th>time</th><th>largest classes</th></tr></thead><tbody>" + "".join(rows)
            + "</tbody></table>" + tree + "</figure>")
    if not blocks:
        return ""
    return ('<section id="where-time-goes"><h2>Where the time goes</h2>'
            '<p class="note">Unfused: every einsum op its own kernel. Framework: one kernel per '
            "framework op, each fused inside (the eager reference). Fused: the whole program as "
            "one kernel, so its time is not split by class. A framework kernel counts under the "
            "class of its heaviest op.</p>" + "".join(blocks) + "</section>")
