"""Pipeline stages of a rank graph: the model's layers cut into p contiguous parts, the
activations that cross a cut sent and received (docs/parallel.md, "Parallel plans"). The
pass is the C++ core's (src/parallel/stages.cc); this is its glue for graphs as JSON dicts.
"""

from __future__ import annotations

from typing import Any, Dict, List

from .. import _core
from .shard import from_core, to_core


def layer_count(g: Dict[str, Any]) -> int:
    """The number of layers of the graph's module tree (`...layers.N` paths)."""
    return _core.layer_count(to_core(g))


def split_stages(g: Dict[str, Any], pp: int, tp: int, tp_rank: int,
                 devices_per_domain: int) -> List[Dict[str, Any]]:
    """The pp stage graphs of rank graph g (tp rank tp_rank of each stage)."""
    try:
        graphs = _core.split_stages(to_core(g), pp, tp, tp_rank, devices_per_domain)
    except _core.UserError as e:
        raise ValueError(str(e)) from None
    return [from_core(s) for s in graphs]
