"""Sorting and top-k (KernelBench format): sort (descending, values and indices), argsort,
top-k along the last dimension and the smallest k along another.

solar analyze examples/torch/sorting.py --arch H100_SXM --set cols=4096
"""

import torch
import torch.nn as nn

batch_size = 4
rows = 8
cols = 32
k = 5


class Model(nn.Module):
    def forward(self, x):
        values, order = torch.sort(x, dim=-1, descending=True)
        rank = torch.argsort(x, dim=1)
        top_v, top_i = torch.topk(x, k, dim=-1)
        low_v, low_i = torch.topk(x, k, dim=1, largest=False)
        return values, order, rank, top_v, top_i, low_v, low_i


def get_inputs():
    return [torch.randn(batch_size, rows, cols)]


def get_init_inputs():
    return []
