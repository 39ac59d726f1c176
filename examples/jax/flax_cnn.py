"""A small Flax CNN (NHWC): Conv 3x3, ReLU, max-pool 2x2, Conv 3x3, ReLU, global average,
Dense (Solar example).

MACs: B*H*W*C1*CIN*9 + B*(H/2)*(W/2)*C2*C1*9 + B*C2*OUT (SAME convolutions: padded taps
included).
"""
import numpy as np
import flax.linen as nn
import jax
import jax.numpy as jnp

B, H, W, CIN, C1, C2, OUT = 2, 32, 32, 3, 16, 32, 10


class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Conv(C1, (3, 3))(x))
        x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = nn.relu(nn.Conv(C2, (3, 3))(x))
        x = jnp.mean(x, axis=(1, 2))
        return nn.Dense(OUT)(x)


def get_init_inputs():
    return []


def get_inputs():
    return [np.random.default_rng(1).standard_normal((B, H, W, CIN), np.float32)]
