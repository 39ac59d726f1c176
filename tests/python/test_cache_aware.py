"""The cache-aware level, the ski-slope and the inverse roofline through the `solar` command:
`solar analyze` (--mode, --no-cache-aware, --ski-slope) and `solar inverse` on the example
graphs and on a PyTorch example program, with the invariants of docs/bounds.md."""

from __future__ import annotations

import json

import pytest

from conftest import EXAMPLES, run_solar

EXAMPLE_GRAPHS = sorted(p.name for p in EXAMPLES.glob("*.solar"))
DEVICES = "H100_SXM,B200,MI300X"
REL = 1e-12  # rounding slack for sums of doubles taken in different orders


def analyze(*args) -> dict:
    r = run_solar("analyze", *args, "--json", "-")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def check_level(dev: dict, mode: str) -> dict:
    """The fields and invariants of one device's cache-aware level; returns it."""
    ca = dev["cache_aware"]
    assert ca["available"], ca.get("reason")
    assert ca["mode"] == mode
    assert ca["capacity_bytes"] == sum(level["bytes"] for level in ca["capacity_levels"])
    assert {level["name"] for level in ca["capacity_levels"]} <= {"l2", "llc", "smem", "l1",
                                                                  "tmem", "rf", "vmem"}
    fused, unfused = dev["fused"]["seconds"], dev["unfused"]["seconds"]
    assert fused <= ca["seconds"]                                   # invariant 1
    assert ca["seconds"] <= ca["no_fusion_seconds"] * (1 + REL)     # invariant 3
    if ca["ops_at_compulsory"]:
        assert ca["seconds"] <= unfused * (1 + REL)                 # invariant 4
    assert ca["tiling_gap"] == pytest.approx(ca["seconds"] / fused)  # cache_aware / fused
    assert ca["fusion_gap"] == pytest.approx(unfused / fused)        # unfused / fused
    assert set(ca["terms"]) >= {ca["bottleneck"]}
    if ca["bottleneck"] == "dram":
        assert ca["terms"]["dram"] == pytest.approx(ca["traffic_bytes"] / dev["dram_bandwidth"])
    return ca


@pytest.mark.parametrize("name", EXAMPLE_GRAPHS)
def test_examples_levels_and_invariants_in_both_modes(name):
    att = analyze(str(EXAMPLES / name), "--arch", DEVICES)
    prov = analyze(str(EXAMPLES / name), "--arch", DEVICES, "--mode", "provable")
    assert att["options"]["mode"] == "attainable" and prov["options"]["mode"] == "provable"
    compulsory = att["totals"]["bytes_fused"]
    for dev_id in DEVICES.split(","):
        a = check_level(att["devices"][dev_id], "attainable")
        p = check_level(prov["devices"][dev_id], "provable")
        assert compulsory <= p["traffic_bytes"] <= a["traffic_bytes"]  # invariant 2
        assert p["seconds"] <= a["seconds"]
        # The attainable groups partition the analyzed, non-view ops.
        grouped = [op for g in a["groups"] for op in g["ops"]]
        assert len(grouped) == len(set(grouped))
        assert sum(g["traffic_bytes"] for g in a["groups"]) == a["traffic_bytes"]
        shares = [row["cache_aware_share"][dev_id] for row in att["ops"]]
        if a["share_basis"].startswith("each op"):
            assert sum(shares) == pytest.approx(1.0)
    s = att["ski_slope"]
    caps, q_att, q_prov = s["capacities_bytes"], s["attainable_bytes"], s["provable_bytes"]
    assert len(caps) == 32 and caps == sorted(set(caps))
    assert all(x >= y for x, y in zip(q_att, q_att[1:]))  # Q(S) non-increasing
    assert all(compulsory <= p <= a for p, a in zip(q_prov, q_att))
    assert set(s["device_capacities_bytes"]) == set(DEVICES.split(","))
    assert 1 <= len(s["ops"]) <= 5


