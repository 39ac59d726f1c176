"""Quantization formats (torch-free): the schemes `--quant` names, the cache dtypes of
`--kv-dtype`, the bits of each dtype and the sizes of packed tensors (docs/models.md
"Quantization"). ModelRun checks names with it before anything is built."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional, Tuple

from ..errors import user_error

BITS = {"f64": 64, "f32": 32, "tf32": 32, "bf16": 16, "f16": 16, "f8e4m3": 8, "f8e5m2": 8,
        "f6": 6, "f4": 4, "i64": 64, "i32": 32, "i16": 16, "i8": 8, "i4": 4, "u8": 8, "bool": 8}


@dataclasses.dataclass(frozen=True)
class Scheme:
    """One quantization scheme. Weights: `weight` dtype with one `weight_scale` value per
    `weight_group` (("channel",): per output channel; ("group", G): per G input elements of
    an output channel; ("block", B): per B x B block), a zero point per scale when
    `zero_point`; a second, per-tensor f32 scale with `tensor_scale`. Activations (None:
    weight-only): `act` dtype, `act_group` ("tensor",): one static scale; ("group", G): a
    dynamic scale per G elements of a token, computed from their absolute maximum (G = 0:
    per token), at `act_scale` dtype. `mma_scales`: the tensor core applies the block
    scales inside its block-scaled MMA (no vector work for them)."""

    name: str
    weight: str
    weight_group: Tuple[Any, ...]
    weight_scale: str
    zero_point: bool = False
    tensor_scale: bool = False
    act: Optional[str] = None
    act_group: Tuple[Any, ...] = ()
    act_scale: str = "f32"
    mma_scales: bool = False
    description: str = ""


SCHEMES: Dict[str, Scheme] = {s.name: s for s in (
    Scheme("fp8", "f8e4m3", ("channel",), "f32", act="f8e4m3", act_group=("tensor",),
           description="W8A8 FP8 (e4m3): per-output-channel weight scales, a static "
                       "per-tensor activation scale"),
    Scheme("fp8-block", "f8e4m3", ("block", 128), "f32", act="f8e4m3",
           act_group=("group", 128),
           description="W8A8 FP8 (e4m3) with 128x128 weight block scales and dynamic 1x128 "
                       "activation scales (DeepSeek-V3)"),
    Scheme("int8", "i8", ("channel",), "f32", act="i8", act_group=("group", 0),
           description="W8A8 INT8: per-output-channel weight scales, dynamic per-token "
                       "activation scales"),
    Scheme("w4a16", "i4", ("group", 128), "bf16", zero_point=True,
           description="weight-only INT4, group 128, a scale and a 4-bit zero point per "
                       "group (AWQ/GPTQ)"),
    Scheme("w8a16", "i8", ("group", 128), "bf16",
           description="weight-only INT8, group 128, symmetric (a scale per group)"),
    Scheme("nvfp4", "f4", ("group", 16), "f8e4m3", tensor_scale=True, act="f4",
           act_group=("group", 16), act_scale="f8e4m3", mma_scales=True,
           description="NVFP4: e2m1 values, an e4m3 scale per 16 elements and one f32 "
                       "tensor scale, weights and activations"),
    Scheme("mxfp4", "f4", ("group", 32), "u8", act="f4", act_group=("group", 32),
           act_scale="u8", mma_scales=True,
           description="MXFP4 (OCP MX): e2m1 values, an e8m0 scale per 32 elements, weights "
                       "and activations"),
)}
KV_DTYPES = {"fp8": "f8e4m3", "f8e4m3": "f8e4m3", "bf16": None, "f16": None, "auto": None}


def check_names(quant: Optional[str], kv_dtype: Optional[str]) -> None:
    """Refuses an unknown --quant or --kv-dtype (torch-free: ModelRun.check calls it)."""
    if quant is not None and quant not in SCHEMES:
        raise user_error(f"--quant {quant!r}: expected one of {', '.join(SCHEMES)}", "usage")
    if kv_dtype is not None and kv_dtype not in KV_DTYPES:
        raise user_error(f"--kv-dtype {kv_dtype!r}: expected fp8, bf16 or f16 (bf16 and f16: "
                         "the activations' dtype)", "usage")


RECURRENT = ("mamba", "mamba2", "rwkv", "falcon_mamba")  # state that is no attention cache


def numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def nbytes(shape, dtype: str) -> int:
    """Bytes of a dense tensor; sub-byte types packed (docs/cost.md, "Bytes")."""
    return -(-numel(shape) * BITS[dtype] // 8)


def split_extent(extent: int, group: int, what: str) -> int:
    if extent % group:
        raise user_error(f"quantization: {what} has {extent} elements, not a multiple of the "
                         f"group of {group}", "unsupported")
    return extent // group


def fmt(dtype: str) -> str:
    return {"bfloat16": "bf16", "float16": "f16", "fp16": "f16", "float32": "f32"}.get(dtype,
                                                                                     dtype)


def granularity(group, dtype: str, activations: bool = False) -> str:
    kind = group[0]
    if kind == "channel":
        return f"{dtype} per output channel"
    if kind == "tensor":
        return f"{dtype} per tensor (static)"
    if kind == "block":
        return f"{dtype} per {group[1]}x{group[1]} block"
    if activations:
        return f"{dtype} per token" + (f" per {group[1]} elements" if group[1] else "") + \
            " (dynamic)"
    return f"{dtype} per {group[1]} input elements"
