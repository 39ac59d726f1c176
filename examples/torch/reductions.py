"""Reductions (KernelBench format): sum, mean, max/min with indices, amax, argmax,
var/std, logsumexp, vector norm, product, and the cumulative sum, product and max.

solar analyze examples/torch/reductions.py --arch H100_SXM --set rows=4096
"""

import torch
import torch.nn as nn

batch_size = 4
rows = 12
cols = 10


class Model(nn.Module):
    def forward(self, x):
        total = x.sum()  # []
        row_sum = x.sum(dim=-1)  # [batch, rows]
        col_mean = x.mean(dim=1, keepdim=True)  # [batch, 1, cols]
        max_v, max_i = x.max(dim=-1)  # values and int64 indices, [batch, rows]
        min_v, min_i = torch.min(x, dim=1)  # [batch, cols]
        peak = torch.amax(x, dim=(1, 2))  # [batch]
        arg = torch.argmax(x, dim=2)  # int64 [batch, rows]
        var = torch.var(x, dim=-1)  # unbiased, [batch, rows]
        std = torch.std(x, dim=1, correction=0)  # [batch, cols]
        lse = torch.logsumexp(x, dim=-1)  # [batch, rows]
        l2 = torch.linalg.vector_norm(x, dim=-1)  # [batch, rows]
        prod = (1.0 + 0.1 * x).prod(dim=1)  # [batch, cols]
        csum = torch.cumsum(x, dim=-1)  # [batch, rows, cols]
        cprod = torch.cumprod(1.0 + 0.1 * x, dim=1)  # [batch, rows, cols]
        cmax_v, cmax_i = torch.cummax(x, dim=2)  # [batch, rows, cols] each
        return (total, row_sum, col_mean, max_v, max_i, min_v, min_i, peak, arg, var, std, lse,
                l2, prod, csum, cprod, cmax_v, cmax_i)


def get_inputs():
    return [torch.randn(batch_size, rows, cols)]


def get_init_inputs():
    return []
