"""Embedding, gather/scatter and index ops, masked fill and pad (KernelBench format).

Index tensors are inputs made by get_inputs; scatter indices are permutations of each row,
so no two source elements land on one place and the result does not depend on write order.

solar analyze examples/torch/indexing.py --arch H100_SXM --set vocab=50257
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4
seq_len = 10
vocab = 50
d_model = 16
picks = 6  # elements gathered per row


class Model(nn.Module):
    def __init__(self, vocab, d_model):
        super().__init__()
        self.emb = nn.Embedding(vocab, d_model)

    def forward(self, tokens, x, gather_idx, perm, rows, mask):
        e = self.emb(tokens)  # [batch, seq, d_model]
        picked = torch.gather(x, 1, gather_idx)  # [batch, picks]
        scattered = torch.zeros_like(x).scatter(1, perm, x)  # a row-wise permutation
        added = torch.zeros_like(x).scatter_add(0, rows, x)  # row indices may repeat: summed
        selected = torch.index_select(x, 0, rows[0])  # [d_model, d_model]: rows of x
        taken = x[rows[0]]  # advanced indexing with one index tensor (aten::index)
        filled = x.masked_fill(mask, -1.0)
        padded = F.pad(x, (2, 3), value=0.5)  # [batch, d_model + 5]
        return e, picked, scattered, added, selected, taken, filled, padded


def get_inputs():
    tokens = torch.randint(0, vocab, (batch_size, seq_len))
    x = torch.randn(batch_size, d_model)
    gather_idx = torch.randint(0, d_model, (batch_size, picks))
    perm = torch.argsort(torch.rand(batch_size, d_model), dim=1)
    rows = torch.randint(0, batch_size, (batch_size, d_model))
    mask = torch.rand(batch_size, d_model) > 0.5
    return [tokens, x, gather_idx, perm, rows, mask]


def get_init_inputs():
    return [vocab, d_model]
