"""The data of the HTML report's charts, taken from report JSON (no drawing here).

A chart is a dict: `id`, `title`, `x_label`, `y_label`, `x_unit`, `y_unit`, `series` (each
`{name, mode: "lines"|"markers", x, y, text?, dash?, color?, legend?}`), `vlines` (`{x,
label}`: device capacities) and `caption`. solar.html.svg draws it as SVG and
solar.html.interactive as a plotly figure, so both show the same numbers.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Iterable, List, Optional, Tuple

from . import labels as label_place
from .fmt import as_number, si

# Memory resources of `peaks_used`: bandwidths, not compute roofs.
_MEMORY = ("dram", "l2")
# Points of one roofline at most: the ops with the most time (a 400,000-op graph would make
# a page no browser draws); the caption says how many were left out.
MAX_POINTS = 3000


def _positive(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 and math.isfinite(x)


def compute_roofs(peaks_used: Dict[str, float]) -> Tuple[Dict[str, float], List[str]]:
    """({resource: FLOP/s}, [left out]): the compute routes that price FLOPs. A unit route
    is `unit.dtype` (`tensor_core.bf16`, `tensor_core.bf16.2:4`); a unit without a dtype
    (`mufu`, special functions) has a rate in ops/s, not FLOP/s: no roof on a FLOP axis."""
    roofs, other = {}, []
    for name, rate in sorted(peaks_used.items()):
        if name in _MEMORY or not _positive(rate):
            continue
        if "." in name:
            roofs[name] = float(rate)
        else:
            other.append(name)
    return roofs, other


def roofline(title: str, chart_id: str, points: Dict[str, List[Tuple[float, float, str]]],
             roofs: Dict[str, float], bandwidth: Optional[float], what: str,
             other: Iterable[str] = ()) -> Dict[str, Any]:
    """A roofline chart: `points` {series name: [(FLOP/byte, FLOP/s, label)]}, the compute
    roofs and the DRAM slope (attainable = min(peak, bandwidth * intensity))."""
    xs = [p[0] for pts in points.values() for p in pts]
    ys = [p[1] for pts in points.values() for p in pts]
    top = max(roofs.values()) if roofs else max(ys, default=1.0)
    ridges = [r / bandwidth for r in roofs.values()] if _positive(bandwidth) else []
    x_lo = min(xs + ridges, default=1.0) / 4
    x_hi = max(xs + ridges, default=1.0) * 4
    series: List[Dict[str, Any]] = []
    if _positive(bandwidth):
        end = top / bandwidth
        series.append({"name": f"DRAM {si(bandwidth, 'B/s')}", "mode": "lines",
                       "x": [x_lo, end], "y": [bandwidth * x_lo, top], "color": "#444"})
    for i, (name, rate) in enumerate(sorted(roofs.items(), key=lambda kv: -kv[1])):
        start = rate / bandwidth if _positive(bandwidth) else x_lo
        series.append({"name": f"{name} {si(rate, 'FLOP/s')}", "mode": "lines", "dash": i > 0,
                       "x": [start, x_hi], "y": [rate, rate]})
    y_lo = min(ys + ([bandwidth * x_lo] if _positive(bandwidth) else []), default=top / 1e3)
    for name, pts in sorted(points.items()):
        series.append({"name": f"{name} ({len(pts)})", "mode": "markers",
                       "x": [p[0] for p in pts], "y": [p[1] for p in pts],
                       "text": [p[2] for p in pts]})
    other = list(other)
    caption = (f"{what}: arithmetic intensity (FLOP per byte of DRAM traffic, 1 MAC = 2 FLOP) "
               "against attainable FLOP/s at its SOL time; the roofs are the device's peaks "
               "used and its DRAM bandwidth.")
    if other:
        caption += f" Units rated in ops/s (special functions: {', '.join(other)}) have no roof here."
    return {"id": chart_id, "title": title, "x_label": "arithmetic intensity (FLOP/byte)",
            "y_label": "attainable FLOP/s", "x_unit": "", "y_unit": "FLOP/s",
            "series": series, "vlines": [], "caption": caption,
            "x_range": (x_lo, x_hi), "y_range": (y_lo / 2, top * 2)}


# Points labeled on a roofline: the ops (and measured ops) with the most time.
LABELED = 8
# Marker radius in pixels: the lightest op, and how much the heaviest adds (by the square root
# of its share of the time, so that a point's area follows its time).
RADIUS_MIN, RADIUS_ADD = 2.5, 9.0


def op_name(op: Dict[str, Any]) -> str:
    """An op as people know it: its module path and its framework op (`ops[].label`)."""
    label = op.get("label") or op.get("name", "?")
    module = op.get("module") or ""
    return f"{module}: {label}" if module else label


def _radius(share: float, heaviest: float) -> float:
    return RADIUS_MIN + RADIUS_ADD * math.sqrt(max(share, 0.0) / heaviest) if heaviest > 0 else RADIUS_MIN


def _measured_ops(report: Dict[str, Any], device: str) -> List[Tuple[float, float, float, str]]:
    """(seconds, FLOP/byte, measured FLOP/s, name) of each profiled aten op of a `solar bench
    --profile` report on `device`: the FLOPs and bytes of the graph ops lowered from it over
    its measured time (below the roof unless it beat the bound)."""
    m = report.get("measurement") or {}
    if m.get("device") != device or not m.get("per_op"):
        return []
    work: Dict[str, List[float]] = {}
    for op in report.get("ops", []):
        aten = (op.get("origin") or {}).get("op", "")
        name = aten.rsplit(".", 1)[0] if aten.startswith("aten::") else aten
        if name and op.get("analyzed"):
            w = work.setdefault(name, [0.0, 0.0])
            w[0] += as_number(op.get("flops", 0))
            w[1] += as_number(op.get("bytes", 0))
    out = []
    for row in m["per_op"]:
        flops, nbytes = work.get(row.get("op"), (0.0, 0.0))
        t = row.get("measured_seconds")
        if flops > 0 and nbytes > 0 and _positive(t):
            out.append((t, flops / nbytes, flops / t, row["op"]))
    return out


def placed_labels(chart: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The chart's `labels` ({x, y, text}, heaviest first) that fit without overlapping
    (solar.html.labels), each with its pixel offset from its point: what both renderers draw."""
    labels = chart.get("labels") or []
    if not labels or not chart.get("x_range") or not chart.get("y_range"):
        return []
    (x0, x1), (y0, y1) = chart["x_range"], chart["y_range"]
    lx0, lx1, ly0, ly1 = (math.log10(v) for v in (x0, x1, y0, y1))
    pts = []
    for lab in labels:
        fx = (math.log10(lab["x"]) - lx0) / (lx1 - lx0)
        fy = 1 - (math.log10(lab["y"]) - ly0) / (ly1 - ly0)
        pts.append((fx * label_place.PLOT_W, fy * label_place.PLOT_H, lab["text"]))
    return [{**labels[p["index"]], **p} for p in label_place.place(pts)]


