"""Tensor parallelism as a graph rewrite: one rank's graph of a captured program, sharded.

The pass is the C++ core's (src/parallel/, docs/parallel.md "Parallel plans"): the weights a
rule names split in tp blocks along one dimension, the split propagated through the graph's
einsum indices GSPMD-like, partial reductions completed by the collectives it inserts, and
anything no rule covers run replicated on gathered inputs. This module is the glue: the
graph in its solar.graph.v1 JSON form (a dict) in and out.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict, List, Optional, Tuple

from .. import _core


@dataclasses.dataclass(frozen=True)
class WeightRule:
    """A weight split in tp blocks along `dim` (`kind`: column, row, vocab, head), or in
    `parts` blocks (dividing tp) that tp / parts ranks share: key/value heads fewer than tp."""

    kind: str
    dim: int
    parts: int = 0


@dataclasses.dataclass
class Sharded:
    """One rank's graph (JSON dict) and what the rewrite did to it."""

    graph: Dict[str, Any]
    rank: int
    tp: int
    sharded_weights: Dict[str, WeightRule]
    collectives: List[Tuple[str, str, str]]  # (kind, tensor, why)
    replicated_ops: List[str]  # ops run whole on every rank, with the reason


class ShardError(ValueError):
    """A plan that cannot shard this graph (a dimension that does not divide)."""


def to_core(g: Dict[str, Any]):
    return _core.parse_graph_json(json.dumps(g, allow_nan=False))


def from_core(graph) -> Dict[str, Any]:
    return json.loads(graph.to_json())


def group_args(group: Dict[str, Any]) -> Tuple[int, str, int]:
    """A collective group dict as the core's (size, name, ranks_per_domain) arguments."""
    return int(group["size"]), str(group.get("name", "")), int(group.get("ranks_per_domain", 0))


def remove_dead_ops(g: Dict[str, Any]) -> Dict[str, Any]:
    """The graph without the ops no output depends on (the analysis drops them too)."""
    return from_core(_core.remove_dead_ops(to_core(g)))


def shard_graph(g: Dict[str, Any], tp: int, rank: int, weights: Dict[str, WeightRule],
                state: Optional[Dict[str, int]] = None, sp: bool = False,
                group: Optional[Dict[str, Any]] = None) -> Sharded:
    """Rank `rank` of `tp` of graph g (solar.graph.v1 JSON, dead ops removed first):
    `weights` the sharded weights by name, `state` the state inputs (a KV cache) sharded
    along a dimension (or (dimension, parts) as WeightRule's) and kept sharded in the
    outputs that update them in place."""
    size, name, per_domain = group_args(group or {"size": tp, "name": "tp"})
    try:
        graph, collectives, replicated = _core.shard_tensor_parallel(
            to_core(g), tp, rank, {n: (r.kind, r.dim, r.parts) for n, r in weights.items()},
            {n: (s, 0) if isinstance(s, int) else tuple(s) for n, s in (state or {}).items()},
            sp, size, name, per_domain)
    except _core.UnsupportedError as e:
        raise ShardError(str(e)) from None
    return Sharded(from_core(graph), rank, tp, dict(weights), [tuple(c) for c in collectives],
                   list(replicated))
