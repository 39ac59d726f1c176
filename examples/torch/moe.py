"""A mixture-of-experts layer (KernelBench format): a linear router, softmax gates, top-k
routing (expert choice: each expert takes its `capacity` highest-scoring tokens, so every
shape is static), a gather of the chosen tokens, two batched expert matmuls with GELU, and
a scatter-add of the gated results back to their tokens.

solar analyze examples/torch/moe.py --arch H100_SXM --set tokens=4096 --set capacity=1024
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

tokens = 32  # batch x sequence, flattened
d_model = 16
d_ff = 32
n_experts = 4
capacity = 12  # tokens per expert


class Model(nn.Module):
    def __init__(self, d_model, d_ff, n_experts, capacity):
        super().__init__()
        self.capacity = capacity
        self.router = nn.Linear(d_model, n_experts, bias=False)
        self.w1 = nn.Parameter(torch.randn(n_experts, d_model, d_ff) / d_model**0.5)
        self.w2 = nn.Parameter(torch.randn(n_experts, d_ff, d_model) / d_ff**0.5)

    def forward(self, x):
        probs = torch.softmax(self.router(x), dim=-1)  # [tokens, experts]
        gates, idx = torch.topk(probs.t(), self.capacity, dim=-1)  # [experts, capacity]
        flat = idx.reshape(-1)  # [experts * capacity]
        xs = x[flat].view(idx.shape[0], self.capacity, -1)  # gather tokens to experts
        h = F.gelu(torch.bmm(xs, self.w1))  # [experts, capacity, d_ff]
        y = torch.bmm(h, self.w2) * gates.unsqueeze(-1)  # [experts, capacity, d_model]
        # A token chosen by several experts receives the sum of their outputs.
        index = flat.unsqueeze(-1).expand(-1, x.shape[-1])
        out = torch.zeros_like(x).scatter_add(0, index, y.reshape(-1, x.shape[-1]))
        return x + out


def get_inputs():
    return [torch.randn(tokens, d_model)]


def get_init_inputs():
    return [d_model, d_ff, n_experts, capacity]
