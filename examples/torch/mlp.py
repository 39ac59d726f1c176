"""A two-layer MLP with GELU and layer norm (KernelBench format).

solar analyze examples/torch/mlp.py --arch H100_SXM [--set batch_size=2]
"""

import torch
import torch.nn as nn

batch_size = 64
in_features = 1024
hidden = 4096
out_features = 1024


class Model(nn.Module):
    def __init__(self, in_features, hidden, out_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, out_features)
        self.norm = nn.LayerNorm(out_features)

    def forward(self, x):
        return self.norm(self.fc2(torch.nn.functional.gelu(self.fc1(x))))


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, hidden, out_features]
