"""Serving figures of a model (docs/models.md, "Serving"): `solar analyze hf:NAME --serving`
adds to the `model` section the time to first token (the prefill of --seq tokens at
--batch), the time per output token (one decode step at --context), the decode tokens per
second per GPU, the largest batch whose weights and KV cache fit the device, and with
`--draft MODEL --speculate K` the speculative-decoding bound per generated token for each
accepted count.

Every figure is the fused SOL of a phase analyzed like any other (a lower bound on time);
the largest batch is an upper bound (nothing but weights and cache is reserved). Importing
this module imports neither torch nor transformers.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional

from ..errors import user_error
from .build import config_of
from .registry import resolve
from .run import NO_DECODE, ModelRun

# Phases whose decode step Solar models (a KV cache or recurrent state per sequence).
SERVED_TASKS = ("causal-lm", "seq2seq-lm")
# Multi-head latent attention (DeepSeek-V2/V3): its decode step's cache and attention are
# rewritten for one new token; a multi-token verify step over them is not modelled.
MLA_TYPES = ("deepseek_v2", "deepseek_v3")

NOTES = [
    "TTFT: the prefill of --seq tokens per sequence at --batch (the last token's logits); "
    "TPOT: one decode step at --context; both the fused SOL, lower bounds on time",
    "tokens_per_s_per_gpu: batch / TPOT / GPUs, the decode throughput at this batch",
    "max_batch: floor((capacity - weight bytes) / cache bytes per sequence), the cache being "
    "the buffers the decode step allocates (--context cached tokens and the new one's slot); "
    "nothing else is reserved (no activation workspace, no framework or allocator "
    "overhead): an upper bound on the batch",
]
SPECULATIVE_NOTES = [
    "a speculative step: K draft decode steps and one verify step of the target over K + 1 "
    "tokens, both after --context cached tokens; with a of the K draft tokens accepted it "
    "generates a + 1 tokens (the target's own token after the last accepted one)",
    "seconds_per_token(a) = (verify + K x draft step) / (a + 1); a = K is the best case",
]


def wanted(run) -> bool:
    """Whether the run asks for serving figures (--serving, --draft or --speculate: the
    latter two are refused alone by check())."""
    return bool(getattr(run, "serving", False) or getattr(run, "draft", None)
                or getattr(run, "speculate", None) is not None)


def check(run, spec, config, train: bool) -> None:
    """Refuses what the serving figures cannot be made for, before anything is built."""
    if train:
        raise user_error("--serving and --draft: figures of inference (prefill and decode), "
                         "not of a --train step", "usage")
    if spec.task not in SERVED_TASKS:
        raise user_error(f"--serving: {spec.name} is an {spec.task} model: it has no decode "
                         "phase to serve tokens from (causal-lm and seq2seq-lm models)", "usage")
    if config.model_type in NO_DECODE:
        raise user_error(f"--serving: {spec.name}: {NO_DECODE[config.model_type]}",
                         "unsupported")
    draft, k = getattr(run, "draft", None), getattr(run, "speculate", None)
    if (draft is None) != (k is None):
        raise user_error("--draft MODEL and --speculate K go together (the draft model and "
                         "the tokens it proposes per step)", "usage")
    if draft is None:
        return
    if spec.task != "causal-lm":
        raise user_error(f"--draft: speculative decoding of a causal-lm target, not "
                         f"{spec.name} ({spec.task})", "unsupported")
    if run.plan is not None and not run.plan.is_plain():
        raise user_error("--draft under a parallel plan: where the draft model runs is not "
                         "modelled yet (analyze it on one device)", "unsupported")
    if config.model_type in ("mamba", "mamba2"):
        raise user_error(f"--draft: {spec.name}'s recurrent state has no cache slots to verify "
                         "several tokens against", "unsupported")
    if _sliding(config):
        raise user_error(f"--draft: {spec.name} has sliding-window layers; a verify step over "
                         "their rolling cache is not modelled yet", "unsupported")
    if config.model_type in MLA_TYPES:
        raise user_error(f"--draft: {spec.name}'s multi-head latent attention: a verify step "
                         "of several tokens against its cache is not modelled yet",
                         "unsupported")


def check_draft(run, target_config) -> None:
    """The draft model: a causal LM over the target's vocabulary (speculative decoding
    compares their tokens)."""
    spec = resolve(run.draft)
    if spec.task != "causal-lm":
        raise user_error(f"--draft {run.draft}: a draft model is a causal-lm, not "
                         f"{spec.task}", "usage")
    config = config_of(spec)
    if getattr(config, "vocab_size", None) != getattr(target_config, "vocab_size", None):
        raise user_error(f"--draft {run.draft}: its vocabulary ({config.vocab_size} tokens) "
                         f"is not the target's ({target_config.vocab_size}): the target "
                         "verifies the draft's tokens", "usage")
    if config.model_type in ("mamba", "mamba2") + MLA_TYPES or _sliding(config):
        raise user_error(f"--draft {run.draft}: a draft with recurrent state, "
                         "sliding-window layers or latent attention is not modelled yet",
                         "unsupported")


def _sliding(config) -> bool:
    window = getattr(config, "sliding_window", None)
    types = getattr(config, "layer_types", None) or []
    return bool(window) and (not types or "sliding_attention" in types) \
        and getattr(config, "use_sliding_window", True) is not False


# ModelRun fields a capture fills in (the training options, defaulted by
# solar.models.training.check): unset again for another inference step of the request.
_FILLED_BY_CAPTURE = ("optimizer", "recompute")


def _phase(run, analyze, options, **changes):
    """The analysis of another step of the same request (serving figures off)."""
    names = {f.name for f in dataclasses.fields(run)}
    unset = {n: None for n in _FILLED_BY_CAPTURE if n in names}
    step = dataclasses.replace(run, serving=False, draft=None, speculate=None, **unset,
                               **changes)
    return analyze(step, options)


def _seconds(result) -> Dict[str, float]:
    return {a: float(d.fused.seconds) for a, d in result.report.devices.items()}


def _max_batch(capacity: Optional[int], weights: int, per_sequence: int) -> Optional[int]:
    if capacity is None or per_sequence <= 0:
        return None
    return max(0, (capacity - weights) // per_sequence)


def _cache_inputs(result) -> List[Dict[str, Any]]:
    """The decode step's cache buffers: its inputs after the token ids."""
    return [t for t in result.trace["tensors"] if t["role"] == "input"][1:]


