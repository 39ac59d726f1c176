"""Multi-head latent attention (DeepSeek-V2/V3) with the cache a serving engine keeps
(`--mla-cache`, docs/models.md "MLA caches"): the attention module's forward is replaced while
a phase is built and captured, so the captured graph is the computation that cache implies.

- latent (the default): per token the compressed key/value c (kv_lora_rank wide, after
  kv_a_layernorm) and the rotary key k_rot (qk_rope_head_dim), one copy shared by all heads,
  as vLLM and SGLang (FlashMLA) keep it. A decode step absorbs kv_b_proj's two halves into the
  attention (DeepSeek-V2 paper, section 2.1.3): W_UK folds into the query (q_nope @ W_UK per
  head gives a kv_lora_rank-wide query), the scores are taken against the cached latent and
  rotary key, the weighted sum is taken over the latent, and W_UV maps it to the heads' values.
  A prefill stays expanded (kv_b_proj over the new tokens, then attention per head), as the
  engines run it too; it writes the latent into the cache.
- expanded: per token each head's key (qk_nope + qk_rope) and value (v_head_dim) in the cache,
  what a cache of keys and values per head holds (transformers before it cached the latent);
  a step projects only its new tokens and attends to the cached keys and values.

transformers' own forward (the latent cached, then kv_b_proj applied to every cached token at
every step) is neither: a decode step re-expands the whole context.
"""

from __future__ import annotations

import contextlib
from typing import Optional

FORMS = ("latent", "expanded")
DEFAULT_FORM = "latent"
MODEL_TYPES = ("deepseek_v2", "deepseek_v3")


def is_mla(config) -> bool:
    """Whether the model's attention is multi-head latent attention Solar substitutes."""
    return getattr(config, "model_type", None) in MODEL_TYPES and \
        getattr(config, "kv_lora_rank", None) is not None


def cache_form(config, form: Optional[str]) -> Optional[str]:
    """The cache form a run of `config` uses: `form` (None: the default) for an MLA model,
    None for another."""
    return (form or DEFAULT_FORM) if is_mla(config) else None


def _rotated(module, model_type: str, q_rot, k_rot, position_embeddings):
    """The rotary embedding of the query's and the key's rotary parts, as the model applies
    it (looked up at call time: solar.models.build patches DeepSeek-V2's)."""
    if model_type == "deepseek_v2":
        from transformers.models.deepseek_v2 import modeling_deepseek_v2 as ds

        return ds.apply_rotary_emb(q_rot, k_rot, position_embeddings.to(q_rot.device))
    from transformers.models.deepseek_v3 import modeling_deepseek_v3 as ds3

    cos, sin = position_embeddings
    if module.config.rope_interleave:
        return ds3.apply_rotary_pos_emb_interleave(q_rot, k_rot, cos, sin)
    return ds3.apply_rotary_pos_emb(q_rot, k_rot, cos, sin)


def _projected(module, model_type: str, hidden_states, position_embeddings):
    """(q_nope [B, H, S, nope], q_rot [B, H, S, rope], c [B, 1, S, kv_lora_rank],
    k_rot [B, 1, S, rope]): the query, the normed latent and the rotary key of the new
    tokens, computed as transformers' forward computes them."""
    import torch

    b, s = hidden_states.shape[:-1]
    if module.q_lora_rank is None:
        q = module.q_proj(hidden_states)
    else:
        q = module.q_b_proj(module.q_a_layernorm(module.q_a_proj(hidden_states)))
    q = q.view(b, s, -1, module.qk_head_dim).transpose(1, 2)
    q_nope, q_rot = torch.split(q, [module.qk_nope_head_dim, module.qk_rope_head_dim], dim=-1)
    kv = module.kv_a_proj_with_mqa(hidden_states)
    c, k_rot = torch.split(kv, [module.kv_lora_rank, module.qk_rope_head_dim], dim=-1)
    c = module.kv_a_layernorm(c).view(b, 1, s, module.kv_lora_rank)
    k_rot = k_rot.view(b, 1, s, module.qk_rope_head_dim)
    q_rot, k_rot = _rotated(module, model_type, q_rot, k_rot, position_embeddings)
    return q_nope, q_rot, c, k_rot


def _masked(scores, attention_mask):
    """The scores with transformers' mask applied: a bool mask keeps its True points, a float
    mask is added (None: every key is visible, as at a decode step)."""
    import torch

    if attention_mask is None:
        return scores
    if attention_mask.dtype == torch.bool:
        return scores.masked_fill(~attention_mask, float("-inf"))
    return scores + attention_mask


