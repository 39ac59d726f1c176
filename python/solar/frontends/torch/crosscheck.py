"""The FlopCounterMode cross-check: Solar's MACs beside those of PyTorch's own counter,
torch.utils.flop_counter.FlopCounterMode, per aten op (report section `crosscheck`,
docs/validation.md).

The counter is stacked under the recorder during capture (CaptureRecord(flop_counter=True)),
so it sees exactly the ops the trace holds, in the same run: the cross-check costs no second
execution. Where the counter has a formula (mm, addmm, bmm, baddbmm, convolution and its
backward, the SDPA kernels and their backward), the two counts must agree exactly, except
where FlopCounterMode is known to miscount — attention with a causal mask (it counts the
masked half), the attention backward (it leaves out the row sums rowsum(dO*O)), transposed
convolutions and convolution input gradients (it counts the taps that padding crops), and
grouped weight gradients (groups times too many) — which is "explained" only when Solar's
count equals the counter's corrected by exactly that error. A contraction the program masks
itself (a causal -inf fill before a softmax, a tril of a product) is "explained" when
Solar's dense MACs (its whole box) equal the counter's.
"""

from __future__ import annotations

import warnings
from typing import Any, Dict, List, Optional, Tuple

from torch._subclasses.fake_tensor import (DataDependentOutputException,
                                           DynamicOutputShapeException)

from .capture import CaptureRecord, capture_loaded

TOOL = "torch.utils.flop_counter.FlopCounterMode"
UNIT = "MAC (1 MAC = 2 FLOP)"

# Attention kernels whose `is_causal` FlopCounterMode ignores (forward and backward).
_SDPA_OPS = (
    "aten::_scaled_dot_product_flash_attention_for_cpu",
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
    "aten::_scaled_dot_product_flash_attention",
    "aten::_scaled_dot_product_flash_attention_backward",
    "aten::_scaled_dot_product_efficient_attention",
    "aten::_scaled_dot_product_efficient_attention_backward",
    "aten::_scaled_dot_product_cudnn_attention",
    "aten::_scaled_dot_product_cudnn_attention_backward",
)
_CONV_OPS = ("aten::convolution", "aten::_convolution")
_CONV_BACKWARD = "aten::convolution_backward"


def attach_crosscheck(result, load, options, record=None) -> None:
    """Adds the `crosscheck` section (FlopCounterMode's MACs beside Solar's, per aten op) to
    a ProgramAnalysis; a program FlopCounterMode cannot run gets a section saying why, not a
    failure. record: the CaptureRecord of the capture (flop_counter=True); without one,
    `load()` gives the program module to count separately."""
    try:
        section = flop_crosscheck(result, load, options, record=record)
    except Exception as e:  # the counter's own failure must not fail the analysis
        warnings.warn(f"FlopCounterMode cross-check skipped: {type(e).__name__}: {e}",
                      RuntimeWarning, stacklevel=2)
        section = {"tool": TOOL, "status": "skipped", "reason": f"{type(e).__name__}: {e}"}
    result.report.attach_section("crosscheck", section)


def flop_crosscheck(result, load, options, record=None) -> Dict[str, Any]:
    """The `crosscheck` section for a ProgramAnalysis. record: the CaptureRecord of a capture
    made with flop_counter=True (the normal path); without one, `load()` (the loaded program
    module) is captured again on fake tensors with the counter, in the same mode
    (options.train, options.optimizer)."""
    if record is None or not record.flop_counter:
        record = _count_separately(result, load, options)
    trace = result.trace
    report = result.report.to_dict() if hasattr(result.report, "to_dict") else result.report
    return compare(trace, report, record)


def _count_separately(result, load, options):
    """Captures the loaded program again with the counter (fake tensors; real ones for a
    program that reads tensor values) and checks it recorded the analyzed trace's ops."""
    if load is None:
        raise ValueError("no FlopCounterMode counts were recorded and there is no program to run")
    record = CaptureRecord(flop_counter=True)
    source = result.trace.get("source", "")
    step = {"train": options.train, "optimizer": options.optimizer, "record": record,
            "eval_mode": options.eval_mode, "unroll": options.unroll}
    try:
        trace = capture_loaded(load(), source, fake=True, **step)
    except (DataDependentOutputException, DynamicOutputShapeException):
        trace = capture_loaded(load(), source, fake=False, **step)
    if [op["op"] for op in result.trace["ops"]] != [op["op"] for op in trace["ops"]]:
        raise RuntimeError("the counting run recorded other ops than the analyzed trace")
    return record