def test_no_cache_aware_and_the_svg_chart(tmp_path):
    gemm = str(EXAMPLES / "gemm.solar")
    d = analyze(gemm, "--no-cache-aware")
    ca = d["devices"]["H100_SXM"]["cache_aware"]
    assert ca["available"] is False and "--no-cache-aware" in ca["reason"]
    assert "seconds" not in ca and "ski_slope" not in d

    svg = tmp_path / "slope.svg"
    r = run_solar("analyze", str(EXAMPLES / "transformer_block.solar"), "--ski-slope", str(svg))
    assert r.returncode == 0, r.stderr
    assert "cache-aware SOL, mode attainable" in r.stdout
    text = svg.read_text()
    assert text.startswith("<?xml") and text.rstrip().endswith("</svg>")
    assert "graph, provable" in text and "H100_SXM" in text

    bad = run_solar("analyze", gemm, "--mode", "both")
    assert bad.returncode == 2 and "unknown --mode" in bad.stderr


def test_torch_program_passes_mode_and_chart_through(tmp_path):
    pytest.importorskip("torch")
    svg = tmp_path / "mlp.svg"
    trace = tmp_path / "mlp.trace.json"
    d = analyze(str(EXAMPLES / "torch" / "mlp.py"), "--set", "batch_size=2", "--mode",
                "provable", "--ski-slope", str(svg), "--save-trace", str(trace))
    assert d["program"]["frontend"] == "torch"
    assert d["options"]["mode"] == "provable"
    check_level(d["devices"]["H100_SXM"], "provable")
    assert "crosscheck" in d  # the frontend's own section is still there
    assert svg.read_text().startswith("<?xml")
    # A saved trace goes through the same dispatch: the level can be skipped there too.
    skipped = analyze(str(trace), "--no-cache-aware")
    assert skipped["options"]["cache_aware"] is False
    assert skipped["devices"]["H100_SXM"]["cache_aware"]["available"] is False
    assert skipped["totals"] == d["totals"]

    inv = run_solar("inverse", str(EXAMPLES / "torch" / "mlp.py"), "--set", "batch_size=2",
                    "--rate-hz", "500", "--arch", "H100_SXM", "--json", "-")
    assert inv.returncode == 0, inv.stderr
    j = json.loads(inv.stdout)
    assert j["target_seconds"] == pytest.approx(1 / 500)
    # fp32 matmuls run on the vector unit under pytorch-default: all FLOPs are vector work.
    assert j["min_compute"]["vector"]["work"] == pytest.approx(d["totals"]["flops"])
    assert j["min_compute"]["vector"]["min_rate"] == pytest.approx(d["totals"]["flops"] * 500)
    assert j["devices"]["H100_SXM"]["verdict"].startswith("H100_SXM: ")

    missing = run_solar("inverse", str(EXAMPLES / "torch" / "mlp.py"))
    assert missing.returncode == 2 and "missing target" in missing.stderr


def test_inverse_worked_example_and_errors():
    gemm = str(EXAMPLES / "gemm.solar")
    r = run_solar("inverse", gemm, "--target-ms", "0.1", "--arch", "H100_SXM", "--bandwidth",
                  "2000", "--json", "-")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    M = N = K = 4096
    T = 100e-6
    assert j["min_compute"]["tensor"]["min_rate"] == pytest.approx(2 * M * N * K / T)  # 1.374e15
    compulsory = 2 * (M * K + K * N + M * N)  # bf16: A, B read once, C written once
    assert j["compulsory_bytes"] == compulsory
    assert j["min_bandwidth_unlimited_capacity"] == pytest.approx(compulsory / T)  # 1.007e12
    cap = j["min_capacity"]
    assert cap["feasible"] and cap["budget_bytes"] == int(2000e9 * T)
    assert cap["provable_bytes"] <= cap["attainable_bytes"]
    h100 = j["devices"]["H100_SXM"]
    assert h100["min_bandwidth"] == pytest.approx(compulsory / T)  # 115 MB holds the GEMM
    assert h100["bandwidth_factor"] == pytest.approx(compulsory / T / h100["dram_bandwidth"])
    assert h100["meets"] is False and "needs" in h100["verdict"]
    curve = j["min_bandwidth_curve"]
    assert all(p["provable_min_bandwidth"] <= p["attainable_min_bandwidth"] for p in curve)

    for args, words in [((), "missing target"),
                        (("--target-ms", "1", "--rate-hz", "5"), "not both"),
                        (("--target-ms", "0"), "positive"),
                        (("--rate-hz", "-3"), "positive")]:
        e = run_solar("inverse", gemm, *args)
        assert e.returncode == 2, (args, e.stderr)
        assert words in e.stderr and e.stdout == ""
