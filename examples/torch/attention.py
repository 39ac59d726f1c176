"""Causal self-attention with grouped-query heads (KernelBench format): QKV projections,
scaled_dot_product_attention (is_causal, GQA), output projection.

solar analyze examples/torch/attention.py --arch H100_SXM --set seq_len=128
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4
seq_len = 1024
d_model = 1024
n_heads = 16
n_kv_heads = 4


class Model(nn.Module):
    def __init__(self, d_model, n_heads, n_kv_heads):
        super().__init__()
        self.h, self.hk, self.dh = n_heads, n_kv_heads, d_model // n_heads
        self.q = nn.Linear(d_model, d_model, bias=False)
        self.kv = nn.Linear(d_model, 2 * n_kv_heads * self.dh, bias=False)
        self.o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.h, self.dh).transpose(1, 2)
        k, v = self.kv(x).view(b, t, 2, self.hk, self.dh).unbind(2)
        k, v = k.transpose(1, 2), v.transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.o(y.transpose(1, 2).reshape(b, t, -1))


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model)]


def get_init_inputs():
    return [d_model, n_heads, n_kv_heads]