def _packet(op_name: str) -> str:
    """"aten::mm" for "aten::mm.default"."""
    return op_name.rsplit(".", 1)[0] if op_name.count(".") else op_name


def _covered(op_name: str) -> bool:
    """Whether FlopCounterMode has a formula for the op (the CPU SDPA kernels get the
    counter's own formula for the CUDA flash kernel, see capture._counter_formulas)."""
    import torch
    from torch.utils.flop_counter import flop_registry

    ns, _, name = _packet(op_name).partition("::")
    packet = getattr(getattr(torch.ops, ns, None), name, None) if name else None
    if packet is None:
        return False
    return packet in flop_registry or _packet(op_name) in (
        "aten::_scaled_dot_product_flash_attention_for_cpu",
        "aten::_scaled_dot_product_flash_attention_for_cpu_backward")


def _int(v: Any) -> int:
    return int(v) if v is not None else 0  # counts above 2^64 are decimal strings


def _count(v: Optional[int]) -> Any:
    """A count as the report writes counts: a JSON integer below 2^64, else a decimal string."""
    if v is None or v < 2**64:
        return v
    return str(v)


def _json_counts(section: Dict[str, Any]) -> Dict[str, Any]:
    for key in ("solar_macs", "counter_macs"):
        section[key] = _count(section[key])
        for e in section["per_op"]:
            e[key] = _count(e[key])
    return section


def compare(trace: Dict[str, Any], report: Dict[str, Any], record) -> Dict[str, Any]:
    """The section from a trace, its report (JSON dict) and the counter's per-op FLOPs."""
    ops = trace["ops"]
    solar: Dict[str, int] = {}
    dense: Dict[str, int] = {}  # the same over masked contractions' whole boxes
    unanalyzed: Dict[str, int] = {}
    for row in report["ops"]:
        name = (row.get("origin") or {}).get("op") or row["name"]
        if not row.get("analyzed", True):
            unanalyzed[name] = unanalyzed.get(name, 0) + 1
            continue
        solar[name] = solar.get(name, 0) + _int(row.get("macs"))
        dense[name] = dense.get(name, 0) + _int(row.get("macs_dense", row.get("macs")))
    counter: Dict[str, int] = {}  # FLOPs by op name
    instances: Dict[str, List[int]] = {}
    for i, op in enumerate(ops):
        instances.setdefault(op["op"], []).append(i)
        if i in record.counter_flops:
            counter[op["op"]] = counter.get(op["op"], 0) + record.counter_flops[i]
    errors = getattr(record, "counter_errors", {})

    per_op: List[Dict[str, Any]] = []
    names = sorted(set(n for n, m in solar.items() if m) | set(counter) | set(
        n for n in unanalyzed if _covered(n)))
    for name in names:
        covered = name in counter or _covered(name)
        s = solar.get(name, 0)
        entry: Dict[str, Any] = {"op": name, "solar_macs": s, "counter_macs": None,
                                 "agree": None, "note": ""}
        if _packet(name) in errors:
            entry["note"] = f"FlopCounterMode's formula raised: {errors[_packet(name)]}"
        elif not covered:
            entry["note"] = "FlopCounterMode has no formula for this op (not compared)"
        elif name in unanalyzed:
            entry["counter_macs"] = _macs(counter.get(name, 0))
            entry["note"] = (f"unanalyzed by Solar ({unanalyzed[name]} op(s)): its MACs are "
                             "unknown (not compared)")
        else:
            c = _macs(counter.get(name, 0))
            entry["counter_macs"] = c
            if s == c:
                entry["agree"] = True
                if _packet(name) in ("aten::_scaled_dot_product_flash_attention_for_cpu",
                                     "aten::_scaled_dot_product_flash_attention_for_cpu_backward"):
                    entry["note"] = ("counted with FlopCounterMode's formula for the CUDA flash "
                                     "kernel (it has none for the CPU one)")
            else:
                entry["agree"] = False
                explained, note = _explain(name, instances.get(name, []), trace, record, s)
                if not explained and dense.get(name, s) == c:
                    # A mask the lowering recognized in the program (a causal fill before a
                    # softmax): Solar counts the live points, the counter the whole box.
                    explained = True
                    note = (f"the program masks these contractions: Solar counts their live "
                            f"MACs ({s}), the counter computes them whole (Solar's dense "
                            f"{c} = counter)")
                entry["explained"] = explained
                entry["note"] = note
        per_op.append(entry)

    compared = [e for e in per_op if e["agree"] is not None]
    if not compared and per_op:
        # Every op with MACs is one the counter cannot count (an LSTM recorded as one op, an
        # op Solar left unanalyzed): nothing was checked, which is not an agreement.
        status = "not_compared"
    elif all(e["agree"] for e in compared):
        status = "agree"
    elif all(e["agree"] or e.get("explained") for e in compared):
        status = "explained"
    else:
        status = "differ"
    section = {
        "tool": TOOL,
        "status": status,
        "unit": UNIT,
        "solar_macs": _int(report["totals"]["macs"]),
        "counter_macs": _macs(record.counter_total),
        "compared_ops": len(compared),
        "not_compared_ops": len(per_op) - len(compared),
        "per_op": per_op,
    }
    if status == "differ":
        bad = ", ".join(f"{e['op']} (Solar {e['solar_macs']}, counter {e['counter_macs']})"
                        for e in compared if not e["agree"] and not e.get("explained"))
        warnings.warn(f"{trace.get('name', 'program')}: Solar's MACs differ from "
                      f"FlopCounterMode's: {bad}", RuntimeWarning, stacklevel=2)
    return _json_counts(section)


