"""The JAX example programs (examples/jax/*.py) through the whole frontend: load, capture the
jaxpr, lower with the C++ jax table, analyze, validate by execution, and show XLA's cost
analysis beside Solar's.

Every example must lower completely (zero unanalyzed ops); its MACs and its compulsory
bytes (docs/cost.md "Whole graphs": each graph input and weight read once — a gathered
table only its gathered rows — and each output written once) must equal formulas written
here from the program's module-level constants; Solar's executor must reproduce the
outputs JAX computed.
"""

from __future__ import annotations

import warnings

import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("flax")

from conftest import EXAMPLES  # noqa: E402

from solar.frontends.jax.program import load_program  # noqa: E402
from solar.programs import ProgramOptions, analyze_file  # noqa: E402

F32 = 4  # bytes per float32 / int32 element


def _conv_out(n, k, stride, dil):  # VALID output extent
    return (n - (k - 1) * dil - 1) // stride + 1


CASES = {
    "matmul_chain.py": (
        lambda m: m.M * m.K * m.N + m.M * m.N * m.P,
        lambda m: F32 * (m.M * m.K + m.K * m.N + m.N * m.P + m.M * m.P)),
    "conv_groups.py": (
        # grouped SAME conv: N*H*W*K*(C/G)*R*R; depthwise stride-2 dilation-2 conv: N*P*P*K*R*R
        lambda m: (m.N * m.H * m.W * m.K * (m.C // m.G) * m.R * m.R
                   + m.N * _conv_out(m.H, m.R, 2, 2) ** 2 * m.K * m.R * m.R),
        lambda m: F32 * (m.N * m.H * m.W * m.C + m.R * m.R * (m.C // m.G) * m.K + m.K
                         + m.R * m.R * m.K + m.N * _conv_out(m.H, m.R, 2, 2) ** 2 * m.K)),
    "attention_causal.py": (
        # Q K^T and P V on the causal triangle's live L*(L+1)/2 (query, key) pairs: the
        # tril/where mask is structural; the dense count, every score, is macs_dense
        lambda m: 2 * m.B * m.H * (m.L * (m.L + 1) // 2) * m.D,
        lambda m: F32 * 4 * m.B * m.H * m.L * m.D),  # q, k, v in, output out
    "scan_rnn.py": (
        lambda m: m.T * m.B * (m.I * m.Hd + m.Hd * m.Hd),  # every one of the T iterations
        lambda m: F32 * (m.T * m.B * m.I + m.I * m.Hd + m.Hd * m.Hd + m.B * m.Hd
                         + m.T * m.B * m.Hd)),
    "mlp_layernorm.py": (
        lambda m: 2 * m.B * m.D * m.F,
        lambda m: F32 * (2 * m.B * m.D + 2 * m.D * m.F + m.F + 3 * m.D)),
    "vmap_matvec.py": (
        lambda m: m.B * m.M * m.N,
        lambda m: F32 * (m.M * m.N + m.B * m.N + m.B * m.M)),
    "nested_jit.py": (
        lambda m: 3 * m.B * m.D * m.D,
        lambda m: F32 * (2 * m.B * m.D + 3 * m.D * m.D)),
    "gather_heavy.py": (
        lambda m: m.B * m.S * m.D * m.C,
        # the table only where gathered (distinct-index assumption, capped at its size), ids,
        # projection; outputs: the table-shaped gradient and the picked scores
        lambda m: F32 * (min(m.B * m.S * m.D, m.V * m.D) + m.B * m.S + m.D * m.C + m.V * m.D
                         + m.B * m.S)),
    "rng_dropout.py": (
        lambda m: m.B * m.D * m.F,
        lambda m: F32 * (m.B * m.D + m.D * m.F + m.B * m.F) + 2 * 4),  # + the uint32[2] key
    "flax_mlp.py": (
        lambda m: m.B * (m.IN * m.HID + m.HID * m.OUT),
        lambda m: F32 * (m.B * m.IN + m.IN * m.HID + m.HID + m.HID * m.OUT + m.OUT
                         + m.B * m.OUT)),
    "flax_cnn.py": (
        lambda m: (m.B * m.H * m.W * m.C1 * m.CIN * 9
                   + m.B * (m.H // 2) * (m.W // 2) * m.C2 * m.C1 * 9 + m.B * m.C2 * m.OUT),
        lambda m: F32 * (m.B * m.H * m.W * m.CIN + 9 * m.CIN * m.C1 + m.C1 + 9 * m.C1 * m.C2
                         + m.C2 + m.C2 * m.OUT + m.OUT + m.B * m.OUT)),
    "flax_transformer.py": (
        lambda m: m.LAYERS * (12 * m.B * m.S * m.D * m.D + 2 * m.B * m.S * m.S * m.D),
        # per layer: two layer norms (2D each), q/k/v/out kernels (4 D*D) and biases (4 D),
        # MLP kernels (8 D*D) and biases (5 D); input and output B*S*D
        lambda m: F32 * (m.LAYERS * (12 * m.D * m.D + 13 * m.D) + 2 * m.B * m.S * m.D)),
}


def test_every_example_has_a_case():
    assert sorted(p.name for p in EXAMPLES.joinpath("jax").glob("*.py")) == sorted(CASES)


_RESULTS = {}


def _analyzed(name):
    """(module, ProgramAnalysis) of an example, analyzed once per test session with
    validation and the XLA cross-check."""
    if name not in _RESULTS:
        path = str(EXAMPLES / "jax" / name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            result = analyze_file(path, ProgramOptions(validate=True, crosscheck=True))
        _RESULTS[name] = (load_program(path), result)
    return _RESULTS[name]


@pytest.mark.parametrize("name", sorted(CASES))
def test_example(name):
    macs, _ = CASES[name]
    mod, result = _analyzed(name)
    r = result.report
    assert result.warnings == []
    assert r.coverage.unanalyzed == 0
    assert r.program.frontend == "jax"
    assert int(r.totals.macs) == macs(mod)
    v = result.validation
    assert v["status"] == "passed", v
    xla = r.get_section("xla")
    assert xla["status"] == "compared", xla
    assert xla["xla"]["flops"] > 0
    if name == "attention_causal.py":
        assert int(r.totals.macs_dense) == 2 * mod.B * mod.H * mod.L * mod.L * mod.D
    if name == "scan_rnn.py":
        # XLA counts the while loop a scan becomes once; Solar every iteration
        assert xla["solar"]["flops"] > 2 * xla["xla"]["flops"]
        assert any("once" in n for n in xla["notes"])
    elif name in ("matmul_chain.py", "nested_jit.py", "vmap_matvec.py"):
        # contraction-dominated without loops: the two counters agree within 5%
        assert xla["ratios"]["flops_solar_over_xla"] == pytest.approx(1.0, rel=0.05)


@pytest.mark.parametrize("name", sorted(CASES))
def test_example_compulsory_bytes(name):
    mod, result = _analyzed(name)
    assert int(result.report.totals.bytes_fused) == CASES[name][1](mod)
