"""Each row scaled to unit L2 norm (level 1: normalization)."""
import torch
import torch.nn as nn

batch_size = 64
dim = 16384


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x / torch.norm(x, p=2, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
