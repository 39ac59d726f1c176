"""Programs that load Hugging Face models by name (KernelBench level 4:
`AutoModelForCausalLM.from_pretrained("gpt2", config=AutoConfig.from_pretrained("gpt2"))`),
offline: while a program is loaded and built, `from_pretrained` of configs and models answers
from Solar's registry (registry.py) instead of the hub. A model is built from its
configuration without weights: a bound needs shapes, not values (on fake tensors nothing is
allocated; on real tensors, for validation, the weights are randomly initialized). A name not
in the registry is a clear refusal naming the registry and config.json; a local directory
is read as transformers reads it, without network access.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Iterator

from .build import quiet_transformers
from .registry import lookup


def mentions_hub(source_text: str) -> bool:
    """Whether a program's source loads something by name from the hub."""
    return "from_pretrained" in source_text


def _config(original, name: Any, *args: Any, **kwargs: Any):
    import transformers

    if isinstance(name, (str, os.PathLike)) and os.path.isdir(name):
        return original(name, *args, **{**kwargs, "local_files_only": True})
    spec = lookup(str(name))  # UserError naming the registry when unknown
    values = dict(spec.config)
    return transformers.AutoConfig.for_model(values.pop("model_type"), **values)


def _model(original, cls, name: Any, *args: Any, **kwargs: Any):
    import torch

    if isinstance(name, (str, os.PathLike)) and os.path.isdir(name):
        return original(name, *args, **{**kwargs, "local_files_only": True})
    config = kwargs.pop("config", None)
    if config is None:
        config = _config(None, name)
    options = {k: v for k, v in kwargs.items()
               if k in ("dtype", "torch_dtype", "attn_implementation")}
    builder = getattr(cls, "from_config", None) or getattr(cls, "_from_config")
    fake = torch._guards.detect_fake_mode() is not None
    with _no_init() if fake else contextlib.nullcontext():
        model = builder(config, **options)
    if fake:
        model.tie_weights()  # no_init_weights also skips the tying
    return model


def _no_init():
    from transformers.initialization import no_init_weights

    return no_init_weights()


@contextlib.contextmanager
def offline() -> Iterator[None]:
    """Within: AutoConfig.from_pretrained and every model class's from_pretrained build from
    the registry (see the module docstring)."""
    import transformers
    from transformers import modeling_utils
    from transformers.models.auto import auto_factory

    patches = []
    original_config = transformers.AutoConfig.from_pretrained.__func__

    def config_from_pretrained(cls, name, *args, **kwargs):
        return _config(lambda *a, **k: original_config(cls, *a, **k), name, *args, **kwargs)

    patches.append((transformers.AutoConfig, "from_pretrained", classmethod(config_from_pretrained)))
    for owner in (auto_factory._BaseAutoModelClass, modeling_utils.PreTrainedModel):
        original = owner.__dict__["from_pretrained"].__func__

        def model_from_pretrained(cls, name, *args, _original=original, **kwargs):
            return _model(lambda *a, **k: _original(cls, *a, **k), cls, name, *args, **kwargs)

        patches.append((owner, "from_pretrained", classmethod(model_from_pretrained)))
    saved = [(owner, attr, owner.__dict__[attr]) for owner, attr, _ in patches]
    try:
        for owner, attr, value in patches:
            setattr(owner, attr, value)
        with quiet_transformers():
            yield
    finally:
        for owner, attr, value in saved:
            setattr(owner, attr, value)
