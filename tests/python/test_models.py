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
    if "policy_params" in entry:
        # A policy's paper sums its parts' rounded counts (pi0: "3B" + "300M" = "3.3B"): the
        # built count is the parts' sum its policy_note derives.
        assert count == entry["policy_params"]
    elif "causal_lm_params" in entry:
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
    result = run(name, phase)  # at the default bf16, Reformer too (build.reformer_positions)
    report = result.report
    assert result.warnings == [], result.warnings
    assert report.coverage.unanalyzed == 0 and report.coverage.complete
    assert report.totals.macs > 0
    section = report.get_section("model")
    assert section["phase"] == phase and section["parameters"] > 0
    for device in section["devices"].values():
        assert device["fused_seconds"] > 0 and device["tokens_per_second"] > 0


def _reformer_positions_unknown(monkeypatch):
    """Reformer as it reads its largest position from a tensor, without the answer Solar
    gives it (build.reformer_positions): captured on real, randomly initialized weights."""
    import contextlib

    from solar.models import build

    monkeypatch.setattr(build, "reformer_positions", contextlib.nullcontext)


def test_a_real_tensor_capture_the_cpu_cannot_run_at_bf16_is_refused_with_the_way_out(
        monkeypatch):
    # A model that reads tensor values is captured on real tensors; Reformer's activations
    # upcast beside bf16 layer-norm weights, which CPU kernels refuse: a clear refusal, not a
    # traceback.
    _reformer_positions_unknown(monkeypatch)
    with pytest.raises(Exception, match="analyze it at --dtype f32") as e:
        run("reformer-enwik8", "prefill", dtype="bf16")
    assert e.value.kind == "unsupported"  # exit 7


def test_reformer_on_fake_tensors_is_its_capture_on_real_ones(monkeypatch):
    # The one value Reformer reads (its largest position, n - 1 in a prefill) given to it,
    # the model runs on fake tensors at any dtype; at f32 it records the ops of the capture
    # on real weights, which computes that value, but two things that capture adds:
    # transformers' check for padding without a mask, which fake tensors skip (it reads
    # values), and the LM head's matmul as expand + bmm where the fake run folds it into one
    # mm (torch picks by the real strides). The counts that do not depend on those agree.
    fake = run("reformer-enwik8", "prefill", dtype="f32", seq=512)
    _reformer_positions_unknown(monkeypatch)
    real = run("reformer-enwik8", "prefill", dtype="f32", seq=512)
    padding_check = ["aten::lift_fresh.default", "aten::index.Tensor", "aten::eq.Scalar",
                     "aten::any.default"]
    ops_fake = [op["op"] for op in fake.trace["ops"]]
    ops_real = [op["op"] for op in real.trace["ops"]]
    at = ops_real.index(padding_check[0])
    assert ops_real[at:at + 4] == padding_check
    del ops_real[at:at + 4]
    head = ops_fake.index("aten::mm.default", len(ops_fake) - 8)  # the LM head's matmul
    assert ops_fake[:head - 1] == ops_real[:head - 1]
    assert "aten::max.default" in ops_fake  # the reduction the value comes from, recorded
    a, b = fake.report.to_dict()["totals"], real.report.to_dict()["totals"]
    for key in ("macs", "flops", "special_ops", "bytes_fused"):
        assert a[key] == b[key], key


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


# ---------------------------------------------------------------- checked before building

GPT2 = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 50257,
        "n_positions": 1024, "n_embd": 768, "n_layer": 2, "n_head": 12}
LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
         "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 2,
         "num_key_value_heads": 8, "vocab_size": 128256}
BART = {"architectures": ["BartForConditionalGeneration"], "model_type": "bart",
        "d_model": 1024, "encoder_layers": 2, "decoder_layers": 2,
        "encoder_attention_heads": 16, "decoder_attention_heads": 16, "vocab_size": 50265}


