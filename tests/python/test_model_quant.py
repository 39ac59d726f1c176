"""Quantized weights, activations and caches (python/solar/models/quantize.py, docs/models.md
"Quantization"): a Llama-3.1-8B decode step with 2 layers under each scheme, its bytes and
its matmuls' rates against formulas written from the configuration and the schemes' layouts;
a config.json's quantization_config choosing the scheme; refusals.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from solar import models  # noqa: E402
from solar.models import quantize  # noqa: E402
from solar.models.quantize_config import scheme_of_config  # noqa: E402
from solar.models.analyze import capture_model, tokens_per_step  # noqa: E402
from solar.models.build import parameter_count  # noqa: E402
from solar.models.section import model_section  # noqa: E402
from solar.programs import ProgramOptions  # noqa: E402

L, C = 2, 512  # layers, cached tokens
HIDDEN, INTER, KV_HEADS, HEAD_DIM = 4096, 14336, 8, 128  # Llama-3.1-8B's config.json
# Each decoder layer's linears as (out, in): q, k, v, o, gate, up, down.
LINEARS = [(4096, 4096), (1024, 4096), (1024, 4096), (4096, 4096), (INTER, HIDDEN),
           (INTER, HIDDEN), (HIDDEN, INTER)]
LINEAR_ELEMENTS = sum(n * k for n, k in LINEARS)  # 218,103,808 per layer
ACT_INPUTS = 4  # per layer: the normed input (q/k/v), attention (o), normed (gate/up), down's
KV_PER_TOKEN = 2 * L * KV_HEADS * HEAD_DIM  # key and value elements per token, all layers
ARCHS = ("H100_SXM", "B200")
OPTIONS = ProgramOptions(archs=ARCHS, crosscheck=False, cache_aware=False)


def cdiv(a, b):
    return -(-a // b)


# Per layer: bits of a weight element, and bytes of its scales, zero points and the
# activations' static scales.
def per_layer(scheme):
    if scheme == "fp8":  # f32 per output channel; a static f32 per activation input
        return 8, sum(4 * n for n, _ in LINEARS), 0, 4 * ACT_INPUTS
    if scheme == "fp8-block":  # f32 per 128x128 block
        return 8, sum(4 * cdiv(n, 128) * cdiv(k, 128) for n, k in LINEARS), 0, 0
    if scheme == "int8":  # f32 per output channel; dynamic per-token activation scales
        return 8, sum(4 * n for n, _ in LINEARS), 0, 0
    if scheme == "w4a16":  # bf16 scale and a 4-bit zero point per 128 input elements
        return 4, 2 * LINEAR_ELEMENTS // 128, LINEAR_ELEMENTS // 128 // 2, 0
    if scheme == "w8a16":  # bf16 scale per 128 input elements, symmetric
        return 8, 2 * LINEAR_ELEMENTS // 128, 0, 0
    if scheme == "nvfp4":  # e4m3 per 16 elements, an f32 tensor scale per linear
        return 4, LINEAR_ELEMENTS // 16 + 4 * len(LINEARS), 0, 0
    if scheme == "mxfp4":  # e8m0 per 32 elements, an f32 factor per linear
        return 4, LINEAR_ELEMENTS // 32 + 4 * len(LINEARS), 0, 0
    raise AssertionError(scheme)


@pytest.fixture(scope="module")
def captured():
    """Llama-3.1-8B decode (2 layers, context C) captured once in bf16, and its bf16
    analysis: each scheme rewrites the same capture."""
    def run():
        return models.ModelRun("hf:llama-3.1-8b", phase="decode", context=C,
                               config={"num_hidden_layers": L})

    spec, config, model, trace = capture_model(run(), OPTIONS)
    params = parameter_count(model)
    bf16 = models.analyze_model(run(), OPTIONS).report.to_dict()
    run = run()
    return run, spec, config, trace, params, bf16


def quantized(captured, scheme, kv=None, options=OPTIONS):
    run, spec, config, trace, params, _ = captured
    run = models.ModelRun(run.ref, phase="decode", context=C, config=run.config, quant=scheme,
                          kv_dtype=kv)
    run.check()
    result = quantize.analyze_quantized(trace, spec, options, quantize.requested(run))
    result.report.attach_section("model", model_section(
        spec, run, config, result, params=params, tokens=tokens_per_step(spec, run, config)))
    return result.report.to_dict()


@pytest.mark.parametrize("scheme", list(quantize.SCHEMES))
def test_decode_bytes_are_the_linears_at_their_bits_plus_scales_plus_the_bf16_rest(captured,
                                                                                  scheme):
    """Weights = the bf16 model's - the decoder linears at 2 bytes + the linears at their bits
    + scales + zero points; the fused level reads each of them once and the cache (bf16 here)
    as before."""
    bf16 = captured[-1]
    q = quantized(captured, scheme)
    bits, scales, zeros, act_scales = per_layer(scheme)
    delta = L * (LINEAR_ELEMENTS * bits // 8 + scales + zeros + act_scales
                 - LINEAR_ELEMENTS * 2)
    assert q["model"]["weight_bytes"] == bf16["model"]["weight_bytes"] + delta
    assert q["totals"]["bytes_fused"] == bf16["totals"]["bytes_fused"] + delta
    assert q["model"]["kv_cache_bytes"] == bf16["model"]["kv_cache_bytes"] == \
        KV_PER_TOKEN * C * 2
    groups = {g["group"]: g for g in q["model"]["quantization"]["groups"]}
    linears = groups["decoder linears weights"]
    assert linears["bits"] == bits and linears["elements"] == L * LINEAR_ELEMENTS
    assert linears["bytes"] == L * LINEAR_ELEMENTS * bits // 8
    assert linears["scale_bytes"] == L * scales and linears["zero_point_bytes"] == L * zeros
    for name in ("embedding", "lm_head"):  # as common checkpoints keep them
        assert groups[name]["format"] == "bf16"
        assert groups[name]["bytes"] == 128256 * HIDDEN * 2


def test_an_fp8_cache_is_read_and_written_at_one_byte(captured):
    """--kv-dtype fp8: the C cached tokens read and the new token written at 1 byte (half the
    bf16 cache's bytes), plus one f32 scale per cache tensor."""
    bf16 = captured[-1]
    q = quantized(captured, None, "fp8")
    scales = 2 * L * 4  # a key and a value cache per layer
    assert q["totals"]["bytes_fused"] == bf16["totals"]["bytes_fused"] \
        - KV_PER_TOKEN * (C + 1) + scales
    assert q["model"]["kv_cache_bytes"] == KV_PER_TOKEN * C
    assert q["model"]["weight_bytes"] == bf16["model"]["weight_bytes"] + scales
    # attention computes in bf16: every MAC stays bf16
    assert set(q["totals"]["macs_by_dtype"]) == {"bf16"}
    kv = next(g for g in q["model"]["quantization"]["groups"] if g["group"] == "kv cache")
    assert kv["format"] == "f8e4m3" and kv["bytes"] == KV_PER_TOKEN * C


def _tensor_seconds(report, arch):
    terms = report["devices"][arch]["fused"]["terms"]
    return sum(v for k, v in terms.items() if k.startswith("tensor_core"))


def test_fp8_matmuls_run_at_the_fp8_tensor_rate_and_w4a16_at_the_bf16_rate(captured):
    """fp8: the decoder linears' MACs at H100's f8e4m3 tensor peak, the rest (attention, LM
    head) at bf16; w4a16: every MAC at bf16 (the weight dequantized first); nvfp4: B200's f4
    peak (and on H100, which publishes no f4 rate, its fp8 peak: an e2m1 value is exact in
    e4m3, the legal faster fallback)."""
    bf16 = captured[-1]
    all_macs = bf16["totals"]["macs_by_dtype"]["bf16"]
    linear_macs = L * LINEAR_ELEMENTS  # one token
    for scheme, low in (("fp8", "f8e4m3"), ("w4a16", None), ("nvfp4", "f4")):
        q = quantized(captured, scheme)
        macs = q["totals"]["macs_by_dtype"]
        if low is None:
            assert macs == {"bf16": all_macs}
        else:
            assert macs == {"bf16": all_macs - linear_macs, low: linear_macs}
        for arch in ARCHS:
            peaks = q["devices"][arch]["peaks_used"]
            rate = {None: None, "f8e4m3": "tensor_core.f8e4m3",
                    "f4": "tensor_core.f4" if arch == "B200" else "tensor_core.f8e4m3"}[low]
            expected = 2 * macs["bf16"] / peaks["tensor_core.bf16"]
            if rate is not None:
                expected += 2 * macs[low] / peaks[rate]
            assert _tensor_seconds(q, arch) == pytest.approx(expected, rel=1e-9)
    h100 = quantized(captured, "fp8")["devices"]["H100_SXM"]["peaks_used"]
    assert h100["tensor_core.f8e4m3"] == 1978.9e12  # arch/H100_SXM.yaml, dense
    b200 = quantized(captured, "nvfp4")["devices"]["B200"]["peaks_used"]
    assert b200["tensor_core.f4"] == 9000e12  # arch/B200.yaml, dense


def test_int8_on_a_device_without_an_int8_tensor_rate_runs_at_its_half_rate(captured):
    """Jetson Thor publishes no int8 tensor rate: an int8 matmul runs dequantized on the
    f16/bf16 tensor path (an int8 value is exact in both; docs/bounds.md), the faster legal
    route, so every MAC is priced at the dense f16 peak, 258.5 TFLOP/s (arch/
    Jetson_Thor.yaml)."""
    q = quantized(captured, "int8", options=ProgramOptions(archs=("Jetson_Thor",),
                                                           crosscheck=False,
                                                           cache_aware=False))
    macs = q["totals"]["macs_by_dtype"]
    assert macs["i8"] == L * LINEAR_ELEMENTS
    fused = q["devices"]["Jetson_Thor"]["fused"]
    assert not [k for k in fused["terms"] if "ceiling" in k and "contraction" in k]
    assert _tensor_seconds(q, "Jetson_Thor") == pytest.approx(
        2 * sum(macs.values()) / 258.5e12, rel=1e-9)


def test_dequantization_is_vector_work_per_element(captured):
    """w4a16: (w - zero) * scale, a subtract and a multiply per weight element (in bf16, the
    scales' dtype); w8a16: a multiply per element."""
    bf16 = captured[-1]
    base = bf16["totals"]["vector_flops_by_dtype"].get("bf16", 0)
    for scheme, per_element in (("w4a16", 2), ("w8a16", 1)):
        q = quantized(captured, scheme)
        added = q["totals"]["vector_flops_by_dtype"]["bf16"] - base
        assert added == per_element * L * LINEAR_ELEMENTS


def _config(tmp_path, qc):
    cfg = json.loads(open(models.lookup("llama-3.1-8b").file).read())["config"]
    cfg.update(num_hidden_layers=L, architectures=["LlamaForCausalLM"],
               quantization_config=qc)
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    return str(d / "config.json")


AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True,
       "version": "gemm"}


