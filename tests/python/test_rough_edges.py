"""The rough edges a new user hit (issue 17): each test reproduces one as the user met it."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import solar
from conftest import EXAMPLES, ROOT, run_solar


def _program(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


# ---- 2. counts past 64 bits are Python ints, not strings

def test_counts_past_64_bits_are_ints():
    n = 10**10
    g = solar.parse_graph(f"""graph huge
a = bf16[{n},{n}]{{dims="M,K"}} input
b = bf16[{n},{n}]{{dims="K,N"}} weight
c = bf16[{n},{n}]{{output}} einsum "mk,kn->mn" (a, b)
""")
    r = solar.analyze(g, arch="H100_SXM")
    assert r.totals.macs == n * n * n and type(r.totals.macs) is int
    assert r.totals.flops == 2 * n * n * n and type(r.totals.flops) is int
    assert r.totals.macs_by_dtype["bf16"] == n * n * n
    assert r.totals.bytes_unfused == 2 * 3 * n * n  # A, B read and C written, 2 B each
    (op,) = [o for o in r.ops if o.macs]
    assert op.macs == n * n * n and type(op.macs) is int
    # The JSON text keeps the documented decimal strings (exact for every reader).
    assert json.loads(r.to_json())["totals"]["macs"] == str(n * n * n)


# ---- 5. output files honour the umask, as graph outputs do

SMALL_TORCH = """
import torch
M, N, K = 64, 32, 16
class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.relu(a @ b)
def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]
def get_init_inputs():
    return []
"""


def _solar_with_umask(mask: int, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "solar", *args], cwd=ROOT, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=300,
                          preexec_fn=lambda: os.umask(mask))


@pytest.mark.parametrize("mask", [0o022, 0o027])
def test_program_outputs_honour_the_umask(tmp_path, mask):
    pytest.importorskip("torch")
    prog = _program(tmp_path, "small.py", SMALL_TORCH)
    outs = [tmp_path / "r.json", tmp_path / "s.svg", tmp_path / "t.json"]
    r = _solar_with_umask(mask, "analyze", str(prog), "--json", str(outs[0]), "--ski-slope",
                          str(outs[1]), "--save-trace", str(outs[2]))
    assert r.returncode == 0, r.stderr
    # The C++ CLI's graph output (solar analyze g.solar --json) is the reference.
    graph_out = tmp_path / "g.json"
    g = _solar_with_umask(mask, "analyze", str(EXAMPLES / "gemm.solar"), "--json",
                          str(graph_out))
    assert g.returncode == 0, g.stderr
    assert stat.S_IMODE(graph_out.stat().st_mode) == 0o666 & ~mask
    for out in outs:
        assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask, out


def test_report_save_honours_the_umask(tmp_path):
    r = solar.analyze(solar.load_graph(str(EXAMPLES / "gemm.solar")))
    old = os.umask(0o027)
    try:
        r.save(str(tmp_path / "r.json"))
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "r.json").stat().st_mode) == 0o640
    assert json.loads((tmp_path / "r.json").read_text())["totals"]["macs"] == 4096**3


# ---- 4. bench --profile joins a bound with the op's time including its children

def test_bench_profile_joins_convolution_with_its_children(tmp_path):
    torch = pytest.importorskip("torch")
    out = tmp_path / "bench.json"
    r = run_solar("bench", str(EXAMPLES / "torch" / "convs.py"), "--device", "cpu", "--trials",
                  "1", "--warmup", "1", "--no-flush", "--profile", "--json", str(out))
    assert r.returncode == 0, r.stderr
    rows = {row["op"]: row for row in json.loads(out.read_text())["measurement"]["per_op"]}
    conv = rows["aten::convolution"]
    # The CPU's work runs in the child aten::mkldnn_convolution (or the slow-path kernels):
    # it is in aten::convolution's time, not a row of its own with no bound.
    assert not any(name in rows for name in ("aten::mkldnn_convolution", "aten::_convolution"))
    assert conv["sol_seconds"] > 0 and conv["headroom"] >= 1 and not conv["below_bound"]
    measured = sum(row["measured_seconds"] or 0 for row in rows.values())
    assert conv["measured_seconds"] >= 0.5 * measured  # the convolutions hold the run
    assert "including the op's children" in r.stdout
    del torch


def test_a_per_op_time_below_its_bound_is_flagged():
    from solar import bench

    section = {"device": "host", "mode": "eager", "trials": 1, "cache": "warm",
               "min_seconds": 1e-3, "median_seconds": 1e-3, "sol_seconds": {}, "headroom": {},
               "violations": [],
               "per_op": [{"op": f"aten::op{i}", "measured_seconds": 1e-3, "sol_seconds": 1e-4,
                           "headroom": 10.0, "below_bound": False} for i in range(3)]
               + [{"op": "aten::mm", "measured_seconds": 1e-6, "sol_seconds": 1e-5,
                   "headroom": 0.1, "below_bound": True}]}
    text = bench.format_measurement(section, top=2)  # the beaten row is past the top 2
    assert "aten::mm" in text and "BELOW THE BOUND" in text
    assert "1 op(s) measured below Solar's per-op bound" in text


# ---- 9. bench --device cuda on a torch without CUDA

def test_bench_cuda_without_cuda_is_an_environment_error():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this torch has CUDA: the refusal is for builds without it")
    r = run_solar("bench", str(EXAMPLES / "torch" / "mlp.py"), "--device", "cuda")
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("solar: error: --device cuda: CUDA is not available")
    assert "the program failed" not in r.stderr and r.stderr.count("\n") == 1
