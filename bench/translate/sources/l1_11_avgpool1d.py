"""Average pooling over a sequence, window 4, stride 4 (level 1: pooling)."""
import torch
import torch.nn as nn

batch_size = 16
channels = 64
length = 4096
kernel_size = 4


class Model(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.pool = nn.AvgPool1d(kernel_size, stride=kernel_size)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [kernel_size]