def _macs(flops: int) -> int:
    # Every FlopCounterMode formula is 2 * (multiply-adds), so FLOPs are even.
    return flops // 2


def _shape(trace: Dict[str, Any], arg: Any) -> Optional[List[int]]:
    if isinstance(arg, dict) and "tensor" in arg:
        return list(trace["tensors"][arg["tensor"]]["shape"])
    return None


def _explain(name: str, idx: List[int], trace: Dict[str, Any], record, solar_macs: int
             ) -> Tuple[bool, str]:
    """(explained, note): explained when Solar's MACs equal the counter's, instance by
    instance corrected for the counter's known error on this op."""
    packet = _packet(name)
    expected = 0
    reasons = set()
    for i in idx:
        c = _macs(record.counter_flops.get(i, 0))
        fixed = _corrected(packet, trace["ops"][i], trace, c)
        if fixed is None:
            expected += c
        else:
            expected += fixed[0]
            reasons.add(fixed[1])
    if reasons and expected == solar_macs:
        return True, "; ".join(sorted(reasons)) + f" (corrected count {expected} = Solar's)"
    what = "; ".join(sorted(reasons)) if reasons else "no known FlopCounterMode error applies"
    return False, (f"Solar {solar_macs} vs counter corrected for known errors {expected} "
                   f"({what})")


def _causal_pairs(L: int, S: int) -> int:
    """(query, key) pairs a causal mask keeps: torch's is_causal is the top-left aligned
    lower triangle, key s visible from query l when s <= l."""
    return sum(min(l + 1, S) for l in range(L))


def _in_bounds_taps(n_in: int, k: int, stride: int, dil: int, pad: int, n_out: int) -> int:
    """Pairs (input position i, tap r) of a transposed convolution whose target
    i*stride + r*dil - pad lands inside [0, n_out)."""
    return sum(1 for i in range(n_in) for r in range(k)
               if 0 <= i * stride + r * dil - pad < n_out)


def _list(v: Any, n: int) -> List[int]:
    if isinstance(v, (list, tuple)):
        v = list(v)
        return v * n if len(v) == 1 else v
    return [v] * n


def _corrected(packet: str, op: Dict[str, Any], trace: Dict[str, Any], counter_macs: int
               ) -> Optional[Tuple[int, str]]:
    """The counter's MACs for one op with its known error removed, and the sentence naming
    the error; None when no known error applies to this op."""
    args = op["args"]
    if packet in _SDPA_OPS:
        return _corrected_sdpa(packet, args, trace, counter_macs)
    if packet in _CONV_OPS and args.get("transposed") is True:
        x = _shape(trace, args.get("input"))
        w = _shape(trace, args.get("weight"))
        out = list(trace["tensors"][op["outputs"][0]]["shape"])
        if not x or not w:
            return None
        nd = len(x) - 2
        stride, pad, dil = (_list(args.get(a), nd) for a in ("stride", "padding", "dilation"))
        full = 1
        kept = 1
        for d in range(nd):
            full *= x[2 + d] * w[2 + d]
            kept *= _in_bounds_taps(x[2 + d], w[2 + d], stride[d], dil[d], pad[d], out[2 + d])
        if (counter_macs * kept) % full:
            return None
        return (counter_macs * kept // full,
                "FlopCounterMode counts the taps of a transposed convolution that padding crops")
    if packet == _CONV_BACKWARD:
        return _corrected_conv_backward(args, op, trace, counter_macs)
    return None


