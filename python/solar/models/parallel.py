"""Parallel plans for models (docs/parallel.md, "Parallel plans"): which weights a plan
shards, per architecture family, from the captured graph's module paths and classes; the
rank graphs of one capture (capture once, then shard: solar.models.shard); and the report's
`system` section with the plan, the memory of a rank and the tokens per second of the
system.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict, List, Optional, Tuple

from .. import _core
from ..errors import user_error
from ..ranks import system_of as system_devices  # noqa: F401  (the plans' --system)
from .shard import Sharded, ShardError, WeightRule, remove_dead_ops, shard_graph

# Megatron-LM's tensor-parallel layout (Shoeybi et al., "Megatron-LM", arXiv:1909.08053,
# section 3; Korthikanti et al., "Reducing Activation Recomputation", arXiv:2205.05198, for
# sequence parallelism), by the transformers module names of the families it covers:
# a column-parallel linear splits its output features (weight dim 0 of nn.Linear's
# [out, in]), a row-parallel one its input features (dim 1); the embedding and the head
# split the vocabulary.
COLUMN = {"q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"}
KV = {"k_proj", "v_proj"}  # split in kv-head blocks, shared when tp exceeds their number
ROW = {"o_proj", "down_proj"}
VOCAB = {"embed_tokens"}
HEAD = {"lm_head"}
# Model types whose attention reads a KV cache [batch, kv heads, slots, head dim] and whose
# linears carry the names above (the registry's Llama-family models).
FAMILIES = {"llama", "mistral", "qwen2", "mixtral"}


@dataclasses.dataclass(frozen=True)
class Plan:
    """A parallel plan: tensor (tp), pipeline (pp), expert (ep) and data (dp) parallel
    degrees, sequence parallelism over the tp group, ZeRO stage and microbatches."""

    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1
    sp: bool = False
    zero: int = 0
    microbatches: int = 1

    @property
    def gpus(self) -> int:
        """Devices the plan uses: tp x pp x dp (expert parallelism reuses them)."""
        return self.tp * self.pp * self.dp

    def is_plain(self) -> bool:
        return self == Plan()

    def to_json(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    def check(self, train: bool) -> None:
        """Refuses values no plan has, and the parts of a plan not modelled yet."""
        for name in ("tp", "pp", "ep", "dp", "microbatches"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise user_error(f"--{name} must be a positive integer, not {v!r}", "usage")
        if self.zero not in (0, 1, 2, 3):
            raise user_error(f"--zero {self.zero!r}: expected 1, 2 or 3", "usage")
        if self.sp and self.tp == 1:
            raise user_error("--sp shards the sequence over the tp group: it needs --tp 2 or "
                             "more", "usage")
        if self.zero and not train:
            raise user_error("--zero shards a training step's optimizer state, gradients and "
                             "parameters: it needs --train", "usage")
        missing = []
        if self.ep > 1 and (self.dp % self.ep or self.tp > 1):
            missing.append(f"--ep {self.ep} with --tp {self.tp} --dp {self.dp} (expert "
                           "parallelism is modelled across data-parallel replicas: --ep "
                           "dividing --dp, --tp 1)")
        if self.ep > 1 and train:
            missing.append("--ep with --train")
        if train and self.sp:
            missing.append("--sp with --train")
        if train and self.pp > 1:
            missing.append("--pp with --train (the backward pass's stages)")
        if self.zero and self.dp == 1:
            raise user_error("--zero shards over the data-parallel replicas: it needs --dp 2 "
                             "or more", "usage")
        if missing:
            raise user_error(f"{', '.join(missing)}: not modelled yet (docs/parallel.md, "
                             "\"Parallel plans\": tensor parallelism, --sp, serving --pp, "
                             "--microbatches, --dp, --ep, and --dp/--zero of a training step are)", "unsupported")


def check_config(config, plan: Plan) -> None:
    """Refuses, before anything is built, a model the plan's rules cannot shard."""
    if plan.tp == 1:
        return
    model_type = getattr(config, "model_type", "?")
    if model_type not in FAMILIES:
        raise user_error(f"model type {model_type!r} has no tensor-parallel rules (Solar "
                         f"shards {', '.join(sorted(FAMILIES))}; docs/parallel.md)",
                         "unsupported")
    kv_heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    heads = config.num_attention_heads
    # Fewer key/value heads than ranks: each shared by tp / kv_heads ranks (Megatron), which
    # needs the ranks to share them evenly and the query heads to split over tp.
    if kv_heads % plan.tp and (plan.tp % kv_heads or heads % plan.tp):
        raise user_error(f"--tp {plan.tp}: the {kv_heads} key/value heads do not split over "
                         f"{plan.tp} ranks, nor do the ranks share them evenly ({heads} query "
                         f"heads)", "unsupported")


