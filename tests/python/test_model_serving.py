"""Serving figures of a model (python/solar/models/serving.py, docs/models.md "Serving"):
TTFT and TPOT are the prefill's and the decode step's fused SOL run separately, the largest
batch is floor((capacity - weights) / KV cache per sequence) with the cache by formula from
the configuration, and a speculative step's time per generated token is
(verify + K x draft step) / (accepted + 1).

Models run with 2 layers (--set num_hidden_layers=2) at small batch and lengths: the
formulas are per layer.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from conftest import run_solar  # noqa: E402
from solar import _core, models  # noqa: E402
from solar.programs import ProgramOptions  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BF16 = 2
ARCHS = ["H100_SXM", "B200"]
SHAPE = dict(batch=2, seq=16, context=32)
LLAMA_8B = "hf:llama-3.1-8b"
LAYERS = 2


def options(**kw) -> ProgramOptions:
    return ProgramOptions(archs=list(ARCHS), crosscheck=False, cache_aware=False, **kw)


def analyze(ref: str = LLAMA_8B, layers: int = LAYERS, **kw):
    args = dict(SHAPE, config={"num_hidden_layers": layers})
    args.update(kw)
    return models.analyze_model(models.ModelRun(ref, **args), options())


def seconds(result, arch: str) -> float:
    return float(result.report.devices[arch].fused.seconds)


def capacity(arch: str) -> int:
    """The device file's DRAM capacity (bytes)."""
    (dram,) = [m for m in _core.device(arch).memory if m.name == "dram"]
    return int(dram.capacity.value)


@pytest.fixture(scope="module")
def served():
    """Llama-3.1-8B (2 layers) with --serving, its report's own phase the prefill."""
    return analyze(serving=True)


def test_ttft_and_tpot_are_the_prefill_and_decode_steps_analyzed_separately(served):
    s = served.report.get_section("model")["serving"]
    prefill, decode = analyze(phase="prefill"), analyze(phase="decode")
    for arch in ARCHS:
        row = s["devices"][arch]
        assert row["ttft_s"] == seconds(prefill, arch)
        assert row["tpot_s"] == seconds(decode, arch)
        # batch new tokens per decode step, on one GPU
        assert row["tokens_per_s_per_gpu"] == pytest.approx(SHAPE["batch"] / row["tpot_s"])
        assert row["prefill_tokens_per_s_per_gpu"] == pytest.approx(
            SHAPE["batch"] * SHAPE["seq"] / row["ttft_s"])


def test_a_decode_run_gives_the_same_figures_as_a_prefill_run(served):
    prefill_first = served.report.get_section("model")["serving"]["devices"]
    decode_first = analyze(phase="decode", serving=True).report.get_section("model")
    for arch in ARCHS:
        for key in ("ttft_s", "tpot_s", "max_batch"):
            assert decode_first["serving"]["devices"][arch][key] == prefill_first[arch][key]


def test_max_batch_is_what_the_capacity_leaves_after_the_weights_over_the_cache_per_sequence(
        served):
    m = served.report.get_section("model")
    s = m["serving"]
    inputs = s["max_batch_inputs"]
    # Llama-3.1-8B: 8 key/value heads of 128; keys and values, bf16, per layer and token
    per_token = LAYERS * 2 * 8 * 128 * BF16
    assert inputs["kv_bytes_per_token"] == per_token
    # the decode step's buffers: --context cached tokens and the new token's slot
    per_sequence = per_token * (SHAPE["context"] + 1)
    assert inputs["kv_bytes_per_sequence"] == per_sequence
    assert inputs["weight_bytes"] == m["weight_bytes"]
    assert inputs["cache_dtypes"] == ["bfloat16"]
    for arch in ARCHS:
        row = s["devices"][arch]
        assert row["capacity_bytes"] == capacity(arch)
        assert row["max_batch"] == (capacity(arch) - m["weight_bytes"]) // per_sequence


