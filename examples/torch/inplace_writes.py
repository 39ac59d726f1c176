"""Writes into part of a tensor (KernelBench format): assignment to a slice, assignment
through an index tensor (index_put), index_add and scatter_reduce. Each updates a clone of
the input in place, as training code and KV caches do.

solar analyze examples/torch/inplace_writes.py --arch H100_SXM
"""

import torch
import torch.nn as nn

batch_size = 6
features = 8
n_updates = 3


class Model(nn.Module):
    def forward(self, x, rows, updates, index):
        sliced = x.clone()
        sliced[:, 0] = 0.0  # select view + fill_ on it
        sliced[1:3] = updates[:2, :1]  # slice view + copy_ of a broadcast source
        put = x.clone()
        put[rows] = updates  # index_put_
        added = x.clone().index_add_(0, rows, updates)
        amax = x.clone().scatter_reduce(1, index, x, reduce="amax", include_self=True)
        return sliced, put, added, amax


def get_inputs():
    x = torch.randn(batch_size, features)
    rows = torch.randperm(batch_size)[:n_updates]  # distinct rows: the result is defined
    updates = torch.randn(n_updates, features)
    index = torch.randint(0, features, (batch_size, features))
    return [x, rows, updates, index]


def get_init_inputs():
    return []
