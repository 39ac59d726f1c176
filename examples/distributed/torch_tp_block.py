"""A tensor-parallel transformer block written with DTensor's `parallelize_module` over a
1-D device mesh of DEVICES ranks ("tp"): the query, key and value projections and the MLP's
up projection column-parallel (each rank holds HEADS/N heads and H/N hidden columns), the
attention output and the MLP's down projection row-parallel; each row-parallel layer's
partial sums are all-reduced (DTensor emits `_c10d_functional.all_reduce`). The norms run
replicated; attention is causal. Per rank: the projections' 4 * S * D * D / N MACs,
attention's 2 * (HEADS / N) * (D / HEADS) * S * (S + 1) / 2 (the live causal pairs), the
MLP's 2 * S * D * H / N; two all-reduces of S x D x 4 bytes. jax_tp_block.py is the same
block written with shard_map.

    solar analyze examples/distributed/torch_tp_block.py
    solar validate examples/distributed/torch_tp_block.py --set DEVICES=2
"""

import torch
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

DEVICES = 4  # the world size: Solar captures each rank as one of this many
S, D, HEADS, H = 16, 64, 4, 256  # tokens, model width, attention heads, MLP hidden width

mesh = init_device_mesh("cpu", (DEVICES,), mesh_dim_names=("tp",))


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.q = torch.nn.Linear(D, D, bias=False)
        self.k = torch.nn.Linear(D, D, bias=False)
        self.v = torch.nn.Linear(D, D, bias=False)
        self.o = torch.nn.Linear(D, D, bias=False)
        self.up = torch.nn.Linear(D, H, bias=False)
        self.down = torch.nn.Linear(H, D, bias=False)
        self.heads = HEADS // DEVICES  # this rank's heads

    def forward(self, x):
        h = self.norm1(x)
        q, k, v = (p(h).view(S, self.heads, D // HEADS).transpose(0, 1)
                   for p in (self.q, self.k, self.v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(0, 1).reshape(S, self.heads * (D // HEADS)))
        return x + self.down(torch.relu(self.up(self.norm2(x))))


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)  # every rank builds the same weights, then keeps its shard
        self.block = parallelize_module(Block(), mesh, {
            "q": ColwiseParallel(), "k": ColwiseParallel(), "v": ColwiseParallel(),
            "o": RowwiseParallel(), "up": ColwiseParallel(), "down": RowwiseParallel()})

    def forward(self, x):
        return self.block(x)


def get_inputs():
    return [torch.randn(S, D, generator=torch.Generator().manual_seed(1))]


def get_init_inputs():
    return []
