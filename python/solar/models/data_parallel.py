"""Data parallelism and ZeRO for a training step's rank graph (docs/parallel.md, "Data
parallelism and ZeRO"): the gradient reduction over the dp replicas, and with ZeRO the
sharded optimizer state, gradients and (stage 3, FSDP) parameters with their all-gathers.

| stage | the rank's collectives per trainable weight (n = dp) | what a rank holds of the n |
|---|---|---|
| 0 (plain dp) | all_reduce of its gradient | everything |
| 1 | reduce_scatter of its gradient, all_gather of the updated parameters | 1/n of the optimizer state |
| 2 | the same | 1/n of the optimizer state and gradients |
| 3 (FSDP) | the same, and an all_gather of the parameters before the forward and again before the backward | 1/n of the parameters too |

(Rajbhandari et al., "ZeRO", arXiv:1910.02054, section 7: stage 1 and 2 move 2 x the
parameters per step like an all-reduce, stage 3 3 x.) The captured step has no optimizer, so
the updated parameters' all-gather is written over the gradient's shard, of the same size
and dtype: what it costs, not what it computes; these rank graphs are priced, not executed.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Tuple

from .shard import ShardError


def _numel(shape: List[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def gradients(g: Dict[str, Any]) -> List[str]:
    """The gradient outputs of a training step: every output but the loss (the scalar)."""
    return [t["name"] for t in g["tensors"] if t["role"] == "output" and t["shape"]]


def data_parallel(g: Dict[str, Any], dp: int, zero: int, group: Dict[str, Any]
                  ) -> Tuple[Dict[str, Any], Dict[str, int]]:
    """(rank graph, {trainable elements, gradient elements}) of training step g with its
    gradients reduced over dp replicas at ZeRO `zero`."""
    g = copy.deepcopy(g)
    tensors = {t["name"]: t for t in g["tensors"]}
    grads = gradients(g)
    if not grads:
        raise ShardError("no gradients: data parallelism applies to a training step (--train)")
    ops: List[Dict[str, Any]] = list(g["ops"])

    def add(name: str, shape: List[int], dtype: str, role: str = "intermediate") -> str:
        tensors[name] = {"name": name, "shape": list(shape), "dtype": dtype, "role": role}
        g["tensors"].append(tensors[name])
        return name

    def coll(kind: str, x: str, out: str, **attrs) -> Dict[str, Any]:
        op = {"kind": "collective", "collective": kind, "name": out, "group": dict(group),
              "inputs": [x], "outputs": [out]}
        op.update(attrs)
        return op

    grad_elements = 0
    for gr in grads:
        t = tensors[gr]
        n = _numel(t["shape"])
        grad_elements += n
        local = f"{gr}.local"
        for op in ops:  # the gradient as computed, before the reduction
            op["outputs"] = [local if o == gr else o for o in op["outputs"]]
            op["inputs"] = [local if i == gr else i for i in op["inputs"]]
            if op.get("name") == gr:
                op["name"] = local
        add(local, t["shape"], t["dtype"])
        if zero == 0:
            ops.append(coll("all_reduce", local, gr, reduction="avg"))
            continue
        if n % dp:
            raise ShardError(f"gradient {gr} of {n} elements does not split over dp={dp}")
        flat = add(f"{gr}.flat", [n], t["dtype"])
        ops.append({"kind": "move", "move": "view", "name": flat, "inputs": [local],
                    "outputs": [flat]})
        shard = add(f"{gr}.shard", [n // dp], t["dtype"], "output")
        ops.append(coll("reduce_scatter", flat, shard, reduction="avg", axis=0))
        t["shape"] = [n]  # the updated parameters gathered, flat
        ops.append(coll("all_gather", shard, gr, axis=0))
    if zero == 3:
        ops = _gather_parameters(g, ops, tensors, dp, group, add, coll)
    g["ops"] = ops
    return g, {"gradient_elements": grad_elements}


def _gather_parameters(g, ops, tensors, dp, group, add, coll):
    """FSDP: each trainable weight held as its 1/dp shard, all-gathered before its first use
    in the forward, and gathered again for the backward (after the loss), which FSDP does
    because it frees the gathered parameters after the forward: that second gather's result
    is kept as an output of the step (what the backward reads; the captured backward reads
    the forward's views of the weights, so the gather is charged, not rewired)."""
    grad_shapes = {tuple(tensors[f"{gr}.local"]["shape"]) for gr in gradients(g)
                   if f"{gr}.local" in tensors}
    loss = next(t["name"] for t in g["tensors"] if t["role"] == "output" and not t["shape"])
    loss_at = next(i for i, op in enumerate(ops) if loss in op["outputs"])
    weights = [t for t in g["tensors"] if t["role"] == "weight"
               and tuple(t["shape"]) in grad_shapes and t["dtype"] in ("bf16", "f16", "f32")]
    shards = {}
    for w in weights:
        n = _numel(w["shape"])
        if n % dp:
            raise ShardError(f"weight {w['name']} of {n} elements does not split over dp={dp}")
        shards[w["name"]] = (n, list(w["shape"]))
        w["role"] = "intermediate"
        add(f"{w['name']}.fsdp_shard", [n // dp], w["dtype"], "weight")
    out, done = [], set()
    for i, op in enumerate(ops):
        for x in op["inputs"]:
            if x in shards and x not in done:
                done.add(x)
                n, shape = shards[x]
                flat = add(f"{x}.fwd_flat", [n], tensors[x]["dtype"])
                out.append(coll("all_gather", f"{x}.fsdp_shard", flat, axis=0))
                out.append({"kind": "move", "move": "view", "name": x, "inputs": [flat],
                            "outputs": [x]})
        out.append(op)
        if i == loss_at:
            for x, (n, shape) in shards.items():
                again = add(f"{x}.bwd_gathered", [n], tensors[x]["dtype"], "output")
                out.append(coll("all_gather", f"{x}.fsdp_shard", again, axis=0))
    return out
