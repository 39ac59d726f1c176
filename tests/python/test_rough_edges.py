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
