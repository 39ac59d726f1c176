"""Transposed convolutions (KernelBench format): 1-D with stride and output padding, a
grouped, padded, dilated 2-D one, and a strided 3-D one.

solar analyze examples/torch/conv_transpose.py --arch H100_SXM
"""

import torch
import torch.nn as nn

batch_size = 2
channels = 8
out_channels = 6
length = 10
height = 7
width = 9
depth = 4
groups = 2


class Model(nn.Module):
    def __init__(self, channels, out_channels, groups):
        super().__init__()
        self.up1d = nn.ConvTranspose1d(channels, out_channels, 4, stride=3, padding=1,
                                       output_padding=2)
        self.up2d = nn.ConvTranspose2d(channels, out_channels, 3, stride=2, padding=2,
                                       output_padding=1, groups=groups, dilation=2, bias=False)
        self.up3d = nn.ConvTranspose3d(channels, out_channels, 2, stride=2)

    def forward(self, x1, x2, x3):
        return self.up1d(x1), self.up2d(x2), self.up3d(x3)


def get_inputs():
    return [
        torch.randn(batch_size, channels, length),
        torch.randn(batch_size, channels, height, width),
        torch.randn(batch_size, channels, depth, height, width),
    ]


def get_init_inputs():
    return [channels, out_channels, groups]