def serving_section(run, options, result, section: Dict[str, Any], analyze) -> Dict[str, Any]:
    """The `serving` part of the `model` section. `result` is the analysis of run's own
    phase; the other phase (and a speculative step's verify and draft steps) are analyzed
    here with `analyze` (analyze_model)."""
    results = {run.phase: result}
    other = "decode" if run.phase == "prefill" else "prefill"
    results[other] = _phase(run, analyze, options, phase=other)
    prefill, decode = results["prefill"], results["decode"]
    decode_section = section if run.phase == "decode" else \
        decode.report.get_section("model")
    # The model section's sizes are those stored: a quantized model's weights and cache at
    # their formats (solar.models.quantize annotates them).
    weights = int(section["weight_bytes"])
    per_sequence = int(decode_section["state_buffer_bytes"]) // run.batch
    cache = _cache_inputs(decode)
    quantized = (decode_section.get("quantization") or {}).get("kv_dtype")  # --kv-dtype
    kv_format = [quantized] if quantized else []
    # Per token: where every buffer is an attention layer's keys or values with a slot per
    # token of the context and one for the new token (no window, cross-attention or state).
    slots = run.context + 1
    per_token = per_sequence // slots if cache and all(
        len(t["shape"]) == 4 and t["shape"][2] == slots for t in cache) else None
    out: Dict[str, Any] = {
        "batch": run.batch, "seq": run.seq, "context": run.context,
        "max_batch_inputs": {
            "context": run.context,
            "cache_dtypes": kv_format or sorted({t["dtype"] for t in cache}),
            "weight_bytes": weights,
            "kv_bytes_per_sequence": per_sequence,
            "kv_bytes_per_token": per_token,
            "reserved": "weights and KV cache only: no activation workspace",
        },
        "notes": list(NOTES),
    }
    plan = run.plan
    if plan is not None and not plan.is_plain():
        out["system"] = _system_figures(run, prefill, decode)
        return out
    ttft, tpot = _seconds(prefill), _seconds(decode)
    devices: Dict[str, Any] = {}
    for a, d in decode.report.devices.items():
        capacity = d.memory.capacity_bytes
        capacity = int(capacity) if capacity is not None else None
        row = {"ttft_s": ttft[a], "tpot_s": tpot[a], "gpus": 1,
               "tokens_per_s_per_gpu": run.batch / tpot[a] if tpot[a] > 0 else None,
               "prefill_tokens_per_s_per_gpu":
                   run.batch * run.seq / ttft[a] if ttft[a] > 0 else None,
               "capacity_bytes": capacity,
               "max_batch": _max_batch(capacity, weights, per_sequence)}
        devices[a] = row
    out["devices"] = devices
    if getattr(run, "draft", None):
        out["speculative"] = _speculative(run, options, analyze, devices)
    return out


