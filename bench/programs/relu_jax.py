"""One op in JAX (bench/startup.py): the JAX frontend's fixed cost of `solar analyze`."""

import jax
import jax.numpy as jnp
import numpy as np


def get_inputs():
    return [np.random.default_rng(0).standard_normal((64, 64), np.float32)]


def forward(x):
    return jax.nn.relu(x)
