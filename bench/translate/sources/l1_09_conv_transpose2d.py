"""A transposed 4x4 convolution, stride 2, padding 1: a 2x upsampling (level 1: transposed
convolution)."""
import torch
import torch.nn as nn

batch_size = 8
in_channels = 64
out_channels = 32
height = 32
width = 32
kernel_size = 4
stride = 2
padding = 1


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride,
                                         padding=padding, bias=False)

    def forward(self, x):
        return self.deconv(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding]
