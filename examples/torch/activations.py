"""Activations, softmax and in-place variants after a linear layer (KernelBench format).

solar analyze examples/torch/activations.py --arch H100_SXM --set batch_size=1024
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 16
in_features = 32
features = 24


class Model(nn.Module):
    def __init__(self, in_features, features):
        super().__init__()
        self.fc = nn.Linear(in_features, features)

    def forward(self, x):
        h = self.fc(x)
        outs = [
            F.relu(h), F.gelu(h), F.gelu(h, approximate="tanh"), F.silu(h), torch.sigmoid(h),
            torch.tanh(h), F.softplus(h), F.elu(h), F.leaky_relu(h, 0.1), F.hardswish(h),
            F.hardsigmoid(h), F.mish(h), F.hardtanh(h, -0.5, 0.5), torch.clamp(h, -1.0, 2.0),
            torch.softmax(h, dim=-1), torch.log_softmax(h, dim=0),
        ]
        # In-place variants on a fresh copy: each writes a new version of g.
        g = h.clone()
        g.mul_(0.5).add_(1.0).relu_()
        g.clamp_(max=1.5)
        g.sigmoid_()
        outs.append(g)
        return torch.stack(outs)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, features]
