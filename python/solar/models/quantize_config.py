"""A checkpoint's quantization scheme from its config.json's `quantization_config`
(docs/models.md, "Quantization"): the methods transformers and serving engines write
(compressed-tensors, awq, gptq, fp8, modelopt, mxfp4) mapped onto solar.models.quantize's
schemes; any other method or layout is refused naming it."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Tuple

from ..errors import user_error
from .quant_formats import SCHEMES, Scheme

KNOWN_METHODS = ("compressed-tensors", "awq", "gptq", "fp8", "modelopt", "mxfp4")


def scheme_of_config(qc: Any, origin: str) -> Tuple[Scheme, str]:
    """(scheme, description) of a config.json's `quantization_config`; an unknown method or
    layout is refused naming it."""
    def refuse(what: str):
        return user_error(f"{origin}: quantization_config: {what}", "unsupported")

    if not isinstance(qc, dict):
        raise refuse("expected an object")
    method = qc.get("quant_method")
    if method not in KNOWN_METHODS:
        raise refuse(f"quant_method {method!r} is not modelled (known: "
                     f"{', '.join(KNOWN_METHODS)}; or --quant NAME)")
    where = f"quant_method {method}"
    if method == "fp8":
        block = qc.get("weight_block_size")
        if block:
            if list(block) != [128, 128]:
                raise refuse(f"weight_block_size {block}: only [128, 128] is modelled")
            return SCHEMES["fp8-block"], where
        return SCHEMES["fp8"], where
    if method in ("awq", "gptq"):
        bits = qc.get("bits", qc.get("w_bit"))
        name = {4: "w4a16", 8: "w8a16"}.get(bits)
        if name is None:
            raise refuse(f"{method} with {bits!r} bits is not modelled (4 or 8)")
        group = qc.get("group_size", qc.get("q_group_size", 128))
        # AWQ stores a zero point per group unless zero_point is false; GPTQ checkpoints
        # store qzeros whatever `sym` says.
        zero = bool(qc.get("zero_point", True)) if method == "awq" else True
        return _grouped(SCHEMES[name], group, zero, refuse), where
    if method == "mxfp4":
        return SCHEMES["mxfp4"], where
    if method == "modelopt":
        algo = str(qc.get("quant_algo", "")).upper()
        if algo == "NVFP4":
            return SCHEMES["nvfp4"], where
        if algo == "FP8":
            return SCHEMES["fp8"], where
        raise refuse(f"modelopt quant_algo {qc.get('quant_algo')!r} is not modelled (FP8, "
                     "NVFP4)")
    return _compressed_tensors(qc, refuse)


def _grouped(base: Scheme, group: Any, zero: bool, refuse) -> Scheme:
    if group == -1:
        return dataclasses.replace(base, weight_group=("channel",), zero_point=zero)
    if isinstance(group, bool) or not isinstance(group, int) or group < 1:
        raise refuse(f"group_size {group!r}: expected a positive integer or -1")
    return dataclasses.replace(base, weight_group=("group", group), zero_point=zero)


def _compressed_tensors(qc: Dict[str, Any], refuse) -> Tuple[Scheme, str]:
    groups = qc.get("config_groups") or {}
    if not isinstance(groups, dict) or len(groups) != 1:
        raise refuse(f"compressed-tensors with {len(groups) if isinstance(groups, dict) else 0} "
                     "config_groups: one group is modelled")
    group = next(iter(groups.values()))
    w = group.get("weights") or {}
    a = group.get("input_activations")
    kind, bits, strategy = w.get("type"), w.get("num_bits"), w.get("strategy")
    where = f"quant_method compressed-tensors ({kind} {bits}-bit weights, {strategy})"
    if kind == "float" and bits == 8 and a:
        if strategy == "block":
            return SCHEMES["fp8-block"], where
        return SCHEMES["fp8"], where
    if kind == "float" and bits == 4 and a:
        return SCHEMES["nvfp4"], where
    if kind == "int" and bits == 8 and a:
        return SCHEMES["int8"], where
    if kind == "int" and bits in (4, 8) and not a:
        base = SCHEMES["w4a16" if bits == 4 else "w8a16"]
        size = w.get("group_size") if strategy == "group" else -1
        return _grouped(base, size, not w.get("symmetric", True), refuse), where
    raise refuse(f"compressed-tensors {where[len('quant_method compressed-tensors '):]} with "
                 f"{'quantized' if a else 'unquantized'} activations is not modelled")