def op_roofline(report: Dict[str, Any], device: str) -> Optional[Dict[str, Any]]:
    """The roofline of one device with the report's ops as points (per class), each sized by
    its share of the unfused time, the heaviest labeled, and a `solar bench --profile` run's
    measured ops against the roof when the report has one; None when no op has both FLOPs
    and bytes (nothing to place)."""
    dev = report["devices"][device]
    placed = []
    for op in report.get("ops", []):
        if not op.get("analyzed") or op.get("class") == "dead":
            continue
        flops, nbytes = as_number(op.get("flops", 0)), as_number(op.get("bytes", 0))
        secs = op.get("seconds", {}).get(device)
        if flops > 0 and nbytes > 0 and _positive(secs):
            placed.append((secs, op.get("class", "op"), flops / nbytes, flops / secs, op_name(op)))
    if not placed:
        return None
    what = "Each op at its own unfused SOL, its area its share of the time"
    if len(placed) > MAX_POINTS:
        what = (f"The {MAX_POINTS} ops with the most time of {len(placed)} (the others are "
                "left out), each at its own unfused SOL, its area its share of the time")
        placed = sorted(placed, key=lambda p: -p[0])[:MAX_POINTS]
    total = sum(p[0] for p in placed)
    heaviest = max(p[0] for p in placed) / total
    points: Dict[str, List[Tuple[float, float, str]]] = {}
    radii: Dict[str, List[float]] = {}
    for secs, cls, x, y, name in placed:
        share = secs / total
        points.setdefault(cls, []).append((x, y, name))
        radii.setdefault(cls, []).append(_radius(share, heaviest))
    roofs, other = compute_roofs(dev.get("peaks_used", {}))
    chart = roofline(f"Roofline: {device}", f"roofline-{device}", points, roofs,
                     dev.get("dram_bandwidth"), what, other)
    for s in chart["series"]:
        cls = s["name"].rsplit(" (", 1)[0]
        if s["mode"] == "markers" and cls in radii:
            s["radius"] = radii[cls]
    labels = [{"x": x, "y": y, "text": name, "seconds": secs}
              for secs, _, x, y, name in sorted(placed, key=lambda p: -p[0])[:LABELED]]
    measured = _measured_ops(report, device)
    if measured:
        chart["series"].append({"name": f"measured ({len(measured)} aten ops)", "mode": "markers",
                                "symbol": "x", "color": "#000",
                                "x": [p[1] for p in measured], "y": [p[2] for p in measured],
                                "text": [p[3] for p in measured]})
        lo, hi = chart["y_range"]
        chart["y_range"] = (min([lo] + [p[2] / 2 for p in measured]), hi)
        labels += [{"x": x, "y": y, "text": f"{name} (measured)", "seconds": t}
                   for t, x, y, name in sorted(measured, key=lambda p: -p[0])[:LABELED // 2]]
        chart["caption"] += (" Crosses: each profiled aten op at its measured time (solar bench "
                             "--profile): its distance below the roof is its headroom.")
    chart["labels"] = labels
    chart["placed_labels"] = placed_labels(chart)
    chart["caption"] += (f" Labeled: the points with the most time ({len(chart['placed_labels'])}"
                         " that fit without overlapping; every point names itself on hover).")
    return chart


def ski_slope(report: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """Q(S) against on-chip capacity S (both modes, the heaviest ops' curves, each device's
    capacity as a vertical line), or None without the `ski_slope` section."""
    ss = report.get("ski_slope")
    if not ss or not ss.get("capacities_bytes"):
        return None
    caps = [as_number(c) for c in ss["capacities_bytes"]]
    series = [
        {"name": "attainable Q(S)", "mode": "lines", "x": caps,
         "y": [as_number(v) for v in ss["attainable_bytes"]], "color": "#1f77b4"},
        {"name": "provable Q(S)", "mode": "lines", "x": caps,
         "y": [as_number(v) for v in ss["provable_bytes"]], "color": "#d62728"},
        {"name": "compulsory", "mode": "lines", "dash": True, "color": "#2ca02c",
         "x": [caps[0], caps[-1]], "y": [as_number(ss["compulsory_bytes"])] * 2},
    ]
    for op in ss.get("ops", []):
        pts = [(as_number(b), as_number(t)) for b, t in op.get("points", [])]
        if pts:
            series.append({"name": f"op {op['name']}", "mode": "lines", "dash": True,
                           "color": "#999", "x": [p[0] for p in pts], "y": [p[1] for p in pts],
                           "legend": False})
    vlines = [{"x": as_number(s), "label": f"{d} {si(s, 'B')}"}
              for d, s in sorted(ss.get("device_capacities_bytes", {}).items(), key=lambda kv: kv[1])
              if _positive(as_number(s))]
    xs = caps + [v["x"] for v in vlines]
    ys = [y for s in series for y in s["y"] if y > 0]
    return {"id": "ski-slope", "title": "Ski-slope: DRAM traffic Q(S) against on-chip capacity S",
            "x_label": "on-chip capacity S (bytes)", "y_label": "DRAM traffic Q(S) (bytes)",
            "x_unit": "B", "y_unit": "B", "series": series, "vlines": vlines,
            "x_range": (min(xs) / 1.3, max(xs) * 1.3), "y_range": (min(ys) / 1.5, max(ys) * 1.5),
            "caption": "The whole graph's traffic at each capacity, attainable (best schedule "
                       "found: an estimate) and provable (a lower bound), never below the "
                       "compulsory traffic; grey: the heaviest ops' own curves; vertical lines: "
                       "each device's on-chip capacity."}


def _diagonal(lo: float, hi: float) -> Dict[str, Any]:
    return {"name": "measured = SOL", "mode": "lines", "x": [lo, hi], "y": [lo, hi],
            "color": "#000", "dash": True}


def headroom_measurement(report: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """`solar bench` reports (section `measurement`): the measured min against each SOL
    level, and with --profile every op's measured time against its SOL. None without it."""
    m = report.get("measurement")
    if not m:
        return None
    series = []
    sol = {lv: s for lv, s in (m.get("sol_seconds") or {}).items() if _positive(s)}
    if sol and _positive(m.get("min_seconds")):
        series.append({"name": "program (per SOL level)", "mode": "markers",
                       "x": list(sol.values()), "y": [m["min_seconds"]] * len(sol),
                       "text": list(sol)})
    per_op = [p for p in m.get("per_op") or []
              if _positive(p.get("sol_seconds")) and _positive(p.get("measured_seconds"))]
    if per_op:
        series.append({"name": "ops (profiler)", "mode": "markers",
                       "x": [p["sol_seconds"] for p in per_op],
                       "y": [p["measured_seconds"] for p in per_op],
                       "text": [p["op"] for p in per_op]})
    if not series:
        return None
    vals = [v for s in series for v in s["x"] + s["y"]]
    series.append(_diagonal(min(vals) / 2, max(vals) * 2))
    return {"id": "headroom", "title": f"Measured against SOL on {m.get('device', '?')}",
            "x_label": "SOL (seconds)", "y_label": "measured min (seconds)", "x_unit": "s",
            "y_unit": "s", "series": series, "vlines": [],
            "caption": "Headroom = measured / SOL: the distance above the diagonal. A point "
                       "below it at a bound level (fused, cache-aware) would be a violation."}


def headroom_points(joined: Dict[str, Any],
                    level: str = "fused") -> Dict[str, List[Tuple[float, float, str]]]:
    """Per KernelBench level: (SOL ms, measured min ms, problem) points of one SOL level of
    a suite joined with timings (solar.headroom.join): the scatter this chart and
    solar.headroom.plot draw."""
    series: Dict[str, List[Tuple[float, float, str]]] = {}
    for r in joined["rows"]:
        if level in r["sol_ms"] and r["sol_ms"][level] > 0:
            series.setdefault(r["level"], []).append(
                (r["sol_ms"][level], r["measured_min_ms"], r["problem"]))
    return series


def headroom_suite(joined: Dict[str, Any], level: str = "fused") -> Optional[Dict[str, Any]]:
    """`solar suite --timings` (summary.headroom, solar.headroom.join): each problem's
    measured min against its SOL at `level`, one series per KernelBench level."""
    data = headroom_points(joined, level)
    if not data:
        return None
    series = [{"name": f"{name} ({len(pts)})", "mode": "markers",
               "x": [p[0] * 1e-3 for p in pts], "y": [p[1] * 1e-3 for p in pts],
               "text": [p[2] for p in pts]} for name, pts in sorted(data.items())]
    vals = [v for s in series for v in s["x"] + s["y"]]
    series.append(_diagonal(min(vals) / 2, max(vals) * 2))
    return {"id": "headroom", "title": f"Measured against {level} SOL on {joined['arch']} "
                                       f"({len(joined['violations'])} violations)",
            "x_label": f"{level} SOL (seconds)", "y_label": "measured min (seconds)",
            "x_unit": "s", "y_unit": "s", "series": series, "vlines": [],
            "caption": "One point per problem with a timing; a point below the diagonal is a "
                       "violation of the bound."}


def suite_roofline(doc: Dict[str, Any], device: str) -> Optional[Dict[str, Any]]:
    """A device's roofline with each analyzed program of a suite as a point at its fused
    SOL (compulsory traffic); roofs from the peaks its programs used."""
    points: List[Tuple[float, float, str]] = []
    measured: List[Tuple[float, float, str]] = []
    # A suite joined with timings (`--timings`, summary.headroom) on this device: each
    # program's measured min against the roof too.
    joined = (doc.get("summary") or {}).get("headroom") or {}
    timed = ({r["source"]: r["measured_min_ms"] * 1e-3 for r in joined.get("rows", [])
              if _positive(r.get("measured_min_ms"))} if joined.get("arch") == device else {})
    peaks: Dict[str, float] = {}
    bandwidth = None
    for e in doc.get("programs", []):
        dev = (e.get("devices") or {}).get(device)
        if "error" in e or not dev:
            continue
        for k, v in dev.get("peaks_used", {}).items():
            if _positive(v):
                peaks[k] = max(peaks.get(k, 0.0), float(v))
        bandwidth = dev.get("dram_bandwidth") or bandwidth
        t = e.get("totals", {})
        flops, nbytes = as_number(t.get("flops", 0)), as_number(t.get("bytes_fused", 0))
        secs = dev.get("fused", {}).get("seconds")
        if flops > 0 and nbytes > 0 and _positive(secs):
            source = e.get("program", {}).get("source", "?")
            points.append((flops / nbytes, flops / secs, source))
            if source in timed:
                measured.append((flops / nbytes, flops / timed[source], source))
    if not points:
        return None
    roofs, other = compute_roofs(peaks)
    chart = roofline(f"Roofline: {device}", f"roofline-{device}", {"programs": points}, roofs,
                     bandwidth, "Each program at its fused SOL (compulsory traffic)", other)
    if measured:
        chart["series"].append({"name": f"measured ({len(measured)})", "mode": "markers",
                                "symbol": "x", "color": "#000", "x": [p[0] for p in measured],
                                "y": [p[1] for p in measured], "text": [p[2] for p in measured]})
        lo, hi = chart["y_range"]
        chart["y_range"] = (min([lo] + [p[1] / 2 for p in measured]), hi)
        chart["caption"] += (" Crosses: each program at its measured min (--timings): its "
                             "distance below its point is its headroom.")
    return chart


def inverse_curve(doc: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """`solar inverse`: the least DRAM bandwidth that meets the target at each on-chip
    capacity (both modes), each device at (its capacity, its bandwidth)."""
    curve = doc.get("min_bandwidth_curve") or []
    if not curve:
        return None
    caps = [as_number(c["capacity_bytes"]) for c in curve]
    series = [
        {"name": "attainable beta_min(S)", "mode": "lines", "x": caps,
         "y": [c["attainable_min_bandwidth"] for c in curve], "color": "#1f77b4"},
        {"name": "provable beta_min(S)", "mode": "lines", "x": caps,
         "y": [c["provable_min_bandwidth"] for c in curve], "color": "#d62728"},
    ]
    if _positive(doc.get("min_bandwidth_unlimited_capacity")):
        series.append({"name": "unlimited capacity", "mode": "lines", "dash": True,
                       "color": "#2ca02c", "x": [caps[0], caps[-1]],
                       "y": [doc["min_bandwidth_unlimited_capacity"]] * 2})
    devs = [(d, v) for d, v in sorted(doc.get("devices", {}).items())
            if _positive(v.get("capacity_bytes")) and _positive(v.get("dram_bandwidth"))]
    if devs:
        series.append({"name": "devices", "mode": "markers", "color": "#000",
                       "x": [as_number(v["capacity_bytes"]) for _, v in devs],
                       "y": [v["dram_bandwidth"] for _, v in devs],
                       "text": [f"{d} ({v.get('status') or ('meets' if v.get('meets') else 'falls short')})"
                                for d, v in devs]})
    return {"id": "inverse-curve",
            "title": f"Least DRAM bandwidth for {si(doc.get('target_seconds'), 's')} per run",
            "x_label": "on-chip capacity S (bytes)", "y_label": "DRAM bandwidth (bytes/s)",
            "x_unit": "B", "y_unit": "B/s", "series": series, "vlines": [],
            "caption": "beta_min(S) = Q(S) / T: a device above the curve at its own capacity "
                       "has the bandwidth the target needs (its compute is the other factor, "
                       "in the table)."}