def absorbed_forward(module, model_type: str, hidden_states, attention_mask, cache,
                     position_embeddings):
    """The latent cache's decode: the new tokens' latent and rotary key written into the
    cache, then attention with W_UK absorbed into the query and W_UV applied after the
    weighted sum of the latent."""
    import torch

    b, s = hidden_states.shape[:-1]
    heads, nope, v_dim = module.num_heads, module.qk_nope_head_dim, module.v_head_dim
    q_nope, q_rot, c, k_rot = _projected(module, model_type, hidden_states,
                                         position_embeddings)
    c_all, k_rot_all = cache.update(c, k_rot, module.layer_idx)  # [B, 1, T, r], [B, 1, T, p]
    w = module.kv_b_proj.weight.view(heads, nope + v_dim, module.kv_lora_rank)
    w_uk, w_uv = w[:, :nope], w[:, nope:]  # [H, nope, r], [H, v, r]
    # matmuls broadcasting the one latent over the heads (a mask after them is recognized
    # through matmul's batch dimensions; torch.einsum's permuted bmm would hide it)
    q_latent = q_nope @ w_uk  # [B, H, S, r]
    scores = (q_latent @ c_all.transpose(2, 3) + q_rot @ k_rot_all.transpose(2, 3)) * \
        module.scaling  # [B, H, S, T]
    scores = _masked(scores, attention_mask)
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q_nope.dtype)
    o_latent = probs @ c_all  # [B, H, S, r]
    out = (o_latent @ w_uv.transpose(1, 2)).transpose(1, 2).reshape(b, s, heads * v_dim)
    return module.o_proj(out), None


def expanded_forward(module, model_type: str, hidden_states, attention_mask, cache,
                     position_embeddings, **kwargs):
    """The expanded cache: kv_b_proj over the new tokens only, each head's key and value
    written into the cache, attention over the cached keys and values (transformers'
    attention function, sdpa)."""
    import torch
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    b, s = hidden_states.shape[:-1]
    q_nope, q_rot, c, k_rot = _projected(module, model_type, hidden_states,
                                         position_embeddings)
    kv = module.kv_b_proj(c[:, 0]).view(b, s, -1, module.qk_nope_head_dim + module.v_head_dim)
    k_nope, values = torch.split(kv.transpose(1, 2),
                                 [module.qk_nope_head_dim, module.v_head_dim], dim=-1)
    keys = torch.cat((k_nope, k_rot.expand(-1, k_nope.shape[1], -1, -1)), dim=-1)
    keys, values = cache.update(keys, values, module.layer_idx)
    query = torch.cat((q_nope, q_rot), dim=-1)
    attend = ALL_ATTENTION_FUNCTIONS[module.config._attn_implementation]
    out, _ = attend(module, query, keys, values, attention_mask, dropout=0.0,
                    scaling=module.scaling, **kwargs)
    return module.o_proj(out.reshape(b, s, -1)), None


def patches(config, phase: str, form: Optional[str]):
    """While entered, the MLA attention module of `config`'s model type runs the cache `form`
    (None: the default) in `phase`: latent decode absorbed, expanded in both phases; a call
    without a cache (training) and a latent prefill keep transformers' forward."""
    stack = contextlib.ExitStack()
    form = cache_form(config, form)
    if form is None or (form == "latent" and phase != "decode"):
        return stack
    model_type = config.model_type
    if model_type == "deepseek_v2":
        from transformers.models.deepseek_v2.modeling_deepseek_v2 import \
            DeepseekV2Attention as attention
    else:
        from transformers.models.deepseek_v3.modeling_deepseek_v3 import \
            DeepseekV3Attention as attention
    original = attention.forward

    def forward(self, hidden_states, *args, **kwargs):
        # the decoder layer passes every argument by name; transformers' name for the cache
        # was past_key_values before it was cache
        cache = kwargs.pop("cache", kwargs.pop("past_key_values", None))
        if args or cache is None:
            return original(self, hidden_states, *args, cache=cache, **kwargs)
        mask = kwargs.pop("attention_mask", None)
        rope = kwargs.pop("position_embeddings")
        for unused in ("position_ids", "use_cache", "cache_position", "output_attentions"):
            kwargs.pop(unused, None)
        if form == "latent":
            return absorbed_forward(self, model_type, hidden_states, mask, cache, rope)
        return expanded_forward(self, model_type, hidden_states, mask, cache, rope, **kwargs)

    attention.forward = forward
    stack.callback(setattr, attention, "forward", original)
    return stack
