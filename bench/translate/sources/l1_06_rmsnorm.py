"""RMS normalization over the feature dimension with a learned gain (level 1: normalization)."""
import torch
import torch.nn as nn

batch_size = 16
features = 64
dim1 = dim2 = 128
eps = 1e-5


class Model(nn.Module):
    def __init__(self, features, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.rand(features) + 0.5)

    def forward(self, x):
        rms = torch.sqrt(torch.mean(x * x, dim=1, keepdim=True) + self.eps)
        return x / rms * self.weight.view(1, -1, 1, 1)


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features, eps]
