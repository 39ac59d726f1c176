"""A grouped 2-D convolution (feature_group_count=4, NHWC/HWIO, SAME padding) with bias and
ReLU, then a strided, dilated depthwise convolution (Solar example).

MACs: N*H*W*K*(C/G)*R*S for the first (padded taps included, as XLA computes them) and
N*P*Q*K*R*S for the depthwise one (P = Q = 6: 16 rows, 5-wide dilated window, stride 2).
"""
import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

N, H, W, C, K, G, R = 2, 16, 16, 32, 64, 4, 3


def get_inputs():
    rng = np.random.default_rng(1)
    return [rng.standard_normal((N, H, W, C), np.float32),
            rng.standard_normal((R, R, C // G, K), np.float32),
            rng.standard_normal((K,), np.float32), rng.standard_normal((R, R, 1, K), np.float32)]


def forward(x, w, b, dw):
    y = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                 feature_group_count=G)
    y = jax.nn.relu(y + b)
    return lax.conv_general_dilated(y, dw, (2, 2), "VALID", rhs_dilation=(2, 2),
                                    dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                    feature_group_count=K)
