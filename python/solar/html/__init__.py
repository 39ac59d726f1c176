"""The HTML report: one self-contained file (styles, scripts and charts inline; nothing is
fetched when it is opened) from a report's JSON (docs/html-report.md).

    solar.html.write(report, "r.html")         # a Report, or the JSON dict of a report,
                                               # a suite (solar.suite.v1) or an inverse
                                               # roofline (solar.inverse.v1)
    text = solar.html.render(report)           # the same page as a string
    solar.html.compact(report)                 # summary, devices, ski-slope (Jupyter)

Charts are interactive plotly figures (plotly.js inline) when plotly is installed, and
always static SVG too.
"""

from __future__ import annotations

import json
from typing import Any, Dict

from ..atomic_write import write_atomically
from . import charts, page, svg

__all__ = ["compact", "render", "write"]


def _as_dict(doc: Any) -> Dict[str, Any]:
    if isinstance(doc, dict):
        return doc
    if hasattr(doc, "to_json"):  # solar.Report (its attached sections included)
        return json.loads(doc.to_json(None))
    raise TypeError(f"expected a report dict or solar.Report, got {type(doc).__name__}")


def render(doc: Any, interactive: bool = True) -> str:
    """The whole page for a report (solar.report.v1, incl. `solar bench`'s), a suite
    (solar.suite.v1) or an inverse roofline (solar.inverse.v1). interactive=False leaves
    plotly out (static SVG charts only: a far smaller file)."""
    d = _as_dict(doc)
    ch = page.Charts(interactive)
    schema = d.get("schema", "")
    if schema == "solar.suite.v1":
        body, title = page.suite_body(d, ch), f"Solar suite {d.get('options', {}).get('dir', '')}"
    elif schema == "solar.inverse.v1":
        body, title = page.inverse_body(d, ch), f"Solar inverse {d.get('program', {}).get('name', '')}"
    elif schema == "solar.report.v1":
        body, title = page.analyze_body(d, ch), f"Solar {d.get('program', {}).get('name', '')}"
    else:
        raise ValueError(f"not a Solar report: schema {schema!r}")
    return page.document(title, body)


def compact(doc: Any) -> str:
    """A short HTML fragment: the summary, the devices table and the ski-slope as SVG (no
    script): what a Report shows in Jupyter."""
    d = _as_dict(doc)
    slope = charts.ski_slope(d)
    return (f'<div class="solar-report"><style>{page.COMPACT_CSS}</style>'
            + page.header(d, "Solar SOL report") + page.summary(d) + page.devices(d)
            + (f'<div class="static">{svg.render(slope)}</div>' if slope else "") + "</div>")


def write(doc: Any, path: str, interactive: bool = True) -> None:
    """Writes the page to `path` atomically, with the umask's permissions
    (solar.atomic_write: on any error, no file is left and an old `path` stays)."""
    write_atomically(path, render(doc, interactive))