def kv_parts(config, tp: int) -> int:
    """The blocks the key/value heads split in: tp, or their number when tp exceeds it
    (each then held by tp / kv_heads ranks: the head their query heads read)."""
    kv_heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    return kv_heads if tp > kv_heads else 0


def sharding_rules(graph: Dict[str, Any], config, tp: int
                   ) -> Tuple[Dict[str, WeightRule], Dict[str, int], List[Dict[str, Any]]]:
    """(sharded weights, sharded state inputs, replicated modules) of a captured graph: the
    rules by module name, the KV cache along its heads (in kv_parts blocks), and every
    module class whose weights no rule shards (norms, a Mamba mixer), listed."""
    check_config(config, Plan(tp=tp))
    kv_heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    parts = kv_parts(config, tp)
    modules = graph.get("modules", {})
    weights: Dict[str, WeightRule] = {}
    replicated: Dict[str, Dict[str, Any]] = {}
    for t in graph["tensors"]:
        if t["role"] != "weight":
            continue
        path, _, leaf = t["name"].rpartition(".")
        kind = path.rpartition(".")[2]
        if kind in KV:
            weights[t["name"]] = WeightRule("column", 0, parts)
        elif kind in COLUMN or kind in HEAD:
            weights[t["name"]] = WeightRule("head" if kind in HEAD else "column", 0)
        elif kind in ROW and leaf == "weight":
            weights[t["name"]] = WeightRule("row", 1)
        elif kind in VOCAB:
            weights[t["name"]] = WeightRule("vocab", 0)
        else:
            cls = modules.get(path, "?")
            row = replicated.setdefault(cls, {"type": cls, "modules": 0, "weight_elements": 0})
            row["modules"] += 1
            n = 1
            for s in t["shape"]:
                n *= s
            row["weight_elements"] += n
    state = {t["name"]: 1 for t in graph["tensors"]
             if t["role"] == "input" and len(t["shape"]) == 4 and t["shape"][1] == kv_heads}
    return weights, state, sorted(replicated.values(), key=lambda r: r["type"])


def shard_model(graph: Dict[str, Any], config, plan: Plan, rank: int = 0) -> Sharded:
    """Rank `rank`'s graph of a captured model graph under plan (its tp part)."""
    weights, state, _ = sharding_rules(graph, config, plan.tp)
    parts = kv_parts(config, plan.tp)
    try:
        return shard_graph(graph, plan.tp, rank, weights,
                           {n: (d, parts) for n, d in state.items()}, sp=plan.sp)
    except ShardError as e:
        raise user_error(f"--tp {plan.tp}: {e}", "unsupported") from None


DTYPE_BYTES = {"f64": 8, "f32": 4, "tf32": 4, "bf16": 2, "f16": 2, "i64": 8, "i32": 4,
               "i16": 2, "i8": 1, "u8": 1, "bool": 1}