def _corrected_sdpa(packet: str, args, trace, counter_macs) -> Optional[Tuple[int, str]]:
    """Attention: with is_causal, FlopCounterMode counts every (query, key) pair, the masked
    half included; its backward formula counts the five matmuls but not the row sums
    D = rowsum(dO * O) of the softmax gradient (B*Hq*L*Ev multiply-adds), which Solar counts
    as a contraction."""
    q = _shape(trace, args.get("query"))
    k = _shape(trace, args.get("key"))
    if not q or not k or len(q) < 2:
        return None
    count, reasons = counter_macs, []
    if args.get("is_causal") is True:
        L, S = q[-2], k[-2]
        kept = _causal_pairs(L, S)
        if (counter_macs * kept) % (L * S):
            return None
        count = counter_macs * kept // (L * S)
        reasons.append("ignores the causal mask (counts the masked half of QK^T and PV)")
    if packet.endswith("_backward"):
        go = _shape(trace, args.get("grad_out"))
        if not go:
            return None
        delta = 1
        for n in go:  # [B, Hq, L, Ev]
            delta *= n
        count += delta
        reasons.append("does not count the backward's row sums rowsum(dO*O) (B*Hq*L*Ev)")
    if not reasons:
        return None
    return count, "FlopCounterMode " + " and ".join(reasons)


def _corrected_conv_backward(args, op, trace, counter_macs) -> Optional[Tuple[int, str]]:
    """convolution_backward. FlopCounterMode counts the weight gradient of a grouped
    convolution with all Cin input channels instead of Cin/groups (groups times too many),
    and counts every tap where padding crops some:
    - of a convolution, the input gradient (a transposed convolution of grad_output) over
      every (output position, tap) pair, including pairs whose input position padding crops;
    - of a transposed convolution, both gradients over every (input position, tap) pair, as
      its forward count, including the taps that land outside the output."""
    go = _shape(trace, args.get("grad_output"))
    x = _shape(trace, args.get("input"))
    w = _shape(trace, args.get("weight"))
    mask = args.get("output_mask") or [False, False, False]
    if not go or not x or not w:
        return None
    nd = len(x) - 2
    stride, pad, dil = (_list(args.get(a), nd) for a in ("stride", "padding", "dilation"))
    groups = int(args.get("groups") or 1)
    transposed = args.get("transposed") is True
    n = x[0]
    # channels: weight [Cout, Cin/g, k..] for a convolution, [Cin, Cout/g, k..] transposed
    channels = w[0] * w[1]
    full = 1  # (position, tap) pairs the counter counts per channel pair
    kept = 1  # those inside the tensor they address
    for d in range(nd):
        k = w[2 + d]
        if transposed:  # input positions i, taps r -> output i*s + r*d - pad in [0, O)
            full *= x[2 + d] * k
            kept *= _in_bounds_taps(x[2 + d], k, stride[d], dil[d], pad[d], go[2 + d])
        else:  # output positions o, taps r -> input o*s + r*d - pad in [0, I)
            full *= go[2 + d] * k
            kept *= _in_bounds_taps(go[2 + d], k, stride[d], dil[d], pad[d], x[2 + d])
    counted = exact = 0
    reasons = []
    if mask[0]:
        counted += n * channels * full
        exact += n * channels * kept
    if mask[1]:
        counted += n * channels * groups * full
        # of a convolution, the weight gradient reads the zero padding as the forward does
        exact += n * channels * (kept if transposed else full)
        if groups != 1:
            reasons.append("counts the weight gradient of a grouped convolution with every "
                           "input channel (groups times too many)")
    if kept != full and (mask[0] or (mask[1] and transposed)):
        reasons.append("counts the taps that padding crops"
                       + (" (transposed convolution)" if transposed else " in the input gradient"))
    if counted != counter_macs or not reasons:
        return None
    return exact, "FlopCounterMode " + " and ".join(reasons)
