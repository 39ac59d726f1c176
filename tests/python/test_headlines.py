"""Honest headlines through the `solar` command: a device row whose bound leaves work out is
marked in the table itself, a model whose weights do not fit a device's DRAM is warned
about and said so in the JSON, `solar inverse` does not say "meets" when rates are
unknown, and graph files with nothing to analyze are refused (docs/report-json.md,
docs/inverse-roofline.md, docs/cli.md)."""

from __future__ import annotations

import json

import pytest

from conftest import run_solar

pytest.importorskip("torch")

# A GPT-2-style MLP: GELU's erf is a special function, which a TPU publishes no rate for.
MLP = '''
import torch
import torch.nn as nn

batch, width = 8, {width}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(width, 4 * width, bias=False)
        self.act = nn.GELU()
        self.down = nn.Linear(4 * width, width, bias=False)

    def forward(self, x):
        return self.down(self.act(self.up(x)))


def get_inputs():
    return [torch.randn(batch, width)]
'''


def row(table: str, device: str) -> str:
    return next(l for l in table.splitlines() if l.startswith(device + " ") or l.startswith(device + "  "))


def test_a_tpu_row_that_leaves_gelu_out_is_marked(tmp_path):
    prog = tmp_path / "mlp.py"
    prog.write_text(MLP.format(width=256))
    r = run_solar("analyze", str(prog), "--arch", "H100_SXM,TPU_v5e", "--top", "0")
    assert r.returncode == 0, r.stderr
    tpu, h100 = row(r.stdout, "TPU_v5e"), row(r.stdout, "H100_SXM")
    assert tpu.count("*") == 3, tpu  # unfused, framework and fused SOL cells
    assert "*" not in h100, h100
    assert "* incomplete: leaves out work the device publishes no rate for" in r.stdout
    # GELU's erf (and the TPU's f32 work) have no rate on the TPU: listed under the table.
    assert any(l.startswith("  TPU_v5e: ") and "special-function" in l
               for l in r.stdout.splitlines()), r.stdout

    j = json.loads(run_solar("analyze", str(prog), "--arch", "TPU_v5e", "--json", "-").stdout)
    assert j["devices"]["TPU_v5e"]["fused"]["unknown"]


def test_inverse_says_undetermined_not_meets_when_rates_are_unknown(tmp_path):
    prog = tmp_path / "mlp.py"
    prog.write_text(MLP.format(width=256))
    r = run_solar("inverse", str(prog), "--target-ms", "1000", "--arch", "H100_SXM,TPU_v5e")
    assert r.returncode == 0, r.stderr
    tpu = next(l for l in r.stdout.splitlines() if l.startswith("  TPU_v5e "))
    assert "undetermined" in tpu and "meets" not in tpu, tpu
    assert "()" not in r.stdout
    # The matmuls have a TPU rate, GELU's erf does not: the factor is for the rest (">="),
    # and a line names the work left out.
    assert ">=" in tpu and " 0x" not in tpu, tpu
    assert ("TPU_v5e: compute factor is for the rest of the work: left out (no published "
            "rate)") in r.stdout
    h100 = next(l for l in r.stdout.splitlines() if l.startswith("  H100_SXM "))
    assert "meets (" in h100 and h100.endswith("headroom)"), h100
    # each device once: the rows are the verdicts
    assert r.stdout.count("  H100_SXM") == 1 and "H100_SXM: meets the target" not in r.stdout


def test_weights_larger_than_the_device_memory_are_warned(tmp_path):
    # Two 40000 x 160000 float32 weights, 25.6 GB each, 51.2 GB in all: more than TPU v5e's
    # 16 GB of HBM, less than H100's 80 GB. Captured under fake tensors: nothing is allocated.
    width = 40000
    prog = tmp_path / "big.py"
    prog.write_text(MLP.format(width=width))
    r = run_solar("analyze", str(prog), "--arch", "H100_SXM,TPU_v5e", "--no-cache-aware",
                  "--top", "0", "--json", str(tmp_path / "r.json"))
    assert r.returncode == 0, r.stderr
    weights = 2 * width * 4 * width * 4  # two f32 matrices
    inputs = 8 * width * 4
    assert "TPU_v5e (!)" in r.stdout
    assert "H100_SXM (!)" not in r.stdout
    assert "!!! (!) does not fit the device's DRAM:" in r.stdout
    assert "TPU_v5e: its inputs, weights and constants take 51.2 GB" in r.stdout
    j = json.loads((tmp_path / "r.json").read_text())
    tpu = j["devices"]["TPU_v5e"]["memory"]
    assert tpu["footprint_bytes"] == weights + inputs
    assert tpu["capacity_bytes"] == 16_000_000_000 and tpu["fits"] is False
    assert tpu["largest_tensor"]["bytes"] == width * 4 * width * 4
    assert j["devices"]["H100_SXM"]["memory"]["fits"] is True


@pytest.mark.parametrize("name,text,code,message", [
    ("empty.solar", "", 4, "the file is empty"),
    ("empty.json", "\n", 4, "the file is empty"),
    ("inputs.solar", "graph g\nx = f32[4] input\n", 5, "graph 'g' has no ops"),
    ("mismatch.solar",
     "graph g\na = f32[4,5] input\nb = f32[6,3] input\nc = f32[4,3]{output} einsum \"mk,kn->mn\" (a, b)\n",
     5, "letter 'k' has extent 5 in operand 0 ('a') but 6 in operand 1 ('b')"),
])
def test_graphs_with_nothing_to_analyze_or_mismatched_extents_are_refused(
        tmp_path, name, text, code, message):
    graph = tmp_path / name
    graph.write_text(text)
    out = tmp_path / "r.json"
    r = run_solar("analyze", str(graph), "--json", str(out))
    assert r.returncode == code, r.stderr
    assert r.stderr.startswith(f"solar: error: {graph}") and message in r.stderr
    assert r.stdout == "" and not out.exists()