def test_a_config_quantization_config_selects_the_scheme_and_quant_overrides_it(tmp_path):
    path = _config(tmp_path, AWQ)
    result = models.analyze_model(models.ModelRun(path, phase="decode", context=C), OPTIONS)
    q = result.report.get_section("model")["quantization"]
    assert q["scheme"] == "w4a16" and "quant_method awq" in q["source"]
    linears = q["groups"][0]
    assert linears["format"] == "i4" and linears["zero_point_bytes"] == \
        L * LINEAR_ELEMENTS // 128 // 2
    result = models.analyze_model(models.ModelRun(path, phase="decode", context=C,
                                                  quant="fp8"), OPTIONS)
    q = result.report.get_section("model")["quantization"]
    assert q["scheme"] == "fp8" and q["source"] == "--quant"


@pytest.mark.parametrize("qc,scheme", [
    ({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]},
     "fp8-block"),
    ({"quant_method": "gptq", "bits": 8, "group_size": 128, "sym": True}, "w8a16"),
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "weights": {"type": "float", "num_bits": 8, "strategy": "channel"},
        "input_activations": {"type": "float", "num_bits": 8, "strategy": "tensor"}}}},
     "fp8"),
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "weights": {"type": "int", "num_bits": 4, "strategy": "group", "group_size": 128,
                    "symmetric": True}, "input_activations": None}}}, "w4a16")])
