"""Random numbers inside a jitted JAX program: a projection, dropout drawn from a key passed
in (threefry2x32 split + bernoulli) and Gaussian noise from a key folded in place (Solar
example). Solar lowers the draws to threefry's integer ops, so validation reproduces JAX's
bits exactly.

MACs: B*D*F. Compulsory bytes (fp32): 4*(B*D + D*F + B*F) and the key, 2 uint32 words.
"""
import numpy as np
import jax
import jax.numpy as jnp

B, D, F = 16, 64, 48
RATE = 0.25  # dropout probability


def get_inputs():
    rng = np.random.default_rng(3)
    return [rng.standard_normal((B, D), np.float32), rng.standard_normal((D, F), np.float32),
            np.asarray(jax.random.PRNGKey(11))]


def forward(x, w, key):
    drop_key, noise_key = jax.random.split(key)
    h = x @ w
    keep = jax.random.bernoulli(drop_key, 1.0 - RATE, h.shape)
    h = jnp.where(keep, h / (1.0 - RATE), 0.0)
    return h + 0.01 * jax.random.normal(jax.random.fold_in(noise_key, 1), h.shape)
