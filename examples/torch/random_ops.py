"""Dropout in training mode and random ops (KernelBench format): functional dropout with
training=True, a Bernoulli mask and Gaussian noise, drawn inside forward.

solar analyze examples/torch/random_ops.py --arch H100_SXM
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4
features = 16


class Model(nn.Module):
    def forward(self, x):
        dropped = F.dropout(x, 0.25, training=True)
        keep = torch.bernoulli(torch.full_like(x, 0.75))
        noisy = x + 0.1 * torch.randn_like(x)
        return dropped, x * keep, noisy


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return []
