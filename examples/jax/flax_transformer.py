"""A Flax transformer encoder block: LayerNorm, multi-head self-attention, residual,
LayerNorm, MLP (4x, GELU), residual (Solar example).

MACs: 12*B*S*D*D + 2*B*S*S*D (Q, K, V and output projections 4*B*S*D*D, scores and
values 2*B*S*S*D, the MLP 8*B*S*D*D).
"""
import numpy as np
import flax.linen as nn
import jax

B, S, D, HEADS, LAYERS = 2, 64, 128, 4, 1


class Block(nn.Module):
    dim: int
    heads: int

    @nn.compact
    def __call__(self, x):
        h = nn.LayerNorm()(x)
        x = x + nn.MultiHeadDotProductAttention(num_heads=self.heads)(h, h)
        h = nn.LayerNorm()(x)
        h = nn.Dense(4 * self.dim)(h)
        return x + nn.Dense(self.dim)(nn.gelu(h))


class Model(nn.Module):
    dim: int
    heads: int
    layers: int

    @nn.compact
    def __call__(self, x):
        for _ in range(self.layers):
            x = Block(self.dim, self.heads)(x)
        return x


def get_init_inputs():
    return [D, HEADS, LAYERS]


def get_inputs():
    return [np.random.default_rng(1).standard_normal((B, S, D), np.float32)]
