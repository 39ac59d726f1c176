"""An FSDP2 training step: an MLP (D -> H -> D) whose two layers are wrapped with
`fully_shard` over DEVICES ranks, each rank holding 1/N of every weight (dim-0 shards). The
forward all-gathers each layer's weight before it runs (FSDP2's copy-in,
`_allgather_base_`, copy-out), the backward gathers them again and reduce-scatters their
gradients (`chunk_cat`, `_reduce_scatter_base_`). Per rank, on B/N samples:
5 * (B/N) * D * H MACs (two forward matmuls, three backward: no gradient for the inputs);
all-gathers of 4 * D * H * 4 bytes (both weights in the forward and again in the backward,
as reshard_after_forward=True does; the up projection's backward gather feeds nothing, since
no input gradient is taken, but FSDP2 issues it, so it runs and is counted:
docs/distributed.md) and reduce-scatters of 2 * D * H * 4 bytes (the whole gradients).

    solar analyze examples/distributed/torch_fsdp_step.py
"""

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

DEVICES = 4  # the world size: Solar captures each rank as one of this many
B, D, H = 16, 64, 256  # global batch (split over the ranks), model width, hidden width

mesh = init_device_mesh("cpu", (DEVICES,), mesh_dim_names=("fsdp",))


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(D, H, bias=False)
        self.down = torch.nn.Linear(H, D, bias=False)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.mlp = MLP()
        fully_shard(self.mlp.up, mesh=mesh)
        fully_shard(self.mlp.down, mesh=mesh)
        fully_shard(self.mlp, mesh=mesh)

    def forward(self, x, y):
        with torch.enable_grad():
            loss = ((self.mlp(x) - y) ** 2).mean()
            loss.backward()
        return loss.detach(), self.mlp.up.weight.grad, self.mlp.down.weight.grad


def get_inputs():
    rank = dist.get_rank()
    gen = torch.Generator().manual_seed(1)
    x, y = torch.randn(B, D, generator=gen), torch.randn(B, D, generator=gen)
    n = B // DEVICES
    return [x[rank * n:(rank + 1) * n], y[rank * n:(rank + 1) * n]]


def get_init_inputs():
    return []