def test_quantization_configs_map_to_their_schemes(qc, scheme):
    got, _ = scheme_of_config(qc, "config.json")
    assert got.name == scheme
    if qc.get("quant_method") == "compressed-tensors" and scheme == "w4a16":
        assert not got.zero_point  # symmetric: no zero points stored


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "solar", "analyze", *args],
                          capture_output=True, text=True)


def test_an_unknown_quant_method_is_refused_naming_it(tmp_path):
    path = _config(tmp_path, {"quant_method": "bitsandbytes", "load_in_4bit": True})
    proc = _cli(path, "--phase", "decode")
    assert proc.returncode == 7, proc.stderr  # unsupported (docs/cli.md)
    assert "bitsandbytes" in proc.stderr and proc.stderr.count("\n") == 1


def test_a_bad_quant_or_kv_dtype_is_a_usage_error():
    for args, words in ((["--quant", "fp7"], "--quant 'fp7'"),
                        (["--kv-dtype", "int3"], "--kv-dtype 'int3'")):
        proc = _cli("hf:llama-3.1-8b", *args)
        assert proc.returncode == 2, proc.stderr
        assert words in proc.stderr and proc.stderr.count("\n") == 1


def test_quant_options_are_refused_on_a_program(tmp_path):
    prog = tmp_path / "p.py"
    prog.write_text("import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
                    "        return x * 2\n\ndef get_inputs():\n    return [torch.ones(4)]\n")
    for flag in ("--quant", "--kv-dtype"):
        proc = _cli(str(prog), flag, "fp8")
        assert proc.returncode == 2, proc.stderr
        assert flag in proc.stderr and "for models only" in proc.stderr


