"""Attention caches as serving engines keep them (docs/models.md, "Attention caches"):
sliding-window layers read only their window at decode and compute the band at prefill
(Mistral's uniform window, Gemma-2/3's alternating local and global layers, Gemma-2's logit
soft-capping as the vector and tanh work it is), and DeepSeek-V2/V3's multi-head latent
attention with the latent cache and absorbed projections (`--mla-cache latent`, the default)
or each head's keys and values (`--mla-cache expanded`). Every figure is a formula written
from the configuration.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from solar import models  # noqa: E402
from solar.programs import ProgramOptions  # noqa: E402
from solar.models.build import config_of  # noqa: E402
from solar.models.registry import resolve  # noqa: E402

BF16 = 2
OPTIONS = dict(crosscheck=False, cache_aware=False)


def analyze(ref: str, phase: str, **kw):
    return models.analyze_model(models.ModelRun(ref, phase=phase, **kw),
                                ProgramOptions(**OPTIONS))


def write_config(tmp_path, **fields) -> str:
    folder = tmp_path / fields["model_type"]
    folder.mkdir()
    path = folder / "config.json"
    path.write_text(json.dumps(fields))
    return str(path)


def module_macs(report, suffix: str) -> int:
    """MACs of the outermost modules whose class ends with `suffix` (the attention)."""
    tree = report.get("modules")
    tree = tree.to_dict() if hasattr(tree, "to_dict") else tree
    total = 0

    def walk(node):
        nonlocal total
        if node.get("type", "").endswith(suffix):
            total += int(node["macs"])
            return
        for child in node.get("children", []):
            walk(child)

    walk(tree)
    return total


def band_keys(seq: int, window: int) -> int:
    """Query-key pairs of a causal band of `window` keys over `seq` queries: sum over q of
    min(q + 1, W)."""
    return sum(min(q + 1, window) for q in range(seq))


# ---------------------------------------------------------------- sliding windows: Mistral


def mistral(phase: str, window: int, **kw):
    cfg = {"num_hidden_layers": 2, "sliding_window": window}
    result = analyze("hf:mistral-7b", phase, batch=1, config=cfg, **kw)
    return result, config_of(models.lookup("mistral-7b"), cfg)


@pytest.mark.parametrize("window", [8, 64])  # W < C + 1 = 33 and W >= C + 1
def test_a_sliding_window_decode_reads_and_attends_to_the_window_only(window):
    B, C = 1, 32
    result, cfg = mistral("decode", window, context=C)
    report = result.report
    L, D, V, F = cfg.num_hidden_layers, cfg.hidden_size, cfg.vocab_size, cfg.intermediate_size
    H, KV = cfg.num_attention_heads, cfg.num_key_value_heads
    hd = D // H
    assert result.warnings == [] and report.coverage.unanalyzed == 0
    keys = min(C + 1, window)  # the new token attends to keys k in (q - W, q]
    cached = min(C, window - 1)  # of them already in the (rolling) cache
    layer_weights = D * H * hd + 2 * D * KV * hd + H * hd * D + 3 * D * F
    # every matmul weight once per token, attention over `keys` keys (Q K^T and P V)
    assert report.totals.macs == B * (L * layer_weights + V * D) + L * 2 * B * H * keys * hd
    kv_read = BF16 * L * 2 * B * KV * cached * hd
    section = report.get_section("model")
    assert section["kv_cache_bytes"] == kv_read
    assert section["sliding_windows"] == [{"window": window, "layers": L}]
    weights = BF16 * (L * (layer_weights + 2 * D) + D + V * D)
    rows, inv_freq, ids = BF16 * B * D, 4 * (hd // 2), 8 * B
    assert report.totals.bytes_fused_read == weights + rows + inv_freq + kv_read + ids


def test_a_sliding_window_prefill_counts_the_band():
    B, S, W = 1, 32, 8
    result, cfg = mistral("prefill", W, seq=S)
    L, D, H = cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads
    hd = D // H
    # the attention module's two contractions over the band's (query, key) pairs
    attention = module_macs(result.report, "Attention")
    KV = cfg.num_key_value_heads
    projections = B * S * (D * H * hd + 2 * D * KV * hd + H * hd * D)
    assert attention == L * (projections + 2 * B * H * band_keys(S, W) * hd)


# ---------------------------------------------------------------- Gemma-2 and Gemma-3


GEMMA = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, head_dim=16, sliding_window=8,
             query_pre_attn_scalar=16, max_position_embeddings=1024)


def gemma_macs(cfg: dict, phase: str, B: int, n: int) -> int:
    """A 2-layer Gemma (layer 0 local with window W, layer 1 global): the projections and the
    gated MLP of every token, the logits of the last, attention over the band (layer 0) and
    the causal triangle (layer 1) at prefill of n tokens, over min(n + 1, W) and n + 1 keys
    at decode after n."""
    D, F, H, KV, hd, V, W = (cfg["hidden_size"], cfg["intermediate_size"],
                             cfg["num_attention_heads"], cfg["num_key_value_heads"],
                             cfg["head_dim"], cfg["vocab_size"], cfg["sliding_window"])
    per_token = D * H * hd + 2 * D * KV * hd + H * hd * D + 3 * D * F
    if phase == "prefill":
        tokens, pairs = n, band_keys(n, W) + n * (n + 1) // 2
    else:
        tokens, pairs = 1, min(n + 1, W) + n + 1
    return B * (2 * tokens * per_token + V * D) + 2 * B * H * pairs * hd


@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_gemma2_alternating_layers_and_soft_capping(tmp_path, phase):
    cfg = dict(GEMMA, model_type="gemma2", architectures=["Gemma2ForCausalLM"],
               attn_logit_softcapping=50.0, final_logit_softcapping=30.0)
    B, n = 2, 32
    kw = dict(seq=n) if phase == "prefill" else dict(context=n)
    result = analyze(write_config(tmp_path, **cfg), phase, batch=B, **kw)
    report = result.report
    assert result.warnings == [] and report.coverage.unanalyzed == 0
    assert report.totals.macs == gemma_macs(cfg, phase, B, n)
    # soft-capping: x / cap, tanh, * cap on each layer's scores and on the logits
    tanh = [o for o in report.to_dict()["ops"] if o.get("label") == "tanh"]
    assert len(tanh) == cfg["num_hidden_layers"] + 1
    section = report.get_section("model")
    assert section["sliding_windows"] == [{"window": 8, "layers": 1}]
    assert "sliding window 8 on 1 layer;" in models.model_text(section)
    if phase == "decode":
        KV, hd, W = cfg["num_key_value_heads"], cfg["head_dim"], cfg["sliding_window"]
        # layer 0 reads its W - 1 cached tokens, layer 1 all n
        assert section["kv_cache_bytes"] == BF16 * 2 * B * KV * hd * ((W - 1) + n)


@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_gemma3_text_local_and_global_layers(tmp_path, phase):
    cfg = dict(GEMMA, model_type="gemma3_text", architectures=["Gemma3ForCausalLM"],
               layer_types=["sliding_attention", "full_attention"])
    B, n = 1, 32
    kw = dict(seq=n) if phase == "prefill" else dict(context=n)
    result = analyze(write_config(tmp_path, **cfg), phase, batch=B, **kw)
    assert result.warnings == [] and result.report.coverage.unanalyzed == 0
    assert result.report.totals.macs == gemma_macs(cfg, phase, B, n)


# ---------------------------------------------------------------- MLA: DeepSeek-V2/V3


def mla_attention_macs(cfg, phase: str, form: str, B: int, n: int) -> int:
    """One MLA layer's attention module (2 of them here), B sequences. Prefill of n tokens
    (either form: kv_b_proj over the new tokens, attention per head over the causal
    triangle) or a decode step after n tokens: latent absorbs W_UK into the query
    (H * nope * r), scores against the latent and the rotary key (H * (n + 1) * (r + rope)),
    the weighted sum over the latent (H * (n + 1) * r) and W_UV (H * r * v); expanded projects
    the new token's keys and values (r * H * (nope + v)) and attends per head."""
    D, H = cfg.hidden_size, cfg.num_attention_heads
    r, nope, rope, v = (cfg.kv_lora_rank, cfg.qk_nope_head_dim, cfg.qk_rope_head_dim,
                        cfg.v_head_dim)
    q = D * H * (nope + rope) if cfg.q_lora_rank is None else \
        D * cfg.q_lora_rank + cfg.q_lora_rank * H * (nope + rope)
    per_token = q + D * (r + rope) + H * v * D  # q, kv_a_proj_with_mqa, o_proj
    if phase == "prefill":
        pairs = n * (n + 1) // 2
        return B * (n * (per_token + r * H * (nope + v)) + H * pairs * (nope + rope + v))
    keys = n + 1
    if form == "latent":
        return B * (per_token + H * nope * r + H * keys * (r + rope) + H * keys * r + H * r * v)
    return B * (per_token + r * H * (nope + v) + H * keys * (nope + rope + v))