def _refusal(tmp_path, ref_or_config, overrides=None, **run_kw):
    """The solar.UserError analyze_model raises for a config.json of these values (a dict)
    or a registry name, with --set `overrides`."""
    if isinstance(ref_or_config, dict):
        folder = tmp_path / "m"
        folder.mkdir(exist_ok=True)
        (folder / "config.json").write_text(json.dumps(ref_or_config))
        ref = str(folder / "config.json")
    else:
        ref = ref_or_config
    run_kw.setdefault("seq", 8)
    with pytest.raises(models_error()) as e:
        models.analyze_model(models.ModelRun(ref, config=overrides or {}, **run_kw),
                             ProgramOptions(**OPTIONS))
    return e.value


def models_error():
    from solar import UserError

    return UserError


# (what, config.json values or hf:NAME, --set overrides, the message's words)
BAD_SIZES = [
    ("zero width (ZeroDivisionError before)", {**GPT2, "n_embd": 0}, {},
     "config.json: n_embd: must be an integer >= 1, not 0"),
    ("negative layers (no layers before)", "hf:gpt2", {"n_layer": -3},
     "--set n_layer: must be an integer >= 1, not -3"),
    ("text for a number", "hf:gpt2", {"n_layer": "abc"},
     "--set n_layer: must be an integer >= 1, not 'abc'"),
    ("the canonical name through the attribute map", "hf:gpt2", {"num_hidden_layers": 0},
     "--set num_hidden_layers: must be an integer >= 1, not 0"),
    ("a string in the file", {**LLAMA, "hidden_size": "4096"}, {},
     "config.json: hidden_size: must be an integer >= 1, not '4096'"),
    ("a bool is not an integer", {**GPT2, "n_layer": True}, {},
     "config.json: n_layer: must be an integer >= 1, not True"),
    ("a fraction", {**GPT2, "vocab_size": 50257.5}, {}, "vocab_size: must be an integer"),
    ("heads not dividing the width", {**GPT2, "n_head": 7}, {},
     "n_head=7 does not divide n_embd=768"),
    ("kv heads not dividing the heads", {**LLAMA, "num_key_value_heads": 5}, {},
     "num_key_value_heads=5 does not divide num_attention_heads=32"),
    ("a decoder's heads, found by name", {**BART, "decoder_attention_heads": 7}, {},
     "decoder_attention_heads=7 does not divide d_model=1024"),
    ("a count past the canonical names (may be 0, never -1)", "hf:deepseek-v2-lite",
     {"n_shared_experts": -1}, "--set n_shared_experts: must be an integer >= 0, not -1"),
    ("architectures of a number", {**GPT2, "architectures": [5]}, {},
     "architectures must be a list of model class names"),
    ("architectures as one string", {**GPT2, "architectures": "GPT2LMHeadModel"}, {},
     "architectures must be a list of model class names"),
    ("an unknown model type", {**GPT2, "model_type": "gpt-9"}, {},
     "model_type 'gpt-9' is not a model type"),
    ("another field's type, transformers' check in one line", "hf:gpt2",
     {"layer_norm_epsilon": "tiny"}, "--set layer_norm_epsilon: transformers refuses"),
]


@pytest.mark.parametrize("what,source,overrides,words", BAD_SIZES,
                         ids=[b[0] for b in BAD_SIZES])
def test_a_bad_size_is_refused_before_building_naming_the_field(tmp_path, what, source,
                                                               overrides, words):
    e = _refusal(tmp_path, source, overrides)
    assert e.exit_code == 2 and words in str(e), str(e)
    assert "\n" not in str(e)


def test_sizes_that_are_fine_pass_the_checks():
    """A head size given outright (Qwen3 and Gemma set head_dim: heads x head_dim need not be
    the hidden size) lifts the divisibility check; a count may be zero."""
    spec = models.lookup("llama-3.1-8b")
    cfg = config_of(spec, {"num_attention_heads": 24, "num_key_value_heads": 8,
                           "head_dim": 128, "num_hidden_layers": 2})
    assert cfg.num_attention_heads * cfg.head_dim != cfg.hidden_size
    assert config_of(models.lookup("deepseek-v2-lite"), {"n_shared_experts": 0})
    # an override through the attribute map replaces the field the file spells its own way
    assert config_of(models.lookup("gpt2"), {"num_hidden_layers": 3}).n_layer == 3


