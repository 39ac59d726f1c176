"""transformers' Mamba scan captured as one `solar::selective_scan` op per layer and lowered
to a repeat op over the tokens (python/solar/frontends/torch/selective_scan.py,
src/lower/aten_scan.cc; docs/torch-frontend.md, "Selective scans"), against the per-token
capture (`--unroll`): every total equal but the stated bytes, validation by execution, and
the registry's Mamba at its full prefill in seconds. Real PyTorch and transformers."""

from __future__ import annotations

import json
import textwrap

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from solar.programs import ProgramOptions, analyze_file  # noqa: E402

from conftest import run_solar  # noqa: E402

LAYERS, B, L, HIDDEN, N, EXPAND = 2, 2, 6, 16, 4, 2
D = EXPAND * HIDDEN  # the mixer's inner width: the scan's channels
BYTES = {"float32": 4, "bfloat16": 2}


def program(tmp_path, dtype: str) -> str:
    path = tmp_path / f"mamba_{dtype}.py"
    path.write_text(textwrap.dedent(f"""\
        import torch
        from transformers import MambaConfig, MambaModel
        CONFIG = MambaConfig(hidden_size={HIDDEN}, state_size={N}, num_hidden_layers={LAYERS},
                             vocab_size=50, expand={EXPAND}, conv_kernel=4, use_cache=False)
        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.mamba = MambaModel(CONFIG).to(torch.{dtype}).eval()
            def forward(self, ids):
                return self.mamba(input_ids=ids, use_cache=False).last_hidden_state
        def get_inputs(): return [torch.randint(0, 50, ({B}, {L}))]
        def get_init_inputs(): return []
        """))
    return str(path)


def totals(r) -> dict:
    t = r.report.to_dict()["totals"]
    return {k: t[k] for k in ("macs", "flops", "special_ops", "vector_flops_by_dtype",
                              "bytes_unfused", "bytes_fused")}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_scan_equals_the_per_token_loop(tmp_path, dtype):
    path = program(tmp_path, dtype)
    opts = dict(crosscheck=False, cache_aware=False)
    scan = analyze_file(path, ProgramOptions(**opts))
    loop = analyze_file(path, ProgramOptions(unroll=True, **opts))
    assert not scan.warnings and not loop.warnings
    names = [op["op"] for op in scan.trace["ops"]]
    assert names.count("solar::selective_scan") == LAYERS
    assert "solar::selective_scan" not in [op["op"] for op in loop.trace["ops"]]
    repeats = [o for o in scan.report.to_dict()["ops"] if o["kind"] == "repeat"]
    assert len(repeats) == LAYERS
    # The per-token loop records a mul, an add, (a cast,) a matmul and a select per token.
    assert len(loop.trace["ops"]) - len(scan.trace["ops"]) >= LAYERS * (L * 4 - 8)
    a, b = totals(scan), totals(loop)
    for key in ("macs", "flops", "special_ops", "vector_flops_by_dtype", "bytes_fused"):
        assert a[key] == b[key], key
    # Per layer: the strided read-out C [B, N, L] copied once for the repeat (read and
    # written); with a bf16 model the state starts at f32 (the zero fill written and the first
    # token's step reading it at 4 bytes, not 2).
    c_copy = 2 * B * N * L * BYTES[dtype]
    state = 2 * B * D * N * (4 - BYTES[dtype])
    assert a["bytes_unfused"] - b["bytes_unfused"] == LAYERS * (c_copy + state)
    # The scan's contraction: B D N MACs a token, the read-out of the state.
    assert a["macs"] >= LAYERS * B * D * N * L


def test_scan_validates(tmp_path):
    # The executor runs the repeat ops; the outputs equal transformers' own.
    r = analyze_file(program(tmp_path, "float32"),
                     ProgramOptions(validate=True, crosscheck=False, cache_aware=False))
    assert "solar::selective_scan" in [op["op"] for op in r.trace["ops"]]
    assert r.validation["status"] == "passed", json.dumps(r.validation)[:2000]


def test_registry_mamba_prefill_records_one_scan_per_layer(tmp_path):
    # Mamba-130M's default 1024-token prefill: one scan op per layer (24), where the
    # per-token loop recorded ~400,000 ops and took minutes.
    out = tmp_path / "mamba.json"
    res = run_solar("analyze", "hf:mamba-130m", "--phase", "prefill", "--arch", "H100_SXM",
                    "--no-cache-aware", "--json", str(out))
    assert res.returncode == 0, res.stderr[-2000:]
    report = json.loads(out.read_text())
    scans = [o for o in report["ops"] if o["kind"] == "repeat"]
    assert len(scans) == 24
    assert report["coverage"]["unanalyzed"] == 0
