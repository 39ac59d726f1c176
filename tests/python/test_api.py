"""The Python API: parse/load/build graphs, analyze, the Report object, devices, errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import solar
from conftest import EXAMPLES, ROOT

GEMM_TEXT = """graph small
a = bf16[64,32]{dims="M,K"} input
b = bf16[32,16] weight
c = bf16[64,16]{output} einsum "mk,kn->mn" (a, b)
"""

# examples/transformer_block.solar
B, S, D, H, DH, F = 4, 1024, 1024, 16, 64, 4096
CAUSAL = B * H * S * (S + 1) // 2 * DH  # live points of QK^T and of P.V: the causal triangle
TRANSFORMER_MACS = 4 * B * S * D * D + 2 * B * S * D * F + 2 * CAUSAL  # QKVO + MLP + attention
# examples/conv_resnet.solar
N, C, K, P, Q, R, SS = 8, 64, 64, 56, 56, 3, 3
CONV_MACS = N * K * P * Q * C * R * SS

EXPECTED_MACS = [
    ("gemm.solar", 4096**3, "bf16"),  # M*N*K
    ("transformer_block.solar", TRANSFORMER_MACS, "bf16"),
    ("conv_resnet.solar", CONV_MACS, "f32"),
]


# ---- graphs --------------------------------------------------------------------------------


def test_parse_graph_exposes_tensors_and_ops():
    g = solar.parse_graph(GEMM_TEXT)
    assert g.name == "small"
    assert [t.name for t in g.tensors] == ["a", "b", "c"]
    a = g.tensor("a")
    assert a.shape == [64, 32]
    assert a.dtype == solar.DType.bf16
    assert a.role == solar.Role.input
    assert a.dims == ["M", "K"]
    assert a.num_elements == 64 * 32
    assert a.size_bytes == 64 * 32 * 2  # bf16
    assert g.tensor("c").role == solar.Role.output
    (op,) = g.ops
    assert op.kind == solar.OpKind.einsum
    assert g.input_names(op) == ["a", "b"]
    assert g.output_names(op) == ["c"]
    assert [g.tensor(i).name for i in op.inputs] == ["a", "b"]
    assert "small" in repr(g)


def test_graph_inspection_is_read_only():
    g = solar.parse_graph(GEMM_TEXT)
    with pytest.raises(AttributeError):
        g.tensor("a").name = "z"
    with pytest.raises(KeyError, match="no tensor named 'zz'"):
        g.tensor("zz")


def test_tensors_outlive_their_graph_reference():
    t = solar.parse_graph(GEMM_TEXT).tensors[0]  # the list keeps the graph alive
    assert t.name == "a"


@pytest.mark.parametrize("example", ["gemm.solar", "transformer_block.solar", "conv_resnet.solar"])
def test_text_and_json_forms_round_trip(example):
    g = solar.load_graph(EXAMPLES / example)
    text = g.to_text()
    assert solar.parse_graph(text).to_text() == text
    assert solar.parse_graph_json(g.to_json()).to_text() == text
    assert json.loads(g.to_json())["schema"] == "solar.graph.v1"


def test_load_graph_reads_json_files(tmp_path):
    g = solar.parse_graph(GEMM_TEXT)
    path = tmp_path / "g.json"
    path.write_text(g.to_json())
    assert solar.load_graph(path).to_text() == g.to_text()


@pytest.mark.parametrize(
    "example,ops",
    [("gemm.solar", 1), ("conv_resnet.solar", 4), ("transformer_block.solar", 30)],
)
def test_examples_have_the_documented_op_count(example, ops):
    assert len(solar.load_graph(EXAMPLES / example).ops) == ops


def test_graph_builder_builds_what_the_text_form_says():
    b = solar.GraphBuilder("small")
    b.input("a", "bf16", [64, 32], dims=["M", "K"])
    b.weight("b", "bf16", [32, 16])
    b.add_einsum("c", "bf16", [64, 16], "mk,kn->mn", ["a", "b"], output=True)
    assert b.build().to_text() == solar.parse_graph(GEMM_TEXT).to_text()


def test_graph_builder_full_form_with_mask():
    b = solar.GraphBuilder("causal")
    b.input("s", "f32", [8, 8])
    b.add_einsum("m", "f32", [8], "[i=8,j=8] max $0", ["s[i,j]"], out="[i]", where="i >= j",
                 output=True)
    r = solar.analyze(b.build())
    # The triangle has 8*9/2 live points; reducing a row of n values takes n-1 max ops.
    assert r.totals.vector_flops == 8 * 9 // 2 - 8


def test_graph_builder_errors_name_the_line():
    b = solar.GraphBuilder("bad")
    b.input("a", "f32", [4])
    b.add_statement("c = f32[4]{output} einsum \"i->i\" (nope)")
    with pytest.raises(solar.UserError, match="<GraphBuilder>:3"):
        b.build()


# ---- analysis ------------------------------------------------------------------------------


@pytest.mark.parametrize("example,macs,dtype", EXPECTED_MACS)
def test_macs_match_the_formulas(example, macs, dtype):
    r = solar.analyze(solar.load_graph(EXAMPLES / example))
    assert r.totals.macs == macs
    assert r.totals.macs_by_dtype[dtype] == macs
    assert r.totals.flops == 2 * macs + r.totals.vector_flops  # 1 MAC = 2 FLOP


def test_gemm_traffic_and_bounds():
    r = solar.analyze(EXAMPLES / "gemm.solar", arch=["H100_SXM", "B200"])
    # Fused: A and B read once, C written once, 2 bytes each.
    assert r.totals.bytes_fused == 3 * 4096 * 4096 * 2
    assert set(r.devices) == {"H100_SXM", "B200"}
    h100 = r.devices["H100_SXM"]
    assert 0 < h100.fused.seconds <= h100.unfused.seconds
    # A 4096^3 bf16 GEMM is compute-bound: the fused time is the tensor-core term.
    assert h100.fused.bottleneck.startswith("tensor")
    peak = h100.peaks_used[h100.fused.bottleneck]
    assert h100.fused.seconds == pytest.approx(2 * 4096**3 / peak, rel=1e-12)
    assert r.devices["B200"].fused.seconds < h100.fused.seconds


def test_an_ops_class_is_read_as_op_class():
    """`op.class` cannot be written in Python: the field is `op.op_class`, the JSON keeps
    `class` (and `op["class"]` reads it too)."""
    r = solar.analyze(EXAMPLES / "gemm.solar")
    op = r.ops[0]
    assert op.op_class == op["class"] == "matmul"
    assert "op_class" in dir(op) and "class" not in dir(op)
    assert "class" in r.to_dict()["ops"][0]


@pytest.mark.parametrize("annotation,macs_2_4,sparse_device_speedup", [
    ('{sparsity="2:4"}', 64 * 16 * 32, 2.0),  # every MAC has a 2:4 operand: half the time
    ("{zeros=0.9}", 0, 1.0),                  # unstructured zeros are never skipped work
    ("", 0, 1.0),
])
def test_sparsity_in_work_and_bounds(annotation, macs_2_4, sparse_device_speedup):
    text = GEMM_TEXT.replace("b = bf16[32,16]", "b = bf16[32,16]" + annotation)
    r = solar.analyze(solar.parse_graph(text), arch=["H100_SXM", "TPU_v5e"])
    assert r.totals.macs == 64 * 16 * 32  # the contraction as written, always
    assert r.totals.macs_2_4 == macs_2_4
    assert r.ops[0].macs_2_4 == macs_2_4
    compute = {d: [t for k, t in r.devices[d].fused.terms.items() if k != "dram"][0]
               for d in ("H100_SXM", "TPU_v5e")}
    assert compute["H100_SXM"] == pytest.approx(2 * 64 * 16 * 32 / 989.4e12 / sparse_device_speedup)
    assert compute["TPU_v5e"] == pytest.approx(2 * 64 * 16 * 32 / 197e12)  # no sparse mode


def test_causal_attention_counts_the_triangle():
    r = solar.analyze(solar.load_graph(EXAMPLES / "transformer_block.solar"))
    ops = {op.name: op for op in r.ops}
    assert ops["scores"].macs == CAUSAL
    assert ops["ctx"].macs == CAUSAL
    assert ops["q"].macs == B * S * D * D
    assert ops["up"].macs == B * S * D * F


def test_policy_routes_fp32_convolution():
    g = solar.load_graph(EXAMPLES / "conv_resnet.solar")
    default = solar.analyze(g, policy="pytorch-default").devices["H100_SXM"]
    strict = solar.analyze(g, policy="strict-fp32").devices["H100_SXM"]
    # PyTorch lets cuDNN run fp32 convolutions on TF32 tensor cores; strict-fp32 does not.
    assert any("tf32" in k for k in default.peaks_used)
    assert not any("tf32" in k for k in strict.peaks_used)
    assert strict.fused.seconds > default.fused.seconds


def test_report_json_without_op_rows():
    r = solar.analyze(solar.parse_graph(GEMM_TEXT), arch="H100_SXM")
    full = json.loads(r.to_json())
    slim = json.loads(r.to_json(None, ops=False))
    assert len(full["ops"]) == 1 and "ops" not in slim
    del full["ops"]
    assert slim == full


def test_sections_attached_before_and_after_the_report_is_read():
    early = solar.analyze(solar.parse_graph(GEMM_TEXT), arch="H100_SXM")
    early.attach_section("validation", {"status": "passed"})  # before any field is read
    late = solar.analyze(solar.parse_graph(GEMM_TEXT), arch="H100_SXM")
    assert late.totals.macs == 64 * 16 * 32
    late.attach_section("validation", {"status": "passed"})
    for r in (early, late):
        assert r.validation.status == "passed"
        assert json.loads(r.to_json())["validation"] == {"status": "passed"}
    with pytest.raises(ValueError, match="already has a field 'totals'"):
        early.attach_section("totals", {})


def test_options_are_recorded():
    r = solar.analyze(solar.parse_graph(GEMM_TEXT), policy="tf32", cache_state="warm")
    assert r.options.policy == "tf32"
    assert r.options.cache_state == "warm"


def test_report_object_views_and_copies():
    r = solar.analyze(solar.parse_graph(GEMM_TEXT), arch="H100_SXM")
    d = r.to_dict()
    assert d["schema"] == "solar.report.v1"
    assert json.loads(r.to_json()) == d
    assert r.schema == "solar.report.v1"
    assert r["totals"]["macs"] == 64 * 16 * 32
    assert r.totals == d["totals"]
    d["totals"]["macs"] = -1  # a copy: the report is unchanged
    assert r.totals.macs == 64 * 16 * 32
    with pytest.raises(AttributeError, match="no field 'nope'"):
        r.totals.nope
    with pytest.raises(AttributeError):
        r.totals.macs = 0
    table = r.table()
    assert "H100_SXM" in table
    assert str(r) == table


def test_analyze_accepts_a_path(in_root):
    r = solar.analyze("examples/gemm.solar")
    assert r.program.source.endswith("gemm.solar")


# ---- devices -------------------------------------------------------------------------------


def test_devices_and_device_lookup():
    ids = solar.device_ids()
    assert "H100_SXM" in ids and "host" in ids
    devs = solar.devices()
    assert "host" not in [d.id for d in devs]
    h100 = solar.device("h100_sxm")  # case-insensitive
    assert h100.id == "H100_SXM"
    tc = [u for u in h100.units if u.kind == solar.UnitKind.tensor]
    assert tc and tc[0].peak["bf16"].value > 0
    assert tc[0].peak["bf16"].flag and tc[0].peak["bf16"].source
    assert h100.peak(solar.UnitKind.tensor, solar.DType.bf16) == max(
        u.peak["bf16"].value for u in tc if "bf16" in u.peak
    )
    dram = [m for m in h100.memory if m.name == "dram"][0]
    assert dram.bandwidth.value > 1e12  # bytes/s
    j = json.loads(h100.to_json())
    assert j["schema"] == "solar.device.v1" and j["id"] == "H100_SXM"
    # 2:4 sparse peaks apart from the dense ones: 2x dense on H100, none on a TPU.
    assert tc[0].sparse_2_4_peak["bf16"].value == 2 * tc[0].peak["bf16"].value
    assert h100.sparse_2_4_peak(solar.UnitKind.tensor, solar.DType.bf16) == 1978.8e12
    assert solar.device("TPU_v5e").sparse_2_4_peak(solar.UnitKind.tensor, solar.DType.bf16) is None
    assert j["units"][0]["sparse_2_4_peak"]["bf16"]["flag"] == "D"


# ---- errors --------------------------------------------------------------------------------


def test_error_hierarchy():
    assert issubclass(solar.Error, ValueError)
    for cls in (solar.UserError, solar.UnsupportedError, solar.InternalError):
        assert issubclass(cls, solar.Error)


def test_parse_error_keeps_file_and_line():
    with pytest.raises(solar.UserError, match=r"mine\.solar:3") as e:
        solar.parse_graph("graph g\na = f32[4] input\nb = f32[4 einsum\n", "mine.solar")
    assert e.value.kind == "parse"
    assert e.value.exit_code == 4
    assert isinstance(e.value, ValueError)


def test_missing_file_is_an_io_error(tmp_path):
    with pytest.raises(solar.UserError, match="nope.solar") as e:
        solar.load_graph(tmp_path / "nope.solar")
    assert e.value.kind == "io"


def test_unknown_device_lists_the_known_ones():
    with pytest.raises(solar.UserError, match="Z9000") as e:
        solar.analyze(solar.parse_graph(GEMM_TEXT), arch=["H100_SXM", "Z9000"])
    assert e.value.kind == "unknown_device"
    assert e.value.exit_code == 6
    assert "H100_SXM" in str(e.value)


@pytest.mark.parametrize("kw", [{"policy": "fast"}, {"cache_state": "hot"}])
def test_bad_options(kw):
    with pytest.raises(solar.UserError, match="unknown") as e:
        solar.analyze(solar.parse_graph(GEMM_TEXT), **kw)
    assert e.value.kind == "bad_argument"


def test_version_matches_pyproject():
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^version = "([^"]+)"', text, re.M).group(1) == solar.__version__


def test_report_fields_other_than_ops_are_read_without_parsing_the_op_rows():
    report = solar.analyze(solar.parse_graph(GEMM_TEXT), ["H100_SXM"])
    whole = json.loads(report.to_json())
    report.attach_section("note", {"bytes": "12"})
    assert report._parsed is None  # noqa: SLF001 - what the test is about
    for key in whole:
        if key != "ops":
            assert report.get(key) == whole[key] and report[key] == whole[key]
    assert report.devices["H100_SXM"].fused.seconds > 0
    assert report.note.bytes == 12  # an attached section's counts as ints, as before
    assert report._parsed is None  # noqa: SLF001
    assert len(report.ops) == len(whole["ops"])  # the rows, parsed on first use
    assert report.get("note") == {"bytes": 12}
