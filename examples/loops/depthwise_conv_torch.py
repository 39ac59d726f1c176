"""The PyTorch twin of depthwise_conv.py: the same tensors, by the same names, as forward
arguments."""
import torch
import torch.nn as nn
import torch.nn.functional as F

N, C, H, W = 8, 144, 56, 56


class Model(nn.Module):
    def forward(self, x, weight):
        return F.conv2d(x, weight, padding=1, groups=x.shape[1])


def get_inputs():
    return [torch.randn(N, C, H, W, dtype=torch.bfloat16),
            torch.randn(C, 1, 3, 3, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
