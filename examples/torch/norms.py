"""Normalization layers (KernelBench format): batch norm in eval mode and in training mode
(batch statistics, running stats updated in place), layer, group, instance and RMS norm.

solar analyze examples/torch/norms.py --arch H100_SXM --eval
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4
channels = 8
height = 6
width = 5
groups = 2
seq_len = 7
d_model = 16


class Model(nn.Module):
    def __init__(self, channels, groups, d_model):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)  # --eval: running statistics (default: batch)
        self.bn.running_mean.uniform_(-0.5, 0.5)  # as after training, not the 0/1 defaults
        self.bn.running_var.uniform_(0.5, 2.0)
        self.train_weight = nn.Parameter(torch.rand(channels) + 0.5)
        self.train_bias = nn.Parameter(torch.randn(channels))
        self.register_buffer("train_mean", torch.zeros(channels))
        self.register_buffer("train_var", torch.ones(channels))
        self.gn = nn.GroupNorm(groups, channels)
        self.inorm = nn.InstanceNorm2d(channels, affine=True)
        self.ln = nn.LayerNorm(d_model)
        self.rms = nn.RMSNorm(d_model, eps=1e-6)

    def forward(self, x, s):
        y_bn_eval = self.bn(x)
        # Training-mode batch norm whatever the module's mode: batch mean and variance.
        y_bn_train = F.batch_norm(x, self.train_mean, self.train_var, self.train_weight,
                                  self.train_bias, training=True, momentum=0.1)
        y_gn = self.gn(x)
        y_in = self.inorm(x)
        y_ln = self.ln(s)
        y_rms = self.rms(s)
        return y_bn_eval, y_bn_train, y_gn, y_in, y_ln, y_rms


def get_inputs():
    return [torch.randn(batch_size, channels, height, width),
            torch.randn(batch_size, seq_len, d_model)]


def get_init_inputs():
    return [channels, groups, d_model]
