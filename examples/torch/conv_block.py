"""A ResNet-style conv block: conv, batch norm, ReLU, grouped conv, residual add, global
average pool (KernelBench format). --eval: batch norm by its running statistics; without it
the fresh module trains (batch statistics), as KernelBench runs it.

solar analyze examples/torch/conv_block.py --arch H100_SXM --eval
"""

import torch
import torch.nn as nn

batch_size = 8
channels = 64
height = 56
width = 56
groups = 4


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, groups=groups)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.conv2(y) + x
        return y.mean(dim=(2, 3))


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, groups]
