"""Gather-heavy code: an embedding lookup (gather), a projection, take_along_axis of the
best class (element gather) and a scatter-add back into a table-shaped buffer (Solar
example).

MACs: B*S*D*C. Compulsory bytes: the table, ids (int32), projection, and the two outputs.
"""
import numpy as np
import jax
import jax.numpy as jnp

V, D, B, S, C = 100, 32, 4, 16, 8


def get_inputs():
    rng = np.random.default_rng(7)
    return [rng.standard_normal((V, D), np.float32), rng.integers(0, V, (B, S), dtype=np.int32),
            rng.standard_normal((D, C), np.float32)]


def forward(table, ids, w):
    e = table[ids]
    s = e @ w
    best = jnp.argmax(s, axis=-1)
    picked = jnp.take_along_axis(s, best[..., None], axis=-1)
    grad = jnp.zeros_like(table).at[ids].add(e * picked)
    return grad, picked
