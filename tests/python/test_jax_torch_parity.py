"""The same computation written in PyTorch and in JAX must get the same MACs and the same
fused SOL: the two frontends record different ops (aten addmm/convolution vs lax
dot_general/conv_general_dilated) but describe the same work and the same compulsory
traffic.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import solar  # noqa: E402

torch.set_num_threads(2)
ARCH = "H100_SXM"


def _jax(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return solar.analyze_jax(fn, *args, arch=ARCH)


def _same(rt, rj):
    assert rt.coverage.unanalyzed == 0 and rj.coverage.unanalyzed == 0
    assert int(rt.totals.macs) == int(rj.totals.macs)
    assert int(rt.totals.bytes_fused) == int(rj.totals.bytes_fused)
    ft = rt.devices[ARCH].fused.seconds
    fj = rj.devices[ARCH].fused.seconds
    assert ft == pytest.approx(fj, rel=1e-12)


def test_mlp_same_macs_and_fused_sol():
    B, D, F = 32, 256, 1024
    rng = np.random.default_rng(0)
    x = rng.standard_normal((B, D), dtype=np.float32)
    w1 = rng.standard_normal((F, D), dtype=np.float32)
    b1 = np.zeros(F, np.float32)
    w2 = rng.standard_normal((D, F), dtype=np.float32)
    b2 = np.zeros(D, np.float32)

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(D, F)
            self.fc2 = torch.nn.Linear(F, D)

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x)))

    rt = solar.analyze(MLP(), torch.from_numpy(x), arch=ARCH)

    def mlp(x, w1, b1, w2, b2):
        return jax.nn.relu(x @ w1.T + b1) @ w2.T + b2

    rj = _jax(mlp, x, w1, b1, w2, b2)
    assert int(rj.totals.macs) == B * D * F * 2  # two layers of B*D*F
    _same(rt, rj)


def test_convolution_same_macs_and_fused_sol():
    N, C, H, K, G = 2, 16, 14, 32, 4
    rng = np.random.default_rng(1)
    x = rng.standard_normal((N, C, H, H), dtype=np.float32)
    w = rng.standard_normal((K, C // G, 3, 3), dtype=np.float32)

    conv = torch.nn.Conv2d(C, K, 3, stride=2, padding=1, groups=G, bias=False)
    rt = solar.analyze(conv, torch.from_numpy(x), arch=ARCH)

    def f(x, w):
        return jax.lax.conv_general_dilated(x, w, (2, 2), ((1, 1), (1, 1)),
                                            dimension_numbers=("NCHW", "OIHW", "NCHW"),
                                            feature_group_count=G)

    rj = _jax(f, x, w)
    P = (H + 2 - 3) // 2 + 1
    assert int(rj.totals.macs) == N * K * P * P * (C // G) * 9
    _same(rt, rj)
