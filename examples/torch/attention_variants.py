"""scaled_dot_product_attention in its variants (KernelBench format): causal with more
keys than queries, a boolean mask, an additive float mask, and grouped-query heads.

solar analyze examples/torch/attention_variants.py --arch H100_SXM --set kv_len=512
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 2
n_heads = 4
n_kv_heads = 2  # grouped-query attention: 2 query heads share each key/value head
q_len = 16
kv_len = 24  # queries and keys differ in length
head_dim = 8


class Model(nn.Module):
    def forward(self, q, k, v, k_gqa, v_gqa, keep, bias):
        # is_causal with q_len != kv_len: torch aligns the mask top-left (query l sees keys
        # s <= l).
        y_causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y_bool = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        y_add = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=0.25)
        y_gqa = F.scaled_dot_product_attention(q, k_gqa, v_gqa, enable_gqa=True)
        return y_causal, y_bool, y_add, y_gqa


def get_inputs():
    q = torch.randn(batch_size, n_heads, q_len, head_dim)
    k = torch.randn(batch_size, n_heads, kv_len, head_dim)
    v = torch.randn(batch_size, n_heads, kv_len, head_dim)
    k_gqa = torch.randn(batch_size, n_kv_heads, kv_len, head_dim)
    v_gqa = torch.randn(batch_size, n_kv_heads, kv_len, head_dim)
    # Every query keeps at least its first key, so no softmax row is all -inf.
    keep = torch.rand(q_len, kv_len) > 0.3
    keep[:, 0] = True
    bias = torch.randn(batch_size, 1, q_len, kv_len)  # broadcast over heads
    return [q, k, v, k_gqa, v_gqa, keep, bias]


def get_init_inputs():
    return []
