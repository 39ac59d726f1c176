"""Hugging Face architectures from the shipped configurations (python/solar/models, docs/
models.md): parameter counts against the models' published counts, every registry model
through prefill and decode with nothing unanalyzed, and a decode step's compulsory bytes and
MACs against formulas written from the configuration: the weights the step must read (one
embedding row per token, only the experts its tokens are routed to), the KV cache read once,
only the new token's keys and values written.

Models run with 2 layers (a --set of the config's layer count) at small batch and lengths:
the formulas are per layer, and the full models run in bench/ and in docs/models.md's sweep.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from solar import models  # noqa: E402
from solar.programs import ProgramOptions, analyze_file  # noqa: E402
from solar.models.build import build_model, config_of, parameter_count  # noqa: E402

BF16 = 2
OPTIONS = dict(crosscheck=False, cache_aware=False)
# The config field(s) holding the layer count, where it is not num_hidden_layers.
LAYER_FIELDS = {"gpt2": ("n_layer",), "gpt-neo-2.7b": ("num_layers",),
                "t5-small": ("num_layers", "num_decoder_layers"),
                "bart-large": ("encoder_layers", "decoder_layers"),
                "reformer-enwik8": ("attn_layers",)}


def two_layers(name: str) -> dict:
    if name == "reformer-enwik8":  # its layers are a list of attention kinds
        return {"attn_layers": ["local", "lsh"], "num_hidden_layers": 2}
    return {f: 2 for f in LAYER_FIELDS.get(name, ("num_hidden_layers",))}


def run(name: str, phase: str, **kw):
    args = dict(batch=2, seq=16, context=32, config=two_layers(name))
    args.update(kw)
    return models.analyze_model(models.ModelRun("hf:" + name, phase=phase, **args),
                                ProgramOptions(**OPTIONS))


# ---------------------------------------------------------------- the registry


@pytest.mark.parametrize("entry", models.entries(), ids=lambda e: e["name"])
def test_parameter_count_is_the_published_count(entry):
    """The model built from the shipped config has the parameter count its card publishes:
    exactly where the card gives the integer, else to the card's rounding."""
    spec = models.lookup(entry["name"])
    count = parameter_count(build_model(spec, config_of(spec), "bf16"))
    published = entry["published"]
    if "causal_lm_params" in entry:
        # The card counts another class (BART's encoder-decoder, BigBird's pretraining heads):
        # the causal-LM class KernelBench builds is that count less what its note derives.
        assert count == entry["causal_lm_params"]
    elif published["exact"]:
        assert count == published["params"]
    else:
        step = published["rounded_to"]
        assert round(count / step) * step == pytest.approx(published["params"])


def test_an_unknown_name_is_refused_naming_the_registry_and_config_json():
    with pytest.raises(Exception) as e:
        models.lookup("facebook/not-a-model")
    assert "registry" in str(e.value) and "config.json" in str(e.value)
    assert "llama-3.1-8b" in str(e.value)


# ---------------------------------------------------------------- every model, both phases


def _phases(entry):
    if entry["task"] in ("causal-lm", "seq2seq-lm") and entry["name"] != "reformer-enwik8":
        return ["prefill", "decode"]
    return ["prefill"]


CASES = [(e["name"], p) for e in models.entries() for p in _phases(e)]


@pytest.mark.parametrize("name,phase", CASES, ids=[f"{n}-{p}" for n, p in CASES])
def test_every_registry_model_analyzes_completely(name, phase):
    # Reformer reads a value (.item()): it runs on real weights, where PyTorch's CPU kernels
    # need its own f32
    result = run(name, phase, **({"dtype": "f32"} if name == "reformer-enwik8" else {}))
    report = result.report
    assert result.warnings == [], result.warnings
    assert report.coverage.unanalyzed == 0 and report.coverage.complete
    assert report.totals.macs > 0
    section = report.get_section("model")
    assert section["phase"] == phase and section["parameters"] > 0
    for device in section["devices"].values():
        assert device["fused_seconds"] > 0 and device["tokens_per_second"] > 0


@pytest.mark.parametrize("name,why", [("bert-base-uncased", "no decode phase"),
                                      ("vit-base-patch16-224", "no decode phase"),
                                      ("reformer-enwik8", "not modelled")])
def test_models_without_a_decode_step_refuse_it(name, why):
    with pytest.raises(Exception, match=why):
        run(name, "decode")


