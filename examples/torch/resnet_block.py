"""A ResNet bottleneck stage (KernelBench format): stem conv + batch norm + ReLU + max
pool, then a bottleneck block (1x1, strided 3x3, 1x1 convs with batch norm) whose shortcut
is a strided 1x1 projection, and a global-average-pool classifier.

solar analyze examples/torch/resnet_block.py --arch H100_SXM --set height=224 --set width=224
"""

import torch
import torch.nn as nn

batch_size = 2
in_channels = 3
height = 32
width = 32
stem = 16  # stem output channels
width_mid = 8  # bottleneck width
out_channels = 32
n_classes = 10


def conv_bn(cin, cout, k, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False),
                         nn.BatchNorm2d(cout))


class Model(nn.Module):
    def __init__(self, in_channels, stem, width_mid, out_channels, n_classes):
        super().__init__()
        self.stem = nn.Sequential(conv_bn(in_channels, stem, 7, stride=2), nn.ReLU(),
                                  nn.MaxPool2d(3, stride=2, padding=1))
        self.a = conv_bn(stem, width_mid, 1)
        self.b = conv_bn(width_mid, width_mid, 3, stride=2)
        self.c = conv_bn(width_mid, out_channels, 1)
        self.shortcut = conv_bn(stem, out_channels, 1, stride=2)
        self.fc = nn.Linear(out_channels, n_classes)

    def forward(self, x):
        x = self.stem(x)
        y = torch.relu(self.a(x))
        y = torch.relu(self.b(y))
        y = torch.relu(self.c(y) + self.shortcut(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(y, 1), 1))


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, stem, width_mid, out_channels, n_classes]
