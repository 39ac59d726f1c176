"""Insight: the same math in fewer MACs (docs/insight.md).

    import solar, solar.insight
    g = solar.load_graph("model.solar")            # or a program's graph
    for group in solar.insight.reassociations(g):
        print(group["output"], group["macs_as_written"], "->", group["macs_least"], group["order"])
    h = solar.insight.reassociated(g, 0)           # group 0 in its best order: same outputs

`solar analyze` reports them in its `insights` section (with each device's SOL before and
after) and names those that save at least 5 % in its table.
"""

from __future__ import annotations

from typing import Any, Dict, List

from . import _core

__all__ = ["reassociations", "reassociated"]


def reassociations(graph: "_core.Graph") -> List[Dict[str, Any]]:
    """Every group of two or more contractions linked by single-use intermediates: its ops,
    leaves, MACs as written, least MACs per run (weight-only work absorbed), the absorbed
    MACs, its einsum expression and its best order."""
    return _core.reassociations(graph)


def reassociated(graph: "_core.Graph", index: int) -> "_core.Graph":
    """`graph` with group `index` (of reassociations(graph)) computed in its best order."""
    return _core.reassociated(graph, int(index))
