"""A batch of independent matrix products, torch.bmm (level 1: matmul)."""
import torch
import torch.nn as nn

batch = 32
m = 256
k = 128
n = 384


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.bmm(a, b)


def get_inputs():
    return [torch.randn(batch, m, k), torch.randn(batch, k, n)]


def get_init_inputs():
    return []
