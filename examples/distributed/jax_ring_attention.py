"""Ring attention written with shard_map over DEVICES host devices (mesh axis "sp"): each
rank holds S/N queries, keys and values; N steps each attend the local queries to the key
and value block at hand (an online softmax: running max and sum), then pass that block to
the next rank with ppermute (a send and a recv of 2 * S/N * Dh * 4 bytes per step; the last
step passes nothing). Non-causal, one head.

    solar analyze examples/distributed/jax_ring_attention.py
    solar validate examples/distributed/jax_ring_attention.py --set DEVICES=2
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import shard_map
from jax.sharding import Mesh, PartitionSpec as P

DEVICES = 4  # the mesh's size: Solar captures each rank on this many host devices
S, DH = 64, 32  # sequence length (split over the ranks), head width

mesh = Mesh(np.array(jax.devices()[:DEVICES]), ("sp",))


def ring_attention(q, k, v):
    n = DEVICES
    ring = [(j, (j + 1) % n) for j in range(n)]  # each rank passes its block to the next
    m = jnp.full((q.shape[0], 1), -jnp.inf, q.dtype)  # running max
    l = jnp.zeros((q.shape[0], 1), q.dtype)  # running sum of exponentials
    acc = jnp.zeros_like(q)
    for step in range(n):  # a Python loop: every step's ops and transfers are in the graph
        s = q @ k.T / DH ** 0.5
        m_new = jnp.maximum(m, jnp.max(s, axis=1, keepdims=True))
        p = jnp.exp(s - m_new)
        scale = jnp.exp(m - m_new)
        l = l * scale + jnp.sum(p, axis=1, keepdims=True)
        acc = acc * scale + p @ v
        m = m_new
        if step < n - 1:
            k = jax.lax.ppermute(k, "sp", ring)
            v = jax.lax.ppermute(v, "sp", ring)
    return acc / l


forward = jax.jit(shard_map(ring_attention, mesh=mesh, in_specs=(P("sp"), P("sp"), P("sp")),
                            out_specs=P("sp")))


def get_inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((S, DH), dtype=np.float32) for _ in range(3)]
