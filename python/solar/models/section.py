"""The report's `model` section (docs/models.md, docs/report-json.md): what a phase of a model
costs in the units people serve models in."""

from __future__ import annotations

from typing import Any, Dict, List

from .cache_forms import decode_slots, sliding_windows
from .mla import cache_form
from .quant_report import quantization_text
from .serving import serving_text
from .training import text as training_text

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "float64": 8, "int64": 8, "int32": 4,
               "bool": 1, "int8": 1, "uint8": 1, "float8_e4m3fn": 1, "float8_e5m2": 1}


def _nbytes(t: Dict[str, Any]) -> int:
    n = 1
    for s in t["shape"]:
        n *= s
    return n * DTYPE_BYTES[t["dtype"]]


_CONTAINERS = ("ModuleList", "ModuleDict", "Sequential")


def _by_layer_type(node: Dict[str, Any], archs: List[str], out: Dict[str, Dict[str, Any]],
                   inside: frozenset = frozenset()) -> None:
    """Sums the module tree per module class (the outermost of nested same-class modules)."""
    kind = node.get("type", "")
    # the model's own classes (depth < 2) and plain containers hold everything: not layers
    layer = node.get("path", "").count(".") >= 1 and kind not in _CONTAINERS
    if layer and kind and kind not in inside:
        row = out.setdefault(kind, {"type": kind, "count": 0, "macs": 0, "bytes_fused": 0,
                                    "fused_seconds": {a: 0.0 for a in archs}})
        row["count"] += 1
        row["macs"] += int(node["macs"])
        row["bytes_fused"] += int(node["bytes_fused"])
        for a in archs:
            row["fused_seconds"][a] += node["devices"][a]["fused_seconds"]
        inside = inside | {kind}
    for child in node.get("children", []):
        _by_layer_type(child, archs, out, inside)


def _attention_caches(run, config) -> Dict[str, Any]:
    """The forms of the attention caches: `mla_cache` (latent or expanded, for multi-head
    latent attention; else None) and `sliding_windows` ([{window, layers}]: the layers whose
    decode keeps a rolling window of W tokens; [] when none)."""
    windows = [w for w in sliding_windows(config) if w is not None]
    return {"mla_cache": cache_form(config, getattr(run, "mla_cache", None)),
            "sliding_windows": [{"window": w, "layers": windows.count(w)}
                                for w in sorted(set(windows))]}


