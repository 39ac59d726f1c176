"""A vision-language-action robot policy (task "vla"): pi0's design, a PaliGemma-style backbone
(SigLIP vision tower + Gemma language model) with a Gemma-style action expert that denoises a
chunk of actions by flow matching (docs/models.md, "Robot policies").

One control step, what `solar analyze hf:pi0-paligemma-3b` captures:
1. the prefix: each camera image through the vision tower and the projector, the prompt's
   tokens embedded, and the whole prefix (image tokens + prompt tokens) through the backbone
   with full (bidirectional) attention, its keys and values kept per layer;
2. the robot state: one token through the action expert, attending to the prefix and itself,
   its keys and values kept (it does not change across integration steps);
3. `num_steps` integration steps: the noisy action chunk (`action_horizon` actions) and the
   flow time through the action-input projections, the action expert over the chunk's tokens
   (attending to the prefix, the state token and the whole chunk), the action-output
   projection, and one Euler update of the chunk.

The backbone and the expert are two weight sets of one transformer: layer i of the expert
reads layer i's prefix keys and values, so both have the same depth, heads, key/value heads
and head size (pi0 asserts the same). Sources: Black et al., "pi0: A Vision-Language-Action
Flow Model for General Robot Control" (https://arxiv.org/abs/2410.24164), and its reference
implementation, openpi (https://github.com/Physical-Intelligence/openpi: models/pi0.py,
models/pi0_config.py, models/gemma.py).

Torch-free at import; the model is built in `build` (torch and transformers imported there)
and run by solar.models.phases.policy_step.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
from typing import Any, Dict, Optional

from ..errors import did_you_mean, user_error

TASK = "vla"
# Scalar fields of the policy and what each is (a --set NAME=VALUE changes them).
FIELDS = {"num_images": "camera images per control step",
          "max_token_len": "prompt tokens (--seq overrides)",
          "action_dim": "action (and robot state) vector size",
          "action_horizon": "actions in the chunk a control step emits",
          "num_steps": "flow-matching integration steps per control step"}
# Depths a --set may change: the backbone's and the expert's together (they share their
# attention layer by layer), and the vision tower's.
DEPTHS = {"num_hidden_layers": ("text_config", "action_expert_config"),
          "vision_num_hidden_layers": ("vision_config",)}
SUBCONFIGS = ("vision_config", "text_config", "action_expert_config")


@dataclasses.dataclass
class PolicyConfig:
    """A policy's configuration: the three sub-configurations (transformers' SiglipVisionConfig
    and two GemmaConfig values, as dicts) and the control step's sizes."""

    vision_config: Dict[str, Any]
    text_config: Dict[str, Any]
    action_expert_config: Dict[str, Any]
    num_images: int
    max_token_len: int
    action_dim: int
    action_horizon: int
    num_steps: int
    model_type: str = "pi0"

    # What the shared model code reads of a config (the work estimate, the model section).
    @property
    def hidden_size(self) -> int:
        return self.text_config["hidden_size"]

    @property
    def intermediate_size(self) -> int:
        return self.text_config["intermediate_size"]

    @property
    def vocab_size(self) -> int:
        return self.text_config["vocab_size"]

    @property
    def num_attention_heads(self) -> int:
        return self.text_config["num_attention_heads"]

    @property
    def image_tokens(self) -> int:
        """Tokens per image: one per patch."""
        v = self.vision_config
        return (v["image_size"] // v["patch_size"]) ** 2

    @property
    def prefix_tokens(self) -> int:
        return self.num_images * self.image_tokens + self.max_token_len

    def layer_passes(self) -> int:
        """Layers a control step runs: the vision tower's, the backbone's, and the expert's
        once for the state token and once per integration step."""
        return (self.vision_config["num_hidden_layers"] + self.text_config["num_hidden_layers"]
                + self.action_expert_config["num_hidden_layers"] * (1 + self.num_steps))

    def to_dict(self) -> Dict[str, Any]:
        """The flat view the work estimate reads (solar.models.estimate): every layer pass of
        the step as a layer, the backbone's widths."""
        return {"model_type": self.model_type, "num_hidden_layers": self.layer_passes(),
                "hidden_size": self.hidden_size, "intermediate_size": self.intermediate_size,
                "vocab_size": self.vocab_size, "num_attention_heads": self.num_attention_heads}


def _positive(value: Any, name: str, origin: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise user_error(f"{origin}: {name}: must be an integer >= 1, not {value!r}", "usage")
    return value


def config_of(spec, overrides: Optional[Dict[str, Any]] = None) -> PolicyConfig:
    """The PolicyConfig of a registry entry or config.json, with --set overrides (a policy
    field, num_hidden_layers for the backbone and the expert, vision_num_hidden_layers)."""
    raw = copy.deepcopy(spec.config)
    for sub in SUBCONFIGS:
        if not isinstance(raw.get(sub), dict):
            raise user_error(f"{spec.file}: a {TASK} policy's config has a {sub} object",
                             "parse")
    for name, value in (overrides or {}).items():
        if name in FIELDS:
            raw[name] = value
        elif name in DEPTHS:
            for sub in DEPTHS[name]:
                raw[sub]["num_hidden_layers"] = value
        else:
            known = list(FIELDS) + list(DEPTHS)
            raise user_error(f"--set {name}: {spec.name}'s policy config has no field "
                             f"{name!r} (fields: {', '.join(known)})" + did_you_mean(name, known),
                             "usage")
    origin = lambda n: f"--set {n}" if n in (overrides or {}) else spec.file  # noqa: E731
    values = {n: _positive(raw.get(n), n, origin(n)) for n in FIELDS}
    for name, subs in DEPTHS.items():
        for sub in subs:
            _positive(raw[sub].get("num_hidden_layers"), f"{sub}.num_hidden_layers",
                      origin(name))
    text, expert = raw["text_config"], raw["action_expert_config"]
    for key in ("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim"):
        if text.get(key) != expert.get(key):
            raise user_error(f"{spec.file}: text_config and action_expert_config share their "
                             f"attention layer by layer: {key} {text.get(key)!r} != "
                             f"{expert.get(key)!r}", "usage")
    vision = raw["vision_config"]
    for key in ("image_size", "patch_size"):
        _positive(vision.get(key), f"vision_config.{key}", spec.file)
    return PolicyConfig(vision_config=vision, text_config=text, action_expert_config=expert,
                        **values, model_type=raw.get("model_type", "pi0"))


def prepare(run, spec) -> None:
    """Checks a policy run before anything is built: a control step is the one phase; the
    prompt length is --seq, else the config's max_token_len."""
    if spec.task != TASK:
        return
    if run.phase != "prefill":
        raise user_error(f"{spec.name} is a robot policy: its one phase is the control step "
                         "(--phase prefill, docs/models.md \"Robot policies\")", "usage")
    if run.seq is None:
        run.seq = config_of(spec, run.config).max_token_len


def build(config: PolicyConfig, dtype, mode=None, real: bool = False):
    """The policy's modules (torch dtype `dtype`), under the fake-tensor `mode` when given,
    on real tensors with `real`, else on the meta device: vision_tower (SigLIP, no pooling
    head), projector (vision width -> backbone width), backbone (Gemma, its embedding the
    prompt's; no LM head), action_expert (Gemma, no embedding: its inputs are projections),
    and pi0's state, action-input, time-MLP and action-output projections."""
    import torch
    import transformers
    from transformers.initialization import no_init_weights

    def gemma(values):
        # both run over every token they see: the prefix is one bidirectional block, the
        # expert's tokens attend to the prefix and to each other (solar.models.phases)
        cfg = transformers.GemmaConfig(**{k: v for k, v in values.items() if k != "model_type"},
                                       use_bidirectional_attention=True)
        cfg.is_causal = False  # what transformers' mask builder reads (masking_utils)
        return transformers.AutoModel.from_config(cfg, attn_implementation="sdpa", dtype=dtype)

    where = mode if mode is not None else (
        contextlib.nullcontext() if real else torch.device("meta"))
    skip_init = no_init_weights() if not real else contextlib.nullcontext()
    with where, skip_init:
        vision_cfg = transformers.SiglipVisionConfig(
            **{k: v for k, v in config.vision_config.items() if k != "model_type"})
        m = torch.nn.Module()
        m.vision_tower = transformers.AutoModel.from_config(vision_cfg, attn_implementation="sdpa",
                                                            dtype=dtype)
        width = config.hidden_size
        expert_width = config.action_expert_config["hidden_size"]
        linear = lambda i, o: torch.nn.Linear(i, o, dtype=dtype)  # noqa: E731
        m.projector = linear(vision_cfg.hidden_size, width)
        m.backbone = gemma(config.text_config)
        m.action_expert = gemma(config.action_expert_config)
        m.action_expert.embed_tokens = None  # its tokens are the projections below
        m.state_proj = linear(config.action_dim, expert_width)
        m.action_in_proj = linear(config.action_dim, expert_width)
        m.action_time_mlp_in = linear(2 * expert_width, expert_width)
        m.action_time_mlp_out = linear(expert_width, expert_width)
        m.action_out_proj = linear(expert_width, config.action_dim)
    return m.eval()


def section(config: PolicyConfig, run, report) -> Dict[str, Any]:
    """The report's `policy` section: what one control step is, and per device its time at
    the fused SOL and the highest control rate that time allows."""
    devices = {}
    for arch, d in report.devices.items():
        seconds = float(d.fused.seconds)
        devices[arch] = {"control_step_seconds": seconds,
                         "max_rate_hz": 1.0 / seconds if seconds > 0 else None,
                         "bottleneck": d.fused.bottleneck}
    return {"images": config.num_images, "image_tokens": config.num_images * config.image_tokens,
            "prompt_tokens": run.seq, "prefix_tokens": config.num_images * config.image_tokens
            + run.seq, "state_tokens": 1, "action_horizon": config.action_horizon,
            "action_dim": config.action_dim, "integration_steps": config.num_steps,
            "expert_passes": 1 + config.num_steps, "devices": devices,
            "control_step": "images through the vision tower, the prefix (image + prompt "
                            "tokens) through the backbone, the state token and then "
                            f"{config.num_steps} integration steps over the "
                            f"{config.action_horizon}-action chunk through the action expert"}


def policy_text(section: Optional[Dict[str, Any]]) -> str:
    """The `policy` section as the text report prints it after the model line: what a control
    step is and, per device, its time and the highest control rate at the fused SOL ("" for
    a model that is not a policy)."""
    if not section:
        return ""
    lines = [f"  control step: {section['images']} images ({section['image_tokens']} tokens) + "
             f"{section['prompt_tokens']} prompt tokens through the backbone, the state token, "
             f"{section['integration_steps']} integration steps over {section['action_horizon']} "
             "actions through the action expert"]
    for arch, d in section["devices"].items():
        hz = d["max_rate_hz"]
        lines.append(f"  {arch:<16}{d['control_step_seconds'] * 1e3:>10.3f} ms per control step"
                     f" -> at most {hz:,.1f} Hz" if hz else f"  {arch:<16}-")
    return "\n".join(lines) + "\n"
