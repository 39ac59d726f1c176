"""A pre-norm MLP block: layer norm, dense, GELU, dense, residual (Solar example).

MACs: 2*B*D*F. Compulsory bytes (fp32): 4*(2*B*D + 2*D*F + F + 3*D).
"""
import numpy as np
import jax
import jax.numpy as jnp

B, D, F = 32, 128, 512


def get_inputs():
    rng = np.random.default_rng(4)
    return [rng.standard_normal((B, D), np.float32),
            0.05 * rng.standard_normal((D, F), np.float32), np.zeros((F,), np.float32),
            0.05 * rng.standard_normal((F, D), np.float32), np.zeros((D,), np.float32),
            np.ones((D,), np.float32), np.zeros((D,), np.float32)]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * gamma + beta


def forward(x, w1, b1, w2, b2, gamma, beta):
    h = jax.nn.gelu(layer_norm(x, gamma, beta) @ w1 + b1)
    return x + h @ w2 + b2
