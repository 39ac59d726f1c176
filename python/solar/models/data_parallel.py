"""Data parallelism and ZeRO for a training step's rank graph (docs/parallel.md, "Data
parallelism and ZeRO"): the gradient reduction over the dp replicas, and with ZeRO the
sharded optimizer state, gradients and (stage 3, FSDP) parameters with their all-gathers.
The pass is the C++ core's (src/parallel/data_parallel.cc); this is its glue for graphs as
JSON dicts.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

from .. import _core
from .shard import ShardError, from_core, group_args, to_core


def data_parallel(g: Dict[str, Any], dp: int, zero: int, group: Dict[str, Any]
                  ) -> Tuple[Dict[str, Any], Dict[str, int]]:
    """(rank graph, {gradient elements}) of training step g with its gradients reduced over
    dp replicas at ZeRO `zero`."""
    try:
        graph, elements = _core.data_parallel(to_core(g), dp, zero, *group_args(group))
    except _core.UnsupportedError as e:
        raise ShardError(str(e)) from None
    return from_core(graph), {"gradient_elements": elements}
