"""`solar analyze model.py` and `solar analyze trace.json` through the PyTorch frontend, on
the KernelBench-format examples in examples/torch/."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from conftest import EXAMPLES, run_solar  # noqa: E402

TORCH = EXAMPLES / "torch"


def report(*args):
    r = run_solar("analyze", *args, "--json", "-")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_mlp_example_macs():
    B, I, H, O = 2, 1024, 4096, 1024  # batch_size shrunk with --set
    d = report(str(TORCH / "mlp.py"), "--set", "batch_size=2")
    assert d["coverage"]["complete"] and d["coverage"]["unanalyzed"] == 0
    assert d["totals"]["macs"] == B * I * H + B * H * O  # B*I*H + B*H*O
    assert d["program"]["frontend"] == "torch"


def test_conv_block_example_macs():
    N, C, HW, G = 1, 64, 56, 4
    d = report(str(TORCH / "conv_block.py"), "--set", "batch_size=1")
    assert d["coverage"]["complete"]
    # conv1: N*K*P*Q*C*R*S; conv2 grouped: N*K*P*Q*(C/G)*R*S
    assert d["totals"]["macs"] == N * C * HW * HW * C * 9 + N * C * HW * HW * (C // G) * 9


def test_attention_example_macs_with_causal_mask():
    B, T, D, H, Hk = 4, 64, 1024, 16, 4
    dh = D // H
    d = report(str(TORCH / "attention.py"), "--set", "seq_len=64")
    assert d["coverage"]["complete"]
    proj = B * T * D * D + B * T * D * (2 * Hk * dh) + B * T * D * D  # q, kv, o projections
    attn = 2 * B * H * (T * (T + 1) // 2) * dh  # QK^T and PV over the causal triangle
    assert d["totals"]["macs"] == proj + attn


def test_save_trace_and_analyze_the_trace(tmp_path):
    trace = tmp_path / "mlp.trace.json"
    table = run_solar("analyze", str(TORCH / "mlp.py"), "--set", "batch_size=2",
                      "--save-trace", str(trace))
    assert table.returncode == 0, table.stderr
    assert "Solar SOL report: mlp" in table.stdout
    t = json.loads(trace.read_text())
    assert t["schema"] == "solar.optrace.v1" and t["frontend"] == "torch"
    assert any(o["op"] == "aten::addmm.default" for o in t["ops"])
    again = report(str(trace))
    first = report(str(TORCH / "mlp.py"), "--set", "batch_size=2")
    assert again["totals"] == first["totals"]


def test_set_rejects_an_unknown_constant():
    r = run_solar("analyze", str(TORCH / "mlp.py"), "--set", "no_such_constant=3")
    assert r.returncode == 2  # a usage error
    assert "no_such_constant" in r.stderr


def test_unanalyzed_op_warns_and_strict_fails(tmp_path):
    prog = tmp_path / "fft.py"
    prog.write_text(
        "import torch\n"
        "class Model(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return torch.fft.rfft(x).abs()\n"
        "def get_inputs():\n"
        "    return [torch.randn(4, 16)]\n"
        "def get_init_inputs():\n"
        "    return []\n"
    )
    r = run_solar("analyze", str(prog), "--json", "-")
    assert r.returncode == 0, r.stderr
    assert "solar: warning: unanalyzed op aten::_fft_r2c" in r.stderr
    d = json.loads(r.stdout)
    assert d["coverage"]["unanalyzed"] >= 1 and not d["coverage"]["complete"]
    strict = run_solar("analyze", str(prog), "--strict")
    assert strict.returncode == 7
    assert strict.stderr.startswith("solar: error: ") and "--strict" in strict.stderr


def test_unknown_device_exit_code():
    r = run_solar("analyze", str(TORCH / "mlp.py"), "--set", "batch_size=1", "--arch", "Z9000")
    assert r.returncode == 6


def test_validate_with_shrink_names_the_sizes_it_ran_at():
    # mlp.py: batch_size 64 (its own), in_features and out_features 1024, hidden 4096;
    # --shrink 16 reduces each (suite.shrink_overrides); --set wins over it.
    r = run_solar("validate", str(TORCH / "mlp.py"), "--shrink", "16", "--set", "batch_size=2",
                  "--no-crosscheck", "--json", "-")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["validation"]["status"] == "passed"
    note = [line for line in r.stderr.splitlines() if "ran at" in line]
    assert len(note) == 1 and "batch_size=2" in note[0]
    sizes = dict(kv.split("=") for kv in note[0].split("ran at ")[1].split())
    assert all(int(v) <= 16 for v in sizes.values()), sizes
    B, I, H, O = (int(sizes[k]) for k in ("batch_size", "in_features", "hidden", "out_features"))
    assert d["totals"]["macs"] == B * I * H + B * H * O  # the analysis is of the shrunk program
    r = run_solar("validate", str(TORCH / "mlp.py"), "--shrink", "0")
    assert r.returncode == 2 and "--shrink" in r.stderr
