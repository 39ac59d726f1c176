"""An Elman RNN as a `lax.scan` over time (Solar example): the body runs T times and Solar
counts every iteration (XLA's cost analysis counts the loop body once).

MACs: T*B*(I*Hd + Hd*Hd). Compulsory bytes (fp32): 4*(T*B*I + I*Hd + Hd*Hd + B*Hd + T*B*Hd).
"""
import numpy as np
import jax
import jax.numpy as jnp

T, B, I, Hd = 16, 8, 32, 64


def get_inputs():
    rng = np.random.default_rng(3)
    return [rng.standard_normal((T, B, I), np.float32),
            0.1 * rng.standard_normal((I, Hd), np.float32),
            0.1 * rng.standard_normal((Hd, Hd), np.float32),
            rng.standard_normal((B, Hd), np.float32)]


def forward(xs, wx, wh, h0):
    def step(h, x):
        h = jnp.tanh(x @ wx + h @ wh)
        return h, h

    _, ys = jax.lax.scan(step, h0, xs)
    return ys
