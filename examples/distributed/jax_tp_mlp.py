"""A tensor-parallel MLP written with shard_map over DEVICES host devices (mesh axis "tp"):
the first linear column-parallel (each rank holds H/N columns of w1), the second row-parallel
(H/N rows of w2), and one psum completes the partial sums (an all-reduce of B x D elements).
Per rank: 2 * B * D * H / N MACs; the all-reduce's payload is B * D * 4 bytes.

    solar analyze examples/distributed/jax_tp_mlp.py
    solar validate examples/distributed/jax_tp_mlp.py --set DEVICES=2
"""

import jax
import numpy as np
from jax import shard_map
from jax.sharding import Mesh, PartitionSpec as P

DEVICES = 4  # the mesh's size: Solar captures each rank on this many host devices
B, D, H = 8, 64, 256  # tokens, model width, hidden width (split over the ranks)

mesh = Mesh(np.array(jax.devices()[:DEVICES]), ("tp",))


def mlp(x, w1, w2):
    h = jax.nn.relu(x @ w1)  # [B, H/N]: this rank's columns
    return jax.lax.psum(h @ w2, "tp")  # partial [B, D] sums, all-reduced over tp


forward = jax.jit(shard_map(mlp, mesh=mesh, in_specs=(P(), P(None, "tp"), P("tp", None)),
                            out_specs=P()))


def get_inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((B, D), dtype=np.float32),
            rng.standard_normal((D, H), dtype=np.float32) / D ** 0.5,
            rng.standard_normal((H, D), dtype=np.float32) / H ** 0.5]
