"""Expert parallelism as a graph rewrite: a mixture-of-experts layer's experts split over the
ep ranks, the tokens' (token, expert) pairs dispatched to them and combined back by
all-to-alls under stated uniform routing (docs/parallel.md, "Expert parallelism"). The pass
is the C++ core's (src/parallel/experts.cc); this is its glue for graphs as JSON dicts.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

from .. import _core
from .shard import ShardError, from_core, group_args, to_core


def expert_parallel(g: Dict[str, Any], ep: int, rank: int, group: Dict[str, Any]
                    ) -> Tuple[Dict[str, Any], int]:
    """(rank's graph, all-to-alls inserted) of graph g with its experts split over ep ranks."""
    try:
        graph, count = _core.expert_parallel(to_core(g), ep, rank, *group_args(group))
    except _core.UnsupportedError as e:
        raise ShardError(str(e)) from None
    return from_core(graph), count
