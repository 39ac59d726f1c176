"""A data-parallel training step written with plain torch.distributed: each of DEVICES ranks
runs an MLP (D -> H -> D) forward and backward on its B/N samples, and all-reduces (averages)
each weight's gradient with `dist.all_reduce`. Solar initializes the process group (the fake
one to capture, gloo on 127.0.0.1 to validate); the program only uses it.
Per rank: 5 * (B/N) * D * H MACs (two forward matmuls, three backward: no gradient for the
inputs); the all-reduces' payload is the gradients, 2 * D * H * 4 bytes.

    solar analyze examples/distributed/torch_dp_allreduce.py
    solar validate examples/distributed/torch_dp_allreduce.py --set DEVICES=2
"""

import torch
import torch.distributed as dist

DEVICES = 4  # the world size: Solar captures each rank as one of this many
B, D, H = 16, 64, 256  # global batch (split over the ranks), model width, hidden width


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)  # every rank starts from the same weights
        self.w1 = torch.nn.Parameter(torch.randn(D, H) / D ** 0.5)
        self.w2 = torch.nn.Parameter(torch.randn(H, D) / H ** 0.5)

    def forward(self, x, y):
        with torch.enable_grad():  # the step's own backward
            loss = ((torch.relu(x @ self.w1) @ self.w2 - y) ** 2).mean()
            g1, g2 = torch.autograd.grad(loss, (self.w1, self.w2))
        for g in (g1, g2):  # gradients averaged over the data-parallel ranks
            dist.all_reduce(g, op=dist.ReduceOp.AVG)
        return loss.detach(), g1, g2


def get_inputs():
    rank = dist.get_rank()
    gen = torch.Generator().manual_seed(1)  # the global batch, the same on every rank
    x, y = torch.randn(B, D, generator=gen), torch.randn(B, D, generator=gen)
    n = B // DEVICES
    return [x[rank * n:(rank + 1) * n], y[rank * n:(rank + 1) * n]]


def get_init_inputs():
    return []