def mla_cache_bytes(cfg, form: str, layers: int, B: int, n: int) -> int:
    """The cache a decode step reads: per token and layer the latent and the rotary key
    (shared by the heads), or each head's key and value."""
    if form == "latent":
        per_token = cfg.kv_lora_rank + cfg.qk_rope_head_dim
    else:
        per_token = cfg.num_attention_heads * (cfg.qk_nope_head_dim + cfg.qk_rope_head_dim +
                                               cfg.v_head_dim)
    return layers * B * n * per_token * BF16


V3 = dict(model_type="deepseek_v3", architectures=["DeepseekV3ForCausalLM"], vocab_size=512,
          hidden_size=256, intermediate_size=512, moe_intermediate_size=64, num_hidden_layers=2,
          num_attention_heads=4, num_key_value_heads=4, n_routed_experts=8, n_shared_experts=1,
          num_experts_per_tok=2, n_group=2, topk_group=1, first_k_dense_replace=1,
          kv_lora_rank=64, q_lora_rank=96, qk_nope_head_dim=32, qk_rope_head_dim=16,
          v_head_dim=32, rope_interleave=True, max_position_embeddings=4096)


def mla_model(tmp_path, name: str):
    if name == "deepseek-v2-lite":
        cfg = {"num_hidden_layers": 2}
        return "hf:deepseek-v2-lite", cfg, config_of(models.lookup(name), cfg)
    path = write_config(tmp_path, **V3)
    return path, {}, config_of(resolve(path), {})