def test_the_checks_accept_transformers_own_defaults():
    """The generic rule against every config class transformers has: each one's defaults,
    all given as if written in a config.json, pass, but those few whose heads do not divide
    the hidden size with no head size declared (their modeling floors hidden // heads; the
    published configs of these models give head_dim)."""
    import warnings

    from transformers import CONFIG_MAPPING
    from solar.models import validate

    checked, refused = 0, []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for model_type in list(CONFIG_MAPPING.keys()):
            cls = CONFIG_MAPPING[model_type]
            try:
                values = cls().to_dict()
            except Exception:  # noqa: BLE001 - a config that needs arguments
                continue
            values.pop("model_type", None)
            checked += 1
            try:
                validate.check_sizes(cls, values, {k: "config.json" for k in values})
            except models_error() as e:
                refused.append((model_type, str(e)))
    assert checked > 500
    assert len(refused) <= 5, refused
    for model_type, message in refused:
        assert "does not divide hidden_size" in message, (model_type, message)
        assert "head_dim" not in values_of(model_type), model_type


def values_of(model_type):
    from transformers import CONFIG_MAPPING

    return CONFIG_MAPPING[model_type]().to_dict()


@pytest.mark.parametrize("name,value", [("batch", 0), ("batch", -2), ("batch", True),
                                        ("seq", 0), ("seq", 1.5), ("context", -1)])
def test_batch_seq_and_context_are_positive_integers(name, value):
    with pytest.raises(models_error(), match=f"--{name} must be a positive integer"):
        models.ModelRun("hf:gpt2", **{name: value}).check()


# ---------------------------------------------------------------- the work estimate

from solar.models import estimate  # noqa: E402

LLAMA_405B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
              "hidden_size": 16384, "intermediate_size": 53248, "num_attention_heads": 128,
              "num_hidden_layers": 126, "num_key_value_heads": 8, "vocab_size": 128256,
              "max_position_embeddings": 131072, "rope_theta": 500000.0,
              "tie_word_embeddings": False}


def _estimate(spec, config, phase, train=False, batch=1, seq=1024, context=4096):
    return estimate.estimate(config, spec.task, phase, batch, seq, context, train)


def test_every_registry_model_and_llama_405b_stay_under_the_limits(tmp_path):
    """At the default sizes, prefill and decode of every registry model, and Llama-3.1-405B's
    (from its config.json values), pass the checks and are estimated under every limit;
    training steps too, but Mamba's at 1024 tokens (its scan records 3 x 24 x 1024 x 16)."""
    folder = tmp_path / "llama-405b"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA_405B))
    refs = ["hf:" + n for n in models.names()] + [str(folder / "config.json")]
    for ref in refs:
        spec = models.resolve(ref)
        config = config_of(spec)
        for phase in ("prefill", "decode"):
            est = _estimate(spec, config, phase)
            assert est.past_limit() is None, (ref, phase, est)
        if spec.model_type not in estimate.SCAN_MODEL_TYPES:
            assert _estimate(spec, config, "prefill", train=True).past_limit() is None, ref
    big = _estimate(spec, config, "decode")
    assert big.layers == 126 and big.trace_ops == 100 + 126 * 200
    mamba = models.lookup("mamba-130m")
    est = _estimate(mamba, config_of(mamba), "prefill")
    assert est.trace_ops == 100 + 24 * 200  # the scan recorded as one op a layer
    est = _estimate(mamba, config_of(mamba), "prefill", train=True)  # the scan token by token
    assert est.trace_ops == 100 + 24 * ((200 + 16 * 1024) * 3 + 200) > estimate.LIMIT_TRACE_OPS


@pytest.mark.parametrize("name,phase,train", [
    ("gpt2", "prefill", False), ("llama-3.1-8b", "decode", False),
    ("mixtral-8x7b", "prefill", False), ("deepseek-v2-lite", "prefill", False),
    ("mamba-130m", "prefill", False), ("t5-small", "prefill", False),
    ("bart-large", "decode", False), ("gpt2", "prefill", True),
    ("deepseek-v2-lite", "prefill", True), ("mamba-130m", "prefill", True)])
