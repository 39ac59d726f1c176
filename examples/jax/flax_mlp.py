"""A Flax (linen) MLP: Dense, ReLU, Dense (Solar example). Solar builds
Model(*get_init_inputs()) and initializes it with jax.random.PRNGKey(0).

MACs: B*(IN*HID + HID*OUT). Compulsory bytes (fp32):
4*(B*IN + IN*HID + HID + HID*OUT + OUT + B*OUT).
"""
import numpy as np
import flax.linen as nn
import jax

B, IN, HID, OUT = 32, 784, 256, 10


class Model(nn.Module):
    hidden: int
    out: int

    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(self.hidden)(x))
        return nn.Dense(self.out)(x)


def get_init_inputs():
    return [HID, OUT]


def get_inputs():
    return [np.random.default_rng(1).standard_normal((B, IN), np.float32)]
