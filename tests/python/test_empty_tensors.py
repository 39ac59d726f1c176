"""Zero extents are legal: a tensor or view with a zero-size dimension is zero work and zero
bytes, and every consumer treats it as empty (a `cat` with an empty piece, a slice of
nothing, a reduction over nothing gives its identity). Real PyTorch and JAX programs,
analyzed completely and validated by the executor against the framework's outputs."""

from __future__ import annotations

import textwrap

import pytest

from solar.programs import ProgramOptions, analyze_file

B, T, D, E = 4, 6, 16, 8  # batch, tokens, input and output features

TORCH = f"""
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear({D}, {E}, bias=False)

    def forward(self, x, n):
        a, b = torch.tensor_split(x, [x.shape[1]], dim=1)  # b: [B, 0, D]
        y = self.lin(a)                          # [B, T, E]
        z = self.lin(b)                          # [B, 0, E]: zero work
        s = b.sum(dim=1)                         # [B, D]: the sum of nothing is 0
        c = torch.cat([y, z], dim=1)             # an empty piece
        e = x[:, 3:3]                            # a slice of nothing
        p = torch.einsum("bkd,bke->de", b, b)    # a contraction over nothing: zeros
        return c.relu() + s.mean() + e.sum() + p.sum(), n[:, :0].exp(), b.flip(1)

def get_inputs():
    return [torch.randn({B}, {T}, {D}), torch.randn(3, 5)]

def get_init_inputs():
    return []
"""

JAX = f"""
import jax
import jax.numpy as jnp

def forward(x, w, n):
    a, b = x[:, :{T}], x[:, {T}:]                 # b: [B, 0, D]
    y = a @ w                                     # [B, T, E]
    z = b @ w                                     # [B, 0, E]: zero work
    s = b.sum(axis=1)                             # [B, D]: zeros
    c = jnp.concatenate([y, z], axis=1)           # an empty piece
    p = jnp.einsum("bkd,bke->de", b, b)           # a contraction over nothing
    return jax.nn.relu(c) + s.mean() + p.sum(), jnp.exp(n[:, :0]), jnp.flip(b, 1)

def get_inputs():
    k = jax.random.PRNGKey(0)
    return [jax.random.normal(k, ({B}, {T}, {D})), jax.random.normal(k, ({D}, {E})),
            jax.random.normal(k, (3, 5))]
"""


@pytest.mark.parametrize("framework,source", [("torch", TORCH), ("jax", JAX)])
def test_empty_tensors_are_zero_work_and_validate(framework, source, tmp_path):
    pytest.importorskip(framework)
    path = tmp_path / f"empty_{framework}.py"
    path.write_text(textwrap.dedent(source))
    r = analyze_file(str(path), ProgramOptions(validate=True, crosscheck=False))
    assert r.warnings == []
    assert r.report.coverage.complete and r.report.coverage.unanalyzed == 0
    # Only the non-empty projection does work: the empty one and the empty contraction none
    assert r.report.totals.macs == B * T * D * E
    v = r.validation
    assert v["status"] == "passed", v
    shapes = sorted(tuple(o["shape"]) for o in v["outputs"])
    assert shapes == sorted([(B, T, E), (3, 0), (B, 0, D)])


def test_a_slice_of_nothing_reads_and_writes_nothing():
    import solar

    g = solar.parse_graph("""
        x = f32[8,16] input
        e = f32[8,0] move slice {starts=[0,5], ends=[8,5], steps=[1,1]} (x)
        y = f32[8,0]{output} einsum [i=8,j=0] none exp($0) (e[i,j]) -> [i,j]
        s = f32[8]{output} einsum [i=8,j=0] sum $0 (e[i,j]) -> [i]""")
    r = solar.analyze(g, arch="H100_SXM")
    ops = {o["name"]: o for o in r.to_dict()["ops"]}
    assert ops["e"]["bytes"] == 0
    assert ops["y"]["bytes"] == 0 and ops["y"]["special_ops"] == 0
    assert ops["s"]["bytes"] == 4 * 8  # the sums of nothing, written once
    assert r.coverage.complete and r.totals.macs == 0
