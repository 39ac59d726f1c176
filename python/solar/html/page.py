"""The HTML report's sections, built from report JSON (solar.report.v1, solar.suite.v1,
solar.inverse.v1). Every number shown carries the report's own value in a `data-value`
attribute and its JSON path in `data-field`, so the page can be read back exactly.
"""

from __future__ import annotations

from html import escape
from typing import Any, Dict, Iterable, List, Optional

from . import charts, interactive, svg, where
from .fmt import exact, grouped, seconds, si

CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 0 auto;
       max-width: 1400px; padding: 0 24px 48px; color: #1b1b1b; }
h1 { font-size: 22px; margin: 20px 0 4px; } h2 { font-size: 18px; margin-top: 28px;
     border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.meta { color: #555; margin: 2px 0; }
table { border-collapse: collapse; margin: 8px 0; font-size: 13px; display: block;
        overflow-x: auto; max-width: 100%; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.exact { color: #777; font-size: 11px; }
.warn { color: #a40000; font-weight: bold; }
.note { color: #555; font-size: 13px; max-width: 1100px; }
.chart { margin: 12px 0 20px; }
.chart .interactive { min-height: 420px; max-width: 1000px; border: 1px solid #eee; }
.chart .static { border: 1px solid #eee; max-width: 660px; }
.chart .static svg { max-width: 100%; height: auto; display: block; }
.chart figcaption { color: #555; font-size: 13px; }
/* One chart per figure: the interactive one where scripts run; the static one only where
   they do not (html lacks the js class) or on paper. */
html.js .chart.has-interactive > .static { display: none; }
html:not(.js) .chart.has-interactive > .interactive { display: none; }
@media print {
  html.js .chart.has-interactive > .static { display: block; }
  .chart.has-interactive > .interactive { display: none; }
}
.timebar { display: flex; height: 16px; min-width: 2px; border: 1px solid #ccc; }
.timebar span { display: block; height: 100%; }
table.time td.bar { width: 520px; }
.swatch { display: inline-block; width: 10px; height: 10px; margin: 0 3px 0 8px; }
details.mtree { margin-left: 16px; } div.mrow { margin-left: 32px; }
.mrow { display: flex; align-items: center; gap: 8px; font-size: 12px; }
summary.mrow { display: list-item; } summary.mrow > span { display: inline-block;
  vertical-align: middle; margin-right: 8px; }
.mname { width: 260px; font-family: monospace; overflow: hidden; text-overflow: ellipsis;
  white-space: nowrap; }
.mbars { width: 420px; } .mbars .timebar { height: 4px; margin: 1px 0; }
.mtimes { color: #555; font-size: 11px; }
details { margin: 2px 0; } summary { cursor: pointer; }
details.module, div.module { margin-left: 18px; } div.module { font-family: monospace; padding-left: 14px; } details.module > summary { font-family: monospace; }
code { font-size: 12px; }
"""


# The compact view (Jupyter) shares the notebook's page: its styles apply inside it only.
COMPACT_CSS = """
.solar-report { font-family: system-ui, sans-serif; color: #1b1b1b; }
.solar-report h1 { font-size: 18px; margin: 6px 0 2px; }
.solar-report h2 { font-size: 15px; margin: 12px 0 4px; border-bottom: 1px solid #ddd; }
.solar-report .meta, .solar-report .note { color: #555; margin: 2px 0; font-size: 13px; }
.solar-report table { border-collapse: collapse; margin: 6px 0; font-size: 12px; }
.solar-report th, .solar-report td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; }
.solar-report th { background: #f4f4f4; }
.solar-report td.num { text-align: right; }
.solar-report .exact { color: #777; font-size: 11px; }
.solar-report .warn { color: #a40000; font-weight: bold; }
.solar-report svg { max-width: 100%; height: auto; }
"""


def num(value: Any, field: str, text: Optional[str] = None, cls: str = "num") -> str:
    """A table cell with a number: `text` shown, the exact value kept in data-value."""
    shown = escape(text if text is not None else exact(value))
    return (f'<td class="{cls}" data-field="{escape(field)}" data-value="{escape(exact(value))}">'
            f"{shown}</td>")


def cell(text: Any) -> str:
    return f"<td>{escape(str(text))}</td>"


def table(head: Iterable[str], rows: Iterable[str], cls: str = "") -> str:
    hs = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join(f"<tr>{r}</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{hs}</tr></thead><tbody>{body}</tbody></table>'


class Charts:
    """Renders charts, putting plotly.js inline with the first interactive one."""

    def __init__(self, interactive_charts: bool = True):
        self.interactive = interactive_charts and interactive.available()
        self.wanted = interactive_charts
        self.library_done = False

    def render(self, chart: Optional[Dict[str, Any]]) -> str:
        if chart is None:
            return ""
        static = svg.render(chart)
        cls = "chart has-interactive" if self.interactive else "chart"
        parts = [f'<figure class="{cls}" id="chart-{escape(chart["id"])}" '
                 f'data-chart="{escape(chart["id"])}">']
        if self.interactive:
            fragment = interactive.div(chart, with_library=not self.library_done)
            self.library_done = True
            parts.append(f'<div class="interactive">{fragment}</div>')
        # With an interactive chart the static one is its no-script and print fallback only
        # (CSS above): one chart per figure.
        parts.append(f'<div class="static">{static}</div>')
        parts.append(f"<figcaption>{escape(chart.get('caption', ''))}</figcaption></figure>")
        return "".join(parts)

    def missing_note(self) -> str:
        if self.wanted and not self.interactive:
            return ('<p class="note">Interactive charts need plotly (<code>pip install '
                    'plotly</code>); the static charts below show the same data.</p>')
        return ""


# ------------------------------------------------------------------------- analyze report


def header(report: Dict[str, Any], kind: str) -> str:
    p = report.get("program", {})
    return (f'<h1 id="title">{escape(kind)}: {escape(str(p.get("name", "?")))}</h1>'
            f'<p class="meta">frontend {escape(str(p.get("frontend", "?")))} &middot; source '
            f'<code>{escape(str(p.get("source", "")) or "-")}</code> &middot; '
            f'{escape(str(report.get("schema", "")))}</p>')


def summary(report: Dict[str, Any]) -> str:
    cov, t, o = report.get("coverage", {}), report.get("totals", {}), report.get("options", {})
    complete = cov.get("complete")
    cov_row = (f'<p>ops <b data-field="coverage.ops" data-value="{exact(cov.get("ops"))}">'
               f'{escape(exact(cov.get("ops")))}</b>, analyzed <b data-field="coverage.analyzed" '
               f'data-value="{exact(cov.get("analyzed"))}">{escape(exact(cov.get("analyzed")))}</b>'
               f', coverage <b class="{"" if complete else "warn"}">'
               f'{"complete" if complete else "INCOMPLETE"}</b>')
    if cov.get("dead"):
        cov_row += f', dead ops (in no bound) {escape(exact(cov.get("dead")))}'
    cov_row += "</p>"
    unanalyzed = cov.get("unanalyzed_ops") or []
    if unanalyzed:
        cov_row += ('<p class="warn">Unanalyzed ops (their work is unknown, not zero): '
                    + escape(", ".join(f"{u.get('name')} ({u.get('framework_op', '')})"
                                       for u in unanalyzed[:20]))
                    + (" ..." if len(unanalyzed) > 20 else "") + "</p>")
    opts = (f'<p class="meta">policy {escape(str(o.get("policy", "?")))} &middot; cache '
            f'{escape(str(o.get("cache_state", "?")))} &middot; cache-aware mode '
            f'{escape(str(o.get("mode", "?")))} &middot; <b>1 MAC = 2 FLOP</b> '
            f'(FLOPs = 2 &times; MACs + vector FLOPs) &middot; times at dense peak rates</p>')
    rows = []

    def row(label: str, key: str, unit: str, note: str = "") -> None:
        v = t.get(key)
        if v is None:
            return
        rows.append(cell(label) + num(v, f"totals.{key}", si(v, unit))
                    + f'<td class="num exact">{escape(grouped(v))}</td>' + cell(note))

    by = ", ".join(f"{k} {si(v, 'MAC')}" for k, v in sorted(t.get("macs_by_dtype", {}).items()))
    row("MACs", "macs", "MAC", by)
    if t.get("macs_dense") not in (None, t.get("macs")):
        row("MACs over whole boxes", "macs_dense", "MAC", "masks ignored")
    row("FLOPs", "flops", "FLOP", f"2 x MACs + vector {si(t.get('vector_flops', 0), 'FLOP')}")
    row("vector FLOPs", "vector_flops", "FLOP")
    row("special-function ops", "special_ops", "op", "exp, log, tanh, ...: counted apart")
    row("bytes, unfused", "bytes_unfused", "B", "every op through DRAM")
    row("bytes, fused (compulsory)", "bytes_fused", "B", "inputs, weights, outputs once")
    extra = ""
    for name in ("validation", "crosscheck"):
        sec = report.get(name)
        if isinstance(sec, dict) and sec.get("status"):
            bad = sec["status"] not in ("passed", "agree", "explained", "skipped",
                                        "not_compared")
            extra += (f'<p>{name}: <b class="{"warn" if bad else ""}">'
                      f'{escape(str(sec["status"]))}</b></p>')
    return (f'<section id="summary"><h2>Summary</h2>{cov_row}{opts}'
            + table(["total", "value", "exact", "note"], rows, "totals") + extra + "</section>")


def devices(report: Dict[str, Any]) -> str:
    rows = []
    has_memory = any("memory" in d for d in report.get("devices", {}).values())
    for dev_id, d in report.get("devices", {}).items():
        ca = d.get("cache_aware", {})
        f = f"devices.{dev_id}"
        r = (f'<td><b>{escape(dev_id)}</b><br><span class="exact">{escape(d.get("name", ""))}'
             f"</span></td>")
        for level in ("unfused", "framework", "fused"):
            lv = d.get(level, {})
            r += num(lv.get("seconds"), f"{f}.{level}.seconds", seconds(lv.get("seconds")))
            r += cell(lv.get("bottleneck", ""))
        if ca.get("available"):
            r += num(ca.get("seconds"), f"{f}.cache_aware.seconds", seconds(ca.get("seconds")))
            r += cell(f"{ca.get('bottleneck', '')} ({ca.get('mode', '')})")
        else:
            r += f'<td colspan="2" class="exact">{escape(str(ca.get("reason", "not computed")))}</td>'
        ratio = d.get("unfused_over_fused")
        r += num(ratio, f"{f}.unfused_over_fused", "n/a" if ratio is None else f"{ratio:.2f}x")
        unknown = sorted({u for lv in ("unfused", "fused") for u in d.get(lv, {}).get("unknown", [])})
        # A bound that leaves work out is marked in the row itself, not only below the table.
        r += (f'<td class="warn">leaves work out: {escape("; ".join(unknown))}</td>' if unknown
              else "<td></td>")
        if has_memory:
            r += _memory_cell(d.get("memory"), f"{f}.memory")
        rows.append(r)
    return ('<section id="devices"><h2>Devices</h2>'
            + table(["device", "unfused SOL", "bottleneck", "framework SOL", "bottleneck",
                     "fused SOL", "bottleneck",
                     "cache-aware SOL", "bottleneck (mode)", "unfused / fused", "unknown rates"]
                    + (["memory (footprint)"] if has_memory else []),
                    rows, "devices")
            + '<p class="note">Unfused: every einsum op its own kernel, intermediates through '
              "DRAM. Framework: one kernel per framework op (an aten op, a jaxpr equation, a "
              "loop nest, a graph op), each fused inside: the eager reference. Fused: the "
              "whole graph as one kernel, compulsory traffic "
              "only (a hard lower bound). Cache-aware: fused with the DRAM traffic Q(S) of the "
              "device's on-chip capacity S.</p></section>")


def links(report: Dict[str, Any]) -> str:
    """A row per link of a device bounded with a system (`devices.<ID>.links`): its
    collectives' bytes per device per direction and time; and the level with and without
    overlap. Empty without a system."""
    rows = []
    for dev_id, d in report.get("devices", {}).items():
        f = f"devices.{dev_id}"
        for i, ln in enumerate(d.get("links", [])):
            rows.append(cell(d.get("system", "")) + cell(dev_id) + cell(ln.get("link", ""))
                        + num(ln.get("bytes"), f"{f}.links[{i}].bytes", si(ln.get("bytes"), "B"))
                        + num(ln.get("seconds"), f"{f}.links[{i}].seconds",
                              seconds(ln.get("seconds")))
                        + cell(ln.get("collectives", "")))
    system = report.get("system")
    if not rows and not system:
        return ""
    head = ""
    if system:
        def span(key: str) -> str:
            v = system.get(key)
            return (f'<span data-field="system.{key}" data-value="{escape(exact(v))}">'
                    f"{escape(seconds(v))}</span>")
        head = (f'<p>System <b>{escape(str(system.get("id")))}</b> ({system.get("devices")} x '
                f'{escape(str(system.get("device")))}), {escape(str(system.get("level")))} level: '
                f'{span("seconds")} with communication overlapped, {span("seconds_no_overlap")} '
                f'without; bottleneck {escape(str(system.get("bottleneck")))}.</p>')
    return ('<section id="links"><h2>Links</h2>' + head
            + table(["system", "device", "link", "bytes per device per direction", "time",
                     "collectives"], rows, "links")
            + '<p class="note">Each link is a resource beside DRAM and the compute units: a '
              "collective's time on it is its lower bound under the best algorithm the "
              "topology allows (docs/parallel.md).</p></section>")


def _memory_cell(m: Optional[Dict[str, Any]], field: str) -> str:
    """Whether the program's data fits the device's memory (`devices.<ID>.memory`): a
    program that does not fit is marked in its row."""
    if not m:
        return "<td></td>"
    foot = (f'<span data-field="{escape(field)}.footprint_bytes" '
            f'data-value="{exact(m.get("footprint_bytes"))}">{si(m.get("footprint_bytes"), "B")}</span>')
    if m.get("fits") is None:
        return f'<td class="exact">{foot} (device capacity unpublished)</td>'
    cap = si(m.get("capacity_bytes"), "B")
    if m["fits"]:
        return f"<td>{foot} of {cap}</td>"
    big = m.get("largest_tensor") or {}
    largest = (f"; largest tensor {escape(str(big.get('name')))} {si(big.get('bytes'), 'B')}"
               if big else "")
    return f'<td class="warn">does not fit: {foot} &gt; {cap}{largest}</td>'


def top_ops(report: Dict[str, Any], n: int = 15) -> str:
    devs = list(report.get("devices", {}))
    ops = [o for o in report.get("ops", []) if o.get("analyzed")]
    if not devs or not ops:
        return ""
    d = devs[0]
    ops.sort(key=lambda o: -(o.get("share", {}).get(d) or 0.0))
    rows = []
    for o in ops[:n]:
        share = o.get("share", {}).get(d) or 0.0
        rows.append(cell(o.get("module", "") or "(program)") + cell(o.get("label") or o["name"])
                    + cell(o.get("class", ""))
                    + num(o.get("macs"), f"ops[{o['name']}].macs", si(o.get("macs"), "MAC"))
                    + num(o.get("bytes"), f"ops[{o['name']}].bytes", si(o.get("bytes"), "B"))
                    + num(o["seconds"].get(d), f"ops[{o['name']}].seconds.{d}",
                          seconds(o["seconds"].get(d)))
                    + num(share, f"ops[{o['name']}].share.{d}", f"{100 * share:.1f}%")
                    + cell(o.get("bottleneck", {}).get(d, "")))
    return (f'<section id="top-ops"><h2>Top ops by share of the unfused SOL on {escape(d)}</h2>'
            + table(["module", "op", "class", "MACs", "bytes", "time", "share", "bottleneck"],
                    rows, "ops") + "</section>")


# Rows of one device's fusion-group table at most (a huge graph has thousands of groups).
MAX_GROUPS = 300


def fusion_groups(report: Dict[str, Any]) -> str:
    # Ops by module path and framework op, as people know them (ops[].label).
    names = {o["name"]: charts.op_name(o) for o in report.get("ops", [])}
    blocks = []
    for k, (dev_id, d) in enumerate(report.get("devices", {}).items()):
        ca = d.get("cache_aware", {})
        groups = ca.get("groups") or []
        if not ca.get("available") or not groups:
            continue
        rows = []
        for i, g in enumerate(groups[:MAX_GROUPS]):
            ops = [names.get(o, o) for o in g.get("ops", [])]
            shown = ", ".join(ops[:12]) + (f" ... ({len(ops)} ops)" if len(ops) > 12 else "")
            f = f"devices.{dev_id}.cache_aware.groups.{i}"
            rows.append(cell(i + 1) + cell(g.get("kind", "")) + f"<td><code>{escape(shown)}</code></td>"
                        + num(g.get("traffic_bytes"), f"{f}.traffic_bytes",
                              si(g.get("traffic_bytes"), "B"))
                        + num(g.get("buffer_bytes"), f"{f}.buffer_bytes",
                              si(g.get("buffer_bytes"), "B"))
                        + cell(g.get("detail", "")))
        blocks.append(f'<details class="groups" data-device="{escape(dev_id)}"{" open" if k == 0 else ""}>'
                      f"<summary>{escape(dev_id)}: {len(groups)} groups, "
                      f"{escape(str(ca.get('mode', '')))} mode, Q(S) {si(ca.get('traffic_bytes'), 'B')}"
                      f" at S = {si(ca.get('capacity_bytes'), 'B')}</summary>"
                      + table(["#", "kind", "ops", "traffic", "buffer", "how"], rows, "groups")
                      + (f'<p class="note">... and {len(groups) - MAX_GROUPS} more groups (in the '
                         "JSON report)</p>" if len(groups) > MAX_GROUPS else "")
                      + "</details>")
    if not blocks:
        body = '<p class="note">No device has the cache-aware level (so no fusion groups).</p>'
    else:
        body = ('<p class="note">The cache-aware level\'s fusion groups: kind <code>none</code> '
                "is an op alone through DRAM; <code>untiled</code> keeps the intermediates on "
                "chip whole; <code>tiled</code> streams them in tiles.</p>" + "".join(blocks))
    return f'<section id="fusion-groups"><h2>Fusion groups</h2>{body}</section>'


def insights(report: Dict[str, Any]) -> str:
    entries = (report.get("insights") or {}).get("reassociation") or []
    if not entries:
        body = ('<p class="note">Re-association: no chain of contractions can be reordered to '
                "do less work.</p>")
    else:
        rows = []
        for i, e in enumerate(entries):
            f = f"insights.reassociation.{i}"
            devs = "; ".join(
                f"{d}: fused {seconds(v.get('fused_seconds_before'))} -> "
                f"{seconds(v.get('fused_seconds_after'))}"
                for d, v in (e.get("devices") or {}).items())
            rows.append(cell(e.get("output", "")) + cell(e.get("contractions", ""))
                        + num(e.get("macs_as_written"), f"{f}.macs_as_written",
                              si(e.get("macs_as_written"), "MAC"))
                        + num(e.get("macs_least"), f"{f}.macs_least", si(e.get("macs_least"), "MAC"))
                        + num(e.get("saving"), f"{f}.saving", f"{e.get('saving', 0):.3g}x")
                        + f"<td><code>{escape(str(e.get('expression', '')))}</code><br>best order "
                          f"<code>{escape(str(e.get('order', '')))}</code></td>" + cell(devs))
        body = ('<p class="note">The same math, cheaper: chains of contractions whose best '
                "order does fewer MACs than the program's (docs/insight.md).</p>"
                + table(["output", "contractions", "MACs as written", "least MACs", "saving",
                         "expression", "SOL before -> after"], rows, "insights"))
    return f'<section id="insights"><h2>Insights</h2>{body}</section>'


def _module_node(node: Dict[str, Any], devs: List[str], depth: int) -> str:
    label = node.get("name") or node.get("path") or "(whole program)"
    typ = f" ({node['type']})" if node.get("type") else ""
    path = node.get("path", "")
    f = f"modules[{path}]"
    stats = (f'<span data-field="{escape(f)}.macs" data-value="{exact(node.get("macs"))}">'
             f'{si(node.get("macs", 0), "MAC")}</span>, '
             f'<span data-field="{escape(f)}.flops" data-value="{exact(node.get("flops"))}">'
             f'{si(node.get("flops", 0), "FLOP")}</span>, {exact(node.get("ops"))} ops, bytes '
             f'{si(node.get("bytes_unfused", 0), "B")} unfused / '
             f'{si(node.get("bytes_fused", 0), "B")} at its boundary')
    per_dev = []
    for d in devs:
        v = (node.get("devices") or {}).get(d)
        if not v:
            continue
        share = v.get("share")
        per_dev.append(f'{escape(d)} <span data-field="{escape(f)}.devices.{escape(d)}.share" '
                       f'data-value="{exact(share)}">'
                       f'{"n/a" if share is None else f"{100 * share:.1f}%"}</span> '
                       f"({seconds(v.get('unfused_seconds'))} unfused, "
                       f"{seconds(v.get('fused_seconds'))} fused)")
    children = node.get("children") or []
    inner = "".join(_module_node(c, devs, depth + 1) for c in children)
    line = (f"<b>{escape(label)}</b>{escape(typ)}: {stats}"
            + (f" &middot; {' &middot; '.join(per_dev)}" if per_dev else ""))
    if not children:  # a leaf has nothing to open
        return f'<div class="module leaf" data-path="{escape(path)}">{line}</div>'
    return (f'<details class="module" data-path="{escape(path)}"{" open" if depth < 1 else ""}>'
            f"<summary>{line}</summary>{inner}</details>")


def modules(report: Dict[str, Any]) -> str:
    root = report.get("modules")
    if not root:
        body = ('<p class="note">This report has no module tree (graphs written by hand have '
                "no modules; programs captured from PyTorch or JAX do).</p>")
    else:
        body = ('<p class="note">Per module: MACs, FLOPs, ops, bytes (all ops through DRAM / '
                "the tensors crossing the module's boundary) and each device's share of the "
                "whole program's unfused SOL. Click a module to open it.</p>"
                + _module_node(root, list(report.get("devices", {})), 0))
    return f'<section id="modules"><h2>Module tree</h2>{body}</section>'


def analyze_body(report: Dict[str, Any], ch: Charts) -> str:
    parts = [header(report, "Solar SOL report"), summary(report), devices(report), links(report)]
    parts.append('<section id="roofline"><h2>Roofline</h2>' + ch.missing_note())
    rooflines = [ch.render(charts.op_roofline(report, d)) for d in report.get("devices", {})]
    parts.append("".join(rooflines) or '<p class="note">No op has both FLOPs and bytes.</p>')
    parts.append("</section>")
    slope = charts.ski_slope(report)
    parts.append('<section id="ski-slope"><h2>Ski-slope</h2>'
                 + (ch.render(slope) if slope else
                    '<p class="note">No ski-slope: the cache-aware level was skipped '
                    "(--no-cache-aware) or the cache state is warm.</p>") + "</section>")
    head = charts.headroom_measurement(report)
    if head:
        parts.append('<section id="headroom"><h2>Headroom</h2>' + ch.render(head) + "</section>")
    parts += [where.section(report), fusion_groups(report), insights(report), modules(report),
              top_ops(report)]
    return "".join(parts)


# ------------------------------------------------------------------------- suite


# The levels of a suite's program rows (a report without the framework level leaves its
# cell empty).
SUITE_LEVELS = ("unfused", "framework", "fused")


def suite_body(doc: Dict[str, Any], ch: Charts) -> str:
    s = doc.get("summary", {})
    opts = doc.get("options", {})
    archs = list(opts.get("archs") or [])
    progs = doc.get("programs", [])
    out = [f'<h1 id="title">Solar suite: {escape(str(opts.get("dir", "")))}</h1>',
           f'<p class="meta">{escape(str(doc.get("schema", "")))} &middot; devices '
           f'{escape(", ".join(archs))} &middot; <b>1 MAC = 2 FLOP</b></p>',
           '<section id="summary"><h2>Summary</h2>',
           table(["", "count"], [cell(k) + num(s.get(k), f"summary.{k}", exact(s.get(k)))
                                 for k in ("programs", "analyzed", "zero_unanalyzed",
                                           "with_unanalyzed", "unanalyzed_ops", "dead_ops")
                                 if k in s]
                 + [cell("failures") + num(sum((s.get("failures") or {}).values()),
                                           "summary.failures", None)]),
           "</section>"]
    rows = []
    for i, e in enumerate(progs):
        src = e.get("program", {}).get("source", "?")
        if "error" in e:
            rows.append(cell(src) + f'<td class="warn" colspan="{3 + len(SUITE_LEVELS) * len(archs)}">failed: '
                        f'{escape(str(e["error"].get("cause", "")))}</td>')
            continue
        cov = e.get("coverage", {})
        r = (cell(src) + num(cov.get("ops"), f"programs.{i}.coverage.ops")
             + cell("complete" if cov.get("complete") else f"{cov.get('unanalyzed')} unanalyzed")
             + num(e.get("totals", {}).get("macs"), f"programs.{i}.totals.macs",
                   si(e.get("totals", {}).get("macs"), "MAC")))
        for a in archs:
            d = (e.get("devices") or {}).get(a, {})
            for lv in SUITE_LEVELS:
                v = d.get(lv, {}).get("seconds")
                r += num(v, f"programs.{i}.devices.{a}.{lv}.seconds", seconds(v))
        rows.append(r)
    head = ["program", "ops", "coverage", "MACs"] + [f"{a} {lv}" for a in archs
                                                     for lv in SUITE_LEVELS]
    out.append('<section id="programs"><h2>Programs</h2>' + table(head, rows, "programs")
               + "</section>")
    out.append('<section id="roofline"><h2>Roofline</h2>' + ch.missing_note()
               + "".join(ch.render(charts.suite_roofline(doc, a)) for a in archs) + "</section>")
    joined = s.get("headroom")
    if joined:
        out.append('<section id="headroom"><h2>Headroom</h2>' + ch.render(charts.headroom_suite(joined))
                   + "</section>")
    return "".join(out)


# ------------------------------------------------------------------------- inverse


def inverse_body(doc: Dict[str, Any], ch: Charts) -> str:
    out = [header(doc, "Solar inverse roofline"),
           '<section id="summary"><h2>Summary</h2>',
           f'<p>target <b data-field="target_seconds" data-value="{exact(doc.get("target_seconds"))}">'
           f'{seconds(doc.get("target_seconds"))}</b> per run ({si(doc.get("target_rate_hz"), "Hz")})'
           f' &middot; mode {escape(str(doc.get("mode", "")))} &middot; policy '
           f'{escape(str(doc.get("policy", "")))} &middot; <b>1 MAC = 2 FLOP</b></p>']
    rows = []
    for kind, m in (doc.get("min_compute") or {}).items():
        rows.append(cell(kind) + num(m.get("work"), f"min_compute.{kind}.work",
                                     si(m.get("work"), m.get("unit", "")))
                    + num(m.get("min_rate"), f"min_compute.{kind}.min_rate",
                          si(m.get("min_rate"), m.get("unit", "") + "/s")))
    out.append(table(["unit kind", "work per run", "least peak"], rows, "min-compute"))
    out.append(f'<p>least DRAM bandwidth with unlimited on-chip capacity: '
               f'<b data-field="min_bandwidth_unlimited_capacity" '
               f'data-value="{exact(doc.get("min_bandwidth_unlimited_capacity"))}">'
               f'{si(doc.get("min_bandwidth_unlimited_capacity"), "B/s")}</b></p></section>')
    rows = []
    for dev_id, d in (doc.get("devices") or {}).items():
        f = f"devices.{dev_id}"
        # "meets", "falls short" or "undetermined" (work left out: never "meets")
        status = str(d.get("status") or ("meets" if d.get("meets") else "falls short"))
        rows.append(f"<td><b>{escape(dev_id)}</b></td>"
                    + num(d.get("compute_factor"), f"{f}.compute_factor",
                          f"{d.get('compute_factor', 0):.3g}x")
                    + num(d.get("bandwidth_factor"), f"{f}.bandwidth_factor",
                          "n/a" if d.get("bandwidth_factor") is None
                          else f"{d['bandwidth_factor']:.3g}x")
                    + f'<td class="{"" if status == "meets" else "warn"}">'
                      f'{escape(status)}'
                      + (f' (unknown: {escape("; ".join(d["unknown"]))})' if d.get("unknown") else "")
                    + "</td>" + cell(d.get("verdict", "")))
    out.append('<section id="devices"><h2>Devices</h2>'
               + table(["device", "compute factor", "bandwidth factor", "", "verdict"], rows,
                       "devices")
               + '<p class="note">Factors are needed / available: above 1 the device falls '
                 "short by that factor.</p></section>")
    out.append('<section id="inverse-curve"><h2>Least bandwidth against capacity</h2>'
               + ch.missing_note() + ch.render(charts.inverse_curve(doc)) + "</section>")
    return "".join(out)


def document(title: str, body: str) -> str:
    # The js class says scripts run: the CSS then shows each figure's interactive chart and
    # hides its static fallback (a page with static charts only has no script at all).
    js = ("<script>document.documentElement.classList.add('js');</script>"
          if "has-interactive" in body else "")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"{js}<title>{escape(title)}</title><style>{CSS}</style></head><body>{body}"
            '<p class="note">Written by Solar (speed-of-light analysis). This page is '
            "self-contained: its scripts, styles and charts are inline.</p></body></html>\n")
