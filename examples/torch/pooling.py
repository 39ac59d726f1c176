"""Pooling in 1, 2 and 3 dimensions (KernelBench format): max (with indices, strided,
padded, dilated), average, and adaptive average and max pooling to an output size that
divides the input.

solar analyze examples/torch/pooling.py --arch H100_SXM --set height=64 --set width=64
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 2
channels = 4
length = 20
height = 12
width = 16
depth = 8


class Model(nn.Module):
    def forward(self, x1, x2, x3):
        return (
            F.max_pool1d(x1, 3, stride=2, padding=1),
            F.avg_pool1d(x1, 4, stride=4),
            F.adaptive_avg_pool1d(x1, 5),
            F.adaptive_max_pool1d(x1, 4),
            *F.max_pool2d(x2, 3, stride=2, padding=1, dilation=1, return_indices=True),
            F.max_pool2d(x2, 2, stride=1, dilation=2),
            F.avg_pool2d(x2, 2),
            F.adaptive_avg_pool2d(x2, (3, 4)),
            F.adaptive_max_pool2d(x2, (6, 8)),
            F.max_pool3d(x3, 2),
            F.avg_pool3d(x3, (2, 3, 2), stride=(2, 1, 2), padding=(0, 1, 1)),
            F.adaptive_avg_pool3d(x3, 1),
            F.adaptive_max_pool3d(x3, (2, 3, 4)),
        )


def get_inputs():
    return [
        torch.randn(batch_size, channels, length),
        torch.randn(batch_size, channels, height, width),
        torch.randn(batch_size, channels, depth, height, width),
    ]


def get_init_inputs():
    return []
