"""An FSDP-style training step written with shard_map over DEVICES host devices (mesh axis
"fsdp"): every rank holds 1/N of each weight's rows and 1/N of the batch; the forward
all-gathers each weight (D x H and H x D elements: 2 * D * H * 4 bytes arrive per rank),
the backward's weight gradients are reduce-scattered back to the shards (2 * D * H * 4 bytes
in), and an SGD update runs on the shard. The loss is the mean squared error over the whole
batch (a psum of the local sums).

    solar analyze examples/distributed/jax_fsdp_step.py
    solar validate examples/distributed/jax_fsdp_step.py --set DEVICES=2
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import shard_map
from jax.sharding import Mesh, PartitionSpec as P

DEVICES = 4  # the mesh's size: Solar captures each rank on this many host devices
B, D, H = 16, 32, 64  # global batch, model width, hidden width
LR = 0.1

mesh = Mesh(np.array(jax.devices()[:DEVICES]), ("fsdp",))


def loss_fn(w1, w2, x, y):
    h = jnp.tanh(x @ w1)
    return jnp.sum((h @ w2 - y) ** 2) / B  # this rank's part of the global mean


def step(w1_shard, w2_shard, x, y):
    # The forward gathers the whole weights (tiled along their rows).
    w1 = jax.lax.all_gather(w1_shard, "fsdp", axis=0, tiled=True)
    w2 = jax.lax.all_gather(w2_shard, "fsdp", axis=0, tiled=True)
    loss, (g1, g2) = jax.value_and_grad(loss_fn, argnums=(0, 1))(w1, w2, x, y)
    # Each rank keeps the sum over ranks of its own rows of the gradients.
    g1 = jax.lax.psum_scatter(g1, "fsdp", scatter_dimension=0, tiled=True)
    g2 = jax.lax.psum_scatter(g2, "fsdp", scatter_dimension=0, tiled=True)
    return w1_shard - LR * g1, w2_shard - LR * g2, jax.lax.psum(loss, "fsdp")


forward = jax.jit(shard_map(step, mesh=mesh,
                            in_specs=(P("fsdp"), P("fsdp"), P("fsdp"), P("fsdp")),
                            out_specs=(P("fsdp"), P("fsdp"), P())))


def get_inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((D, H), dtype=np.float32) / D ** 0.5,
            rng.standard_normal((H, D), dtype=np.float32) / H ** 0.5,
            rng.standard_normal((B, D), dtype=np.float32),
            rng.standard_normal((B, D), dtype=np.float32)]