def test_the_estimate_bounds_the_ops_a_capture_records(name, phase, train):
    """The estimate is an upper bound of what the capture records (2 layers, 16 tokens), and
    counts the layers the model is built with."""
    spec = models.lookup(name)
    config = config_of(spec, two_layers(name))
    est = _estimate(spec, config, phase, train=train, batch=2, seq=16, context=32)
    layers = sum(two_layers(name).values())
    assert est.layers == layers
    result = models.analyze_model(
        models.ModelRun("hf:" + name, phase=phase, batch=2, seq=16, context=32,
                        config=two_layers(name)), ProgramOptions(train=train, **OPTIONS))
    recorded = len(result.trace["ops"])
    assert recorded <= est.trace_ops, (recorded, est)


def test_a_billion_layers_is_refused_before_building_and_force_builds_past_a_limit(tmp_path):
    import time

    t0 = time.monotonic()
    e = _refusal(tmp_path, "hf:gpt2", {"n_layer": 10 ** 9})
    assert time.monotonic() - t0 < 20
    assert e.kind == "too_large" and e.exit_code == 2
    layers_x_ops = 100 + 10 ** 9 * 200
    assert f"{layers_x_ops:,} recorded ops" in str(e) and "500,000" in str(e)
    assert "--force" in str(e)
    # A vocabulary of 2 x 10^11 rows: an estimated 1.5 x 10^14 parameters, past the limit;
    # on fake tensors it builds in seconds all the same, when forced.
    big = {"n_layer": 1, "vocab_size": 2 * 10 ** 11}
    assert "parameters, past the limit" in str(_refusal(tmp_path, "hf:gpt2", big, seq=4))
    result = models.analyze_model(models.ModelRun("hf:gpt2", seq=4, config=big, force=True),
                                  ProgramOptions(**OPTIONS))
    cfg = config_of(models.lookup("gpt2"), big)
    h = cfg.n_embd
    wte, wpe = cfg.vocab_size * h, cfg.n_positions * h
    block = 4 * h + 3 * h * h + 3 * h + h * h + h + 4 * h * h + 4 * h + 4 * h * h + h  # GPT-2
    assert result.report.get_section("model")["parameters"] == wte + wpe + block + 2 * h


def test_cli_force(tmp_path):
    args = [sys.executable, "-m", "solar", "analyze", "hf:gpt2", "--set", "n_layer=1",
            "--set", "vocab_size=200000000000", "--seq", "4", "--no-crosscheck",
            "--no-cache-aware"]
    proc = subprocess.run(args, capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "--force" in proc.stderr, proc.stderr
    proc = subprocess.run(args + ["--force"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "tokens/s" in proc.stdout


# ---------------------------------------------------------------- the headline of a phase


def test_an_inference_phase_reports_eval_mode_once():
    """An inference phase runs the model in eval mode (`--train` for a training step): the
    report says so once, not "mixed" because of the wrapper the phase runs through."""
    report = run("llama-3.1-8b", "decode").report
    assert report.to_dict()["program"]["mode"] == "eval"
    text = report.table()
    assert text.count("mode: eval") == 1 and "mixed" not in text



def test_a_llama_decode_headline_is_complete():
    """A Llama decode computes int64 positions and cache indices, for which the GPUs publish
    no vector rate: that work is priced at the device's vector ceiling (docs/bounds.md,
    "Unknown rates"), so the headline carries no `*` and no incomplete note."""
    report = run("llama-3.1-8b", "decode").report
    for device in report.to_dict()["devices"].values():
        assert device["fused"]["unknown"] == [] and device["unfused"]["unknown"] == []
        assert any("i64" in s for s in device["fused"]["ceiling"])
    text = report.table()
    rows = [ln for ln in text.splitlines() if ln.startswith("H100_SXM ")]
    assert rows and not any("*" in ln for ln in rows) and "incomplete" not in text
    assert "priced at a ceiling rate" in text
