"""Re-association insight on real programs (docs/insight.md): the MLA decode example's two
groups with their MACs as formulas, every rewrite executed against the original graph on
random inputs, the report's section and text line, and a cross-check of the least MACs with
opt_einsum's optimal path for the same single einsum."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest
import torch

import solar
import solar.insight
from solar.frontends.torch.capture import capture
from solar.frontends.torch.lowering import lower

ROOT = pathlib.Path(__file__).resolve().parents[2]
MLA = ROOT / "examples" / "torch" / "mla_decode.py"


def load_mla():
    spec = importlib.util.spec_from_file_location("mla_decode", MLA)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def graph_of(model, *inputs) -> solar.Graph:
    graph, _ = lower(capture(model, *inputs), strict=True)
    return graph


def random_inputs(graph: solar.Graph, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {t.name: rng.standard_normal(t.shape).astype(np.float32)
            for t in graph.tensors if t.role.name in ("input", "weight")}


def outputs_agree(a: solar.Graph, b: solar.Graph, seed: int = 0) -> None:
    inputs = random_inputs(a, seed)
    want, got = solar.run(a, inputs), solar.run(b, inputs)
    assert want.keys() == got.keys() and want
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=2e-4, atol=2e-4 * np.abs(want[name]).max())


@pytest.fixture(scope="module")
def mla_small():
    """The example's model at test sizes (B, T, d, H, D, r) and its graph: the latent wider
    than a head (r > D), as in DeepSeek-V2, so absorbing W_q into W_uk does not pay."""
    mla = load_mla()
    B, T, d, H, D, r = 2, 24, 32, 2, 4, 16
    torch.manual_seed(0)
    model = mla.Model(d, H, D, r)
    graph = graph_of(model, torch.randn(B, d), torch.randn(B, T, r))
    return graph, (B, T, d, H, D, r)


def test_mla_both_groups_with_their_formulas(mla_small):
    graph, (B, T, d, H, D, r) = mla_small
    groups = solar.insight.reassociations(graph)
    by_leaves = {frozenset(g["leaves"]): g for g in groups}
    assert len(groups) == 2, groups
    scores = next(g for g in groups if {"w_q", "w_uk"} <= set(g["leaves"]))
    values = next(g for g in groups if {"w_uv", "w_o"} <= set(g["leaves"]))
    assert len(by_leaves) == 2
    # As written: q = x W_q (B*d*H*D), k = c W_uk (B*T*r*H*D), s = q k^T (B*H*T*D).
    assert scores["macs_as_written"] == B * d * H * D + B * T * r * H * D + B * H * T * D
    # Best: q = x W_q, q' = q W_uk^T per head (B*H*D*r), s = q' c^T (B*H*T*r).
    assert scores["macs_least"] == B * d * H * D + B * H * D * r + B * H * T * r
    # As written: v = c W_uv (B*T*r*H*D), o = p v (B*H*T*D), y = o W_o (B*H*D*d).
    assert values["macs_as_written"] == B * T * r * H * D + B * H * T * D + B * H * D * d
    # Best: p c (B*H*T*r), then W_uv per head (B*H*r*D), then W_o (B*H*D*d).
    assert values["macs_least"] == B * H * T * r + B * H * r * D + B * H * D * d
    assert scores["macs_absorbed"] == values["macs_absorbed"] == 0


def test_mla_with_a_narrow_latent_absorbs_the_weights():
    """r < D: W_q W_uk^T (d x H x r) is weight-only work, done once; each run pays
    x (W_q W_uk^T) and its meeting with the latents."""
    mla = load_mla()
    B, T, d, H, D, r = 2, 24, 32, 2, 16, 4
    graph = graph_of(mla.Model(d, H, D, r), torch.randn(B, d), torch.randn(B, T, r))
    scores = next(g for g in solar.insight.reassociations(graph) if "w_uk" in g["leaves"])
    assert scores["macs_least"] == B * d * H * r + B * H * T * r
    assert scores["macs_absorbed"] == d * H * D * r
    index = solar.insight.reassociations(graph).index(scores)
    outputs_agree(graph, solar.insight.reassociated(graph, index))


def test_mla_rewrites_compute_the_same_function(mla_small):
    graph, _ = mla_small
    groups = solar.insight.reassociations(graph)
    for index in range(len(groups)):
        rewritten = solar.insight.reassociated(graph, index)
        outputs_agree(graph, rewritten, seed=index)


def test_mla_at_the_examples_sizes_saves_at_least_1_9x():
    """The example's own sizes, from its formula (DeepSeek-V2-Lite's attention, T = 4096)."""
    mla = load_mla()
    B, T, d, H, D, r = mla.batch, mla.cache, mla.d_model, mla.heads, mla.head_dim, mla.latent
    model = mla.Model(*mla.get_init_inputs())
    graph = graph_of(model, *mla.get_inputs())
    groups = solar.insight.reassociations(graph)
    written = sum(g["macs_as_written"] for g in groups)
    least = sum(g["macs_least"] for g in groups)
    assert written == 2 * B * T * r * H * D + 2 * B * H * T * D + B * d * H * D + B * H * D * d
    assert least == 2 * B * H * T * r + 2 * B * H * D * r + B * d * H * D + B * H * D * d
    assert written / least >= 1.9


def test_report_section_and_text_line(mla_small):
    graph, _ = mla_small
    report = solar.analyze(graph, arch=["H100_SXM", "B200"])
    section = report["insights"]["reassociation"]
    assert len(section) == 2
    for g in section:
        assert g["saving"] == pytest.approx(g["macs_as_written"] / g["macs_least"])
        assert g["ops"] and g["expression"] and g["order"]
        for device in ("H100_SXM", "B200"):
            times = g["devices"][device]
            assert times["fused_seconds_after"] <= times["fused_seconds_before"]
            assert times["cache_aware_seconds_after"] <= times["cache_aware_seconds_before"]
    assert "re-association" in report.table()


def test_a_chain_already_in_its_best_order_is_reported_without_a_line():
    """(x W1) W2 with a narrowing first step: already optimal, so no saving and no line."""
    x, w1, w2 = torch.randn(64, 32), torch.randn(32, 4), torch.randn(4, 48)
    graph = graph_of(lambda a, b, c: (a @ b) @ c, x, w1, w2)
    groups = solar.insight.reassociations(graph)
    assert len(groups) == 1
    assert groups[0]["macs_least"] == groups[0]["macs_as_written"] == 64 * 32 * 4 + 64 * 4 * 48
    assert "re-association" not in solar.analyze(graph).table()


@pytest.mark.parametrize("seed", range(6))
def test_random_matrix_chains_match_opt_einsum_and_execute(seed):
    """Chains of 3-6 matmuls written left to right: the least MACs equal opt_einsum's optimal
    path (its FLOP count halves to MACs for pure products), and the rewrite runs the same."""
    oe = pytest.importorskip("opt_einsum")
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 7))
    dims = [int(v) for v in rng.integers(2, 40, size=n + 1)]
    mats = [torch.randn(dims[i], dims[i + 1]) for i in range(n)]

    def chain(*ms):
        out = ms[0]
        for m in ms[1:]:
            out = out @ m
        return out

    graph = graph_of(chain, *mats)
    groups = solar.insight.reassociations(graph)
    assert len(groups) == 1
    letters = "abcdefgh"
    spec = ",".join(letters[i] + letters[i + 1] for i in range(n)) + "->" + letters[0] + letters[n]
    _, info = oe.contract_path(spec, *[m.numpy() for m in mats], optimize="optimal")
    # opt_einsum counts a product-sum step of size P as 2P FLOPs ("naive" cost 1 MAC = 2 FLOP)
    assert groups[0]["macs_least"] == int(info.opt_cost) // 2
    outputs_agree(graph, solar.insight.reassociated(graph, 0), seed=seed)
