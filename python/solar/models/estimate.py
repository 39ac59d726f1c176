"""What building and capturing a model will cost, estimated from its configuration before
anything is built, and the limits past which `solar analyze` refuses without `--force`
(docs/models.md, "Work estimate").

Building a model on fake tensors and capturing one phase costs time in proportion to the ops
the capture records, which is layers x ops per layer: a configuration with a billion layers
would build for days (and run out of memory first). Sizes cost nothing on fake tensors,
but past a point they overflow a tensor's byte count (2^63): parameters and the largest
activation are estimated for that. Torch-free: the sweep estimates its points with it too.

The figures, measured on this project's registry models (tests/python/test_models.py checks
the bound against their captures):
- a layer records 39-197 ops in a forward pass (BERT 39, Llama 80, Mixtral 98, DeepSeek-V2's
  MoE layer 171, DeepSeek-V3's 197, 190 in decode): OPS_PER_LAYER = 200 bounds them; a
  training step (forward + backward) records 2.5-3.1 times as many (DeepSeek-V3's MoE
  layer 510): TRAIN_FACTOR = 3, with the bound's headroom; full recomputation runs the
  forward once more (+ 1); the optimizer's update records about 10 ops per parameter tensor,
  at most 14 tensors a layer (DeepSeek-V3's MLA + MoE layer: 150 ops):
  UPDATE_OPS_PER_LAYER = 200;
- Mamba's selective scan runs token by token in a training step (a prefill records it as
  one op, frontends/torch/selective_scan.py; autograd needs the per-token form): about 14
  ops per token per layer: SCAN_OPS_PER_TOKEN = 16;
- a recorded op costs about 0.5 ms to capture, lower and analyze on one core of the build
  machine, and about 26 KB of memory at the peak: Mamba-130M's 1024-token prefill
  recorded token by token (estimated 398,116 ops) took 203 s and 10.2 GB; Llama-3.1-405B's
  decode step (126 layers, estimated 25,300) 10.9 s and 0.7 GB.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Mapping, Optional

from ..errors import user_error

OPS_PER_LAYER = 200
OPS_FIXED = 100  # embeddings, final norm, head
TRAIN_FACTOR = 3
UPDATE_OPS_PER_LAYER = 200  # the optimizer's update: about 10 ops per parameter tensor
SCAN_OPS_PER_TOKEN = 16
SECONDS_PER_OP = 5e-4
SECONDS_FIXED = 3.0  # importing torch and transformers, building the config

# The limits (docs/models.md, "Work estimate"). Every registry model's prefill and decode
# step at the default sizes stays under them: Llama-3.1-405B's decode step is estimated at
# 25 k ops and its training step at 76 k.
LIMIT_TRACE_OPS = 500_000  # about 4 minutes and 13 GB
LIMIT_PARAMETERS = 10 ** 14  # 50x the largest published models (~2 x 10^12)
LIMIT_ACTIVATION = 2 ** 53  # elements of one tensor; 8 bytes each stay below 2^63 bytes

# A model's layer counts: its main stack and, in an encoder-decoder, the encoder's and the
# decoder's (Reformer lists its layers' kinds in attn_layers).
_LAYERS = re.compile(r"(num_|n_)?(hidden_|encoder_|decoder_|attn_)?layers?")
_MLP = re.compile(r"intermediate_size|n_inner|d_ff|ffn_dim|encoder_ffn_dim|decoder_ffn_dim")
_EXPERTS = re.compile(r"num_local_experts|n_routed_experts|num_experts")
SCAN_MODEL_TYPES = ("mamba",)  # transformers' Mamba: a loop over tokens in a training step


def _count(value: Any) -> Optional[int]:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, (list, tuple)):
        return len(value)
    return None


def layer_count(values: Mapping[str, Any]) -> int:
    """Layers of a configuration's values (its config.json or `config.to_dict()`): the largest
    count of each stack (the main one, the encoder's, the decoder's), summed."""
    stacks = {"": 0, "encoder": 0, "decoder": 0}
    for name, value in values.items():
        n = _count(value)
        if n is None or not _LAYERS.fullmatch(str(name)):
            continue
        stack = "encoder" if "encoder" in name else "decoder" if "decoder" in name else ""
        stacks[stack] = max(stacks[stack], n)
    return sum(stacks.values())


def ops_per_layer(model_type: str, phase: str, seq: int, train: bool,
                  recompute: str = "none", optimizer: str = "adamw") -> int:
    """Recorded ops per layer; a training step's default update is AdamW (a model's)."""
    per = OPS_PER_LAYER
    if model_type in SCAN_MODEL_TYPES and train:
        per += SCAN_OPS_PER_TOKEN * seq
    if not train:
        return per
    # --recompute full runs each layer's forward once more in the backward pass
    return per * (TRAIN_FACTOR + (recompute == "full")) + \
        (UPDATE_OPS_PER_LAYER if optimizer != "none" else 0)


def trace_ops(layers: int, per_layer: int) -> int:
    return OPS_FIXED + layers * per_layer


def seconds(ops: int) -> float:
    """About how long a capture of `ops` recorded ops takes, start to report, on one core."""
    return SECONDS_FIXED + min(ops, 10 ** 18) * SECONDS_PER_OP


@dataclasses.dataclass
class Estimate:
    """The estimate of one phase of one model."""

    layers: int
    ops_per_layer: int
    trace_ops: int
    parameters: int  # an upper estimate: dense layers of 4h^2 + 3h*i, plus the experts
    largest_activation: int  # elements of the largest tensor a step computes

    @property
    def seconds(self) -> float:
        return seconds(self.trace_ops)

    def past_limit(self) -> Optional[str]:
        """What exceeds its limit, said in words, else None."""
        if self.trace_ops > LIMIT_TRACE_OPS:
            return (f"{fmt(self.trace_ops)} recorded ops ({fmt(self.layers)} layers x "
                    f"{fmt(self.ops_per_layer)}, about {duration(self.seconds)}), past the "
                    f"limit of {fmt(LIMIT_TRACE_OPS)} ops")
        if self.parameters > LIMIT_PARAMETERS:
            return (f"{fmt(self.parameters)} parameters, past the limit of "
                    f"{fmt(LIMIT_PARAMETERS)}")
        if self.largest_activation > LIMIT_ACTIVATION:
            return (f"{fmt(self.largest_activation)} elements in its largest activation, past "
                    f"the limit of 2^53 = {fmt(LIMIT_ACTIVATION)}")
        return None


def _int(config, name: str) -> int:
    v = getattr(config, name, None)
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0


def _largest(values: Mapping[str, Any], pattern: re.Pattern) -> int:
    found = [v for k, v in values.items() if pattern.fullmatch(str(k))
             and isinstance(v, int) and not isinstance(v, bool) and v > 0]
    return max(found, default=0)


def estimate(config, task: str, phase: str, batch: int, seq: int, context: int,
             train: bool, recompute: str = "none", optimizer: str = "adamw") -> Estimate:
    """The estimate for a transformers config (validated: its sizes are positive integers)."""
    values = config.to_dict()
    layers = layer_count(values)
    per = ops_per_layer(config.model_type, phase, seq, train, recompute, optimizer)
    h = _int(config, "hidden_size")
    mlp = _largest(values, _MLP) or 4 * h
    experts = _largest(values, _EXPERTS)
    expert_mlp = _int(config, "moe_intermediate_size") or mlp
    vocab = _int(config, "vocab_size")
    positions = _int(config, "max_position_embeddings")
    params = ((vocab + positions) * h + layers * (4 * h * h + 3 * h * mlp)
              + layers * experts * 3 * h * expert_mlp)
    heads = _int(config, "num_attention_heads") or 1
    if task == "image-classification":
        patch = _int(config, "patch_size") or 1
        new, past = (_int(config, "image_size") // patch) ** 2 + 1, 0
    elif phase == "decode" and not train:
        new, past = 1, max(context, seq if task == "seq2seq-lm" else 0)
    else:
        new, past = seq, 0
    tokens = batch * new
    logits = (tokens if train else batch) * vocab
    activation = max(tokens * max(h, mlp), logits, batch * heads * new * (past + new))
    return Estimate(layers, per, trace_ops(layers, per), params, activation)


def check(est: Estimate, name: str, force: bool) -> None:
    """Refuses (kind too_large, exit 2) an estimate past a limit unless `force`."""
    past = est.past_limit()
    if past is not None and not force:
        raise user_error(f"{name}: building and capturing this model is estimated at {past} "
                         "(docs/models.md, \"Work estimate\"); --force runs it anyway",
                         "too_large")


def fmt(n: int) -> str:
    """An integer with thousands separators; past 10^15 as d.dd x 10^k (no float overflow)."""
    if n < 10 ** 15:
        return f"{n:,}"
    if n.bit_length() > 10_000:  # str() of an int this long is refused (4300 digits)
        return f"about 2^{n.bit_length() - 1}"
    digits = str(n)
    return f"{digits[0]}.{digits[1:3]}e{len(digits) - 1}"


def duration(s: float) -> str:
    """A rough duration in words: 40 s, 12 minutes, 7.3 hours, 41 days, 3 years."""
    for limit, unit, scale in ((120, "s", 1), (7200, "minutes", 60), (172800, "hours", 3600),
                               (2 * 365 * 86400, "days", 86400)):
        if s < limit:
            v = s / scale
            return f"{v:.0f} {unit}" if unit == "s" or v >= 10 else f"{v:.1f} {unit}"
    years = s / (365 * 86400)
    return f"{years:.0f} years" if years < 1e6 else "millions of years"
