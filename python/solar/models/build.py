"""A transformers model built from a configuration on fake tensors: no weights are read or
allocated (an 8B-parameter model costs a few seconds), and nothing is downloaded.

Two implementation choices make the captured graph the one a bound should see:
- attention is transformers' "sdpa" (one scaled_dot_product_attention per layer, with
  is_causal for a causal prefill: Solar counts the causal triangle's work);
- mixture-of-experts layers use transformers' "batched_mm" experts: each routed (token,
  expert) pair gathers its expert's weights by index, so a step reads the experts its tokens
  are routed to (at most all of them) and no expert sits in a loop over `nonzero()`, which
  fake tensors cannot run.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from typing import Any, Dict, Optional

from ..errors import did_you_mean, user_error
from . import policy, validate
from .registry import ModelSpec
from .run import DTYPES



def torch_dtype(name: str):
    import torch

    if name not in DTYPES:
        raise user_error(f"--dtype {name!r}: expected one of {', '.join(sorted(DTYPES))}",
                         "usage")
    return getattr(torch, DTYPES[name])


def config_of(spec: ModelSpec, overrides: Optional[Dict[str, Any]] = None):
    """The transformers config of `spec`, with `overrides` (--set NAME=VALUE on a model:
    config fields, e.g. num_hidden_layers=2) applied; an unknown field is an error. Every
    size is checked before the config is made (solar.models.validate): a bad one is a usage
    error naming the field and the file or `--set NAME` it came from."""
    import transformers

    if spec.task == policy.TASK:  # a robot policy: three configurations and its step's sizes
        return policy.config_of(spec, overrides)
    overrides = dict(overrides or {})
    cls = validate.config_class(spec.config.get("model_type"), spec.file)
    unknown = validate.unknown_overrides(cls, spec.config, overrides)
    if unknown is not None:
        raise user_error(f"--set {unknown}: {spec.name}'s config ({cls.__name__}) has no field "
                         f"{unknown!r}" + did_you_mean(unknown, validate.known_fields(
                             cls, spec.config)), "usage")
    values, origins = validate.merged_values(spec.config, spec.file, overrides, cls)
    validate.check_sizes(cls, values, origins)
    own = {k: v for k, v in spec.config.items() if k != "model_type"}
    try:
        config = transformers.AutoConfig.for_model(spec.config["model_type"], **own)
        # set after the config is made, as a user edits one: the config's own derivations
        # (GPT-Neo's attention_layers from its 32 layers) are not made again for 2 layers
        for key, value in overrides.items():
            setattr(config, key, value)
    except Exception as e:  # noqa: BLE001 - transformers' own checks of the other fields
        raise user_error(_config_refusal(e, origins, spec.file), "usage") from None
    return config


def _config_refusal(e: Exception, origins: Dict[str, str], file: str) -> str:
    """One line for transformers' refusal of a config value (huggingface_hub's strict
    dataclass errors carry the field in the message and the reason in their cause)."""
    cause = e.__cause__ if e.__cause__ is not None else e
    text = " ".join(str(cause).split()) or type(cause).__name__
    m = re.search(r"field '(\w+)'", str(e)) or re.search(r"Field '(\w+)'", text)
    origin = origins.get(m.group(1), file) if m else file
    return f"{origin}: transformers refuses this configuration: {text}"


def model_class(task: str):
    import transformers

    return {"causal-lm": transformers.AutoModelForCausalLM,
            "seq2seq-lm": transformers.AutoModelForSeq2SeqLM,
            "encoder": transformers.AutoModel,
            "image-classification": transformers.AutoModelForImageClassification}[task]


def build_model(spec: ModelSpec, config, dtype: str, mode=None, real: bool = False):
    """The model of `spec` with `config`, its parameters in `dtype`, in eval mode: under the
    fake-tensor `mode` when given, on real (randomly initialized) tensors with `real`, else on
    the meta device (for counting parameters)."""
    import torch

    if spec.task == policy.TASK:
        return policy.build(config, torch_dtype(dtype), mode, real)
    kwargs: Dict[str, Any] = {"dtype": torch_dtype(dtype), "attn_implementation": "sdpa"}
    if getattr(config, "num_local_experts", None) or getattr(config, "n_routed_experts", None):
        kwargs["experts_implementation"] = "batched_mm"
    from transformers.initialization import no_init_weights

    where = mode if mode is not None else (
        contextlib.nullcontext() if real else torch.device("meta"))
    cls = model_class(spec.task)
    # no_init_weights: random initialization means nothing without data (and trunc_normal_
    # reads values, which fake tensors have none of); real weights are initialized
    skip_init = no_init_weights() if not real else contextlib.nullcontext()
    with where, quiet_transformers(), skip_init:
        try:
            model = cls.from_config(config, **kwargs)
        except ValueError as e:  # no attention to choose (Mamba): the model's own layers
            if "attention implementation" not in str(e):
                raise
            kwargs["attn_implementation"] = "eager"
            model = cls.from_config(config, **kwargs)
        model.tie_weights()  # no_init_weights skips the tying too (GPT-2's lm_head = wte)
    return model.eval()


def real_rotary_emb(xq, xk, freqs):
    """DeepSeek-V2's rotary embedding (transformers' apply_rotary_emb: the interleaved pairs
    of xq and xk times e^(i*theta) in complex arithmetic) in real arithmetic: the same values
    (tests/python/test_models.py compares the two on real tensors) and the same work, 4
    multiplies and 2 adds per pair. `freqs` is (cos, sin) [batch, seq, pairs]."""
    import torch

    cos, sin = (f.unsqueeze(1) for f in freqs)

    def rotate(x):
        pairs = x.float().reshape(*x.shape[:-1], -1, 2)
        even, odd = pairs[..., 0], pairs[..., 1]
        out = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)
        return out.flatten(3).type_as(x)

    return rotate(xq), rotate(xk)


class _CosSin(tuple):
    """(cos, sin), movable as the complex tensor it replaces is (`.to(device)`)."""

    def to(self, *args, **kwargs):
        return _CosSin(t.to(*args, **kwargs) for t in self)


def implementation_patches(config):
    """Patches of transformers' modules while a model runs, undone on exit:
    - Solar's IR has no complex dtype: a DeepSeek-V2 model's rotary embedding returns
      (cos, sin) instead of e^(i*theta) and is applied with real_rotary_emb;
    - Reformer reads one value from a tensor (reformer_positions)."""
    stack = contextlib.ExitStack()
    if config.model_type == "reformer":
        stack.enter_context(reformer_positions())
    if config.model_type != "deepseek_v2":
        return stack
    import torch
    from transformers.models.deepseek_v2 import modeling_deepseek_v2 as ds

    def rotary_forward(self, x, position_ids):
        freqs = position_ids[..., None].float() * self.inv_freq.to(device=x.device,
                                                                   dtype=torch.float)
        return _CosSin((torch.cos(freqs) * self.attention_scaling,
                        torch.sin(freqs) * self.attention_scaling))

    for owner, name, value in ((ds, "apply_rotary_emb", real_rotary_emb),
                               (ds.DeepseekV2RotaryEmbedding, "forward", rotary_forward)):
        original = getattr(owner, name)
        setattr(owner, name, value)
        stack.callback(setattr, owner, name, original)
    return stack


@contextlib.contextmanager
def reformer_positions():
    """Reformer's axial position encodings cut their table to the columns the largest
    position needs, which they read from the positions' values (`position_ids.max().item()`),
    something fake tensors do not have: the model then ran on real tensors, which CPU kernels
    refuse at bf16 (layer norm over f32 activations with bf16 weights). The only step that
    reaches that code is a prefill (training takes another branch; a decode is refused,
    run.NO_DECODE), whose positions the model makes as 0 .. n-1: while it runs,
    `position_ids.max()` of that module runs (the reduction is recorded, as the model runs
    it) and is answered with n - 1 (a number whose `item()` is the value: a tensor would be
    made fake again by the mode); everything else runs as transformers writes it."""
    import torch
    from transformers.models.reformer import modeling_reformer as reformer

    owner = reformer.AxialPositionEmbeddings
    original = owner.forward
    tensor_max = torch.Tensor.max

    class Known(int):
        def item(self) -> int:
            return int(self)

    def forward(self, position_ids):
        def known_max(t, *args, **kwargs):
            if t is not position_ids or args or kwargs:
                return tensor_max(t, *args, **kwargs)
            tensor_max(t)
            return Known(position_ids.shape[-1] - 1)

        torch.Tensor.max = known_max
        try:
            return original(self, position_ids)
        finally:
            torch.Tensor.max = tensor_max

    owner.forward = forward
    try:
        yield
    finally:
        owner.forward = original


def parameter_count(model) -> int:
    """Distinct parameters (tied weights counted once, as model cards count them)."""
    return sum(p.numel() for p in model.parameters())


def quiet_transformers():
    """transformers' warnings and notices (deprecated arguments, "add is_decoder=True") are
    about using its models for training or generation, not the user's concern here."""
    stack = contextlib.ExitStack()
    stack.enter_context(warnings.catch_warnings())
    warnings.simplefilter("ignore")
    try:
        from transformers.utils import logging as hf_logging

        level = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()
        stack.callback(hf_logging.set_verbosity, level)
    except ImportError:
        pass
    return stack
