"""The PyTorch twin of causal_attention.py: the same tensors, by the same names, as forward
arguments."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B, H, S, D = 1, 32, 2048, 128


class Model(nn.Module):
    def forward(self, Q, K, V):
        return F.scaled_dot_product_attention(Q, K, V, is_causal=True)


def get_inputs():
    return [torch.randn(B, H, S, D, dtype=torch.bfloat16) for _ in range(3)]


def get_init_inputs():
    return []
