"""Expert parallelism as a graph rewrite: a mixture-of-experts layer's experts split over the
ep ranks, the tokens' (token, expert) pairs dispatched to them and combined back by
all-to-alls (docs/parallel.md, "Expert parallelism").

The experts are those transformers runs with its `batched_mm` implementation (Mixtral,
DeepSeek's routed experts): each (token, expert) pair gathers its expert's weights by index
(`gather` of a [experts, ...] weight) and multiplies its activations by them (`bmm`). On a
rank the weights are its block of experts [experts / ep, ...]; the pairs' activations are
dispatched before the first expert matmul and combined after the last one, and the expert
ids are sent with them and made local. Routing is taken as uniform (stated): each rank's
T x K pairs split evenly over the ep ranks, T x K / ep to each, which the static all-to-all
needs (T x K must divide by ep); a real router's imbalance makes the busiest rank slower,
never faster, so the bound stays a lower bound.

This rewrite prices the plan; unlike tensor parallelism it is not validated by running the
ranks, since a static even split is what a router's data decides.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Tuple

from .shard import ShardError


def expert_weights(g: Dict[str, Any]) -> Dict[str, str]:
    """{weight name: experts module path} of the experts modules (class `...Experts`)."""
    modules = g.get("modules", {})
    out = {}
    for t in g["tensors"]:
        path = t["name"].rpartition(".")[0]
        if t["role"] == "weight" and modules.get(path, "").endswith("Experts") \
                and len(t["shape"]) == 3:
            out[t["name"]] = path
    return out


def expert_parallel(g: Dict[str, Any], ep: int, rank: int, group: Dict[str, Any]
                    ) -> Tuple[Dict[str, Any], int]:
    """(rank's graph, all-to-alls inserted) of graph g with its experts split over ep ranks."""
    weights = expert_weights(g)
    if not weights:
        raise ShardError("no experts module (a ...Experts class with [experts, ...] weights) "
                         "to split")
    g = copy.deepcopy(g)
    tensors = {t["name"]: t for t in g["tensors"]}
    experts = {tensors[w]["shape"][0] for w in weights}
    if len(experts) != 1 or next(iter(experts)) % ep:
        raise ShardError(f"{sorted(experts)} experts do not split over ep={ep}")
    n_experts = next(iter(experts))
    local = n_experts // ep
    for w in weights:
        tensors[w]["shape"][0] = local
    gathers = {i for i, op in enumerate(g["ops"]) if op["kind"] == "move"
               and op["move"] == "gather" and op["inputs"][0] in weights}
    gathered = {g["ops"][i]["outputs"][0]: i for i in gathers}
    by_module: Dict[str, List[int]] = {}
    for i, op in enumerate(g["ops"]):
        if op["kind"] == "einsum" and any(x in gathered for x in op["inputs"]):
            w = g["ops"][gathered[next(x for x in op["inputs"] if x in gathered)]]["inputs"][0]
            by_module.setdefault(weights[w], []).append(i)
    new_ops: Dict[int, List[Dict[str, Any]]] = {}  # ops to put before op i
    renames: Dict[int, Dict[str, str]] = {}
    count = 0

    def a2a(x: str, name: str) -> Dict[str, Any]:
        t = tensors[x]
        if not t["shape"] or t["shape"][0] % ep:
            raise ShardError(f"{x}: {t['shape'][0] if t['shape'] else 1} (token, expert) "
                             f"pairs do not split evenly over ep={ep} ranks (uniform routing "
                             "sends pairs / ep to each: raise --batch)")
        tensors[name] = {"name": name, "shape": list(t["shape"]), "dtype": t["dtype"],
                         "role": "intermediate"}
        g["tensors"].append(tensors[name])
        return {"kind": "collective", "collective": "all_to_all", "name": name,
                "group": dict(group), "split_axis": 0, "concat_axis": 0, "inputs": [x],
                "outputs": [name]}

    for path, bmms in by_module.items():
        first, last = min(bmms), max(bmms)
        op = g["ops"][first]
        x = next(v for v in op["inputs"] if v not in gathered)
        disp = a2a(x, f"{x}.dispatched")
        new_ops.setdefault(first, []).append(disp)
        renames.setdefault(first, {})[x] = disp["outputs"][0]
        # The expert ids, sent with the pairs and made local (in f32: devices publish f32
        # vector rates, not integer ones; ids below 2^24).
        for i in sorted(gathers):
            gop = g["ops"][i]
            if weights[gop["inputs"][0]] != path:
                continue
            ids = gop["inputs"][1]
            key = f"{ids}.local_experts"
            if key not in tensors:
                sent = a2a(ids, f"{ids}.dispatched")
                shape = tensors[ids]["shape"]
                names = [f"i{k}" for k in range(len(shape))]
                box = [{"name": n, "extent": e} for n, e in zip(names, shape)]
                fl = f"{ids}.f32"
                loc = f"{ids}.local_f32"
                for name, dtype in ((fl, "f32"), (loc, "f32"), (key, tensors[ids]["dtype"])):
                    tensors[name] = {"name": name, "shape": list(shape), "dtype": dtype,
                                     "role": "intermediate"}
                    g["tensors"].append(tensors[name])
                lo = rank * local
                new_ops.setdefault(i, []).extend([
                    sent,
                    {"kind": "move", "move": "cast", "name": fl,
                     "inputs": [sent["outputs"][0]], "outputs": [fl]},
                    {"kind": "einsum", "name": loc, "inputs": [fl], "outputs": [loc],
                     "indices": box, "operands": [{"subscript": names}], "output": names,
                     "reduce": "none",
                     "combine": f"min(max(sub($0,{lo}),0),{local - 1})"},
                    {"kind": "move", "move": "cast", "name": key, "inputs": [loc],
                     "outputs": [key]}])
                count += 1
            renames.setdefault(i, {})[ids] = key
        y = g["ops"][last]["outputs"][0]
        comb = a2a(y, f"{y}.combined")
        count += 2
        # Every later reader of the expert outputs reads them combined.
        for j in range(last + 1, len(g["ops"])):
            if y in g["ops"][j]["inputs"]:
                renames.setdefault(j, {})[y] = comb["outputs"][0]
                new_ops.setdefault(j, [])
        first_reader = min((j for j in range(last + 1, len(g["ops"]))
                            if y in g["ops"][j]["inputs"]), default=None)
        if first_reader is None:
            raise ShardError(f"{y}: the experts' output has no reader")
        new_ops.setdefault(first_reader, []).insert(0, comb)
    ops = []
    for i, op in enumerate(g["ops"]):
        ops.extend(new_ops.get(i, []))
        if i in renames:
            op = dict(op)
            op["inputs"] = [renames[i].get(x, x) for x in op["inputs"]]
        ops.append(op)
    g["ops"] = ops
    return g, count
