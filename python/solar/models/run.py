"""What `solar analyze hf:NAME` is asked: one phase of one model (torch-free)."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional

from ..errors import user_error
from .quant_formats import check_names
from .registry import TASKS

PHASES = ("prefill", "decode")
# Causal LMs whose decode step Solar does not model, and why (a refusal, not a guess).
NO_DECODE = {"reformer": "transformers' Reformer keeps its own cache of LSH buckets and "
                         "chunked states, not a key/value cache: its decode step is not modelled "
                         "(analyze --phase prefill)"}
DEFAULT_SEQ = 1024  # prefill tokens per sequence
DEFAULT_CONTEXT = 4096  # decode: tokens already in the cache
# --dtype: weights, activations and cache (solar.models.build maps them to torch dtypes)
DTYPES = {"f32": "float32", "fp32": "float32", "bf16": "bfloat16", "f16": "float16",
          "fp16": "float16"}


@dataclasses.dataclass
class ModelRun:
    """One phase of one model: what `solar analyze hf:...` was asked."""

    ref: str
    phase: str = "prefill"
    batch: int = 1
    seq: Optional[int] = None
    context: Optional[int] = None
    dtype: str = "bf16"
    task: Optional[str] = None
    config: Dict[str, Any] = dataclasses.field(default_factory=dict)  # config field overrides
    force: bool = False  # build past the work estimate's limits (docs/models.md)
    plan: Optional[Any] = None  # a parallel plan (solar.models.parallel.Plan) on --system
    # A training step (--train; solar.models.training): the optimizer (None: AdamW; "none":
    # no update), the recomputation (None: "none") and a measured step time for the MFU (ms).
    optimizer: Optional[str] = None
    recompute: Optional[str] = None
    measured_ms: Optional[float] = None
    # Serving figures (solar.models.serving): --serving, and a speculative draft model with
    # the tokens it proposes per step (--draft MODEL --speculate K).
    serving: bool = False
    draft: Optional[str] = None
    speculate: Optional[int] = None
    new_tokens: int = 1  # decode: tokens per sequence the step takes (a verify step: K + 1)
    # --mla-cache: latent or expanded, for multi-head latent attention (solar.models.mla);
    # None: latent
    mla_cache: Optional[str] = None
    quant: Optional[str] = None  # --quant: a scheme of solar.models.quantize.SCHEMES
    kv_dtype: Optional[str] = None  # --kv-dtype: fp8, or bf16/f16 (the activations' dtype)

    def check(self) -> None:
        """Refuses bad values (torch-free: the sweep checks its points with it before any
        runs); fills the defaults of seq and context."""
        if self.phase not in PHASES:
            raise user_error(f"--phase {self.phase!r}: expected prefill or decode", "usage")
        for name in ("batch", "seq", "context", "speculate"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise user_error(f"--{name} must be a positive integer, not {v!r}", "usage")
        if not isinstance(self.dtype, str) or self.dtype not in DTYPES:
            raise user_error(f"--dtype {self.dtype!r}: expected one of "
                             f"{', '.join(sorted(DTYPES))}", "usage")
        if self.task is not None and self.task not in TASKS:
            raise user_error(f"--task {self.task!r}: expected one of {', '.join(TASKS)}",
                             "usage")
        check_names(self.quant, self.kv_dtype)
        if self.mla_cache is not None and self.mla_cache not in ("latent", "expanded"):
            raise user_error(f"--mla-cache {self.mla_cache!r}: expected latent or expanded",
                             "usage")
        self.seq = self.seq or DEFAULT_SEQ
        self.context = self.context or DEFAULT_CONTEXT


