"""The PyTorch example programs (examples/torch/*.py) through the whole frontend: load,
capture, lower, analyze, and validate by execution.

Every example must lower completely (zero unanalyzed ops), its MACs must equal a formula
written here from the program's own module-level constants (read from the loaded module,
so `--set` overrides flow through), and its compulsory bytes (the fused bound's traffic,
docs/cost.md "Whole graphs": each graph input, weight and buffer read once, each output
written once, at their own dtypes) must equal the sizes torch gives those tensors, and
FlopCounterMode's cross-check must agree (or differ only as it is known to). The graph
is then run by Solar's executor on the inputs the program saw, and compared with the outputs
PyTorch computed (docs/validation.md).

Examples with a known gap (an op that does not lower, an op the executor cannot run, a count
that is off) are kept, and their tests are strict xfails naming the aten op (GAPS,
VALIDATION_GAPS): they flip to failures (XPASS) when the gap closes, so the mark
must then go. The Python API (solar.analyze on a module, a torch.compile wrapper, a function)
is checked on the same programs.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import solar  # noqa: E402
from solar.frontends.torch.capture import load_program  # noqa: E402
from solar.programs import ProgramOptions, analyze_file  # noqa: E402

torch.set_num_threads(2)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "torch"

# The pre-existing examples default to sizes meant for reports, not for a 2-core test run.
OVERRIDES = {
    "mlp": {"batch_size": "8", "in_features": "64", "hidden": "128", "out_features": "32"},
    "conv_block": {"batch_size": "2", "channels": "16", "height": "12", "width": "10"},
    "attention": {"batch_size": "2", "seq_len": "24", "d_model": "64"},
    "mla_decode": {"batch": "2", "cache": "64", "d_model": "64", "heads": "4",
                   "head_dim": "16", "latent": "24"},
}


def path_of(name: str) -> str:
    return str(EXAMPLES / f"{name}.py")


# Examples whose formulas are eval mode's (`--eval`): batch norm by its running statistics
# (num_batches_tracked unread, nothing written back), nn.Dropout the identity. Without it a
# program runs in the mode it leaves its module in: a fresh module trains (torch-frontend.md).
EVAL = {"norms", "resnet_block", "conv_block", "casts_views"}


def options(name: str, **kw) -> ProgramOptions:
    kw.setdefault("crosscheck", False)
    kw.setdefault("eval_mode", name in EVAL)
    return ProgramOptions(overrides=OVERRIDES.get(name, {}), **kw)


def program(name: str):
    return load_program(path_of(name), OVERRIDES.get(name, {}))


# ---------------------------------------------------------------- size formulas


def nbytes(t) -> int:
    """Bytes of a tensor at its dtype (bool is one byte)."""
    return t.numel() * t.element_size()


def tensors_of(v):
    if isinstance(v, torch.Tensor):
        yield v
    elif isinstance(v, (list, tuple)):
        for x in v:
            yield from tensors_of(x)


def eager(mod, seed: int = 0):
    """(model, inputs, outputs): the program built and run once in eval mode on real data."""
    torch.manual_seed(seed)
    model = mod.Model(*mod.get_init_inputs()).eval()
    inputs = list(mod.get_inputs())
    with torch.no_grad():
        outputs = model(*[x.clone() for x in inputs])
    return model, inputs, outputs


def compulsory(mod, unread=(), partial=None) -> int:
    """Inputs, parameters and buffers read once at full size, outputs written once:
    the fused traffic of a program that reads all of each source. `unread` names buffers
    no op reads (BatchNorm's num_batches_tracked); `partial` maps a parameter name, or the
    position of an input, to the bytes its consumers actually read instead (an embedding
    table read row by row, an input a strided window does not cover)."""
    model, inputs, outputs = eager(mod)
    partial = partial or {}
    total = sum(partial.get(i, nbytes(x)) for i, x in enumerate(inputs))
    for name, t in list(model.named_parameters()) + list(model.named_buffers()):
        if name.split(".")[-1] in unread:
            continue
        total += partial.get(name, nbytes(t))
    return total + sum(nbytes(y) for y in tensors_of(outputs))


def conv_out(n: int, k: int, s: int = 1, pad: int = 0, d: int = 1) -> int:
    """Output length of a convolution or pooling window along one dimension."""
    return (n + 2 * pad - d * (k - 1) - 1) // s + 1


def convt_out(n: int, k: int, s: int = 1, pad: int = 0, d: int = 1, op: int = 0) -> int:
    """Output length of a transposed convolution along one dimension."""
    return (n - 1) * s - 2 * pad + d * (k - 1) + op + 1


def landed(n: int, k: int, s: int, pad: int, d: int, out: int) -> int:
    """Input positions x taps of a transposed convolution whose output position
    i*s + r*d - pad falls inside [0, out): the products that are actually made."""
    return sum(1 for i in range(n) for r in range(k) if 0 <= i * s + r * d - pad < out)


def causal_pairs(lq: int, lk: int) -> int:
    """Query-key pairs a top-left-aligned causal mask keeps: query l sees keys s <= l."""
    return sum(min(l + 1, lk) for l in range(lq))


# ---------------------------------------------------------------- MAC formulas


def macs_matmuls(m):
    B, M, K, N, P = m.batch_size, m.m, m.k, m.n, m.p
    return (M * K * N  # mm
            + M * K * N  # addmm
            + B * M * K * N  # bmm
            + B * M * K * N  # baddbmm
            + B * M * K * N  # linear on [B, M, K]
            + B * M * K * N + B * M * N * P  # einsum bij,bjk,bkl: (xb wb) first, then . v
            + B * M * M * K)  # einsum ...ij,...kj->...ik; einsum bij->bj is a sum, no MACs


def macs_convs(m):
    B, C, K, G = m.batch_size, m.channels, m.out_channels, m.groups
    L1 = conv_out(m.length, 5, pad=4, d=2)
    H2, W2 = conv_out(m.height, 3, 2, 1), conv_out(m.width, 3, 2, 1)
    D3, H3, W3 = conv_out(m.depth, 3, 1, 1), conv_out(m.height, 3, 2), conv_out(m.width, 3, 2)
    return (B * K * L1 * C * 5  # conv1d: N*K*P*C*R
            + B * K * H2 * W2 * (C // G) * 3 * 3  # grouped conv2d: N*K*P*Q*(C/G)*R*S
            + B * K * H2 * W2 * 1 * 3 * 3  # depthwise: one input channel per output
            + B * K * D3 * H3 * W3 * C * 27)  # conv3d: N*K*D*P*Q*C*T*R*S


def macs_conv_transpose(m):
    B, C, K, G = m.batch_size, m.channels, m.out_channels, m.groups
    L, H, W, D = m.length, m.height, m.width, m.depth
    l_out = convt_out(L, 4, 3, 1, 1, 2)
    up1 = B * C * K * landed(L, 4, 3, 1, 1, l_out)  # N*Cin*Cout*(taps that land)
    h_out, w_out = convt_out(H, 3, 2, 2, 2, 1), convt_out(W, 3, 2, 2, 2, 1)
    up2 = B * C * (K // G) * landed(H, 3, 2, 2, 2, h_out) * landed(W, 3, 2, 2, 2, w_out)
    up3 = B * C * K * (D * 2) * (H * 2) * (W * 2)  # kernel 2 stride 2: every tap lands
    return up1 + up2 + up3


def macs_attention_variants(m):
    B, H, Lq, Lk, E = m.batch_size, m.n_heads, m.q_len, m.kv_len, m.head_dim
    full = 2 * B * H * Lq * Lk * E  # Q K^T and P V, every query-key pair
    causal = 2 * B * H * causal_pairs(Lq, Lk) * E  # only the pairs the mask keeps
    # Boolean and additive masks are data: every pair is computed, then masked.
    return causal + full + full + full


def macs_recurrent(m):
    B, T, I, H = m.batch_size, m.seq_len, m.input_size, m.hidden
    G, R = m.gru_hidden, m.rnn_hidden
    lstm = 0
    for layer in range(m.lstm_layers):
        inp = I if layer == 0 else 2 * H  # later layers read both directions
        lstm += 2 * B * T * 4 * H * (inp + H)  # 2 directions x 4 gates x (W_ih + W_hh)
    gru = B * T * 3 * G * (2 * H + G)  # 3 gates x (W_ih over the LSTM's 2H + W_hh)
    rnn = B * T * R * (G + R)  # W_ih + W_hh
    return lstm + gru + rnn


def macs_activations(m):
    return m.batch_size * m.in_features * m.features  # the linear layer; the rest is vector work


def macs_moe(m):
    T, D, F, E, C = m.tokens, m.d_model, m.d_ff, m.n_experts, m.capacity
    return (T * D * E  # router logits
            + E * C * D * F  # expert up-projection on its C tokens
            + E * C * F * D)  # expert down-projection


def macs_ssm(m):
    B, L, D, S = m.batch_size, m.seq_len, m.d_model, m.d_state
    return (B * L * D * 2 * S  # in_proj to u and z
            + B * L * D * S  # decay projection
            + B * L * S * D)  # out_proj


def macs_losses(m):
    return m.batch_size * m.in_features * m.n_classes  # the classifier head


def macs_gpt_block(m):
    B, T, D, H, F, V = m.batch_size, m.seq_len, m.d_model, m.n_heads, m.d_mlp, m.vocab
    per_layer = (B * T * D * 3 * D  # qkv projection
                 + 2 * B * H * causal_pairs(T, T) * (D // H)  # causal Q K^T and P V
                 + B * T * D * D  # attention output projection
                 + B * T * D * F + B * T * F * D)  # MLP
    return m.n_layers * per_layer + B * T * D * V  # + tied language-model head


def macs_gpt2(m):
    B, T, D, H, V = m.batch_size, m.seq_len, m.d_model, m.n_heads, m.vocab
    per_layer = (B * T * D * 3 * D  # c_attn
                 + 2 * B * H * causal_pairs(T, T) * (D // H)  # causal Q K^T and P V
                 + B * T * D * D  # attn.c_proj
                 + 2 * B * T * D * 4 * D)  # mlp.c_fc, mlp.c_proj
    return m.n_layers * per_layer + B * T * D * V  # + lm_head


def macs_mla_decode(m):
    B, T, d, H, D, r = m.batch, m.cache, m.d_model, m.heads, m.head_dim, m.latent
    return (B * d * H * D  # q = x W_q
            + 2 * B * T * r * H * D  # k and v up-projected from the latents, as written
            + 2 * B * H * T * D  # q k^T and p v for the one new token
            + B * H * D * d)  # output projection


def bytes_gpt2(m):
    # wte reads one row per token (distinct tokens assumed, docs/cost.md "Stated
    # assumptions" 2), at most the whole table; wpe's arange selects all its seq_len rows.
    rows = min(m.batch_size * m.seq_len, m.vocab)
    return compulsory(m, partial={"wte.weight": rows * m.d_model * 4})


def macs_resnet_block(m):
    B, Cin, S, Mid, Cout = m.batch_size, m.in_channels, m.stem, m.width_mid, m.out_channels
    H1, W1 = conv_out(m.height, 7, 2, 3), conv_out(m.width, 7, 2, 3)  # stem conv
    H2, W2 = conv_out(H1, 3, 2, 1), conv_out(W1, 3, 2, 1)  # max pool
    H3, W3 = conv_out(H2, 3, 2, 1), conv_out(W2, 3, 2, 1)  # strided 3x3 (= 1x1 shortcut)
    return (B * S * H1 * W1 * Cin * 49  # stem 7x7
            + B * Mid * H2 * W2 * S  # 1x1 reduce
            + B * Mid * H3 * W3 * Mid * 9  # 3x3, stride 2
            + B * Cout * H3 * W3 * Mid  # 1x1 expand
            + B * Cout * H3 * W3 * S  # strided 1x1 projection shortcut
            + B * Cout * m.n_classes)  # classifier


def macs_mlp(m):
    return m.batch_size * m.in_features * m.hidden + m.batch_size * m.hidden * m.out_features


def macs_conv_block(m):
    N, C, H, W, G = m.batch_size, m.channels, m.height, m.width, m.groups
    return N * C * H * W * C * 9 + N * C * H * W * (C // G) * 9  # 3x3 pad 1, then grouped


def macs_attention(m):
    B, T, D, H, Hk = m.batch_size, m.seq_len, m.d_model, m.n_heads, m.n_kv_heads
    E = D // H
    return (B * T * D * D  # q
            + B * T * D * 2 * Hk * E  # k and v
            + 2 * B * H * causal_pairs(T, T) * E  # causal attention (GQA reads key head h/grp)
            + B * T * D * D)  # output projection


def macs_einops_vit(m):
    B, C, P, D, H, K = m.batch_size, m.channels, m.patch, m.d_model, m.n_heads, m.n_classes
    N = (m.image // P) ** 2  # patches
    T = N + 1  # + the class token
    return (B * N * (P * P * C) * D  # patch embedding
            + B * T * D * 3 * D  # qkv
            + 2 * B * H * T * T * (D // H)  # q k^T and p v, einops.einsum
            + B * T * D * D  # output projection
            + 2 * B * T * D * 4 * D  # MLP
            + B * D * K)  # classifier on the pooled tokens


def no_macs(m):
    return 0  # no contraction: vector work and data movement only


def bytes_convs(m):
    # The 3-D conv (kernel 3, stride 2, no padding in H and W) reads rows 0..(H3-1)*2+2 and
    # columns 0..(W3-1)*2+2 of its input: a strided window can leave the last ones unread.
    H3, W3 = conv_out(m.height, 3, 2), conv_out(m.width, 3, 2)
    x3_read = m.batch_size * m.channels * m.depth * ((H3 - 1) * 2 + 3) * ((W3 - 1) * 2 + 3)
    return compulsory(m, partial={2: x3_read * 4})  # fp32


def bytes_indexing(m):
    # The embedding reads one table row per token (distinct tokens assumed, docs/cost.md
    # "Stated assumptions" 2), at most the whole table.
    rows = min(m.batch_size * m.seq_len, m.vocab)
    return compulsory(m, partial={"emb.weight": rows * m.d_model * 4})


# name -> (MAC formula, compulsory-bytes formula). Buffers BatchNorm keeps but eval never
# reads (num_batches_tracked) are left out.
# Examples whose every op with MACs is one FlopCounterMode cannot count.
UNCOUNTED = {"recurrent"}

EXPECTED = {
    "matmuls": (macs_matmuls, compulsory),
    "convs": (macs_convs, bytes_convs),
    "conv_transpose": (macs_conv_transpose, compulsory),
    "attention_variants": (macs_attention_variants, compulsory),
    "recurrent": (macs_recurrent, compulsory),
    # The training-mode batch norm updates train_mean and train_var in place: each is read
    # once and its new version (program state, an output) written once, 4 bytes a channel.
    "norms": (no_macs, lambda m: compulsory(m, unread=("num_batches_tracked",))
              + 2 * 4 * m.channels),
    "activations": (macs_activations, compulsory),
    "reductions": (no_macs, compulsory),
    "pooling": (no_macs, compulsory),
    "indexing": (no_macs, bytes_indexing),
    "sorting": (no_macs, compulsory),
    "moe": (macs_moe, compulsory),
    "ssm": (macs_ssm, compulsory),
    "losses": (macs_losses, compulsory),
    "casts_views": (no_macs, compulsory),
    "gpt_block": (macs_gpt_block, compulsory),
    "gpt2": (macs_gpt2, bytes_gpt2),
    "mla_decode": (macs_mla_decode, compulsory),
    "resnet_block": (macs_resnet_block, lambda m: compulsory(m, unread=("num_batches_tracked",))),
    "mlp": (macs_mlp, compulsory),
    "conv_block": (macs_conv_block, lambda m: compulsory(m, unread=("num_batches_tracked",))),
    "attention": (macs_attention, compulsory),
    "einops_vit": (macs_einops_vit, compulsory),
    # + the 0-d f32 constant torch makes of the Python scalar in `sliced[:, 0] = 0.0`
    # (aten::lift_fresh, read by fill_.Tensor): 4 bytes.
    "inplace_writes": (no_macs, lambda m: compulsory(m) + 4),
    # Random ops are opaque ops reading their parameters: the values they draw are not read.
    "random_ops": (no_macs, compulsory),
}

# Examples kept although something does not work yet, with the reason naming the aten op.
# Their tests are strict xfails: when the gap closes they XPASS, which fails the run, and the
# entry must go. GAPS: analysis (coverage, MACs, bytes); VALIDATION_GAPS: execution.
GAPS: dict = {}
VALIDATION_GAPS: dict = {}


def cases(gaps):
    return [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=gaps[n]))
            if n in gaps else n for n in sorted(EXPECTED)]


def test_every_example_is_checked():
    files = {p.stem for p in EXAMPLES.glob("*.py")}
    assert files == set(EXPECTED), "add the new example's formulas here"


# ---------------------------------------------------------------- analysis


def analyze(name: str, crosscheck: bool = False):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unanalyzed ops are asserted below, by name
        return analyze_file(path_of(name), options(name, crosscheck=crosscheck))


def unanalyzed(report) -> list:
    return [f"{u.framework_op}: {u.reason}" for u in report.coverage.unanalyzed_ops]


@pytest.mark.parametrize("name", cases(GAPS))
def test_example_lowers_completely_with_formula_macs_and_bytes(name):
    r = analyze(name, crosscheck=True).report
    assert r.coverage.unanalyzed == 0, unanalyzed(r)
    assert r.coverage.complete
    mod = program(name)
    macs, fused_bytes = EXPECTED[name]
    assert r.totals.macs == macs(mod)
    assert r.totals.bytes_fused == fused_bytes(mod)
    # The formula's independent witness: FlopCounterMode agrees, or differs by exactly the
    # work it is known to over-count (causal masks, cropped transposed-conv taps). It has no
    # formula for a recurrent layer recorded as one op: that example compares nothing here
    # (test_torch_rnn.py compares its unrolled capture).
    expected = ("not_compared",) if name in UNCOUNTED else ("agree", "explained")
    assert r.crosscheck["status"] in expected, r.crosscheck


@pytest.mark.parametrize("name,cls", [
    ("matmuls", "matmul"), ("gpt_block", "matmul"), ("attention", "matmul"),
    ("attention_variants", "matmul"), ("convs", "convolution"),
    ("conv_transpose", "convolution")])
def test_contractions_are_classed_as_the_math_policy_sees_them(name, cls):
    """Matmuls (whatever views their operands went through: transposed weights, einsum's
    permutes) are `matmul` work, convolutions `convolution` work, and the contractions of a
    fused attention op (SDPA, grouped-query heads included) `attention` work: the math policy
    prices them differently (docs/bounds.md; docs/report-json.md, ops[].class)."""
    r = analyze(name).report
    classes = {(op.origin.op, op["class"]) for op in r.ops if op.macs}
    want = {(op, "attention" if "scaled_dot_product" in op else cls) for op, _ in classes}
    assert classes and classes == want, sorted(classes)


# ---------------------------------------------------------------- validation


def validate(name: str) -> dict:
    """The `validation` section of `solar validate`'s pipeline: the program run on real
    tensors (seeded), its graph executed on the same sources, every output compared."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return analyze_file(path_of(name), options(name, validate=True)).validation


@pytest.mark.parametrize("name", cases(VALIDATION_GAPS))
def test_example_graph_reproduces_torch_outputs(name):
    v = validate(name)
    assert v["status"] == "passed", v.get("reason", v)
    assert v["outputs"] and all(o["passed"] for o in v["outputs"])
    assert not v["excluded"], v["excluded"]  # every program output was compared


# ---------------------------------------------------------------- the Python API


def test_api_analyzes_a_module_and_its_torch_compile_wrapper():
    """solar.analyze(module, *inputs) and the same module under torch.compile (captured as
    the module it compiles) give the formula's MACs."""
    mod = program("matmuls")
    model = mod.Model(*mod.get_init_inputs()).eval()
    inputs = mod.get_inputs()
    plain = solar.analyze(model, *inputs, arch="H100_SXM")
    compiled = solar.analyze(torch.compile(model), *inputs, arch="H100_SXM")
    for r in (plain, compiled):
        assert r.coverage.unanalyzed == 0
        assert r.totals.macs == macs_matmuls(mod)
    assert compiled.totals.bytes_fused == plain.totals.bytes_fused


def test_api_analyzes_a_function():
    mod = program("ssm")
    model = mod.Model(*mod.get_init_inputs()).eval()

    def step(x):  # a plain function closing over the module: its weights are constants
        return model(x) * 2.0

    r = solar.analyze(step, *mod.get_inputs(), arch="H100_SXM")
    assert r.coverage.unanalyzed == 0
    assert r.totals.macs == macs_ssm(mod)


def test_overrides_reach_the_formula():
    """`--set` changes the constants the program and the formula read alike."""
    r = analyze_file(path_of("matmuls"), ProgramOptions(overrides={"m": "40"}, crosscheck=False))
    mod = load_program(path_of("matmuls"), {"m": "40"})
    assert mod.m == 40
    assert r.report.totals.macs == macs_matmuls(mod)