@pytest.mark.parametrize("form", [None, "latent", "expanded"])
@pytest.mark.parametrize("phase", ["decode", "prefill"])
@pytest.mark.parametrize("name", ["deepseek-v2-lite", "deepseek-v3-small"])
def test_mla_cache_forms(tmp_path, name, phase, form):
    ref, overrides, cfg = mla_model(tmp_path, name)
    B, n, L = 2, 32, cfg.num_hidden_layers
    kw = dict(seq=16) if phase == "prefill" else dict(context=n)
    result = analyze(ref, phase, batch=B, config=overrides, mla_cache=form, **kw)
    report = result.report
    assert result.warnings == [] and report.coverage.unanalyzed == 0
    used = form or "latent"
    assert module_macs(report, "Attention") == L * mla_attention_macs(
        cfg, phase, used, B, kw.get("seq", n))
    section = report.get_section("model")
    assert section["mla_cache"] == used
    assert f"MLA cache {used}" in models.model_text(section)
    assert any(n.startswith(f"MLA cache {used}: ") and "prefill runs expanded" in n
               for n in section["notes"])
    if phase == "decode":
        assert section["kv_cache_bytes"] == mla_cache_bytes(cfg, used, L, B, n)


def test_mla_cache_bytes_per_token_of_deepseek_v2_lite():
    """The worked example of docs/models.md: DeepSeek-V2-Lite (27 layers, kv_lora_rank 512,
    qk_rope_head_dim 64, 16 heads of 128 + 64 key and 128 value dims) at bf16."""
    cfg = config_of(models.lookup("deepseek-v2-lite"))
    assert mla_cache_bytes(cfg, "latent", 27, 1, 1) == 27 * (512 + 64) * 2 == 31_104
    assert mla_cache_bytes(cfg, "expanded", 27, 1, 1) == 27 * 16 * (128 + 64 + 128) * 2 \
        == 276_480


