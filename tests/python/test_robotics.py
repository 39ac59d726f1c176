"""Robot policies (python/solar/models/policy.py, docs/models.md "Robot policies"): pi0's
control step built from its configurations and analyzed completely, its parameters and MACs
against formulas written from the configuration, and its refusals.

The reduced runs (2 vision layers, 2 backbone/expert layers, 2 integration steps) keep the
formulas' every term: each is per layer or per step.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from conftest import run_solar  # noqa: E402
from solar import models  # noqa: E402
from solar.models.build import build_model, config_of, parameter_count  # noqa: E402
from solar.programs import ProgramOptions  # noqa: E402

NAME = "pi0-paligemma-3b"
OPTIONS = dict(crosscheck=False, cache_aware=False)
SMALL = {"num_hidden_layers": 2, "vision_num_hidden_layers": 2, "num_steps": 2}


def analyze(config=SMALL, archs=("H100_SXM",), **kw):
    run = models.ModelRun("hf:" + NAME, config=dict(config), **kw)
    return models.analyze_model(run, ProgramOptions(archs=list(archs), **OPTIONS))


def expected_macs(cfg, batch: int, prompt: int) -> int:
    """A control step's MACs from the configuration. Only what the actions depend on is
    work: of the prefix's last backbone layer and of the state token's last expert layer,
    only the keys and values (the expert reads them); nothing else of those outputs is used."""
    v, t, e = cfg.vision_config, cfg.text_config, cfg.action_expert_config
    d, f, patch = v["hidden_size"], v["intermediate_size"], v["patch_size"]
    n = cfg.image_tokens  # (224 / 14)^2 patches
    vision_layer = 4 * n * d * d + 2 * n * n * d + 2 * n * d * f  # q, k, v, o; QK^T, PV; MLP
    vision = cfg.num_images * (n * v["num_channels"] * patch * patch * d
                               + v["num_hidden_layers"] * vision_layer)
    projector = cfg.num_images * n * d * t["hidden_size"]
    heads, hd, L = t["num_attention_heads"], t["head_dim"], t["num_hidden_layers"]
    kv_heads = t["num_key_value_heads"]

    def kv(tokens, width):
        return 2 * tokens * width * kv_heads * hd

    def layer(tokens, width, mlp, keys):  # q, k, v, o; QK^T and PV over `keys`; gated MLP
        return (2 * tokens * width * heads * hd + kv(tokens, width) + 2 * heads * tokens * keys * hd
                + 3 * tokens * width * mlp)

    P = cfg.num_images * n + prompt  # the prefix: one bidirectional block
    D, F = t["hidden_size"], t["intermediate_size"]
    W, Fe, A, ad = e["hidden_size"], e["intermediate_size"], cfg.action_horizon, cfg.action_dim
    backbone = (L - 1) * layer(P, D, F, P) + kv(P, D)
    state = ad * W + (L - 1) * layer(1, W, Fe, P + 1) + kv(1, W)
    # per integration step: action in, time MLP (2W -> W -> W), expert over the chunk (keys:
    # prefix, state, chunk), action out
    step = A * ad * W + A * 2 * W * W + A * W * W + L * layer(A, W, Fe, P + 1 + A) + A * W * ad
    return batch * (vision + projector + backbone + state + cfg.num_steps * step)


def test_parameters_are_the_sum_of_the_parts_from_the_configuration():
    spec = models.lookup(NAME)
    cfg = config_of(spec)
    v, t, e = cfg.vision_config, cfg.text_config, cfg.action_expert_config
    d, f = v["hidden_size"], v["intermediate_size"]
    vision = ((v["num_channels"] * v["patch_size"] ** 2 + 1) * d + cfg.image_tokens * d
              + v["num_hidden_layers"] * (4 * (d * d + d) + 2 * d * f + f + d + 4 * d) + 2 * d)

    def gemma(c, embedding: bool):
        w, hd = c["hidden_size"], c["head_dim"]
        attn = w * hd * (2 * c["num_attention_heads"] + 2 * c["num_key_value_heads"])
        layer = attn + 3 * w * c["intermediate_size"] + 2 * w
        return c["num_hidden_layers"] * layer + w + (c["vocab_size"] * w if embedding else 0)

    W, ad = e["hidden_size"], cfg.action_dim
    heads = 2 * (ad * W + W) + (2 * W * W + W) + (W * W + W) + (W * ad + ad)
    total = vision + (d * t["hidden_size"] + t["hidden_size"]) + gemma(t, True) \
        + gemma(e, False) + heads
    assert parameter_count(build_model(spec, cfg, "bf16")) == total == 3_238_048_528
    # openpi's comment on gemma_300m: "311M params"
    assert round(gemma(e, False) / 1e6) == 311


@pytest.mark.parametrize("batch,prompt", [(1, None), (2, 20)])
def test_a_control_step_analyzes_completely_with_the_formula_macs(batch, prompt):
    result = analyze(batch=batch, seq=prompt)
    assert result.warnings == []
    assert result.report.coverage.unanalyzed == 0 and result.report.coverage.complete
    cfg = config_of(models.lookup(NAME), SMALL)
    tokens = prompt or cfg.max_token_len  # --seq, else the config's 48
    assert result.report.totals.macs == expected_macs(cfg, batch, tokens)
    section = result.report.get_section("policy")
    assert section["prompt_tokens"] == tokens and section["image_tokens"] == 3 * 256
    assert section["integration_steps"] == 2 and section["action_horizon"] == 50
    h100 = section["devices"]["H100_SXM"]
    assert h100["max_rate_hz"] == pytest.approx(1 / h100["control_step_seconds"])
    model = result.report.get_section("model")
    assert model["task"] == "vla" and model["tokens_per_step"] == batch * 50  # actions


def test_the_full_policy_macs_by_formula():
    """pi0 at its published sizes, by the formula the reduced runs check: 2.094 T MACs a
    control step (the backbone's prefix 75%, the vision tower 16%, the expert 9%)."""
    cfg = config_of(models.lookup(NAME))
    assert expected_macs(cfg, 1, 48) == 2_094_431_080_448


@pytest.mark.parametrize("kw,words", [
    (dict(phase="decode"), "one phase is the control step"),
    (dict(config={"num_steps": 0}), "num_steps: must be an integer >= 1"),
    (dict(config={"num_layers": 2}), "has no field 'num_layers'"),
])
def test_refusals(kw, words):
    run = models.ModelRun("hf:" + NAME, **kw)
    with pytest.raises(Exception, match=words):
        models.analyze_model(run, ProgramOptions(**OPTIONS))


def test_a_training_step_is_refused():
    run = models.ModelRun("hf:" + NAME, config=dict(SMALL))
    with pytest.raises(Exception, match="training step is not modelled"):
        models.analyze_model(run, ProgramOptions(train=True, **OPTIONS))


# ---------------------------------------------------------------- control rates (inverse)

DEVICES = ["Jetson_Orin", "Jetson_Thor", "H100_SXM"]


@pytest.fixture(scope="module")
def inverse():
    """pi0's full control step captured once; the inverse roofline at 50 Hz and 500 Hz on the
    three devices of examples/robotics (what `solar inverse hf:pi0-paligemma-3b --rate-hz F`
    computes)."""
    import json

    from solar import _core

    result = analyze(config={}, archs=DEVICES[:1])
    out = {}
    for hz in (50, 500):
        text, _ = _core.inverse(result.graph, DEVICES, 1.0 / hz, None, "attainable",
                                "pytorch-default")
        out[hz] = json.loads(text)
    return result, out


def test_the_inverse_roofline_worked_numbers(inverse):
    """docs/models.md, "Control rates": each figure of its two tables and its paragraph."""
    result, inv = inverse
    cfg = config_of(models.lookup(NAME))
    macs = expected_macs(cfg, 1, cfg.max_token_len)
    for hz in (50, 500):
        d = inv[hz]
        tensor = d["min_compute"]["tensor"]
        assert tensor["work"] == 2 * macs  # 1 MAC = 2 FLOP, all bf16 on the tensor unit
        assert tensor["min_rate"] == pytest.approx(2 * macs * hz)  # 209.4 T, 2.094 P FLOP/s
        # compulsory: the weights the actions depend on (not the embedding table but 48 rows,
        # not the prefix's last backbone layer but its keys and values) and the inputs
        assert d["compulsory_bytes"] == pytest.approx(5.206e9, rel=1e-3)
        assert d["min_bandwidth_unlimited_capacity"] == pytest.approx(d["compulsory_bytes"] * hz)
    weights = 2 * parameter_count(build_model(models.lookup(NAME), cfg, "bf16"))
    t, D, F = cfg.text_config, cfg.hidden_size, cfg.intermediate_size
    dead = 2 * (2 * D * t["num_attention_heads"] * t["head_dim"] + 3 * D * F)  # q, o, MLP
    table = 2 * cfg.vocab_size * D
    assert inv[50]["compulsory_bytes"] - (weights - table - dead) < 2e6  # inputs, 48 rows
    # the attainable floor (11.92 GB) and the least bandwidth above it, per rate
    for hz in (50, 500):
        top = max(inv[hz]["min_bandwidth_curve"], key=lambda p: p["capacity_bytes"])
        assert top["attainable_traffic_bytes"] == pytest.approx(11.92e9, rel=1e-3)
        assert top["attainable_min_bandwidth"] == pytest.approx(11.92e9 * hz, rel=1e-3)
    # most of the floor above the compulsory traffic: the expert's weights read again by
    # each of its passes after the first (the state token's and 10 steps')
    expert = 2 * 311_464_960  # the action expert's bf16 weights: 623 MB
    excess = top["attainable_traffic_bytes"] - inv[50]["compulsory_bytes"]
    assert 0.9 < cfg.num_steps * expert / excess < 1.0
    rows = {  # device: fused compute ms, S MB, 50 Hz compute, 50 Hz bandwidth, 50 Hz meets
        "H100_SXM": (4.234, 115.4, 0.212, 0.178, True),
        "Jetson_Thor": (16.20, 43.47, 0.810, 2.68, False),
        "Jetson_Orin": (98.33, 10.88, 4.92, 3.71, False),
    }
    for arch, (ms, mb, compute, bandwidth, meets) in rows.items():
        d50, d500 = inv[50]["devices"][arch], inv[500]["devices"][arch]
        assert d50["compute_seconds"] * 1e3 == pytest.approx(ms, rel=1e-3)
        assert d50["capacity_bytes"] / 1e6 == pytest.approx(mb, rel=1e-3)
        assert d50["compute_factor"] == pytest.approx(d50["compute_seconds"] * 50)
        assert d50["compute_factor"] == pytest.approx(compute, rel=2e-3)
        assert d50["bandwidth_factor"] == pytest.approx(bandwidth, rel=2e-3)
        assert d50["meets"] is meets and d500["meets"] is False
        # T is 10x shorter: every rate and factor 10x higher
        assert d500["compute_factor"] == pytest.approx(10 * d50["compute_factor"])
        assert d500["bandwidth_factor"] == pytest.approx(10 * d50["bandwidth_factor"])
    assert 1 / inv[50]["devices"]["H100_SXM"]["compute_factor"] == pytest.approx(4.72, rel=2e-3)
    # on-chip memory at each device's own bandwidth
    h100 = [inv[hz]["devices"]["H100_SXM"]["min_capacity_bytes_at_device_bandwidth"]
            for hz in (50, 500)]
    assert h100[0] / 1e3 == pytest.approx(49.8, rel=2e-3)
    assert h100[1] / 1e6 == pytest.approx(632.6, rel=2e-3)
    for arch in ("Jetson_Thor", "Jetson_Orin"):
        assert all(inv[hz]["devices"][arch]["min_capacity_bytes_at_device_bandwidth"] is None
                   for hz in (50, 500))
    # Thor's bandwidth clears the compulsory traffic at 50 Hz, not the attainable floor
    thor = inv[50]["devices"]["Jetson_Thor"]
    assert thor["bandwidth_factor_unlimited_capacity"] < 1 < thor["bandwidth_factor"]


def test_solar_inverse_accepts_a_model(tmp_path):
    """`solar inverse hf:NAME` builds and captures the model as `solar analyze` does (here
    the policy at 2 layers, 2 steps): its work is the control step's."""
    import json

    sets = [a for k, v in SMALL.items() for a in ("--set", f"{k}={v}")]
    r = run_solar("inverse", "hf:" + NAME, "--rate-hz", "500", "--arch", "Jetson_Thor",
                  "--json", "-", *sets)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    cfg = config_of(models.lookup(NAME), SMALL)
    assert doc["min_compute"]["tensor"]["work"] == 2 * expected_macs(cfg, 1, 48)
    assert doc["target_seconds"] == pytest.approx(1 / 500)
    bad = run_solar("inverse", "hf:" + NAME, "--rate-hz", "50", "--set", "num_steps=0")
    assert bad.returncode == 2 and "num_steps: must be an integer >= 1" in bad.stderr


def test_the_text_report_prints_the_control_rate():
    sets = [a for k, v in SMALL.items() for a in ("--set", f"{k}={v}")]
    r = run_solar("analyze", "hf:" + NAME, "--arch", "H100_SXM", "--top", "0", "--depth", "1",
                  *sets)
    assert r.returncode == 0, r.stderr
    assert "control step: 3 images (768 tokens) + 48 prompt tokens" in r.stdout
    line = next(x for x in r.stdout.splitlines() if "per control step" in x)
    ms = float(line.split()[1])
    hz = float(line.split("at most ")[1].split()[0].replace(",", ""))
    assert hz == pytest.approx(1e3 / ms, rel=1e-3)
