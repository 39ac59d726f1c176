"""Views against copies, dtype casts, in-place updates and inference dropout (KernelBench
format). Views (view, transpose, permute, expand, slicing) move nothing; contiguous() of a
transposed tensor, repeat, cat and casts copy. In-place updates of a whole tensor.

solar analyze examples/torch/casts_views.py --arch H100_SXM --set rows=1024 --eval
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4
rows = 8
cols = 6
reps = 3


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.25)  # identity with --eval; without it the module trains

    def forward(self, x, y):
        t = x.transpose(1, 2)  # view [batch, cols, rows]
        c = t.contiguous()  # copy
        flat = c.view(x.shape[0], -1)  # view of the copy
        p = x.permute(2, 0, 1).reshape(x.shape[2], -1)  # permute is a view; reshape must copy
        e = y.expand(batch_size, rows, cols)  # broadcast view of [1, rows, cols]
        r = y.repeat(reps, 1, 2)  # copy [reps, rows, 2 * cols]
        s = x[:, 1:5, ::2]  # strided slice view
        joined = torch.cat([x, e], dim=-1)  # [batch, rows, 2 * cols]
        half = x.to(torch.bfloat16)  # cast copy
        as_int = (x * 4).to(torch.int32)  # cast truncates toward zero
        back = half.float() + F.dropout(x, 0.5, training=False) + self.drop(x)
        z = x.clone()
        z.add_(e).mul_(2.0).clamp_(min=-3.0)  # in-place updates: each a new version of z
        return flat, p, s * 1.0, r, joined, half, as_int, back, z


def get_inputs():
    return [torch.randn(batch_size, rows, cols), torch.randn(1, rows, cols)]


def get_init_inputs():
    return []
