"""Masks built in a program (docs/insight.md): the same causal attention written as PyTorch's
SDPA(is_causal=True), by hand in PyTorch (masked_fill of a triu, a tril of ones, where on an
arange comparison, an additive -inf mask) and in JAX (jnp.tril, an iota comparison) gives
the same two figures: the live MACs B*H*S*(S+1)/2*D per contraction and the dense MACs
B*H*S*S*D per contraction. Each graph is executed and compared with the framework's output;
a mask the program does not make structural (an input) changes nothing; the cache-aware level
of a causal program moves less than the same program unmasked."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import solar  # noqa: E402
from solar.programs import ProgramOptions, analyze_file  # noqa: E402

B, H, S, D = 2, 3, 16, 8

LIVE = 2 * B * H * S * (S + 1) // 2 * D  # q k^T and p v, each over the points j <= i
DENSE = 2 * B * H * S * S * D  # the same two contractions over their whole boxes

HEADER = f"""
import math
import torch
import torch.nn as nn
B, H, S, D = {B}, {H}, {S}, {D}

def get_inputs():
    return [torch.randn(B, H, S, D), torch.randn(B, H, S, D), torch.randn(B, H, S, D)]

def get_init_inputs():
    return []

def scores(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])

class Model(nn.Module):
    def forward(self, q, k, v):
"""

TORCH_FORMS = {
    "sdpa": "return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)",
    "masked_fill_triu": """s = scores(q, k)
        future = torch.triu(torch.ones(S, S, dtype=torch.bool), diagonal=1)
        return torch.softmax(s.masked_fill(future, float("-inf")), dim=-1) @ v""",
    "tril_of_ones": """s = scores(q, k)
        keep = torch.tril(torch.ones(S, S))
        return torch.softmax(s.masked_fill(keep == 0, float("-inf")), dim=-1) @ v""",
    "where_on_arange": """s = scores(q, k)
        i = torch.arange(S).view(S, 1)
        j = torch.arange(S).view(1, S)
        return torch.softmax(torch.where(j <= i, s, float("-inf")), dim=-1) @ v""",
    "additive_minus_inf": """s = scores(q, k)
        bias = torch.full((S, S), float("-inf")).triu(1)
        return torch.softmax(s + bias, dim=-1) @ v""",
}


def torch_program(tmp_path, name: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER + "        " + TORCH_FORMS[name] + "\n")
    return str(path)


@pytest.fixture(autouse=True)
def _threads():
    n = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(n)


@pytest.mark.parametrize("name", sorted(TORCH_FORMS))
def test_torch_forms_give_the_live_and_dense_macs(tmp_path, name):
    r = analyze_file(torch_program(tmp_path, name), ProgramOptions(validate=True, crosscheck=True))
    report = r.report
    assert report.coverage.unanalyzed == 0
    assert int(report.totals.macs) == LIVE
    assert int(report.totals.macs_dense) == DENSE
    assert r.validation["status"] == "passed", r.validation
    # FlopCounterMode counts the whole box; the difference is explained, not a disagreement.
    crosscheck = report["crosscheck"]
    assert crosscheck["status"] in ("agree", "explained"), crosscheck
    assert all(op["agree"] or op["explained"] for op in crosscheck["per_op"]), crosscheck


def jax_forms():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def scores(q, k):
        return jnp.einsum("bhid,bhjd->bhij", q, k) / np.sqrt(D)

    def tril(q, k, v):
        s = jnp.where(jnp.tril(jnp.ones((S, S), bool)), scores(q, k), -jnp.inf)
        return jnp.einsum("bhij,bhjd->bhid", jax.nn.softmax(s, axis=-1), v)

    def iota(q, k, v):
        i = jax.lax.broadcasted_iota(jnp.int32, (S, S), 0)
        j = jax.lax.broadcasted_iota(jnp.int32, (S, S), 1)
        s = jnp.where(j <= i, scores(q, k), -jnp.inf)
        return jax.nn.softmax(s, axis=-1) @ v

    return {"tril": tril, "iota": iota}


@pytest.mark.parametrize("name", ["tril", "iota"])
def test_jax_forms_give_the_same_figures(name):
    fn = jax_forms()[name]
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((B, H, S, D)).astype(np.float32) for _ in range(3))
    report = solar.analyze_jax(fn, q, k, v, validate=True)
    assert report.coverage.unanalyzed == 0
    assert int(report.totals.macs) == LIVE
    assert int(report.totals.macs_dense) == DENSE
    assert report.validation["status"] == "passed", report.validation


def test_a_mask_given_as_an_input_is_not_structural(tmp_path):
    """The program cannot prove what an input mask holds: every point counts."""
    path = tmp_path / "input_mask.py"
    path.write_text(textwrap.dedent(f"""
        import math
        import torch
        import torch.nn as nn
        B, H, S, D = {B}, {H}, {S}, {D}

        def get_inputs():
            return [torch.randn(B, H, S, D), torch.randn(B, H, S, D), torch.randn(B, H, S, D),
                    torch.tril(torch.ones(S, S)) == 0]

        def get_init_inputs():
            return []

        class Model(nn.Module):
            def forward(self, q, k, v, future):
                s = q @ k.transpose(-2, -1) / math.sqrt(D)
                return torch.softmax(s.masked_fill(future, float("-inf")), dim=-1) @ v
    """))
    r = analyze_file(str(path), ProgramOptions(crosscheck=False))
    assert int(r.report.totals.macs) == int(r.report.totals.macs_dense) == DENSE


def test_the_cache_aware_level_moves_less_for_the_causal_form(tmp_path):
    """Live-region tiling: at a small on-chip capacity the causal program's scores are read
    and written only on and below the diagonal, so its ski-slope lies under the unmasked one's
    at every capacity and strictly under it somewhere, and never under the compulsory bytes."""
    causal = analyze_file(torch_program(tmp_path, "masked_fill_triu"),
                          ProgramOptions(crosscheck=False)).report
    dense_path = tmp_path / "dense.py"
    dense_path.write_text(HEADER + "        return torch.softmax(scores(q, k), dim=-1) @ v\n")
    dense = analyze_file(str(dense_path), ProgramOptions(crosscheck=False)).report
    a, b = causal.ski_slope, dense.ski_slope
    assert list(a.capacities_bytes) == list(b.capacities_bytes)
    pairs = list(zip(a.attainable_bytes, b.attainable_bytes))
    assert all(x <= y for x, y in pairs)
    assert any(x < y for x, y in pairs)
    assert min(a.attainable_bytes) >= int(causal.totals.bytes_fused)
