"""The registry's largest and newest entries (python/solar/models/registry, docs/models.md "The
registry"): what the shared checks of tests/python/test_models.py (published counts, every
model's 2-layer prefill and decode, the work estimate's limits) do not reach. DeepSeek-V3's
first 3 layers are dense, so its 2-layer run there has no MoE layer: here one of each; its
card's active count; the estimate's ops per layer against its MoE layer's capture; Gemma-2's
alternating local and global layers."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from solar import models  # noqa: E402
from solar.models import estimate  # noqa: E402
from solar.models.analyze import capture_model  # noqa: E402
from solar.models.build import build_model, config_of, parameter_count  # noqa: E402
from solar.programs import ProgramOptions  # noqa: E402

OPTIONS = dict(crosscheck=False, cache_aware=False)
# One dense layer, then one MoE layer (DeepSeek-V3 has 3 dense, then 58 MoE layers).
DENSE_AND_MOE = {"num_hidden_layers": 2, "first_k_dense_replace": 1}


def _run(phase, config, train=False):
    return models.ModelRun("hf:deepseek-v3", phase=phase, batch=2, seq=16, context=32,
                           config=config), ProgramOptions(train=train, **OPTIONS)


@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_deepseek_v3_with_a_dense_and_an_moe_layer_analyzes_completely(phase):
    result = models.analyze_model(*_run(phase, DENSE_AND_MOE))
    assert result.warnings == []
    assert result.report.coverage.unanalyzed == 0 and result.report.coverage.complete
    types = {row["type"] for row in result.report.get_section("model")["layer_types"]}
    assert {"DeepseekV3MoE", "DeepseekV3MLP"} <= types, types


def test_deepseek_v3_active_parameters_are_the_published_count():
    """Active per token (the card's 37B, 36.6B in the weights' README): every parameter but the
    routed experts a token is not routed to and the input embedding table, of which a token
    reads one row."""
    spec = models.lookup("deepseek-v3")
    cfg = config_of(spec)
    total = parameter_count(build_model(spec, cfg, "bf16"))
    moe_layers = cfg.num_hidden_layers - cfg.first_k_dense_replace
    expert = 3 * cfg.hidden_size * cfg.moe_intermediate_size  # gate, up, down
    idle = moe_layers * (cfg.n_routed_experts - cfg.num_experts_per_tok) * expert
    active = total - idle - cfg.vocab_size * cfg.hidden_size
    published = models.lookup("deepseek-v3").published
    assert round(active / 1e9) * 1e9 == published["active_params"]
    assert round(active / 1e8) * 1e8 == pytest.approx(36.6e9)


@pytest.mark.parametrize("phase,train", [("prefill", False), ("decode", False),
                                         ("prefill", True)])
def test_the_estimate_bounds_deepseek_v3_moe_layer(phase, train):
    """A DeepSeek-V3 MoE layer (group-limited routing, shared expert) records more ops than
    any other registry layer: the estimate still bounds the capture, and the full model
    stays under the limits."""
    run, options = _run(phase, DENSE_AND_MOE, train)
    spec, config, _, trace = capture_model(run, options)
    est = estimate.estimate(config, spec.task, phase, 2, 16, 32, train)
    assert len(trace["ops"]) <= est.trace_ops
    full = estimate.estimate(config_of(spec), spec.task, phase, 1, 1024, 4096, train)
    assert full.layers == 61 and full.past_limit() is None


def test_gemma_2_alternates_sliding_window_and_global_layers():
    cfg = config_of(models.lookup("gemma-2-9b"))
    assert cfg.layer_types[:4] == ["sliding_attention", "full_attention"] * 2
    assert len(cfg.layer_types) == 42 and cfg.sliding_window == 4096


@pytest.mark.parametrize("name,hub", [("deepseek-v3", "deepseek-ai/DeepSeek-V3"),
                                      ("gemma-2-9b", "google/gemma-2-9b"),
                                      ("qwen2.5-72b", "Qwen/Qwen2.5-72B"),
                                      ("llama-3.2-1b", "meta-llama/Llama-3.2-1B")])
def test_the_new_entries_resolve_by_their_hub_names(name, hub):
    assert models.lookup(hub).name == name
