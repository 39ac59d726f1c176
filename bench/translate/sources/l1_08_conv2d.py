"""A 3x3 convolution with padding 1, no bias (level 1: convolution)."""
import torch
import torch.nn as nn

batch_size = 8
in_channels = 64
out_channels = 128
height = 56
width = 56
kernel_size = 3


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
