"""A chain of contractions in JAX: a matmul followed by an einsum (Solar example).

MACs: M*K*N + M*N*P. Compulsory bytes (fp32): 4*(M*K + K*N + N*P + M*P).
"""
import numpy as np
import jax
import jax.numpy as jnp

M, K, N, P = 64, 128, 96, 32


def get_inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((M, K), np.float32), rng.standard_normal((K, N), np.float32),
            rng.standard_normal((N, P), np.float32)]


def forward(a, b, c):
    ab = a @ b
    return jnp.einsum("mn,np->mp", ab, c)
