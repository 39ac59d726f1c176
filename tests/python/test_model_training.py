"""A model's training step (`solar analyze hf:NAME --train`, docs/models.md "Training",
python/solar/models/training.py): the mixed-precision optimizer update's bytes, the work
recomputation adds, and the model-FLOPs utilization of a measured step, each by formula
from the configuration. Llama-3.1-8B with 2 layers (--set num_hidden_layers=2); sizes cost
nothing on fake tensors.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import solar  # noqa: E402
from conftest import EXAMPLES, run_solar  # noqa: E402
from solar import models  # noqa: E402
from solar.models import training  # noqa: E402
from solar.models.build import build_model, config_of, parameter_count  # noqa: E402
from solar.programs import ProgramOptions  # noqa: E402

OPTIONS = dict(crosscheck=False, cache_aware=False)
LAYERS = 2
B, S = 1, 16
H100_BF16_DENSE = 989.4e12  # FLOP/s, H100 SXM dense BF16 tensor cores (device database)


def step(optimizer="adamw", recompute="none", measured_ms=None, ref="hf:llama-3.1-8b",
         **kw):
    run = models.ModelRun(ref, batch=B, seq=S, config={"num_hidden_layers": LAYERS},
                          optimizer=optimizer, recompute=recompute, measured_ms=measured_ms,
                          **kw)
    result = models.analyze_model(run, ProgramOptions(train=True, **OPTIONS))
    assert result.warnings == [] and result.report.coverage.unanalyzed == 0
    return result


@pytest.fixture(scope="module")
def llama():
    spec = models.lookup("llama-3.1-8b")
    config = config_of(spec, {"num_hidden_layers": LAYERS})
    return config, parameter_count(build_model(spec, config, "bf16"))


@pytest.fixture(scope="module")
def plain():
    """The forward + backward step alone (no update, no recomputation)."""
    return step(optimizer="none")


@pytest.fixture(scope="module")
def adamw():
    return step()


def test_adamw_mixed_precision_bytes_are_by_formula(llama, plain, adamw):
    """AdamW in mixed precision reads, per parameter, the fp32 master weight, the two fp32
    moments and the bf16 gradient, and writes the master weight, the moments and the bf16
    weight the next forward reads (ZeRO's 2 + 2 + 12 bytes of state per parameter)."""
    _, params = llama
    t = adamw.report.get_section("model")["training"]
    assert t["optimizer"] == "adamw" and t["trainable_parameters"] == params
    assert t["optimizer_bytes_read"] == params * (4 + 4 + 4 + 2)
    assert t["optimizer_bytes_written"] == params * (4 + 4 + 4 + 2)
    # The captured update, against the step without it, at the fused level: the master
    # weight and moments read once and written once, the bf16 weight written; the bf16
    # gradient is the step's own intermediate there (its write is counted by the backward
    # pass, which already returns it), so the whole step's bound reads it on chip.
    with_update, without = adamw.report.totals, plain.report.totals
    assert with_update.bytes_fused_read - without.bytes_fused_read == params * (4 + 4 + 4)
    assert with_update.bytes_fused_written - without.bytes_fused_written == \
        params * (4 + 4 + 4 + 2)
    assert with_update.macs == without.macs  # the update is elementwise: no MACs


def test_the_default_optimizer_is_adamw_and_none_adds_nothing(plain, adamw):
    run = models.ModelRun("hf:llama-3.1-8b", batch=B, seq=S,
                          config={"num_hidden_layers": LAYERS})
    result = models.analyze_model(run, ProgramOptions(train=True, **OPTIONS))
    assert result.report.get_section("model")["training"]["optimizer"] == "adamw"
    assert result.report.totals.bytes_fused == adamw.report.totals.bytes_fused
    t = plain.report.get_section("model")["training"]
    assert t["optimizer_bytes_read"] == t["optimizer_bytes_written"] == 0


def test_sgd_reads_the_master_weight_and_the_gradient(llama, plain):
    """torch's SGD without momentum keeps no state: read fp32 master + bf16 gradient, write
    fp32 master + bf16 weight."""
    _, params = llama
    sgd = step(optimizer="sgd")
    t = sgd.report.get_section("model")["training"]
    assert (t["optimizer_bytes_read"], t["optimizer_bytes_written"]) == \
        (params * (4 + 2), params * (4 + 2))
    assert sgd.report.totals.bytes_fused_read - plain.report.totals.bytes_fused_read == \
        params * 4
    assert sgd.report.totals.bytes_fused_written - plain.report.totals.bytes_fused_written == \
        params * (4 + 2)


@pytest.mark.parametrize("optimizer,dtype,expected", [
    ("adamw", "bf16", (4 + 4 + 4 + 2, 4 + 4 + 4 + 2)),
    ("adam", "f16", (4 + 4 + 4 + 2, 4 + 4 + 4 + 2)),
    ("sgd", "bf16", (4 + 2, 4 + 2)),
    ("adamw", "f32", (4 + 4 + 4 + 4, 4 + 4 + 4)),  # fp32: the weight is its own master
    ("sgd", "f32", (4 + 4, 4)),
    ("none", "bf16", (0, 0)),
])
def test_optimizer_bytes_per_parameter(optimizer, dtype, expected):
    assert training.optimizer_bytes(optimizer, dtype) == expected


@pytest.mark.parametrize("dtype,policy,peak", [
    ("bf16", "pytorch-default", 989.4e12),  # H100 SXM dense BF16 tensor cores
    ("f16", "pytorch-default", 989.4e12),
    ("f32", "pytorch-default", 66.9e12),  # fp32 matmul on the FP32 SIMT units
    ("f32", "tf32", 494.7e12),  # TF32 tensor cores
])
def test_the_dense_peak_is_the_compute_dtypes(dtype, policy, peak):
    assert training.dense_peak("H100_SXM", dtype, policy) == peak


def _layer_forward_macs(config, down_projection: bool) -> int:
    """One Llama decoder layer's forward MACs over B x S tokens: the projections and the
    attention core (QK^T and PV over the causal pairs, key <= query: S (S + 1) / 2 of them)."""
    h, i = config.hidden_size, config.intermediate_size
    hd = config.head_dim
    q, kv = config.num_attention_heads * hd, config.num_key_value_heads * hd
    per_token = h * q + 2 * h * kv + q * h + 2 * h * i + (i * h if down_projection else 0)
    core = 2 * B * config.num_attention_heads * hd * S * (S + 1) // 2
    return B * S * per_token + core


def test_full_recompute_adds_the_layers_forward(llama, adamw):
    """--recompute full runs each decoder layer's forward again in the backward pass, up to
    the last tensor the backward reads: torch's checkpoint stops there, so a Llama layer's
    down projection (whose output only the residual add reads) is not run again."""
    config, _ = llama
    full = step(recompute="full")
    added = full.report.totals.macs - adamw.report.totals.macs
    assert added == LAYERS * _layer_forward_macs(config, down_projection=False)
    t = full.report.get_section("model")["training"]
    assert t["recompute"] == "full" and t["recompute_macs"] == added
    assert t["model_flops"] == 2 * adamw.report.totals.macs  # 1 MAC = 2 FLOP, no recompute
    assert t["hardware_flops"] == 2 * full.report.totals.macs


def test_selective_recompute_adds_the_attention_core(llama, adamw):
    """--recompute selective runs the attention core again: QK^T and PV per layer."""
    config, _ = llama
    sel = step(recompute="selective")
    # QK^T and PV over the causal pairs (key <= query)
    core = 2 * B * config.num_attention_heads * config.head_dim * S * (S + 1) // 2
    assert sel.report.totals.macs - adamw.report.totals.macs == LAYERS * core
    t = sel.report.get_section("model")["training"]
    assert t["recompute_macs"] == LAYERS * core
    assert t["model_flops"] == 2 * adamw.report.totals.macs


def test_mfu_of_a_measured_step_is_the_formula(adamw):
    """MFU = model FLOPs / (measured seconds x dense peak at the compute dtype x GPUs); HFU the
    same with the recomputed FLOPs."""
    ms = 250.0
    full = step(recompute="full", measured_ms=ms)
    t = full.report.get_section("model")["training"]
    d = t["devices"]["H100_SXM"]
    assert d["dense_peak_flops"] == H100_BF16_DENSE and d["gpus"] == 1
    model_flops = 2 * adamw.report.totals.macs
    assert d["mfu"] == pytest.approx(model_flops / (ms * 1e-3 * H100_BF16_DENSE * 1), rel=1e-12)
    assert d["hfu"] == pytest.approx(2 * full.report.totals.macs / (ms * 1e-3 * H100_BF16_DENSE),
                                     rel=1e-12)
    assert d["hfu"] > d["mfu"]


def test_the_cli_prints_the_training_block_and_refuses_bad_options():
    base = ["analyze", "hf:llama-3.1-8b", "--set", f"num_hidden_layers={LAYERS}", "--seq",
            str(S), "--no-cache-aware", "--no-crosscheck", "--quiet"]
    proc = run_solar(*base, "--train", "--recompute", "selective", "--measured-ms", "100")
    assert proc.returncode == 0, proc.stderr
    assert "training step: optimizer adamw (mixed: bf16 compute, fp32 master weights and " \
        "moments)" in proc.stdout
    assert "recompute selective" in proc.stdout and "MFU" in proc.stdout
    for args, words in ((["--measured-ms", "5"], "for a training step (--train)"),
                        (["--train", "--measured-ms", "0"], "positive number"),
                        (["--recompute", "full"], "for a training step (--train)")):
        proc = run_solar(*base, *args)
        assert proc.returncode == 2, proc.stderr
        assert words in proc.stderr


def test_recompute_and_measured_ms_are_for_models_only():
    for args in (["--recompute", "full"], ["--measured-ms", "3"]):
        proc = run_solar("analyze", str(EXAMPLES / "torch" / "mlp.py"), "--train", *args)
        assert proc.returncode == 2, proc.stderr
        assert "for models only" in proc.stderr


def test_a_parallel_plans_training_block_is_one_ranks():
    """Under a plan the report is tp rank 0's graph: its FLOPs are the rank's, said so."""
    run = models.ModelRun("hf:llama-3.1-8b", seq=S, config={"num_hidden_layers": LAYERS},
                          plan=models.Plan(tp=2))
    result = models.analyze_model(run, ProgramOptions(train=True, system="2xH100_SXM",
                                                      **OPTIONS))
    t = result.report.get_section("model")["training"]
    assert t["optimizer"] == "none" and t["flops_of"] == "rank"
    assert t["model_flops"] == 2 * result.report.totals.macs


def test_a_parallel_plan_refuses_the_update_it_does_not_shard():
    run = models.ModelRun("hf:llama-3.1-8b", config={"num_hidden_layers": LAYERS},
                          optimizer="adamw", plan=models.Plan(tp=2))
    with pytest.raises(solar.UserError, match="not yet with a parallel plan") as e:
        models.analyze_model(run, ProgramOptions(train=True, system="8xH100_SXM", **OPTIONS))
    assert e.value.kind == "unsupported" and e.value.exit_code == 7


def test_the_training_worked_example():
    """docs/models.md "Training": Llama-3.1-8B, --train --seq 4096 --recompute full
    --measured-ms 500 on an H100 SXM, each number of the example."""
    run = models.ModelRun("hf:llama-3.1-8b", seq=4096, recompute="full", measured_ms=500.0)
    result = models.analyze_model(run, ProgramOptions(train=True, **OPTIONS))
    assert result.warnings == [] and result.report.coverage.unanalyzed == 0
    t = result.report.get_section("model")["training"]
    params = 8_030_261_248  # the published count (registry)
    assert t["trainable_parameters"] == params
    assert t["optimizer_bytes_read"] == t["optimizer_bytes_written"] == params * 14 == \
        112_423_657_472
    L, T, h, kv, i, heads, hd = 32, 4096, 4096, 8 * 128, 14336, 32, 128
    # the attention core's QK^T and PV over the causal pairs: 2 x heads x hd x T (T + 1) / 2
    recomputed = L * (T * (h * h + 2 * h * kv + h * h + 2 * h * i) + heads * hd * T * (T + 1))
    assert t["recompute_macs"] == recomputed == 23_090_281_054_208
    assert t["model_flops"] == 199_832_480_251_904
    assert t["hardware_flops"] == t["model_flops"] + 2 * recomputed == 246_013_042_360_320
    d = t["devices"]["H100_SXM"]
    assert round(100 * d["mfu"], 1) == 40.4  # 199.83e12 / (0.5 s x 989.4e12 FLOP/s x 1)
    assert round(100 * d["hfu"], 1) == 49.7
    seconds = result.report.get_section("model")["devices"]["H100_SXM"]["fused_seconds"]
    assert round(seconds * 1e3) == 249


def test_selective_recompute_of_eager_attention_adds_the_scores():
    """Gemma-2's attention is eager (soft-capping): its modeling module's
    eager_attention_forward is checkpointed. The recomputation reads back the softmax, so
    QK^T runs again; the product with V runs too, but nothing reads its output (dead code,
    not counted)."""
    config = {"num_hidden_layers": LAYERS}
    cfg = config_of(models.lookup("gemma-2-9b"), config)
    base, sel = (step(optimizer="none", recompute=r, ref="hf:gemma-2-9b") for r in
                 ("none", "selective"))
    # QK^T over the causal pairs (key <= query; the sliding window is wider than S)
    scores = B * cfg.num_attention_heads * cfg.head_dim * S * (S + 1) // 2
    assert sel.report.totals.macs - base.report.totals.macs == LAYERS * scores


def test_selective_recompute_refuses_a_model_without_attention():
    run = models.ModelRun("hf:mamba-130m", batch=B, seq=S, config={"num_hidden_layers": 2},
                          recompute="selective")
    with pytest.raises(solar.UserError, match="has no attention module") as e:
        models.analyze_model(run, ProgramOptions(train=True, **OPTIONS))
    assert e.value.kind == "unsupported" and e.value.exit_code == 7


@pytest.mark.parametrize("name,config", [
    ("llama-3.1-8b", {"num_hidden_layers": 2}),
    # DeepSeek-V3: a dense and an MLA + MoE layer, the most parameter tensors per layer
    ("deepseek-v3", {"num_hidden_layers": 2, "first_k_dense_replace": 1}),
])
@pytest.mark.parametrize("optimizer,recompute", [("adamw", "none"), ("adamw", "full")])
def test_the_estimate_bounds_a_training_step(name, config, optimizer, recompute):
    """The work estimate (docs/models.md) bounds the ops a training step records, with the
    update and recomputation."""
    from solar.models import estimate

    run = models.ModelRun("hf:" + name, batch=2, seq=16, config=config, optimizer=optimizer,
                          recompute=recompute)
    result = models.analyze_model(run, ProgramOptions(train=True, **OPTIONS))
    spec = models.lookup(name)
    est = estimate.estimate(config_of(spec, config), spec.task, "prefill", 2, 16, 4096, True,
                            recompute, optimizer)
    assert len(result.trace["ops"]) <= est.trace_ops
