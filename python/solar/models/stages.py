"""Pipeline stages of a rank graph: the model's layers cut into p contiguous parts, the
activations that cross a cut sent and received (docs/parallel.md, "Parallel plans").

An op belongs to the stage of the layer whose module ran it (`...layers.N`: layer N of L goes
to stage N p / L, so the stages hold L/p layers each, the remainder spread one per stage
from the first). An op outside every layer follows its inputs (the final norm and the head
come after the last layer: the last stage); one whose inputs are all graph sources (the
embedding lookup, the rotary embedding's tables) runs in every stage that reads it (the
rotary tables are recomputed per stage: a few hundred FLOPs, not worth a message). A tensor
one stage makes and a later one reads is sent by the first (`send`) and received by the
second (`recv`), peer ranks numbered stage x tp + tp rank.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

_LAYER = re.compile(r"\.layers\.(\d+)(?:\.|$)")


def layer_count(g: Dict[str, Any]) -> int:
    """The number of layers of the graph's module tree (`...layers.N` paths)."""
    found = {int(m.group(1)) for path in g.get("modules", {})
             for m in [_LAYER.search(path)] if m}
    return max(found) + 1 if found else 0


def stage_of_layer(n: int, layers: int, pp: int) -> int:
    """The stage of layer n: contiguous blocks, the first (layers mod pp) one layer longer."""
    base, extra = divmod(layers, pp)
    cut = extra * (base + 1)
    return n // (base + 1) if n < cut else extra + (n - cut) // base


def split_stages(g: Dict[str, Any], pp: int, tp: int, tp_rank: int,
                 devices_per_domain: int) -> List[Dict[str, Any]]:
    """The pp stage graphs of rank graph g (tp rank tp_rank of each stage)."""
    layers = layer_count(g)
    if layers < pp:
        raise ValueError(f"{layers} layers do not make {pp} pipeline stages")
    producer: Dict[str, int] = {}
    stage: List[Optional[int]] = []
    for i, op in enumerate(g["ops"]):
        m = _LAYER.search((op.get("origin") or {}).get("module", "") + ".")
        s: Optional[int] = stage_of_layer(int(m.group(1)), layers, pp) if m else None
        if s is None:
            ins = [stage[producer[x]] for x in op["inputs"] if x in producer]
            ins = [x for x in ins if x is not None]
            s = max(ins) if ins else None
        stage.append(s)
        for o in op["outputs"]:
            producer[o] = i
    tensors = {t["name"]: t for t in g["tensors"]}
    out: List[Dict[str, Any]] = []
    sends: Dict[int, List[Dict[str, Any]]] = {s: [] for s in range(pp)}
    recvs: Dict[int, Dict[str, Dict[str, Any]]] = {s: {} for s in range(pp)}
    needed: List[set] = [set() for _ in range(pp)]

    def need(i: int, s: int) -> None:
        """Op i (floating) runs in stage s, with the floating ops it reads."""
        if i in needed[s]:
            return
        needed[s].add(i)
        for x in g["ops"][i]["inputs"]:
            j = producer.get(x)
            if j is not None and stage[j] is None:
                need(j, s)

    def rank_of(s: int) -> int:
        return s * tp + tp_rank

    for i, op in enumerate(g["ops"]):
        s = stage[i]
        if s is None:
            continue
        needed[s].add(i)
        for x in op["inputs"]:
            j = producer.get(x)
            if j is None:
                continue
            if stage[j] is None:
                need(j, s)
            elif stage[j] != s and x not in recvs[s]:
                src = stage[j]
                same = rank_of(src) // devices_per_domain == rank_of(s) // devices_per_domain
                group = {"ranks_per_domain": 2 if same else 1}
                sends[src].append({"kind": "collective", "collective": "send",
                                   "name": f"{x}.to_stage{s}", "peer": rank_of(s),
                                   "group": group, "inputs": [x],
                                   "outputs": [f"{x}.to_stage{s}"]})
                recvs[s][x] = {"kind": "collective", "collective": "recv", "name": x,
                               "peer": rank_of(src), "group": group, "inputs": [],
                               "outputs": [x]}
    for s in range(pp):
        ops = []
        for i, op in enumerate(g["ops"]):
            if i in needed[s]:
                ops.append(op)
                for snd in sends[s]:
                    if snd["inputs"][0] in op["outputs"]:
                        ops.append(snd)
        ops = list(recvs[s].values()) + ops
        names = {x for op in ops for x in op["inputs"] + op["outputs"]}
        ts = []
        for t in g["tensors"]:
            if t["name"] in names:
                ts.append(dict(t))
        for snd in sends[s]:
            src = tensors[snd["inputs"][0]]
            # An output, so that every pass keeps it (its result is what it sent).
            ts.append({"name": snd["outputs"][0], "shape": src["shape"], "dtype": src["dtype"],
                       "role": "output"})
        # A graph output made in another stage is that stage's.
        made = {o for op in ops for o in op["outputs"]}
        ts = [t for t in ts if t["role"] != "output" or t["name"] in made]
        for t in ts:
            if t["role"] == "output" and t["name"] in recvs[s]:
                t["role"] = "intermediate"
        graph = dict(g)
        graph["name"] = f"{g.get('name', 'graph')} stage {s}"
        graph["ops"] = ops
        graph["tensors"] = ts
        out.append(graph)
    return out