# ---------------------------------------------------------------- decode: bytes and MACs


def _llama_like(name: str, batch: int, context: int):
    result = run(name, "decode", batch=batch, context=context)
    config = config_of(models.lookup(name), two_layers(name))
    return result.report, config


def test_decode_step_reads_weights_one_embedding_row_per_token_and_the_cache_once():
    B, C = 2, 32
    report, cfg = _llama_like("llama-3.1-8b", B, C)
    L, D, V, F = cfg.num_hidden_layers, cfg.hidden_size, cfg.vocab_size, cfg.intermediate_size
    H, KV = cfg.num_attention_heads, cfg.num_key_value_heads
    hd = D // H
    layer_weights = D * H * hd + 2 * D * KV * hd + H * hd * D + 3 * D * F + 2 * D
    weights = BF16 * (L * layer_weights + D + V * D)  # layers, final norm, lm_head
    rows = BF16 * min(B, V) * D  # one embedding row per token (distinct ids assumed)
    inv_freq = 4 * (hd // 2)  # the rotary embedding's f32 buffer
    kv_read = BF16 * L * 2 * B * KV * C * hd  # C cached tokens of keys and values
    ids = 8 * B
    assert report.totals.bytes_fused_read == weights + rows + inv_freq + kv_read + ids
    kv_written = BF16 * L * 2 * B * KV * 1 * hd  # only the new token
    logits = BF16 * B * V
    assert report.totals.bytes_fused_written == kv_written + logits
    # MACs: every matmul weight once per token (2 x active params FLOPs, the norms and the
    # embedding lookup left out), plus attention over C + 1 keys
    matmul_params = L * (layer_weights - 2 * D) + V * D
    attention = L * 2 * B * H * (C + 1) * hd
    assert report.totals.macs == B * matmul_params + attention
    section = report.get_section("model")
    assert section["kv_cache_bytes"] == kv_read


def test_moe_decode_reads_only_the_routed_experts():
    """Mixtral at batch 1, top-2 routing: two experts' weights per layer, not eight."""
    B, C = 1, 32
    report, cfg = _llama_like("mixtral-8x7b", B, C)
    L, D, V, F = cfg.num_hidden_layers, cfg.hidden_size, cfg.vocab_size, cfg.intermediate_size
    H, KV, E, K = (cfg.num_attention_heads, cfg.num_key_value_heads, cfg.num_local_experts,
                   cfg.num_experts_per_tok)
    hd = D // H
    attention_weights = D * H * hd + 2 * D * KV * hd + H * hd * D
    expert = 3 * D * F
    read_weights = BF16 * (L * (attention_weights + 2 * D + E * D + K * expert) + D + V * D)
    rows = BF16 * B * D
    kv_read = BF16 * L * 2 * B * KV * C * hd
    assert report.totals.bytes_fused_read == read_weights + rows + 4 * (hd // 2) + kv_read + 8 * B
    active = L * (attention_weights + E * D + K * expert) + V * D
    assert report.totals.macs == B * active + L * 2 * B * H * (C + 1) * hd


def test_deepseek_rotary_in_real_arithmetic_equals_the_complex_original():
    from transformers.models.deepseek_v2 import modeling_deepseek_v2 as ds

    from solar.models.build import real_rotary_emb

    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 4, 5, 64, generator=g), torch.randn(2, 1, 5, 64, generator=g)
    theta = torch.randn(2, 5, 32, generator=g)
    want_q, want_k = ds.apply_rotary_emb(q, k, torch.polar(torch.ones_like(theta), theta))
    got_q, got_k = real_rotary_emb(q, k, (torch.cos(theta), torch.sin(theta)))
    torch.testing.assert_close(got_q, want_q)
    torch.testing.assert_close(got_k, want_k)


def test_prefill_counts_the_causal_triangle_and_writes_the_cache():
    B, S = 2, 16
    report = run("llama-3.1-8b", "prefill", batch=B, seq=S).report
    cfg = config_of(models.lookup("llama-3.1-8b"), two_layers("llama-3.1-8b"))
    L, D, H, KV = (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads,
                   cfg.num_key_value_heads)
    hd, F, V = D // H, cfg.intermediate_size, cfg.vocab_size
    per_token = D * H * hd + 2 * D * KV * hd + H * hd * D + 3 * D * F
    attention = L * 2 * B * H * (S * (S + 1) // 2) * hd
    # every token through the layers; the logits of the last token only
    assert report.totals.macs == L * B * S * per_token + attention + B * D * V
    written = BF16 * (L * 2 * B * KV * S * hd + B * V)
    assert report.totals.bytes_fused_written == written


# ---------------------------------------------------------------- KernelBench level 4, offline


PROGRAM = textwrap.dedent('''
    import torch
    from transformers import AutoModelForCausalLM, AutoConfig

    class Model(torch.nn.Module):
        def __init__(self, model_name, config):
            super().__init__()
            self.model = AutoModelForCausalLM.from_pretrained(model_name, config=config)

        def forward(self, x):
            return self.model(x).logits

    model_name = "gpt2"
    config = AutoConfig.from_pretrained(model_name)
    batch_size, sequence_length = 1, 8

    def get_inputs():
        return [torch.randint(0, config.vocab_size, (batch_size, sequence_length))]

    def get_init_inputs():
        return [model_name, config]
''')


def test_a_program_loading_a_hub_model_by_name_runs_offline(tmp_path):
    path = tmp_path / "gpt2_level4.py"
    path.write_text(PROGRAM)
    r = analyze_file(str(path), ProgramOptions(**OPTIONS)).report
    assert r.coverage.unanalyzed == 0
    cfg = config_of(models.lookup("gpt2"))
    B, T, D, L, V, H = 1, 8, cfg.n_embd, cfg.n_layer, cfg.vocab_size, cfg.n_head
    per_token = 4 * D * D + 2 * D * 4 * D  # c_attn (3 D^2), c_proj, mlp
    attention = 2 * B * H * (T * (T + 1) // 2) * (D // H)
    assert r.totals.macs == L * (B * T * per_token + attention) + B * T * D * V


def test_a_hub_name_not_in_the_registry_is_refused(tmp_path):
    path = tmp_path / "unknown.py"
    path.write_text(PROGRAM.replace('"gpt2"', '"someone/unknown-model"'))
    proc = subprocess.run([sys.executable, "-m", "solar", "analyze", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert "someone/unknown-model" in proc.stderr and "config.json" in proc.stderr


# ---------------------------------------------------------------- the command line


def test_cli_reports_tokens_per_second_per_device(tmp_path):
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, "-m", "solar", "analyze", "hf:qwen2.5-7b", "--phase", "decode",
         "--batch", "4", "--context", "64", "--set", "num_hidden_layers=2", "--arch",
         "H100_SXM", "--arch", "B200", "--no-cache-aware", "--no-crosscheck", "--json",
         str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "tokens/s" in proc.stdout and "qwen2.5-7b" in proc.stdout
    section = json.loads(out.read_text())["model"]
    assert section["batch"] == 4 and section["context"] == 64
    for arch in ("H100_SXM", "B200"):
        d = section["devices"][arch]
        assert math.isclose(d["tokens_per_second"], 4 / d["fused_seconds"])


def test_cli_refuses_an_unknown_model_and_a_bad_config_field(tmp_path):
    for args, words in ((["hf:nope"], "registry"),
                        (["hf:gpt2", "--set", "no_such_field=1"], "no_such_field")):
        proc = subprocess.run([sys.executable, "-m", "solar", "analyze", *args],
                              capture_output=True, text=True)
        assert proc.returncode == 2, proc.stderr
        assert words in proc.stderr


def test_a_training_step_counts_forward_and_backward():
    """--train: every position's logits, their sum as the loss, the backward pass: the
    matmuls run three times (forward, input gradient, weight gradient)."""
    B, S = 1, 8
    forward = run("gpt2", "prefill", batch=B, seq=S).report.totals.macs
    result = models.analyze_model(
        models.ModelRun("hf:gpt2", phase="prefill", batch=B, seq=S, config=two_layers("gpt2")),
        ProgramOptions(train=True, **OPTIONS))
    assert result.warnings == [] and result.report.coverage.unanalyzed == 0
    cfg = config_of(models.lookup("gpt2"), two_layers("gpt2"))
    all_logits = B * S * cfg.n_embd * cfg.vocab_size  # training needs every position's
    last_logit = B * cfg.n_embd * cfg.vocab_size
    assert result.report.totals.macs > 2 * (forward - last_logit + all_logits)
