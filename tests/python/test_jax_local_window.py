"""jax.nn.dot_product_attention with local_window_size (docs/jax-frontend.md, "Masks"): the
window's positions are np.arange arrays the jaxpr closes over, recorded as the iota that
computes them, so the mask is structural and both contractions count the band's live points."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import solar  # noqa: E402

B, T, N, H = 1, 32, 2, 8  # batch, tokens, heads, head dim (JAX's B, T, N, H layout)


def band(window_left: int, window_right: int, causal: bool) -> int:
    """Live (query, key) pairs of keys k in [q - left, q + right] (k <= q when causal)."""
    right = 0 if causal else window_right
    return sum(min(q + right, T - 1) - max(q - window_left, 0) + 1 for q in range(T))


def inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((B, T, N, H)).astype(np.float32) for _ in range(3)]


@pytest.mark.parametrize("window,causal", [((7, 0), True), ((3, 3), False), ((5, 2), True)])
def test_local_window_counts_the_band(window, causal):
    def attention(q, k, v):
        return jax.nn.dot_product_attention(q, k, v, is_causal=causal,
                                            local_window_size=window, implementation="xla")

    report = solar.analyze_jax(attention, *inputs(), validate=True)
    assert report.coverage.unanalyzed == 0
    # Q K^T and P V: H MACs per live (query, key) pair and head
    assert int(report.totals.macs) == 2 * B * N * band(*window, causal) * H
    assert int(report.totals.macs_dense) == 2 * B * N * T * T * H
    assert report.validation["status"] == "passed", report.validation


def test_a_window_of_seven_back_is_the_sliding_band_of_eight():
    """local_window_size=(W - 1, 0) with is_causal is a sliding window of W keys: the live
    pairs are W*T - W*(W-1)/2 (the band of tests/python/test_masks_band.py)."""
    W = 8
    assert band(W - 1, 0, True) == W * T - W * (W - 1) // 2


def test_an_arange_the_program_closes_over_is_computed_not_read():
    positions = np.arange(T, dtype=np.int32)

    def masked_scores(q, k):
        s = jax.numpy.einsum("btnh,bsnh->bnts", q, k)
        p = jax.numpy.asarray(positions)  # a constant of the jaxpr, compared in the graph
        keep = p[:, None] >= p[None, :]
        return jax.numpy.where(keep, s, -jax.numpy.inf)

    q, k, _ = inputs()
    report = solar.analyze_jax(masked_scores, q, k, validate=True)
    assert int(report.totals.macs) == B * N * T * (T + 1) // 2 * H
    assert report.validation["status"] == "passed", report.validation