def test_mixture_experts_are_quantized_and_gathered_with_their_scales():
    """Mixtral decode, 1 layer, batch 2 (4 routed pairs of 8 experts) under fp8: the experts
    [8, 28672, 4096] and [8, 4096, 14336] at 1 byte with an f32 scale per expert and output
    channel; a step reads its 4 routed experts and their scales; the router (gate) stays
    bf16. MACs: each pair's product and each token's attention projections at f8e4m3."""
    def analyze(quant):
        return models.analyze_model(models.ModelRun(
            "hf:mixtral-8x7b", phase="decode", batch=2, context=16,
            config={"num_hidden_layers": 1}, quant=quant), OPTIONS).report.to_dict()

    bf16, q = analyze(None), analyze("fp8")
    experts, pairs, tokens = 8, 4, 2
    expert = 2 * 14336 * 4096 + 4096 * 14336  # gate_up [28672, 4096] + down [4096, 14336]
    expert_scales = 4 * (2 * 14336 + 4096)
    attention = 4096 * (4096 + 1024 + 1024 + 4096)
    attention_scales = 4 * (4096 + 1024 + 1024 + 4096)
    act_scales = 4 * 4  # qkv's input, o's input, each expert product's two inputs
    assert q["model"]["weight_bytes"] - bf16["model"]["weight_bytes"] == \
        -(experts * expert + attention) + experts * expert_scales + attention_scales + act_scales
    assert q["totals"]["bytes_fused"] - bf16["totals"]["bytes_fused"] == \
        -(pairs * expert + attention) + pairs * expert_scales + attention_scales + act_scales
    assert q["totals"]["macs_by_dtype"]["f8e4m3"] == pairs * expert + tokens * attention


def test_weight_only_experts_are_dequantized_once_per_expert_the_pairs_reach():
    """Mixtral decode under w4a16 (1 layer, batch 2: 4 routed pairs of 8 experts): experts at
    4 bits with a bf16 scale and a 4-bit zero point per 128, the routed ones read with their
    scales and zero points; each of the min(4, 8) experts the pairs reach dequantized once
    (a subtract and a multiply per element), as the attention projections are; every MAC
    bf16."""
    def analyze(quant):
        return models.analyze_model(models.ModelRun(
            "hf:mixtral-8x7b", phase="decode", batch=2, context=16,
            config={"num_hidden_layers": 1}, quant=quant), OPTIONS).report.to_dict()

    bf16, q = analyze(None), analyze("w4a16")
    experts, pairs = 8, 4
    expert = 2 * 14336 * 4096 + 4096 * 14336
    attention = 4096 * (4096 + 1024 + 1024 + 4096)

    def stored(n):  # n weights at 4 bits, a bf16 scale and a 4-bit zero point per 128
        return n // 2 + 2 * (n // 128) + n // 128 // 2

    whole, routed = experts * expert + attention, pairs * expert + attention
    assert q["model"]["weight_bytes"] - bf16["model"]["weight_bytes"] == \
        stored(whole) - 2 * whole
    assert q["totals"]["bytes_fused"] - bf16["totals"]["bytes_fused"] == \
        stored(routed) - 2 * routed
    assert q["totals"]["vector_flops_by_dtype"]["bf16"] - \
        bf16["totals"]["vector_flops_by_dtype"]["bf16"] == 2 * (min(pairs, experts) * expert
                                                                + attention)
    assert set(q["totals"]["macs_by_dtype"]) == {"bf16"}


