"""A data+model-parallel MLP step written with jit shardings only (no shard_map) over a
DP x TP mesh of host devices: the batch split over "dp", the first weight's columns and the
second weight's rows over "tp". XLA's SPMD partitioner makes each device compute its batch
block with its weight blocks and inserts one all-reduce over "tp" of the partial
(B/DP) x D output. Per rank: 2 * B * D * H / (DP * TP) MACs; the all-reduce moves
B/DP * D * 4 bytes (what XLA's partitioned HLO has on this CPU backend; a GPU backend may
choose differently).

    solar analyze examples/distributed/jax_jit_dp_tp.py
    solar validate examples/distributed/jax_jit_dp_tp.py
"""

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

DP, TP = 2, 2
DEVICES = DP * TP  # the mesh's size: Solar captures each rank on this many host devices
B, D, H = 8, 32, 64  # batch, model width, hidden width

mesh = Mesh(np.array(jax.devices()[:DEVICES]).reshape(DP, TP), ("dp", "tp"))


def mlp(x, w1, w2):
    return jax.nn.relu(x @ w1) @ w2


forward = jax.jit(mlp, in_shardings=(NamedSharding(mesh, P("dp", None)),
                                     NamedSharding(mesh, P(None, "tp")),
                                     NamedSharding(mesh, P("tp", None))),
                  out_shardings=NamedSharding(mesh, P("dp", None)))


def get_inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((B, D), dtype=np.float32),
            rng.standard_normal((D, H), dtype=np.float32) / D ** 0.5,
            rng.standard_normal((H, D), dtype=np.float32) / H ** 0.5]
