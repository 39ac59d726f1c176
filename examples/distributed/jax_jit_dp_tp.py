"""A data+model-parallel MLP training step written with jit shardings only (no shard_map)
over a DP x TP mesh of host devices: the batch split over "dp", the first weight's columns and
the second weight's rows over "tp". The step computes the squared-error loss, its gradients
and the SGD update; XLA's SPMD partitioner makes each device compute with its batch block and
its weight blocks and inserts (in its partitioned HLO on this CPU backend; a GPU backend may
choose differently):

- forward: one all-reduce over "tp" of the partial (B/DP) x D output: B/DP * D * 4 bytes;
- the loss: one all-reduce over "dp" of the partial sum of squares: 4 bytes;
- backward: one all-reduce over "dp" of each weight's partial gradient (a sum over the batch
  blocks): D * H/TP * 4 bytes each (XLA combines the last three into one tuple all-reduce).

Per rank: 5 * B * D * H / (DP * TP) MACs (two forward matmuls; dH, dW2 and dW1 backward; no
input gradient). The loss divides by the global batch B, a constant, so every rank's trace
(at its local shapes) divides by the same number as the whole program.

    solar analyze examples/distributed/jax_jit_dp_tp.py
    solar validate examples/distributed/jax_jit_dp_tp.py
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

DP, TP = 2, 2
DEVICES = DP * TP  # the mesh's size: Solar captures each rank on this many host devices
B, D, H = 8, 32, 64  # batch, model width, hidden width
LR = 0.1  # the SGD step size

mesh = Mesh(np.array(jax.devices()[:DEVICES]).reshape(DP, TP), ("dp", "tp"))


def loss(w1, w2, x, t):
    y = jax.nn.relu(x @ w1) @ w2
    return jnp.sum((y - t) ** 2) / B


def step(w1, w2, x, t):
    value, (g1, g2) = jax.value_and_grad(loss, argnums=(0, 1))(w1, w2, x, t)
    return value, w1 - LR * g1, w2 - LR * g2


def sharded(*spec):
    return NamedSharding(mesh, P(*spec))


forward = jax.jit(step,
                  in_shardings=(sharded(None, "tp"), sharded("tp", None), sharded("dp", None),
                                sharded("dp", None)),
                  out_shardings=(sharded(), sharded(None, "tp"), sharded("tp", None)))


def get_inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((D, H), dtype=np.float32) / D ** 0.5,
            rng.standard_normal((H, D), dtype=np.float32) / H ** 0.5,
            rng.standard_normal((B, D), dtype=np.float32),
            rng.standard_normal((B, D), dtype=np.float32)]