def test_an_fp8_cache_counts_one_byte_per_element():
    s = analyze(serving=True, kv_dtype="fp8").report.get_section("model")
    inputs = s["serving"]["max_batch_inputs"]
    per_sequence = LAYERS * 2 * 8 * 128 * 1 * (SHAPE["context"] + 1)  # fp8: 1 byte
    assert inputs["kv_bytes_per_sequence"] == per_sequence
    assert inputs["cache_dtypes"] == ["f8e4m3"]
    for arch in ARCHS:
        # the weights as stored: the model section's, the cache tensors' scales included
        assert s["serving"]["devices"][arch]["max_batch"] == \
            (capacity(arch) - s["weight_bytes"]) // per_sequence


def test_a_sliding_window_layer_holds_its_window_not_the_context():
    """The cache per sequence is the decode step's buffers: a layer with a window of W keeps
    W slots (W - 1 cached tokens and the new one), whatever the context."""
    window = 16
    s = analyze("hf:mistral-7b", serving=True, config={"num_hidden_layers": LAYERS,
                                                       "sliding_window": window})
    inputs = s.report.get_section("model")["serving"]["max_batch_inputs"]
    # Mistral-7B: 8 key/value heads of 128, bf16
    assert inputs["kv_bytes_per_sequence"] == LAYERS * 2 * 8 * 128 * BF16 * window
    assert inputs["kv_bytes_per_token"] is None  # not one slot per context token


@pytest.mark.parametrize("form", ["latent", "expanded"])
def test_a_latent_attention_cache_counts_what_its_form_keeps_per_token(form):
    """DeepSeek-V2-Lite: the latent cache keeps kv_lora_rank + qk_rope_head_dim per token and
    layer, shared by the heads; the expanded one each head's key and value."""
    s = analyze("hf:deepseek-v2-lite", serving=True, mla_cache=form)
    inputs = s.report.get_section("model")["serving"]["max_batch_inputs"]
    per_layer = (512 + 64 if form == "latent"  # kv_lora_rank + qk_rope_head_dim
                 else 16 * ((128 + 64) + 128))  # heads x (key: nope + rope, value)
    assert inputs["kv_bytes_per_token"] == LAYERS * per_layer * BF16
    assert inputs["kv_bytes_per_sequence"] == LAYERS * per_layer * BF16 * (SHAPE["context"] + 1)


def test_a_cross_attention_cache_and_a_recurrent_state_count_as_allocated():
    """T5: each decoder layer's self-attention cache (context + 1 slots) and its cross-
    attention cache of --seq encoder tokens; Mamba: each layer's convolution window and SSM
    state, whatever the context."""
    t5 = analyze("hf:t5-small", serving=True,
                 config={"num_layers": LAYERS, "num_decoder_layers": LAYERS})
    inputs = t5.report.get_section("model")["serving"]["max_batch_inputs"]
    # 8 heads of 64, keys and values, bf16
    assert inputs["kv_bytes_per_sequence"] == \
        LAYERS * 2 * 8 * 64 * BF16 * ((SHAPE["context"] + 1) + SHAPE["seq"])
    mamba = analyze("hf:mamba-130m", serving=True)
    inputs = mamba.report.get_section("model")["serving"]["max_batch_inputs"]
    d_inner = 2 * 768  # expand x hidden_size
    # the convolution window (conv_kernel 4) in bf16, the SSM state (state_size 16) in fp32
    assert inputs["kv_bytes_per_sequence"] == LAYERS * (d_inner * 4 * BF16 + d_inner * 16 * 4)
    assert inputs["cache_dtypes"] == ["bfloat16", "float32"]


def test_max_batch_under_a_plan_is_per_rank_weights_and_cache():
    plan = models.Plan(tp=8)
    run = models.ModelRun(LLAMA_8B, serving=True, plan=plan,
                          config={"num_hidden_layers": LAYERS}, **SHAPE)
    result = models.analyze_model(run, ProgramOptions(system="DGX_H100", crosscheck=False,
                                                      cache_aware=False))
    s = result.report.get_section("model")["serving"]["system"]
    decode = models.analyze_model(
        models.ModelRun(LLAMA_8B, phase="decode", plan=plan,
                        config={"num_hidden_layers": LAYERS}, **SHAPE),
        ProgramOptions(system="DGX_H100", crosscheck=False, cache_aware=False))
    system = decode.report.get_section("system")
    assert s["tpot_s"] == float(system["seconds"])
    assert s["gpus"] == 8
    assert s["tokens_per_s_per_gpu"] == pytest.approx(SHAPE["batch"] / s["tpot_s"] / 8)
    (rank,) = s["ranks"]
    # tp 8 over 8 key/value heads: one head per rank
    per_sequence = LAYERS * 2 * 1 * 128 * BF16 * (SHAPE["context"] + 1)
    assert rank["kv_bytes_per_sequence"] == per_sequence
    assert s["max_batch_per_replica"] == (capacity("H100_SXM") - rank["weight_bytes"]) \
        // per_sequence


