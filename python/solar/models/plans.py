"""Every parallel plan of a model on a system, ranked (docs/sweep.md, "Plans"): the model is
captured once and its graph sharded for each plan; a plan whose weights cannot fit is
dropped before it is analyzed (its weights over tp x pp already exceed a device's DRAM).

The plans are ranked by tokens per second per GPU, a training step's (--train) too: --batch
is per replica, so the step times of plans with more or fewer replicas cover different
numbers of tokens and do not compare; the best is named.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Dict, List

from .. import _core
from ..analysis import ProgramOptions, lower_trace
from ..errors import user_error
from . import parallel
from .analyze import capture_model, plan_analysis, tokens_per_step
from .build import parameter_count
from .run import ModelRun

DTYPE_BYTES = {"f32": 4, "fp32": 4, "bf16": 2, "f16": 2, "fp16": 2}


def candidate_plans(devices: int, kv_heads: int, layers: int, train: bool = False,
                    zero: int = 0) -> List[parallel.Plan]:
    """Every (tp, pp, dp) with tp x pp x dp = devices, tp dividing the key/value heads and
    pp at most the layers (ep 1, one microbatch); a training step: pp 1 (a pipelined
    backward is not modelled), ZeRO `zero` where dp > 1."""
    out = []
    for tp in range(1, devices + 1):
        if devices % tp or kv_heads % tp:
            continue
        for pp in range(1, devices // tp + 1):
            if (devices // tp) % pp or pp > layers or (train and pp > 1):
                continue
            dp = devices // tp // pp
            out.append(parallel.Plan(tp=tp, pp=pp, dp=dp, zero=zero if dp > 1 else 0))
    return out


def sweep_plans(run: ModelRun, options: ProgramOptions, zero: int = 0) -> Dict[str, Any]:
    """{system, model, rows, best, seconds}: every candidate plan of run's model on
    options.system, a row each (skipped ones with their reason), ranked: serving by tokens/s
    per GPU (a training step's too: its --batch is per replica)."""
    if options.system is None:
        raise user_error("a plan sweep needs --system", "usage")
    start = time.perf_counter()
    system_id, devices, _, device = parallel.system_devices(options.system, options.nodes)
    base = dataclasses.replace(run, plan=None)
    spec, config, model, trace = capture_model(base, options)
    captured = time.perf_counter() - start
    graph, _, _ = lower_trace(trace, spec.source, options.strict)
    whole = parallel.graph_json(graph)
    dram = [m for m in _core.device(device).memory if m.name == "dram"][0]
    capacity = dram.capacity.value if dram.capacity is not None else None
    weights = parameter_count(model) * DTYPE_BYTES.get(run.dtype, 2)
    tokens = tokens_per_step(spec, base, config)
    kv = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    rows = []
    for plan in candidate_plans(devices, kv, config.num_hidden_layers, options.train, zero):
        row: Dict[str, Any] = {"plan": plan.to_json()}
        share = weights / (plan.tp * plan.pp * (plan.dp if plan.zero == 3 else 1))
        if capacity and share > capacity:
            row.update(status="skipped", reason=f"weights / (tp x pp) = {share / 1e9:.1f} GB "
                                                f"exceed {capacity / 1e9:.0f} GB")
            rows.append(row)
            continue
        try:
            parallel.check_config(config, plan)
            report, _ = plan_analysis(whole, config, plan, options, tokens)
        except ValueError as e:  # solar.UserError: a plan these rules cannot shard
            row.update(status="refused", reason=str(e))
            rows.append(row)
            continue
        s = report["system"].to_dict()
        row.update(status="ok" if s["fits"] else "does_not_fit", seconds=s["seconds"],
                   seconds_no_overlap=s["seconds_no_overlap"], bottleneck=s["bottleneck"],
                   tokens_per_second=s["tokens_per_second"],
                   tokens_per_second_per_gpu=s["tokens_per_second_per_gpu"],
                   bubble_fraction=s["bubble_fraction"],
                   memory_bytes=max(r["memory"]["total_bytes"] for r in s["ranks"]))
        rows.append(row)
    # Training too by tokens/s per GPU, not by the step time: --batch is per replica, so a
    # plan with more replicas steps over more tokens (its step time is not comparable).
    ranked = sorted((r for r in rows if r["status"] == "ok"),
                    key=lambda r: -r["tokens_per_second_per_gpu"])
    others = [r for r in rows if r["status"] != "ok"]
    return {"system": system_id, "devices": devices, "model": spec.name,
            "phase": "train" if options.train else run.phase,
            "ranked_by": "tokens/s per GPU",
            "batch": run.batch, "context": run.context if run.phase == "decode" else None,
            "seq": run.seq if run.phase == "prefill" else None,
            "rows": ranked + others, "best": ranked[0]["plan"] if ranked else None,
            "capture_seconds": captured, "seconds": time.perf_counter() - start}


def plans_text(result: Dict[str, Any]) -> str:
    """The ranking as the command prints it."""
    lines = [f"plans of {result['model']} ({result['phase']}, batch {result['batch']}) on "
             f"{result['system']} ({result['devices']} GPUs), by {result['ranked_by']}; "
             f"captured once in {result['capture_seconds']:.1f} s, "
             f"{result['seconds']:.1f} s in all",
             f"  {'tp':>3} {'pp':>3} {'dp':>3}  {'step':>10}  {'tokens/s':>10}  "
             f"{'per GPU':>9}  {'memory':>9}  bound / why not"]
    for r in result["rows"]:
        p = r["plan"]
        head = f"  {p['tp']:>3} {p['pp']:>3} {p['dp']:>3}"
        if r["status"] in ("ok", "does_not_fit"):
            lines.append(f"{head}  {r['seconds'] * 1e3:>8.3f}ms  {r['tokens_per_second']:>10,.1f}"
                         f"  {r['tokens_per_second_per_gpu']:>9,.2f}  "
                         f"{r['memory_bytes'] / 1e9:>7.1f}GB  {r['bottleneck']}"
                         + ("" if r["status"] == "ok" else " (does not fit)"))
        else:
            lines.append(f"{head}  {'-':>10}  {'-':>10}  {'-':>9}  {'-':>9}  {r['reason']}")
    best = result["best"]
    lines.append("best: " + (f"tp {best['tp']} pp {best['pp']} dp {best['dp']}" if best
                             else "no plan fits"))
    return "\n".join(lines) + "\n"