def model_section(spec, run, config, result, params: int, tokens: int) -> Dict[str, Any]:
    report = result.report
    trace = result.trace
    weights = sum(_nbytes(t) for t in trace["tensors"] if t["role"] in ("parameter", "buffer"))
    state = [t for t in trace["tensors"] if t["role"] == "input"][1:]  # after ids / pixels
    slots_total = sum(_nbytes(t) for t in state)
    cached = 0
    if run.phase == "decode" and state:
        # attention buffers hold context + 1 slots (a sliding-window layer's, its window),
        # the last written by this step; recurrent state is read whole
        slots = {run.context + 1} | {decode_slots(w, run.context)
                                     for w in sliding_windows(config)}
        cached = sum(_nbytes(t) * (t["shape"][2] - 1) // t["shape"][2] if len(t["shape"]) == 4
                     and t["shape"][2] in slots else _nbytes(t) for t in state)
    archs = list(report.devices.keys())
    devices = {}
    for a in archs:
        d = report.devices[a]
        seconds = float(d.fused.seconds)
        row = {"fused_seconds": seconds, "bottleneck": d.fused.bottleneck,
               "tokens_per_second": tokens / seconds if seconds > 0 else None,
               "seconds_per_token": seconds if run.phase == "decode" else seconds / tokens}
        ca = d.get("cache_aware")
        if ca is not None and ca.get("available"):
            row["cache_aware_seconds"] = float(ca.seconds)
        devices[a] = row
    layer_types: Dict[str, Dict[str, Any]] = {}
    modules = report.get("modules")
    if modules is not None:
        _by_layer_type(modules.to_dict() if hasattr(modules, "to_dict") else modules, archs,
                       layer_types)
    section = {
        "name": spec.name,
        "source": spec.source,
        "task": spec.task,
        "phase": run.phase,
        "batch": run.batch,
        "seq": run.seq if run.phase == "prefill" or spec.task == "seq2seq-lm" else None,
        "context": run.context if run.phase == "decode" else None,
        "dtype": run.dtype,
        "tokens_per_step": tokens,
        "parameters": params,
        "weight_bytes": weights,
        "kv_cache_bytes": cached,
        "state_buffer_bytes": slots_total,
        **_attention_caches(run, config),
        "devices": devices,
        "layer_types": sorted(layer_types.values(), key=lambda r: -r["macs"]),
        "notes": ["a prefill computes the last token's logits only (what generation needs)",
                  "decode: the cache is updated in place; the step reads the cached tokens once "
                  "and writes only the new token's keys and values"],
    }
    form = section["mla_cache"]
    if form is not None:
        section["notes"].append(
            f"MLA cache {form}: " + ("the latent and the rotary key per token, shared by the "
                                     "heads; a decode step absorbs kv_b_proj into the query and "
                                     "the output" if form == "latent" else
                                     "each head's keys and values per token")
            + "; a prefill runs expanded (kv_b_proj over its tokens), as engines do")
    applied = getattr(result, "quantization", None)  # solar.models.quantize.Applied
    if applied is not None:
        applied.annotate(section)
    return section


def _size(n: float, unit: str) -> str:
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= scale:
            return f"{n / scale:.2f} {prefix}{unit}"
    return f"{n:.0f} {unit}"


def _count(n: int) -> str:
    for scale, word in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if n >= scale:
            return f"{n / scale:.2f} {word}"
    return str(n)


def _time(s: float) -> str:
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def model_text(m: Dict[str, Any]) -> str:
    """The `model` section as the text report prints it after the tables."""
    shape = f"batch {m['batch']}"
    if m["phase"] == "decode":
        shape += f", context {m['context']}"
    elif m.get("seq"):
        shape += f", seq {m['seq']}"
    lines = [f"\nmodel {m['name']} ({m['task']}, {m['phase']}, {shape}, {m['dtype']}): "
             f"{_count(m['parameters'])} parameters, weights {_size(m['weight_bytes'], 'B')}"
             + (f", KV cache read {_size(m['kv_cache_bytes'], 'B')}" if m["kv_cache_bytes"] else "")
             + (f", MLA cache {m['mla_cache']}" if m.get("mla_cache") else "")
             + "".join(f", sliding window {w['window']} on {w['layers']} layer"
                       + ("s" if w["layers"] > 1 else "") for w in m.get("sliding_windows") or [])
             + f"; {m['tokens_per_step']} tokens per step (fused SOL)"]
    if m.get("quantization"):
        lines.append(quantization_text(m["quantization"]))
    lines.append(f"  {'device':<16}{'time/step':>12}{'tokens/s':>14}{'time/token':>13}  bound")
    for arch, d in m["devices"].items():
        tps = d["tokens_per_second"]
        lines.append(f"  {arch:<16}{_time(d['fused_seconds']):>12}"
                     f"{(f'{tps:,.0f}' if tps else '-'):>14}{_time(d['seconds_per_token']):>13}"
                     f"  {d['bottleneck']}")
    if m["layer_types"]:
        top = ", ".join(f"{r['type']} x{r['count']} {_size(r['macs'], 'MAC')}"
                        for r in m["layer_types"][:4])
        lines.append(f"  layer types: {top}")
    if m.get("training"):  # a training step's block (solar.models.training)
        lines += training_text(m["training"])
    # the serving figures, when asked (--serving)
    return "\n".join(lines) + "\n" + serving_text(m.get("serving"))
