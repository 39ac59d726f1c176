"""The exact (erf) GELU of a batch of activations (level 1: activation)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 64
dim = 8192


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.gelu(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
