"""The charts as interactive plotly figures (zoom, hover with each op's name), embedded in
the page with plotly.js inline: the file needs no network when it is opened.

plotly is an optional dependency (`pip install solar[html]`, installed by scripts/setup);
without it the page keeps its static SVG charts and says how to get the interactive ones.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Optional

from .svg import PALETTE

# plotly.js's own configuration: no link to plotly's site in the mode bar, no MathJax.
_CONFIG = {"displaylogo": False, "responsive": True}


def available() -> bool:
    try:
        import plotly  # noqa: F401
    except ImportError:
        return False
    return True


def figure(chart: Dict[str, Any]):
    """A plotly Figure of a solar.html.charts chart."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for i, s in enumerate(chart["series"]):
        colour = s.get("color") or PALETTE[i % len(PALETTE)]
        kw: Dict[str, Any] = {"name": s["name"], "x": s["x"], "y": s["y"], "mode": s["mode"],
                              "showlegend": s.get("legend", True)}
        if s["mode"] == "lines":
            kw["line"] = {"color": colour, "dash": "dash" if s.get("dash") else "solid"}
            kw["hoverinfo"] = "name"
        else:
            # the same sizes as the static chart: plotly's size is a diameter
            size = [2 * r for r in s["radius"]] if s.get("radius") else 7
            kw["marker"] = {"color": colour, "size": size, "opacity": 0.6,
                            "symbol": "x" if s.get("symbol") == "x" else "circle",
                            "line": {"color": colour, "width": 1}}
            kw["text"] = s.get("text")
            kw["hovertemplate"] = "%{text}<br>x %{x:.4s}<br>y %{y:.4s}<extra></extra>"
        fig.add_trace(go.Scatter(**kw))
    for j, v in enumerate(chart.get("vlines", [])):
        # Labels stacked down the plot: two devices of similar capacity do not overprint.
        fig.add_vline(x=v["x"], line_dash="dot", line_color="#555")
        fig.add_annotation(x=math.log10(v["x"]), y=1 - 0.06 * j, xref="x", yref="paper",
                           text=v["label"], showarrow=False, xanchor="right",
                           font={"size": 10, "color": "#555"})
    # The labels the static chart places, shifted by the same pixels from their points
    # (solar.html.labels: the plot area here is at least as large, so none overlaps).
    for lab in chart.get("placed_labels") or []:
        fig.add_annotation(x=math.log10(lab["x"]), y=math.log10(lab["y"]), xref="x", yref="y",
                           text=lab["text"], showarrow=False, xshift=lab["dx"],
                           yshift=-lab["dy"] + 4, xanchor="left" if lab["anchor"] == "start"
                           else "right", yanchor="middle", font={"size": 10, "color": "#222"},
                           name="point-label")
    xr, yr = chart.get("x_range"), chart.get("y_range")
    fig.update_layout(
        title={"text": chart["title"], "font": {"size": 14}},
        xaxis={"type": "log", "title": chart["x_label"], "tickformat": "~s", "dtick": 1,
               **({"range": [math.log10(xr[0]), math.log10(xr[1])]} if xr else {})},
        yaxis={"type": "log", "title": chart["y_label"], "tickformat": "~s", "dtick": 1,
               **({"range": [math.log10(yr[0]), math.log10(yr[1])]} if yr else {})},
        template="plotly_white", height=420, margin={"l": 70, "r": 20, "t": 50, "b": 50},
        legend={"font": {"size": 10}})
    return fig


def div(chart: Dict[str, Any], with_library: bool) -> Optional[str]:
    """The chart as an HTML fragment; with_library: plotly.js itself inline in it (once per
    page, before any other chart). None when plotly is not installed."""
    if not available():
        return None
    return figure(chart).to_html(full_html=False, include_plotlyjs=True if with_library else False,
                                 include_mathjax=False, config=_CONFIG,
                                 div_id=f"plotly-{chart['id']}")
