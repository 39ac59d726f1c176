"""The `distributed` section of a program that shards itself (docs/distributed.md) in the
readable report: the route, the mesh and which link each mesh axis rides, and each
collective of the analyzed rank with its payload and its bytes and time on each link, as the
bound priced them. The system's overlapped and non-overlapped bounds and its link totals are
the table's `system` section, printed before this block (src/report/system.cc)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from .html.fmt import seconds, si


def _collective_lines(op: Dict[str, Any]) -> List[str]:
    origin = op.get("origin") or {}
    where = f"  line {origin['line']}" if origin.get("line") else ""
    over = f" over {op['group']}" if op.get("group") else ""
    lines = [f"    {op.get('label') or op.get('name')}: {op.get('collective')}{over} "
             f"({op['group_size']} ranks), {si(op['comm_bytes'], 'B')} per "
             f"rank{where}"]
    for device, terms in sorted((op.get("links") or {}).items()):
        for t in terms:
            algo = f" {t['algorithm']}" if t.get("algorithm") else ""
            lines.append(f"      {device} {t['link']:<9} {si(t['bytes'], 'B')} per device per "
                         f"direction at {si(t['bandwidth'], 'B/s')}{algo}: "
                         f"{seconds(t['seconds'])}")
    return lines


def distributed_block(section: Optional[Dict[str, Any]], report: Dict[str, Any]) -> str:
    """The block, or "" without a `distributed` section. `report`: the report's JSON (its
    ops, for the collectives' link terms)."""
    if not section:
        return ""
    mesh = " x ".join(f"{a}={n}" for a, n in (section.get("mesh") or {}).items())
    lines = [f"Distributed ({section.get('route', '?')} route): {section.get('ranks', '?')} "
             f"ranks{', mesh ' + mesh if mesh else ''}; the analyzed rank is rank "
             f"{section.get('analyzed_rank', 0)}"]
    if section.get("system"):
        lines.append(f"  on system {section['system']}: {section.get('devices_per_domain', '?')} "
                     "devices per scale-up domain")
    for axis, link in (section.get("mesh_links") or {}).items():
        lines.append(f"    mesh axis {axis} rides {link}")
    for group, link in (section.get("group_links") or {}).items():
        lines.append(f"    group {group} rides {link}")
    colls = [op for op in report.get("ops", []) if op.get("class") == "collective"]
    if colls:
        lines.append(f"  collectives of rank {section.get('analyzed_rank', 0)}:")
        for op in colls:
            lines += _collective_lines(op)
        if not any(op.get("links") for op in colls):
            lines.append("    (no link terms: give --system to price them on its links)")
    else:
        lines.append("  no collectives")
    hlo = section.get("hlo_collectives")
    if hlo is not None:
        lines.append("  XLA's partitioned HLO (this backend's choice):")
        for c in hlo:
            red = f" {c['reduction']}" if c.get("reduction") else ""
            lines.append(f"    {c['kind']}{red} {c['dtype']}{c['shape']}: {si(c['bytes'], 'B')} "
                         f"over {c['group_size']} ranks ({c['op_name']}, line {c['line']})")
    return "\n".join(lines)
