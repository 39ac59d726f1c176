"""How a decoder layer keeps its attention cache, read from the config (torch-free): its
sliding window, if any, and the slots its buffer holds at a decode step (docs/models.md
"Attention caches"). The decode steps (phases.py) allocate by it; the model section (section.py)
reads it back."""

from __future__ import annotations

from typing import List, Optional


def sliding_windows(config) -> List[Optional[int]]:
    """Per decoder layer, its sliding window W (the layer attends to keys k in (q - W, q]),
    or None for a layer attending to the whole context: transformers' own reading of the
    config (layer_types, else sliding_window), so Mistral's uniform window and Gemma-2/3's
    alternating local and global layers come out as the model runs them."""
    from transformers.cache_utils import get_layer_types_and_kwargs

    try:
        types, kwargs = get_layer_types_and_kwargs(config)
    except (AttributeError, TypeError):  # a config without per-layer structure
        return []
    return [kw.get("sliding_window") if kind == "sliding_attention" else None
            for kind, kw in zip(types, kwargs)]


def decode_slots(window: Optional[int], context: int, new: int = 1) -> int:
    """Slots of one layer's buffer at a decode step of `new` tokens after `context`: the
    context and the new tokens, or for a sliding-window layer the rolling window (the W - 1
    tokens before the first new one, and the new ones), as serving engines and transformers'
    sliding cache keep it."""
    if window is None or window - 1 >= context:
        return context + new
    return window - 1 + new