def test_the_quantization_worked_example(tmp_path):
    """docs/models.md, "Quantization": Llama-3.1-8B decode (all 32 layers), context 4096,
    w4a16 with an fp8 cache on H100 SXM."""
    out = tmp_path / "r.json"
    proc = _cli("hf:llama-3.1-8b", "--phase", "decode", "--context", "4096", "--quant",
                "w4a16", "--kv-dtype", "fp8", "--arch", "H100_SXM", "--no-cache-aware",
                "--no-crosscheck", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    m = report["model"]
    layers, params = 32, 8_030_261_248  # config.json; the registry's published count
    linears = layers * LINEAR_ELEMENTS
    assert linears == 6_979_321_856
    rest = params * 2 + 2 * 64 * 4 - linears * 2  # + inv_freq, original_inv_freq (f32 [64])
    assert rest == 2_101_879_296
    weights = rest + linears // 2 + 2 * linears // 128 + linears // 128 // 2 + 2 * layers * 4
    assert m["weight_bytes"] == weights == 5_727_855_360
    assert m["kv_cache_bytes"] == 2 * layers * KV_HEADS * HEAD_DIM * 4096 == 268_435_456
    assert report["totals"]["bytes_fused"] == 4_945_947_656
    seconds = 4_945_947_656 / 3.35e12  # H100 SXM's DRAM bandwidth, arch/H100_SXM.yaml
    assert m["devices"]["H100_SXM"]["fused_seconds"] == pytest.approx(seconds, rel=1e-12)
    assert round(1 / seconds) == 677
    assert ("weights 5.73 GB, KV cache read 268.44 MB" in proc.stdout
            and "quantization: w4a16 (weight-only INT4, group 128" in proc.stdout
            and "KV cache f8e4m3" in proc.stdout and "1.48 ms" in proc.stdout)


def test_a_table_in_a_layer_stays_bf16_and_every_linear_is_quantized():
    """T5: each layer's linears quantized (encoder: q, k, v, o, wi, wo; decoder: self and
    cross q, k, v, o, wi, wo), the relative attention bias (an embedding table a layer
    looks up) left bf16 as checkpoints keep it, not refused."""
    result = models.analyze_model(models.ModelRun(
        "hf:t5-small", phase="prefill", batch=1, seq=16,
        config={"num_layers": 2, "num_decoder_layers": 2}, quant="w8a16"), OPTIONS)
    assert result.report.to_dict()["coverage"]["complete"]
    linears = result.report.get_section("model")["quantization"]["groups"][0]
    assert linears["tensors"] == 2 * 6 + 2 * 10


def test_an_activation_is_quantized_once_per_shared_input_and_scaled_back_per_output(captured):
    """fp8 (static per-tensor scale): a multiply per element of each distinct activation a
    linear reads (q/k/v share the normed input, gate/up theirs: 4096 x 3 + 14336 elements
    per layer and token), written at f8e4m3; the epilogue multiplies each output by the
    activation's and its channel's scales (2 per output element: 43008 outputs per layer)."""
    bf16 = captured[-1]
    q = quantized(captured, "fp8")["totals"]["vector_flops_by_dtype"]
    assert q["f8e4m3"] == L * (3 * HIDDEN + INTER)
    outputs = sum(n for n, _ in LINEARS)
    assert outputs == 43008
    assert q["bf16"] - bf16["totals"]["vector_flops_by_dtype"]["bf16"] == L * 2 * outputs


def test_a_recurrent_model_quantizes_its_linears_and_refuses_an_fp8_cache():
    """Mamba: in_proj, x_proj, dt_proj, out_proj quantized per channel; A_log (cast and
    used elementwise) and the convolution kernel stay bf16; its state is no KV cache."""
    result = models.analyze_model(models.ModelRun(
        "hf:mamba-130m", phase="decode", config={"num_hidden_layers": 2}, quant="fp8"),
        OPTIONS)
    assert result.report.to_dict()["coverage"]["complete"]
    assert result.report.get_section("model")["quantization"]["groups"][0]["tensors"] == 2 * 4
    with pytest.raises(Exception, match="recurrent state") as e:
        models.analyze_model(models.ModelRun("hf:mamba-130m", phase="decode",
                                             config={"num_hidden_layers": 2},
                                             kv_dtype="fp8"), OPTIONS)
    assert getattr(e.value, "exit_code", None) == 7


def test_deepseek_fp8_block_partial_blocks_experts_and_the_absorbed_projection():
    """DeepSeek-V2-Lite decode (2 layers: a dense one, a mixture one; intermediate 11008 so
    every input dim is a multiple of 128) under fp8-block: every linear's 128x128 block
    scales, a partial last block with a scale of its own (kv_a_proj_with_mqa's 576 outputs:
    5 blocks), the 64 experts' blocks, and MLA's absorbed kv_b_proj kept bf16."""
    cdiv128 = lambda n, k: cdiv(n, 128) * cdiv(k, 128)  # noqa: E731
    result = models.analyze_model(models.ModelRun(
        "hf:deepseek-v2-lite", phase="decode", batch=2, context=16,
        config={"num_hidden_layers": 2, "intermediate_size": 11008}, quant="fp8-block",
        kv_dtype="fp8"), OPTIONS)
    assert result.report.to_dict()["coverage"]["complete"]
    groups = result.report.get_section("model")["quantization"]["groups"]
    attention = [(16 * 192, 2048), (576, 2048), (2048, 16 * 128)]  # q, kv_a (MQA), o
    dense = [(11008, 2048)] * 2 + [(2048, 11008)]
    shared = [(2 * 1408, 2048)] * 2 + [(2048, 2 * 1408)]  # 2 shared experts of 1408
    experts = [(2 * 1408, 2048), (2048, 1408)]  # x 64
    linears = 2 * attention + dense + shared
    elements = sum(n * k for n, k in linears) + 64 * sum(n * k for n, k in experts)
    blocks = sum(cdiv128(n, k) for n, k in linears) + 64 * sum(cdiv128(n, k)
                                                               for n, k in experts)
    assert cdiv128(576, 2048) == 5 * 16
    assert groups[0]["elements"] == groups[0]["bytes"] == elements
    assert groups[0]["scale_bytes"] == 4 * blocks
    absorbed = next(g for g in groups if g["group"].startswith("absorbed MLA"))
    assert absorbed["format"] == "bf16" and absorbed["bytes"] == 2 * 16 * 256 * 512 * 2


def test_quantization_under_a_parallel_plan_is_refused_before_building():
    proc = _cli("hf:llama-3.1-8b", "--quant", "fp8", "--system", "8xH100_SXM", "--tp", "8")
    assert proc.returncode == 7, proc.stderr  # unsupported
    assert "parallel plan" in proc.stderr and proc.stderr.count("\n") == 1


def test_a_16_bit_cache_other_than_the_activations_is_refused():
    proc = _cli("hf:llama-3.1-8b", "--kv-dtype", "f16")  # activations bf16 by default
    assert proc.returncode == 2, proc.stderr
    assert "--kv-dtype f16" in proc.stderr and proc.stderr.count("\n") == 1


def test_a_prefill_quantizes_every_token_and_multiplies_its_linears_at_fp8():
    """Llama-3.1-8B prefill of 64 tokens (2 layers) under int8: every token's linears at
    i8; each distinct activation quantized per token (an abs and a max per element into its
    f32 scale, then a divide per element written at i8)."""
    seq = 64
    bf16, q = (models.analyze_model(models.ModelRun(
        "hf:llama-3.1-8b", phase="prefill", seq=seq, config={"num_hidden_layers": L},
        quant=quant), OPTIONS).report.to_dict()["totals"] for quant in (None, "int8"))
    assert q["macs_by_dtype"]["i8"] == seq * L * LINEAR_ELEMENTS
    assert q["macs_by_dtype"]["bf16"] == bf16["macs_by_dtype"]["bf16"] - seq * L * LINEAR_ELEMENTS
    assert q["vector_flops_by_dtype"]["i8"] == seq * L * (3 * HIDDEN + INTER)  # the divides
