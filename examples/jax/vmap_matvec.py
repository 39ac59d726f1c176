"""A per-example computation batched with `jax.vmap`: the jaxpr arrives batched, so the
matrix-vector product becomes one batched dot_general (Solar example).

MACs: B*M*N. Compulsory bytes (fp32): 4*(M*N + B*N + B*M).
"""
import numpy as np
import jax
import jax.numpy as jnp

B, M, N = 16, 64, 128


def get_inputs():
    rng = np.random.default_rng(5)
    return [rng.standard_normal((M, N), np.float32), rng.standard_normal((B, N), np.float32)]


def forward(w, xs):
    def one(x):
        return jnp.tanh(w @ x)

    return jax.vmap(one)(xs)
