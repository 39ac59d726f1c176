"""A linear layer, the exact GELU, then a constant scale (level 2: fused GEMM epilogue)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 128
in_features = 1024
out_features = 2048
scale = 0.5


class Model(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        return F.gelu(self.fc(x)) * self.scale


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
