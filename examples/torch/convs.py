"""Convolutions in one program (KernelBench format): a 1-D conv with dilation and
padding, a strided grouped 2-D conv, a depthwise 2-D conv, and a 3-D conv with bias.

solar analyze examples/torch/convs.py --arch H100_SXM --set height=56 --set width=56
"""

import torch
import torch.nn as nn

batch_size = 2
channels = 8
out_channels = 16
length = 32  # 1-D signal length
height = 14
width = 12
depth = 6  # 3-D volume: depth x height x width
groups = 4


class Model(nn.Module):
    def __init__(self, channels, out_channels, groups):
        super().__init__()
        self.conv1d = nn.Conv1d(channels, out_channels, 5, padding=4, dilation=2)
        self.conv2d = nn.Conv2d(channels, out_channels, 3, stride=2, padding=1, groups=groups,
                                bias=False)
        self.depthwise = nn.Conv2d(out_channels, out_channels, 3, padding=1,
                                   groups=out_channels)
        self.conv3d = nn.Conv3d(channels, out_channels, (3, 3, 3), stride=(1, 2, 2),
                                padding=(1, 0, 0))

    def forward(self, x1, x2, x3):
        y1 = self.conv1d(x1)
        y2 = self.depthwise(torch.relu(self.conv2d(x2)))
        y3 = self.conv3d(x3)
        return y1, y2, y3


def get_inputs():
    return [
        torch.randn(batch_size, channels, length),
        torch.randn(batch_size, channels, height, width),
        torch.randn(batch_size, channels, depth, height, width),
    ]


def get_init_inputs():
    return [channels, out_channels, groups]