def _speculative(run, options, analyze, devices: Dict[str, Any]) -> Dict[str, Any]:
    """The verify step of the target over K + 1 tokens and the draft's decode step, both at
    --context, and per device the time per generated token for each accepted count."""
    k = run.speculate
    verify = _seconds(_phase(run, analyze, options, phase="decode", new_tokens=k + 1))
    draft_run = ModelRun(run.draft, phase="decode", batch=run.batch, seq=run.seq,
                         context=run.context, dtype=run.dtype, force=run.force)
    draft = _seconds(analyze(draft_run, options))
    for a, row in devices.items():
        step = verify[a] + k * draft[a]
        table = []
        for accepted in range(k + 1):
            per_token = step / (accepted + 1)
            table.append({"accepted": accepted, "tokens": accepted + 1,
                          "seconds_per_token": per_token,
                          "tokens_per_s_per_gpu": run.batch / per_token if per_token > 0
                          else None,
                          "speedup": row["tpot_s"] / per_token if per_token > 0 else None})
        row["speculative"] = {"verify_s": verify[a], "draft_step_s": draft[a],
                              "step_s": step, "per_accepted": table}
    return {"draft": run.draft, "k": k, "verify_tokens": k + 1, "notes": list(SPECULATIVE_NOTES)}


def _system_figures(run, prefill, decode) -> Dict[str, Any]:
    """Under a parallel plan: the system's step times (each phase's `system` section) and
    the largest batch per replica whose weights and cache fit every rank."""
    p, d = prefill.report.get_section("system"), decode.report.get_section("system")
    p = p.to_dict() if hasattr(p, "to_dict") else p
    d = d.to_dict() if hasattr(d, "to_dict") else d
    ranks = []
    for rank in d["ranks"]:
        mem = rank["memory"]
        per_sequence = mem["kv_cache_bytes"] // run.batch  # the rank's cache of --batch
        ranks.append({"stage": rank["stage"], "weight_bytes": mem["weight_bytes"],
                      "kv_bytes_per_sequence": per_sequence,
                      "capacity_bytes": mem["capacity_bytes"],
                      "max_batch": _max_batch(mem["capacity_bytes"], mem["weight_bytes"],
                                              per_sequence)})
    limits = [r["max_batch"] for r in ranks]
    return {"id": d["id"], "gpus": d["gpus"], "plan": d["plan"],
            "ttft_s": float(p["seconds"]), "tpot_s": float(d["seconds"]),
            "tokens_per_s_per_gpu": d["tokens_per_second_per_gpu"],
            "max_batch_per_replica": None if None in limits else min(limits),
            "replicas": d["plan"]["dp"], "ranks": ranks}


def _time(s: float) -> str:
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def serving_text(s: Optional[Dict[str, Any]]) -> str:
    """The serving figures as the text report prints them after the model's lines ("" when
    the run did not ask for them)."""
    if not s:
        return ""
    inputs = s["max_batch_inputs"]
    lines = [f"serving: batch {s['batch']}, prompt {s['seq']} tokens, context {s['context']} "
             f"(fused SOL; TTFT = prefill, TPOT = one decode step)"]
    lines.append(f"  {'device':<22}{'TTFT':>10}{'TPOT':>10}{'tokens/s/GPU':>14}{'max batch':>11}")
    rows = list(s.get("devices", {}).items())
    if "system" in s:
        sy = s["system"]
        rows = [(f"{sy['id']} ({sy['gpus']} GPUs)",
                 dict(sy, max_batch=sy["max_batch_per_replica"]))]
    for name, r in rows:
        tps = r["tokens_per_s_per_gpu"]
        mb = r["max_batch"]
        lines.append(f"  {name:<22}{_time(r['ttft_s']):>10}{_time(r['tpot_s']):>10}"
                     f"{(f'{tps:,.1f}' if tps else '-'):>14}"
                     f"{(str(mb) if mb is not None else '-'):>11}")
    weights, per_sequence, where = inputs["weight_bytes"], inputs["kv_bytes_per_sequence"], ""
    if "system" in s:  # the rank that limits the batch
        rank = min(s["system"]["ranks"], key=lambda r: r["max_batch"] or 0)
        weights, per_sequence = rank["weight_bytes"], rank["kv_bytes_per_sequence"]
        where = f" per replica (stage {rank['stage']}'s rank)"
    slots = f"{s['context']} + 1 slots" if inputs["kv_bytes_per_token"] is not None else \
        "as the decode step allocates it"
    lines.append(f"  max batch{where}: (capacity - weights {weights / 1e9:.4g} GB) / cache "
                 f"{per_sequence / 1e6:.4g} MB per sequence ({slots}, "
                 f"{'/'.join(inputs['cache_dtypes'])}); nothing else reserved (no activation "
                 "workspace): an upper bound")
    spec = s.get("speculative")
    if spec:
        k = spec["k"]
        lines.append(f"speculative: draft {spec['draft']}, K {k}: a verify step of {k + 1} "
                     f"tokens + {k} draft steps; time per generated token by tokens accepted")
        lines.append(f"  {'device':<22}{'verify':>10}{'draft':>10}"
                     + "".join(f"{f'a={a}':>10}" for a in range(k + 1)))
        for name, r in s["devices"].items():
            sp = r["speculative"]
            lines.append(f"  {name:<22}{_time(sp['verify_s']):>10}{_time(sp['draft_step_s']):>10}"
                         + "".join(f"{_time(t['seconds_per_token']):>10}"
                                   for t in sp["per_accepted"]))
    return "\n".join(lines) + "\n"
