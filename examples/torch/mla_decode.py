"""One decode step of DeepSeek-style multi-head latent attention (MLA), written the direct way
(KernelBench format): the keys and values of the T cached tokens are up-projected from their
low-rank latents c_kv every step, then attention runs per head.

    k = c_kv @ W_uk,  v = c_kv @ W_uv          (T x r  @  r x H*D: T*r*H*D MACs each)
    q = x @ W_q;  p = softmax(q k^T / sqrt(D));  o = (p v) @ W_o

Re-associated (docs/insight.md), the up-projections are absorbed: q' = q W_uk^T (H*D*r MACs)
meets the latents directly (H*T*r), and p meets them before W_uv: the T*r*H*D terms vanish.
DeepSeek-V2 ships its kernels this way; Solar finds the order from the graph as written.

Sizes: DeepSeek-V2-Lite's attention (d_model 2048, 16 heads of 128, latent 512), batch 4,
a 4,096-token cache, fp32 (the no-RoPE part of the heads).

    solar analyze examples/torch/mla_decode.py --arch H100_SXM
"""

import math

import torch
import torch.nn as nn

batch = 4
cache = 4096  # T: cached tokens
d_model = 2048
heads = 16
head_dim = 128
latent = 512


class Model(nn.Module):
    def __init__(self, d_model, heads, head_dim, latent):
        super().__init__()
        self.h, self.d = heads, head_dim
        self.w_q = nn.Parameter(torch.randn(d_model, heads * head_dim) / math.sqrt(d_model))
        self.w_uk = nn.Parameter(torch.randn(latent, heads * head_dim) / math.sqrt(latent))
        self.w_uv = nn.Parameter(torch.randn(latent, heads * head_dim) / math.sqrt(latent))
        self.w_o = nn.Parameter(torch.randn(heads * head_dim, d_model) / math.sqrt(d_model))

    def forward(self, x, c_kv):
        # x: [B, d_model], the new token; c_kv: [B, T, latent], the cached latents
        b, t = c_kv.shape[0], c_kv.shape[1]
        q = (x @ self.w_q).view(b, self.h, 1, self.d)                    # [B, H, 1, D]
        k = (c_kv @ self.w_uk).view(b, t, self.h, self.d).transpose(1, 2)  # [B, H, T, D]
        v = (c_kv @ self.w_uv).view(b, t, self.h, self.d).transpose(1, 2)  # [B, H, T, D]
        p = torch.softmax(q @ k.transpose(2, 3) / math.sqrt(self.d), dim=-1)  # [B, H, 1, T]
        o = (p @ v).reshape(b, self.h * self.d)                            # [B, H*D]
        return o @ self.w_o


def get_inputs():
    return [torch.randn(batch, d_model), torch.randn(batch, cache, latent)]


def get_init_inputs():
    return [d_model, heads, head_dim, latent]