def test_mla_cache_is_refused_for_a_model_without_mla():
    with pytest.raises(Exception) as e:
        analyze("hf:llama-3.1-8b", "decode", batch=1, context=8, mla_cache="latent",
                config={"num_hidden_layers": 1})
    assert "--mla-cache" in str(e.value) and "latent attention" in str(e.value)


def test_cli_mla_cache_option_and_its_refusal_for_a_program(tmp_path):
    env_run = [sys.executable, "-m", "solar", "analyze"]
    out = subprocess.run(env_run + ["hf:deepseek-v2-lite", "--phase", "decode", "--context",
                                    "16", "--set", "num_hidden_layers=1", "--mla-cache",
                                    "expanded", "--no-cache-aware", "--no-crosscheck",
                                    "--json", "-"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["model"]["mla_cache"] == "expanded"
    bad = subprocess.run(env_run + ["hf:deepseek-v2-lite", "--mla-cache", "both"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--mla-cache" in bad.stderr
    program = tmp_path / "p.py"
    program.write_text("import torch\nclass Model(torch.nn.Module):\n"
                       "    def forward(self, x):\n        return x * 2\n"
                       "def get_inputs():\n    return [torch.ones(4)]\n"
                       "def get_init_inputs():\n    return []\n")
    refused = subprocess.run(env_run + [str(program), "--mla-cache", "latent"],
                             capture_output=True, text=True)
    assert refused.returncode == 2 and "--mla-cache" in refused.stderr


EAGER_MASK = '''
import torch
from transformers.masking_utils import causal_mask_function, eager_mask

T, D = 32, 8

def get_inputs():
    return [torch.randn(1, 2, T, D, dtype=torch.bfloat16) for _ in range(3)]

def get_init_inputs():
    return []

class Model(torch.nn.Module):
    def forward(self, q, k, v):
        # transformers' eager attention (Gemma-2's): a bf16 additive mask of 0 and
        # finfo(bf16).min, the softmax upcast to f32
        mask = eager_mask(batch_size=1, q_length=T, kv_length=T, mask_function=causal_mask_function,
                          dtype=torch.bfloat16)
        s = torch.tanh(torch.matmul(q, k.transpose(2, 3)) / 50.0) * 50.0 + mask
        return torch.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype) @ v
'''


def test_an_eager_bf16_additive_mask_upcast_for_the_softmax_is_structural(tmp_path):
    """The fill stays finfo(bf16).min through the exact bf16 -> f32 cast, so both contractions
    count the causal triangle: 2 x B x H x T(T+1)/2 x D."""
    from solar.programs import analyze_file

    path = tmp_path / "eager.py"
    path.write_text(EAGER_MASK)
    result = analyze_file(str(path), ProgramOptions(validate=True, crosscheck=False))
    assert int(result.report.totals.macs) == 2 * 1 * 2 * 32 * 33 // 2 * 8
    assert result.validation["status"] == "passed", result.validation


# ---------------------------------------------------------------- docs/models.md's figures


def test_the_documented_sliding_window_figures():
    """Mistral-7B, 2 layers, W = 4096, decode at context 32768, batch 1."""
    result, cfg = mistral("decode", 4096, context=32768)
    section = result.report.get_section("model")
    assert section["kv_cache_bytes"] == 2 * 2 * 8 * 128 * 2 * 4095 == 33_546_240
    assert 16 * section["kv_cache_bytes"] == 536_739_840  # 32 layers
    KV, hd = cfg.num_key_value_heads, cfg.hidden_size // cfg.num_attention_heads
    projections = cfg.hidden_size * (2 * cfg.hidden_size + 2 * KV * hd)
    assert module_macs(result.report, "Attention") == 2 * (projections + 33_554_432)
    assert 33_554_432 == 2 * 32 * 4096 * 128


@pytest.mark.parametrize("form,macs", [("latent", 85_083_136), ("expanded", 34_739_200)])
def test_the_documented_mla_figures(form, macs):
    """DeepSeek-V2-Lite, one layer's attention at context 4096, one sequence."""
    cfg = {"num_hidden_layers": 1}
    result = analyze("hf:deepseek-v2-lite", "decode", batch=1, context=4096, config=cfg,
                     mla_cache=form)
    assert module_macs(result.report, "Attention") == macs
    spec_cfg = config_of(models.lookup("deepseek-v2-lite"), cfg)
    assert mla_attention_macs(spec_cfg, "decode", form, 1, 4096) == macs
    fixed = 13_762_560  # the projections (and absorb + W_UV, or kv_b_proj of the new token)
    assert macs == fixed + 4097 * (17_408 if form == "latent" else 5_120)


@pytest.mark.parametrize("form", ["latent", "expanded"])
def test_mla_steps_of_several_tokens_count_the_causal_pairs(form):
    """A step of 3 new tokens per sequence after C (a speculative verify step): each new
    token q attends to keys k <= q, C + 1, C + 2 and C + 3 keys, in both forms."""
    cfg_over = {"num_hidden_layers": 1}
    C, k = 32, 3
    result = models.analyze_model(
        models.ModelRun("hf:deepseek-v2-lite", phase="decode", batch=1, context=C,
                        config=cfg_over, mla_cache=form, new_tokens=k),
        ProgramOptions(**OPTIONS))
    cfg = config_of(models.lookup("deepseek-v2-lite"), cfg_over)
    H, r, n, p, v = (cfg.num_attention_heads, cfg.kv_lora_rank, cfg.qk_nope_head_dim,
                     cfg.qk_rope_head_dim, cfg.v_head_dim)
    pairs = sum(C + 1 + i for i in range(k))
    per_pair = H * (r + p + r) if form == "latent" else H * (n + p + v)
    per_token = mla_attention_macs(cfg, "decode", form, 1, 0) - \
        (H * (r + p + r) if form == "latent" else H * (n + p + v))  # one key at C = 0
    assert module_macs(result.report, "Attention") == k * per_token + pairs * per_pair


@pytest.mark.parametrize("window", [8, 64])
def test_a_step_of_several_tokens_keeps_the_window_before_the_first(window):
    """phases.attention_cache for k = 3 new tokens after C = 32 (a speculative verify step):
    a sliding layer holds the W - 1 tokens before the first new one and the new ones
    (min(C + k, W - 1 + k) slots), and each new token attends to min(q + 1, W) keys."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from solar import programs
    from solar.analysis import analyze_trace
    from solar.models.build import build_model, quiet_transformers
    from solar.models.phases import Step, attention_cache

    spec = models.lookup("mistral-7b")
    cfg = config_of(spec, {"num_hidden_layers": 1, "sliding_window": window})
    C, k = 32, 3
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    model = build_model(spec, cfg, "bf16", mode)
    with quiet_transformers(), mode:
        state, make_cache = attention_cache(model, cfg, 1, C, k, sliding=True)
        ids = torch.zeros((1, k), dtype=torch.long)

        def call(m, x, cache):
            return m(input_ids=x, cache=cache, position_ids=torch.arange(C, C + k)[None],
                     cache_position=torch.arange(C, C + k), use_cache=True,
                     logits_to_keep=k).logits

        step = Step(model, call, make_cache)
    assert {tuple(t.shape)[2] for t in state} == {min(C + k, window - 1 + k)}
    trace = programs.torch_capture().capture(step, ids, *state, name="verify", source="test",
                                             fake=True, _fake_mode=mode)
    report = analyze_trace(trace, "test", ProgramOptions(**OPTIONS)).report
    D, H, KV, F, V = (cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads,
                      cfg.intermediate_size, cfg.vocab_size)
    hd = D // H
    per_token = D * H * hd + 2 * D * KV * hd + H * hd * D + 3 * D * F + V * D
    pairs = sum(min(q + 1, window) for q in range(C, C + k))
    assert report.totals.macs == k * per_token + 2 * H * pairs * hd
