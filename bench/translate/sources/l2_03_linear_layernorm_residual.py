"""A linear layer, layer norm, and the input added back (level 2: fused GEMM + norm)."""
import torch
import torch.nn as nn

batch_size = 256
hidden = 1024


class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.proj = nn.Linear(hidden, hidden)
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x):
        return x + self.norm(self.proj(x))


def get_inputs():
    return [torch.randn(batch_size, hidden)]


def get_init_inputs():
    return [hidden]