@pytest.fixture(scope="module")
def draft_config(tmp_path_factory):
    """A one-layer Llama over Llama-3's vocabulary: a small draft model."""
    spec = json.load(open(os.path.join(REPO, "python/solar/models/registry/llama-3.1-8b.json")))
    config = dict(spec["config"], num_hidden_layers=1, hidden_size=1024,
                  intermediate_size=4096, num_attention_heads=8, num_key_value_heads=8,
                  architectures=["LlamaForCausalLM"])
    path = tmp_path_factory.mktemp("draft") / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


def test_speculative_time_per_token_is_verify_plus_k_drafts_over_accepted_plus_one(
        draft_config):
    k = 3
    result = analyze(phase="decode", draft=draft_config, speculate=k)
    s = result.report.get_section("model")["serving"]
    assert s["speculative"]["k"] == k and s["speculative"]["verify_tokens"] == k + 1
    verify = analyze(phase="decode", new_tokens=k + 1)
    draft = models.analyze_model(models.ModelRun(draft_config, phase="decode", **SHAPE),
                                 options())
    for arch in ARCHS:
        row = s["devices"][arch]
        sp = row["speculative"]
        assert sp["verify_s"] == seconds(verify, arch)
        assert sp["draft_step_s"] == seconds(draft, arch)
        step = seconds(verify, arch) + k * seconds(draft, arch)
        assert [t["accepted"] for t in sp["per_accepted"]] == list(range(k + 1))
        for t in sp["per_accepted"]:
            assert t["seconds_per_token"] == pytest.approx(step / (t["accepted"] + 1))
            assert t["speedup"] == pytest.approx(row["tpot_s"] / t["seconds_per_token"])
        # all accepted is the best case
        assert min(t["seconds_per_token"] for t in sp["per_accepted"]) == \
            sp["per_accepted"][-1]["seconds_per_token"]


def test_the_verify_step_takes_k_plus_one_tokens_and_keeps_their_logits():
    k = 3
    verify = analyze(phase="decode", new_tokens=k + 1)
    decode = analyze(phase="decode")
    # the outputs: the cache buffers written in place, and the logits
    (logits,) = [t for t in verify.trace["tensors"] if t["role"] == "output"
                 and len(t["shape"]) == 3]
    assert logits["shape"] == [SHAPE["batch"], k + 1, 128256]  # Llama-3's vocabulary
    # the cache buffers: --context cached tokens and K + 1 new slots per layer
    caches = [t for t in verify.trace["tensors"] if t["role"] == "input"][1:]
    assert {tuple(t["shape"]) for t in caches} == {(SHAPE["batch"], 8, SHAPE["context"] + k + 1,
                                                    128)}
    assert verify.report.get_section("model")["tokens_per_step"] == SHAPE["batch"] * (k + 1)
    # the weights are read once either way: the verify step is not k + 1 decode steps
    for arch in ARCHS:
        assert seconds(verify, arch) < 2 * seconds(decode, arch)


def test_serving_text_shows_the_figures_and_the_speculative_table(draft_config):
    k = 2
    m = analyze(phase="decode", draft=draft_config, speculate=k).report.get_section("model")
    text = models.model_text(m)
    assert "serving: batch 2, prompt 16 tokens, context 32" in text
    assert "max batch: (capacity - weights" in text
    assert f"K {k}: a verify step of {k + 1} tokens + {k} draft steps" in text
    assert "a=0" in text and f"a={k}" in text


# ---------------------------------------------------------------- refusals


def solar(*args: str) -> subprocess.CompletedProcess:
    return run_solar(*args)


