"""Every parallel plan of a model on a system, ranked (docs/sweep.md, "Plans").

The model is captured once per distinct per-replica batch (serving: once; a training step at
a fixed global batch: once per data-parallel degree, whose replicas split that batch) and
its graph sharded for each plan; a plan whose weights cannot fit is dropped before it is
analyzed (its weights over tp x pp already exceed a device's DRAM).

Serving plans are ranked by tokens per second per GPU (--batch is per replica: a plan with
more replicas serves more sequences). A training step's plans share one global batch
(--batch sequences split over the dp replicas), so every plan steps over the same tokens
and they are ranked by step time. The plans' analyses run as tasks on a Dask cluster when a
client is given (the command's), in this process otherwise (the Python API's default).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Dict, List, Optional, Tuple

from .. import _core
from ..analysis import ProgramOptions, lower_trace
from ..errors import user_error
from . import parallel
from .analyze import capture_model, plan_analysis, tokens_per_step
from .build import parameter_count
from .run import ModelRun

DTYPE_BYTES = {"f32": 4, "fp32": 4, "bf16": 2, "f16": 2, "fp16": 2}


def _divisors(n: int) -> List[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _tp_splits_heads(tp: int, kv_heads: int, heads: int, train: bool) -> bool:
    """Whether tp ranks split the attention: tp divides the key/value heads, or (serving) the
    ranks share each of them evenly and split the query heads (docs/parallel.md)."""
    if kv_heads % tp == 0:
        return True
    return not train and heads > 0 and tp % kv_heads == 0 and heads % tp == 0


def candidate_plans(devices: int, kv_heads: int, layers: int, train: bool = False,
                    zero: int = 0, experts: int = 0, heads: int = 0) -> List[parallel.Plan]:
    """Every (tp, pp, ep, dp) with tp x pp x dp = devices, tp splitting the attention heads
    (dividing the key/value heads, or with the `heads` query heads given, a multiple of them
    that divides the query heads: each key/value head shared by tp / kv_heads ranks) and pp at
    most the layers (one microbatch); with `experts` (a mixture-of-experts model, serving),
    also every ep > 1 dividing both dp and the experts at tp 1 (expert parallelism across the
    data-parallel replicas, docs/parallel.md). A training step: pp 1, ep 1 and tp dividing
    the key/value heads (a pipelined or expert-parallel backward, and shared key/value heads
    in a backward, are not modelled), ZeRO `zero` where dp > 1."""
    out = []
    for tp in _divisors(devices):
        if not _tp_splits_heads(tp, kv_heads, heads, train):
            continue
        for pp in _divisors(devices // tp):
            if pp > layers or (train and pp > 1):
                continue
            dp = devices // tp // pp
            out.append(parallel.Plan(tp=tp, pp=pp, dp=dp, zero=zero if dp > 1 else 0))
            if experts and not train and tp == 1:
                out.extend(parallel.Plan(pp=pp, dp=dp, ep=ep) for ep in _divisors(dp)
                           if ep > 1 and experts % ep == 0)
    return out


def _row_of(report) -> Dict[str, Any]:
    s = report["system"].to_dict()
    return dict(status="ok" if s["fits"] else "does_not_fit", seconds=s["seconds"],
                seconds_no_overlap=s["seconds_no_overlap"], bottleneck=s["bottleneck"],
                tokens_per_step=s["tokens_per_step"],
                tokens_per_second=s["tokens_per_second"],
                tokens_per_second_per_gpu=s["tokens_per_second_per_gpu"],
                bubble_fraction=s["bubble_fraction"],
                memory_bytes=max(r["memory"]["total_bytes"] for r in s["ranks"]))


def analyze_plan(whole: Dict[str, Any], config, plan: parallel.Plan, options: ProgramOptions,
                 tokens: int) -> Dict[str, Any]:
    """One plan's row: the captured graph (solar.graph.v1 JSON) sharded and analyzed on the
    system (status ok or does_not_fit with its figures), or refused with the reason. A Dask
    task of the plan sweep."""
    try:
        parallel.check_config(config, plan)
        report, _ = plan_analysis(whole, config, plan, options, tokens)
    except ValueError as e:  # solar.UserError: a plan these rules cannot shard
        return {"status": "refused", "reason": str(e)}
    return _row_of(report)


class _Captures:
    """The model captured once per per-replica batch, in this process: {batch: (graph JSON,
    tokens per replica step)}; spec, config and model of the first capture."""

    def __init__(self, run: ModelRun, options: ProgramOptions):
        self.run, self.options = run, options
        self.graphs: Dict[int, Tuple[Dict[str, Any], int]] = {}
        self.seconds = 0.0
        self.spec = self.config = self.model = None

    def __call__(self, batch: int) -> Tuple[Dict[str, Any], int]:
        if batch not in self.graphs:
            t0 = time.perf_counter()
            run = dataclasses.replace(self.run, batch=batch)
            spec, config, model, trace = capture_model(run, self.options)
            graph, _, _ = lower_trace(trace, spec.source, self.options.strict)
            self.graphs[batch] = (parallel.graph_json(graph),
                                  tokens_per_step(spec, run, config))
            if self.spec is None:
                self.spec, self.config, self.model = spec, config, model
            self.seconds += time.perf_counter() - t0
        return self.graphs[batch]


def _map(tasks: List[Tuple], client) -> List[Dict[str, Any]]:
    """analyze_plan over the tasks' arguments: on the client's workers (each captured graph
    sent to them once), or here."""
    if client is None:
        return [analyze_plan(*t) for t in tasks]
    shared = {}
    for t in tasks:  # one scattered copy per captured graph, not one per plan
        if id(t[0]) not in shared:
            shared[id(t[0])] = client.scatter(t[0], broadcast=True, hash=False)
    futures = [client.submit(analyze_plan, shared[id(t[0])], *t[1:], pure=False, retries=0)
               for t in tasks]
    rows = []
    for f in futures:
        try:
            rows.append(f.result())
        except Exception as e:  # noqa: BLE001 - a worker that died under its plan
            rows.append({"status": "failed", "reason": f"{type(e).__name__}: {e}"})
    return rows


def sweep_plans(run: ModelRun, options: ProgramOptions, zero: int = 0,
                client=None) -> Dict[str, Any]:
    """{system, model, rows, best, seconds, ...}: every candidate plan of run's model on
    options.system, a row each (skipped and refused ones with their reason), ranked (serving
    by tokens/s per GPU, a training step by step time), the best named. `client`: a
    distributed.Client whose workers analyze the plans (None: this process)."""
    if options.system is None:
        raise user_error("a plan sweep needs --system", "usage")
    start = time.perf_counter()
    system_id, devices, _, device = parallel.system_devices(options.system, options.nodes)
    dram = [m for m in _core.device(device).memory if m.name == "dram"][0]
    capacity = dram.capacity.value if dram.capacity is not None else None
    # A plan's training step is forward + backward, no optimizer update (which the plans do
    # not shard: solar.models.training), as `solar analyze --tp ...` runs it.
    captures = _Captures(dataclasses.replace(run, plan=None, optimizer="none"), options)
    # The candidates need the configuration and the weights: the first capture brings them
    # (a training step's at the per-replica batch of its most replicated plan).
    captures(run.batch if not options.train else run.batch // max(
        d for d in _divisors(devices) if run.batch % d == 0))
    spec, config = captures.spec, captures.config
    weights = parameter_count(captures.model) * DTYPE_BYTES.get(run.dtype, 2)
    kv = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    experts = getattr(config, "num_local_experts", None) or 0
    rows, tasks, pending = [], [], []
    for plan in candidate_plans(devices, kv, config.num_hidden_layers, options.train, zero,
                                experts, heads=config.num_attention_heads):
        row: Dict[str, Any] = {"plan": plan.to_json()}
        rows.append(row)
        share = weights / (plan.tp * plan.pp * (plan.dp if plan.zero == 3 else 1))
        # An ep plan's rank holds 1/ep of the experts: its analysis says whether it fits.
        if capacity and share > capacity and plan.ep == 1:
            row.update(status="skipped", reason=f"weights / (tp x pp) = {share / 1e9:.1f} GB "
                                                f"exceed {capacity / 1e9:.0f} GB")
            continue
        if options.train and run.batch % plan.dp:
            row.update(status="skipped", reason=f"the global batch of {run.batch} sequences "
                                                f"does not split over dp {plan.dp}")
            continue
        whole, tokens = captures(run.batch // plan.dp if options.train else run.batch)
        tasks.append((whole, config, plan, options, tokens))
        pending.append(row)
    for row, result in zip(pending, _map(tasks, client)):
        row.update(result)
    ok = [r for r in rows if r["status"] == "ok"]
    if options.train:  # one global batch: every plan steps over the same tokens
        ranked = sorted(ok, key=lambda r: r["seconds"])
    else:
        ranked = sorted(ok, key=lambda r: -r["tokens_per_second_per_gpu"])
    others = [r for r in rows if r["status"] != "ok"]
    return {"system": system_id, "devices": devices, "model": spec.name,
            "phase": "train" if options.train else run.phase,
            "ranked_by": "step time" if options.train else "tokens/s per GPU",
            "batch": run.batch, "batch_is": "global" if options.train else "per replica",
            "context": run.context if run.phase == "decode" else None,
            "seq": run.seq if run.phase == "prefill" else None,
            "rows": ranked + others, "best": ranked[0]["plan"] if ranked else None,
            "captures": len(captures.graphs), "capture_seconds": captures.seconds,
            "workers": _workers(client), "seconds": time.perf_counter() - start}


def _workers(client) -> int:
    if client is None:
        return 0
    try:
        return sum(client.nthreads().values())
    except Exception:  # noqa: BLE001 - a scheduler that went away
        return 0


def _plan_label(p: Dict[str, Any]) -> str:
    return f"{p['tp']:>3} {p['pp']:>3} {p['ep']:>3} {p['dp']:>3}"


def plans_text(result: Dict[str, Any]) -> str:
    """The ranking as the command prints it."""
    where = (f"on {result['workers']} Dask worker(s)" if result.get("workers")
             else "in this process")
    lines = [f"plans of {result['model']} ({result['phase']}, batch {result['batch']} "
             f"{result.get('batch_is', 'per replica')}) on {result['system']} "
             f"({result['devices']} GPUs), by {result['ranked_by']}; captured "
             f"{result.get('captures', 1)}x in {result['capture_seconds']:.1f} s, analyzed "
             f"{where}, {result['seconds']:.1f} s in all",
             f"  {'tp':>3} {'pp':>3} {'ep':>3} {'dp':>3}  {'step':>10}  {'tokens/s':>10}  "
             f"{'per GPU':>9}  {'memory':>9}  bound / why not"]
    for r in result["rows"]:
        head = "  " + _plan_label(r["plan"])
        if r["status"] in ("ok", "does_not_fit"):
            lines.append(f"{head}  {r['seconds'] * 1e3:>8.3f}ms  {r['tokens_per_second']:>10,.1f}"
                         f"  {r['tokens_per_second_per_gpu']:>9,.2f}  "
                         f"{r['memory_bytes'] / 1e9:>7.1f}GB  {r['bottleneck']}"
                         + ("" if r["status"] == "ok" else " (does not fit)"))
        else:
            lines.append(f"{head}  {'-':>10}  {'-':>10}  {'-':>9}  {'-':>9}  {r['reason']}")
    best = result["best"]
    lines.append("best: " + (f"tp {best['tp']} pp {best['pp']} ep {best['ep']} dp {best['dp']}"
                             if best else "no plan fits"))
    return "\n".join(lines) + "\n"
