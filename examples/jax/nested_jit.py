"""Nested `jax.jit`: a jitted layer called from a jitted block called from a jitted
program; the recorder inlines every level (Solar example).

MACs: 3*B*D*D. Compulsory bytes (fp32): 4*(B*D + 3*D*D + B*D).
"""
import numpy as np
import jax
import jax.numpy as jnp

B, D = 32, 64


def get_inputs():
    rng = np.random.default_rng(6)
    return [rng.standard_normal((B, D), np.float32)] + [
        0.1 * rng.standard_normal((D, D), np.float32) for _ in range(3)]


@jax.jit
def layer(x, w):
    return jax.nn.relu(x @ w)


@jax.jit
def block(x, w1, w2):
    return layer(layer(x, w1), w2)


def forward(x, w1, w2, w3):
    return jax.jit(lambda a: layer(block(a, w1, w2), w3))(x)
