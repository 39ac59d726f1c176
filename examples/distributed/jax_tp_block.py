"""A tensor-parallel transformer block written with shard_map over DEVICES host devices (mesh
axis "tp"), the block of torch_tp_block.py: the query, key and value projections and the
MLP's up projection column-parallel (each rank holds HEADS/N heads and H/N hidden columns),
the attention output and the MLP's down projection row-parallel, each followed by a psum
that completes its partial sums (an all-reduce of S x D elements). The norms run
replicated; attention is causal (`jax.nn.dot_product_attention(..., is_causal=True)`).
Per rank: the projections' 4 * S * D * D / N MACs, attention's
2 * (HEADS / N) * (D / HEADS) * S * (S + 1) / 2 (the live causal pairs), the MLP's
2 * S * D * H / N; two all-reduces of S * D * 4 bytes.

    solar analyze examples/distributed/jax_tp_block.py
    solar validate examples/distributed/jax_tp_block.py --set DEVICES=2
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import shard_map
from jax.sharding import Mesh, PartitionSpec as P

DEVICES = 4  # the mesh's size: Solar captures each rank on this many host devices
S, D, HEADS, H = 16, 64, 4, 256  # tokens, model width, attention heads, MLP hidden width

mesh = Mesh(np.array(jax.devices()[:DEVICES]), ("tp",))


def norm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + 1e-5) * g + b


def block(x, g1, b1, wq, wk, wv, wo, g2, b2, wu, wd):
    h = norm(x, g1, b1)
    q, k, v = ((h @ w).reshape(S, -1, D // HEADS) for w in (wq, wk, wv))  # this rank's heads
    a = jax.nn.dot_product_attention(q, k, v, is_causal=True)  # [S, HEADS/N, D/HEADS]
    x = x + jax.lax.psum(a.reshape(S, -1) @ wo, "tp")  # partial [S, D] sums, all-reduced
    return x + jax.lax.psum(jax.nn.relu(norm(x, g2, b2) @ wu) @ wd, "tp")


col, row = P(None, "tp"), P("tp", None)
forward = jax.jit(shard_map(block, mesh=mesh, out_specs=P(),
                            in_specs=(P(), P(), P(), col, col, col, row, P(), P(), col, row)))


def get_inputs():
    rng = np.random.default_rng(0)

    def w(rows, cols):
        return rng.standard_normal((rows, cols), dtype=np.float32) / rows ** 0.5

    ones, zeros = np.ones(D, np.float32), np.zeros(D, np.float32)
    return [rng.standard_normal((S, D), dtype=np.float32), ones, zeros,
            w(D, D), w(D, D), w(D, D), w(D, D), ones, zeros, w(D, H), w(H, D)]
