"""Causal self-attention written with jnp: scores, a lower-triangular mask, softmax, values
(Solar example).

MACs: 2*B*H*(L*(L+1)/2)*D on the causal triangle Solar recognizes from tril + where
(the dense 2*B*H*L*L*D, every score JAX computes, is reported as macs_dense).
Compulsory bytes (fp32): 4*4*B*H*L*D (q, k, v read, the output written).
"""
import numpy as np
import jax
import jax.numpy as jnp

B, H, L, D = 2, 4, 64, 32


def get_inputs():
    rng = np.random.default_rng(2)
    return [rng.standard_normal((B, H, L, D), np.float32) for i in range(3)]


def forward(q, k, v):
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(jnp.float32(D))
    mask = jnp.tril(jnp.ones((L, L), dtype=bool))
    s = jnp.where(mask, s, -jnp.inf)
    p = jax.nn.softmax(s, axis=-1)
    return jnp.einsum("bhqk,bhkd->bhqd", p, v)