def numel(shape: List[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _bytes(t: Dict[str, Any]) -> int:
    n = DTYPE_BYTES[t["dtype"]]
    for s in t["shape"]:
        n *= s
    return n


def rank_memory(g: Dict[str, Any], state: List[str]) -> Dict[str, int]:
    """Bytes a rank holds: its weights, its KV cache (the state buffers it is given), and
    its activations: the most intermediate bytes live at once, walking the ops in order (a
    tensor lives from its op to its last reader; views and casts counted as tensors, so an
    upper estimate of what a step needs beside weights and cache; weights gathered by index,
    an expert's per (token, expert) pair, are the weights and not counted again)."""
    tensors = {t["name"]: t for t in g["tensors"]}
    weights = sum(_bytes(t) for t in g["tensors"] if t["role"] == "weight")
    kv = sum(_bytes(tensors[n]) for n in state if n in tensors)
    last: Dict[str, int] = {}
    for i, op in enumerate(g["ops"]):
        for x in op["inputs"]:
            last[x] = i
    live, peak, dying = 0, 0, {}
    for i, op in enumerate(g["ops"]):
        if op["kind"] == "move" and op["move"] == "gather" \
                and tensors[op["inputs"][0]]["role"] == "weight":
            continue  # a weight read by index (an expert per pair): the weight, not a copy
        for o in op["outputs"]:
            if tensors[o]["role"] in ("intermediate", "output"):
                live += _bytes(tensors[o])
                dying.setdefault(last.get(o, i), []).append(o)
        peak = max(peak, live)
        for o in dying.pop(i, []):
            live -= _bytes(tensors[o])
    return {"weight_bytes": weights, "kv_cache_bytes": kv, "activation_bytes": peak}


@dataclasses.dataclass
class StageResult:
    """One pipeline stage's rank graph (tp rank 0), its analysis's `system` section and the
    graph's collectives."""

    graph: Dict[str, Any]
    base: Dict[str, Any]
    collectives: Dict[str, int]


def collective_counts(g: Dict[str, Any]) -> Dict[str, int]:
    kinds: Dict[str, int] = {}
    for op in g["ops"]:
        if op["kind"] == "collective":
            kinds[op["collective"]] = kinds.get(op["collective"], 0) + 1
    return kinds


def bubble_fraction(plan: Plan) -> float:
    """The share of a pipelined step the stages idle: (p - 1) / (m + p - 1) (GPipe,
    Huang et al. 2019, arXiv:1811.06965; Narayanan et al. 2021, arXiv:2104.04473, eq. 1)."""
    return (plan.pp - 1) / (plan.microbatches + plan.pp - 1)


def dp_group(plan: Plan, per_node: int) -> Dict[str, Any]:
    """The data-parallel group: dp replicas, ranks tp x pp apart."""
    group: Dict[str, Any] = {"size": plan.dp, "name": "dp"}
    per_domain = max(1, min(plan.dp, per_node // (plan.tp * plan.pp)))
    if plan.dp % per_domain == 0:
        group["ranks_per_domain"] = per_domain
    return group


# Mixed-precision Adam's optimizer state per parameter: fp32 master weight, momentum and
# variance (Rajbhandari et al., "ZeRO", arXiv:1910.02054, section 3.1: K = 12).
ADAM_STATE_BYTES = 12


def system_section(stages: List[StageResult], plan: Plan, state: List[str], capacity: int,
                   tokens: int, replicated: List[Dict[str, Any]],
                   train_elements: int = 0) -> Dict[str, Any]:
    """The report's `system` section for a model under a plan: per stage the C++ section of
    its rank graph (links, seconds, bottleneck) with the rank's memory; the system's step
    ((m + p - 1) microbatch steps of the slowest stage), tokens per second and bubble."""
    section = {k: v for k, v in stages[0].base.items() if k != "ranks"}
    section["plan"] = plan.to_json()
    ranks = []
    for s, st in enumerate(stages):
        mem = rank_memory(st.graph, state)
        # Every microbatch's sequences keep their cache on the stage.
        mem["kv_cache_bytes"] *= plan.microbatches
        if train_elements:
            # The optimizer state: not in the captured step, so by formula, sharded by ZeRO.
            mem["optimizer_bytes"] = ADAM_STATE_BYTES * train_elements // (
                plan.dp if plan.zero else 1)
        total = sum(mem.values())
        mem.update(total_bytes=total, capacity_bytes=capacity, fits=total <= capacity)
        for r in st.base.get("ranks", []):
            row = dict(r)
            row.update(role="tp shard" if plan.tp > 1 else "replica", stage=s,
                       count=plan.tp * plan.dp, memory=mem, collectives=st.collectives)
            ranks.append(row)
    section["ranks"] = ranks
    slowest = max(ranks, key=lambda r: float(r["seconds"]))
    steps = plan.microbatches + plan.pp - 1
    seconds = steps * float(slowest["seconds"])
    section["stage_seconds"] = float(slowest["seconds"])
    section["seconds"] = seconds
    section["seconds_no_overlap"] = steps * max(float(r["seconds_no_overlap"]) for r in ranks)
    section["bottleneck"] = slowest["bottleneck"]
    section["bubble_fraction"] = bubble_fraction(plan)
    section["gpus"] = plan.gpus
    section["tokens_per_step"] = tokens * plan.dp
    tps = tokens * plan.dp / seconds if seconds > 0 else None
    section["tokens_per_second"] = tps
    section["tokens_per_second_per_gpu"] = tps / plan.gpus if tps else None
    section["fits"] = all(r["memory"]["fits"] for r in ranks)
    section["replicated"] = replicated
    section["assumptions"] = [
        "every tp rank of a stage runs the same graph (tp rank 0's is costed); the "
        "data-parallel replicas serve independent sequences",
        "a step runs the microbatches through the stages and drains (GPipe): (m + p - 1) "
        "times the slowest stage's time for one microbatch",
        "activation_bytes: the most intermediate bytes live at once in the rank's step",
    ]
    return section


def plan_text(section: Optional[Dict[str, Any]]) -> str:
    """The plan's lines of the text report ("" without a plan)."""
    if not section or not section.get("plan"):
        return ""
    p = section["plan"]
    plan = " ".join(f"{k} {v}" for k, v in p.items()
                    if k != "sp" and (v not in (0, 1) or (k == "zero" and v))) or "tp 1"
    plan += " sp" if p["sp"] else ""
    gb = 1e9
    lines = [f"\nplan {plan} on {section['id']} ({section['gpus']} GPUs): "
             f"{section['seconds'] * 1e3:.4g} ms per step (communication overlapped; "
             f"{section['seconds_no_overlap'] * 1e3:.4g} ms not), bottleneck "
             f"{section['bottleneck']}, {section['tokens_per_second']:,.1f} tokens/s, "
             f"{section['tokens_per_second_per_gpu']:,.2f} per GPU"]
    if p["pp"] > 1:
        lines.append(f"  pipeline: {p['microbatches'] + p['pp'] - 1} microbatch steps of the "
                     f"slowest stage ({section['stage_seconds'] * 1e3:.4g} ms), bubble "
                     f"{section['bubble_fraction']:.1%}")
    for rank in section["ranks"]:
        mem = rank["memory"]
        where = f"stage {rank['stage']} rank" if p["pp"] > 1 else "per rank"
        lines.append(f"  {where}: weights {mem['weight_bytes'] / gb:.4g} GB, KV cache "
                     f"{mem['kv_cache_bytes'] / gb:.4g} GB, activations at the peak "
                     f"{mem['activation_bytes'] / gb:.4g} GB"
                     + (f", optimizer state {mem['optimizer_bytes'] / gb:.4g} GB"
                        if "optimizer_bytes" in mem else "") + ": "
                     + ("fits" if mem["fits"] else "DOES NOT FIT")
                     + f" in {mem['capacity_bytes'] / gb:.0f} GB; "
                     + f"{float(rank['seconds']) * 1e3:.4g} ms, collectives "
                     + (", ".join(f"{k} x{v}" for k, v in rank["collectives"].items())
                        or "none"))
    if section.get("replicated"):
        lines.append("  replicated (no sharding rule): " + ", ".join(
            f"{r['type']} x{r['modules']}" for r in section["replicated"]))
    return "\n".join(lines) + "\n"


def ep_group(plan: Plan, per_node: int) -> Dict[str, Any]:
    """The expert-parallel group: ep replicas, ranks tp x pp apart, so
    per_node / (tp x pp) of them share a node (when that divides ep)."""
    group: Dict[str, Any] = {"size": plan.ep, "name": "ep"}
    per_domain = max(1, min(plan.ep, per_node // (plan.tp * plan.pp)))
    if plan.ep % per_domain == 0:
        group["ranks_per_domain"] = per_domain
    return group


def check_system_plan(plan: Plan, system_devices: int, system: str) -> None:
    """The plan's GPUs are the system's."""
    if plan.gpus != system_devices:
        raise user_error(f"the plan uses tp x pp x dp = {plan.gpus} GPUs and {system} has "
                         f"{system_devices}: a plan fills its system (--dp multiplies it; "
                         "--nodes sizes the system)", "usage")


def graph_json(graph) -> Dict[str, Any]:
    return json.loads(graph.to_json())


def parse(g: Dict[str, Any]):
    return _core.parse_graph_json(json.dumps(g, allow_nan=False))


__all__ = ["Plan", "plan_text", "check_config", "system_devices", "sharding_rules", "shard_model", "rank_memory", "system_section",
           "remove_dead_ops", "check_system_plan", "graph_json", "parse"]