@pytest.mark.parametrize("args, code, words", [
    (["hf:bert-base-uncased", "--serving"], "usage", "has no decode phase"),
    ([LLAMA_8B, "--draft", "hf:llama-3.1-8b"], "usage", "--speculate K go together"),
    ([LLAMA_8B, "--speculate", "2"], "usage", "--speculate K go together"),
    ([LLAMA_8B, "--draft", LLAMA_8B, "--speculate", "0"], "usage", "positive integer"),
    ([LLAMA_8B, "--draft", "hf:gpt2", "--speculate", "2"], "usage", "vocabulary"),
    ([LLAMA_8B, "--serving", "--train"], "usage", "not of a --train step"),
    (["hf:mistral-7b", "--draft", "hf:mistral-7b", "--speculate", "2"], "unsupported",
     "sliding-window"),
    (["hf:deepseek-v2-lite", "--draft", "hf:deepseek-v2-lite", "--speculate", "2"],
     "unsupported", "latent attention"),
])
def test_what_serving_cannot_be_made_for_is_refused_before_building(args, code, words):
    r = solar("analyze", *args, "--set", "num_hidden_layers=2")
    assert r.returncode == _core.EXIT_CODES[code], r.stderr
    assert words in r.stderr and r.stderr.startswith("solar: error: ")
    assert "Traceback" not in r.stderr



def test_a_model_whose_decode_step_is_not_modelled_is_refused_before_building():
    r = solar("analyze", "hf:reformer-enwik8", "--serving")
    assert r.returncode == _core.EXIT_CODES["unsupported"], r.stderr
    assert "--serving: reformer-enwik8: transformers' Reformer keeps its own cache" in r.stderr



def test_the_worked_example_of_docs_models_md():
    """docs/models.md, "Serving": Llama-3.1-8B (all 32 layers) at batch 8, a 1024-token
    prompt and a 4096-token context, Llama-3.2-1B drafting 4 tokens, on an H100 SXM and a
    B200; the figures as the page prints them (3 significant digits)."""
    k = 4
    run = models.ModelRun(LLAMA_8B, batch=8, seq=1024, context=4096, draft="hf:llama-3.2-1b",
                          speculate=k)
    s = models.analyze_model(run, options()).report.get_section("model")["serving"]
    # 32 layers x keys and values x 8 heads x 128 x bf16 per token; 4096 + 1 slots
    per_token = 32 * 2 * 8 * 128 * BF16
    assert s["max_batch_inputs"]["kv_bytes_per_token"] == per_token == 131_072
    assert s["max_batch_inputs"]["kv_bytes_per_sequence"] == per_token * 4097
    weights = s["max_batch_inputs"]["weight_bytes"]
    assert weights / 1e9 == pytest.approx(16.06, abs=0.005)
    printed = {  # arch: TTFT, TPOT (s), tokens/s per GPU, max batch, verify, draft, a = K
        "H100_SXM": (118e-3, 5.76e-3, 1388.0, 119, 5.77e-3, 1.06e-3, 2.00e-3),
        "B200": (51.8e-3, 2.41e-3, 3314.7, 305, 2.42e-3, 443e-6, 838e-6),
    }
    for arch, (ttft, tpot, tps, max_batch, verify, draft, best) in printed.items():
        row = s["devices"][arch]
        assert row["max_batch"] == (capacity(arch) - weights) // (per_token * 4097) == max_batch
        assert row["ttft_s"] == pytest.approx(ttft, rel=5e-3)
        assert row["tpot_s"] == pytest.approx(tpot, rel=5e-3)
        assert row["tokens_per_s_per_gpu"] == pytest.approx(tps, rel=5e-4)
        sp = row["speculative"]
        assert sp["verify_s"] == pytest.approx(verify, rel=5e-3)
        assert sp["draft_step_s"] == pytest.approx(draft, rel=5e-3)
        assert sp["per_accepted"][k]["seconds_per_token"] == pytest.approx(best, rel=5e-3)
    h100 = s["devices"]["H100_SXM"]
    assert h100["tpot_s"] / h100["speculative"]["per_accepted"][k]["seconds_per_token"] == \
        pytest.approx(2.88, abs=0.005)
    # the break-even accepted count: (verify + K x draft) / TPOT - 1
    assert h100["speculative"]["step_s"] / h100["tpot_s"] - 1 == pytest.approx(0.74, abs=0.005)
