"""The PyTorch twin of conv2d.py: the same tensors, by the same names, as forward arguments;
the groups are read from the shapes, so the twin runs at any --set sizes."""
import torch
import torch.nn as nn
import torch.nn.functional as F

N, C, H, W = 8, 256, 56, 56
K, G = 256, 32
KH, KW = 3, 3
STRIDE, PAD, DIL = 2, 3, 3


class Model(nn.Module):
    def forward(self, x, weight, bias):
        groups = x.shape[1] // weight.shape[1]
        return F.conv2d(x, weight, bias, stride=STRIDE, padding=PAD, dilation=DIL, groups=groups)


def get_inputs():
    return [torch.randn(N, C, H, W, dtype=torch.bfloat16),
            torch.randn(K, C // G, KH, KW, dtype=torch.bfloat16),
            torch.randn(K, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
