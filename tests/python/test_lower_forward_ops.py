"""Forward ops of the aten table, each family run in real PyTorch on real tensors, captured,
lowered by the C++ table and executed by Solar's executor: the graph's outputs must match
torch's (solar.validate, dtype-aware tolerances) and no op may be left unanalyzed.

Random ops (dropout in training, rand, randn, bernoulli ...) cannot be recomputed: their
lowering is checked for what it counts, and the rest of the graph is validated with the
framework's draws given to the executor (the random ops' outputs turned into sources).
"""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import solar  # noqa: E402
from solar.frontends.torch.capture import CaptureRecord, capture  # noqa: E402
from solar.frontends.torch.program import lower_trace  # noqa: E402

torch.set_num_threads(2)


def _role(t) -> str:
    return str(t.role).rsplit(".", 1)[-1]


def capture_lower(fn, *inputs):
    """(trace, record, graph, warnings, {graph name: trace id}) of fn on real inputs."""
    record = CaptureRecord(values="io")
    trace = capture(fn, *inputs, fake=False, record=record)
    graph, notes, ids = lower_trace(trace, "<test>", False)
    return trace, record, graph, notes, ids


def given_random(trace, record):
    """The trace with its random ops removed and their outputs turned into constants (the
    framework's draws are given to the executor)."""
    t = copy.deepcopy(trace)
    given = set()
    for i in record.random_ops:
        given.update(x for x in trace["ops"][i]["outputs"] if x is not None)
    t["ops"] = [op for i, op in enumerate(trace["ops"]) if i not in set(record.random_ops)]
    for x in t["tensors"]:
        if x["id"] in given:
            x["role"] = "constant"
    return t


def validate(fn, *inputs, random=False):
    """Captures, lowers and executes fn; asserts zero unanalyzed ops and that every graph
    output matches torch's value. Returns the analyzed graph."""
    trace, record, graph, notes, ids = capture_lower(fn, *inputs)
    assert notes == []
    assert bool(record.random_ops) == random
    run_graph, run_ids = graph, ids
    if random:
        run_graph, notes2, run_ids = lower_trace(given_random(trace, record), "<test>", False)
        assert notes2 == []
    sources, refs = {}, {}
    for t in run_graph.tensors:
        if _role(t) == "output":
            refs[t.name] = record.values[run_ids[t.name]]
        elif _role(t) != "intermediate":
            sources[t.name] = record.values[run_ids[t.name]]
    assert refs, "the program has no output to compare"
    result = solar.validate(run_graph, sources, refs, threads=2)
    assert result, str(result)
    return graph


def macs(graph) -> int:
    return solar.analyze(graph, arch="H100_SXM").totals.macs


def r(*shape):
    return torch.randn(*shape)


torch.manual_seed(0)
X2, X3, X4 = r(4, 6), r(2, 5, 8), r(2, 4, 6, 6)
IDX = torch.tensor([0, 2, 3])


def _setitem(index, value):
    def f(a):
        b = a.clone()
        b[index] = value
        return b
    return f


def _setitem_mask(a):
    b = a.clone()
    b[b > 0] = 0.0
    return b


def _index_put_acc(a):
    b = torch.zeros(5, 6)
    b.index_put_((torch.tensor([0, 0, 3]),), a[:3], accumulate=True)
    return b


CASES = {
    # matmul family, einsum with several operands and ellipsis
    "linear": (nn.Linear(8, 4), r(3, 8)),
    "matmul_t": (lambda a, b: a @ b.t(), r(5, 6), r(7, 6)),
    "bmm_transposed": (lambda a, b: torch.matmul(a.transpose(1, 2), b), r(2, 6, 5), r(2, 6, 7)),
    "matmul_broadcast": (lambda a, b: a @ b, r(3, 1, 4, 8), r(5, 8, 2)),
    "baddbmm": (lambda c, a, b: torch.baddbmm(c, a, b, beta=0.5, alpha=2), r(2, 3, 5), r(2, 3, 4), r(2, 4, 5)),
    "einsum_3_operands_ellipsis": (lambda a, b, c: torch.einsum("...ij,...jk,...kl->...il", a, b, c),
                                   r(2, 3, 4), r(2, 4, 5), r(2, 5, 6)),
    "einsum_trace_diag": (lambda a: torch.einsum("ii->i", a) + torch.einsum("ii", a), r(5, 5)),
    # convolution: 1-D/2-D/3-D, groups, stride, dilation, padding, transposed
    "conv1d_depthwise": (nn.Conv1d(5, 5, 3, groups=5, padding="same"), r(2, 5, 9)),
    "conv2d_dilated_grouped": (nn.Conv2d(4, 6, 3, dilation=2, padding=2, groups=2), X4),
    "conv3d_strided": (nn.Conv3d(2, 3, 3, stride=2, padding=1), r(1, 2, 5, 6, 5)),
    "conv_transpose2d": (nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1), r(2, 4, 5, 5)),
    "conv_transpose2d_groups_output_padding": (
        nn.ConvTranspose2d(4, 6, 4, stride=2, padding=1, output_padding=1, groups=2), r(2, 4, 5, 5)),
    "conv_transpose1d_dilated": (nn.ConvTranspose1d(4, 3, 3, stride=2, padding=2, dilation=3), r(2, 4, 9)),
    "conv_transpose3d_mixed_strides": (nn.ConvTranspose3d(2, 3, 3, stride=(2, 1, 3), padding=(1, 0, 2), bias=False),
                                       r(1, 2, 4, 5, 3)),
    # attention
    "sdpa_causal": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                    r(2, 4, 6, 8), r(2, 4, 6, 8), r(2, 4, 6, 8)),
    "sdpa_bool_mask": (lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
                       r(2, 2, 6, 8), r(2, 2, 7, 8), r(2, 2, 7, 8), torch.rand(6, 7) > 0.3),
    "sdpa_additive_mask": (lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
                           r(2, 2, 6, 8), r(2, 2, 7, 8), r(2, 2, 7, 8), r(2, 1, 6, 7)),
    "sdpa_gqa_causal": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True, is_causal=True),
                        r(2, 4, 6, 8), r(2, 2, 6, 8), r(2, 2, 6, 8)),
    "multihead_attention": (nn.MultiheadAttention(16, 4, batch_first=True).eval(), r(2, 5, 16), r(2, 5, 16),
                            r(2, 5, 16)),
    "transformer_encoder_layer": (nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, dropout=0.0).eval(), X3),
    # recurrent
    "lstm": (nn.LSTM(8, 16, 2, batch_first=True), X3),
    "gru_bidirectional": (nn.GRU(8, 6, batch_first=True, bidirectional=True), X3),
    "rnn": (nn.RNN(8, 6, 2), X3),
    # norms
    "batch_norm_train": (nn.BatchNorm2d(4).train(), X4),
    "batch_norm_eval": (nn.BatchNorm2d(4).eval(), X4),
    "layer_norm": (nn.LayerNorm(8), X3),
    "group_norm": (nn.GroupNorm(2, 4), X4),
    "instance_norm": (nn.InstanceNorm2d(4, affine=True), X4),
    "rms_norm": (nn.RMSNorm(8), X3),
    # softmax, activations
    "softmax_log_softmax": (lambda a: torch.softmax(a, 1) + torch.log_softmax(a, 0), X2),
    "activations": (lambda a: F.gelu(a, approximate="tanh") + F.silu(a) + F.mish(a) + F.elu(a) + F.selu(a)
                    + F.celu(a) + F.hardswish(a) + F.relu6(a) + F.logsigmoid(a) + F.softsign(a)
                    + F.hardshrink(a) + F.softshrink(a) + F.threshold(a, 0.1, 2.0) + F.tanhshrink(a), X2),
    "prelu_glu": (lambda a, w: F.prelu(a, w) + F.glu(torch.cat([a, a], 1), 1), X4, torch.rand(4)),
    "unary_math": (lambda a: torch.log1p(a.abs()) + torch.expm1(a) + torch.log2(a.abs() + 1) + torch.exp2(a)
                   + torch.tan(a * 0.3) + torch.sinh(a) + torch.asinh(a) + torch.sign(a)
                   + torch.logit(torch.sigmoid(a)), X2),
    "nan_to_num_isnan": (lambda a: torch.nan_to_num(a / (a > 0)) + torch.isnan(a.log()).float(), X2),
    # reductions: min/max with indices, argmax, any/all, var_mean, cumulative
    "reductions": (lambda a: (a.max(1), a.min(0), a.argmax(1), a.argmin(), a.amax(1), a.prod(1),
                              torch.var_mean(a, 1), torch.std_mean(a, 0), a.logsumexp(1),
                              (a > 1).any(1), (a > -3).all(), torch.count_nonzero(a > 0, 1),
                              torch.aminmax(a)), X2),
    "cumulative": (lambda a: (torch.cumsum(a, 0), torch.cumprod(a, 1), torch.cummax(a, 0),
                              torch.cummin(a, 1)), X2),
    "cumsum_reverse": (lambda a: torch.cumsum(a.flip(1), 1).flip(1), X2),
    # pooling: max/avg/adaptive, 1-3-D, ceil mode, padding excluded, uneven adaptive windows
    "max_pool_ceil": (nn.MaxPool2d(3, 2, padding=1, ceil_mode=True), X4),
    "avg_pool_ceil": (nn.AvgPool2d(3, 2, ceil_mode=True), r(2, 3, 8, 8)),
    "avg_pool_exclude_pad": (nn.AvgPool2d(3, 2, padding=1, count_include_pad=False), r(2, 3, 8, 7)),
    "avg_pool1d_ceil_exclude_pad": (nn.AvgPool1d(4, 3, padding=2, ceil_mode=True, count_include_pad=False),
                                    r(2, 3, 10)),
    "avg_pool3d_ceil": (nn.AvgPool3d(2, 2, ceil_mode=True), r(1, 2, 5, 5, 5)),
    "adaptive_avg_uneven": (nn.AdaptiveAvgPool2d((3, 5)), r(2, 3, 7, 11)),
    "adaptive_max_uneven": (nn.AdaptiveMaxPool2d((3, 4)), r(2, 3, 7, 10)),
    "adaptive_avg3d_uneven": (nn.AdaptiveAvgPool3d((2, 3, 2)), r(1, 2, 5, 7, 3)),
    # embedding, gather/scatter/index ops
    "embedding": (nn.Embedding(10, 4), torch.tensor([[1, 2], [3, 9]])),
    "gather_scatter": (lambda a: torch.zeros(3, 6).scatter_add(0, torch.tensor([[0, 1, 2, 0, 1, 2]] * 4), a)
                       + torch.gather(a, 0, torch.tensor([[3, 2, 1, 0, 1, 2]] * 3)), X2),
    "scatter_reduce_amax": (lambda a: torch.zeros(3, 6).scatter_reduce(0, torch.tensor([[0, 1, 2, 0, 1, 2]] * 4),
                                                                      a, "amax"), X2),
    "index_select_index_add": (lambda a: (torch.zeros(5, 6).index_add(0, IDX, a[:3], alpha=2),
                                          torch.zeros(5, 6).index_copy(0, IDX, a[:3]), a.index_fill(1, IDX, -1.0),
                                          a.index_select(0, torch.tensor([1, 1, 0, 2, 3]))), X2),
    "index_two_tensors": (lambda a: a[torch.tensor([0, 2]), torch.tensor([1, -3])], X2),
    "index_broadcast_tensors": (lambda a: a[torch.tensor([[0], [2]]), torch.tensor([1, 3, 5])], X2),
    "index_non_adjacent": (lambda a: a[torch.tensor([0, 1]), :, torch.tensor([2, 3])], X3),
    "index_bool_mask": (lambda a: a[a > 0], X2),
    "index_bool_rows": (lambda a: a[torch.tensor([True, False, True, True])], X2),
    "masked_select_nonzero": (lambda a: (torch.masked_select(a, a > 0.5), torch.nonzero(a > 0)), X2),
    "index_put_scalar": (lambda a: a.index_put((IDX,), torch.tensor(5.0)), X2),
    "setitem_columns": (_setitem((slice(None), IDX), 0.0), X2),
    "setitem_rows": (_setitem(IDX, torch.ones(3, 6)), X2),
    "setitem_two_tensors": (_setitem((torch.tensor([0, 1]), torch.tensor([2, 3])), torch.tensor([7.0, 8.0])), X2),
    "setitem_bool_mask": (_setitem_mask, X2),
    "index_put_accumulate": (_index_put_acc, X2),
    # top-k / sort
    "topk_sort": (lambda a: (torch.topk(a, 3, dim=1), torch.sort(a, dim=0, descending=True),
                             torch.argsort(a, 1)), r(4, 7, 2)),
    # masked fill, pad, triangles, factories
    "masked_fill_pad": (lambda a: F.pad(a.masked_fill(a > 0, -1.0), (1, 2, 0, 3), value=0.5) + 0, X2),
    "triu_eye_arange": (lambda a: torch.triu(a, 1) + torch.eye(4, 6) + torch.arange(6) + torch.linspace(0, 1, 6), X2),
    # views vs copies: contiguous, repeat, expand, permute, unfold, as_strided, diagonal
    "views_and_copies": (lambda a: (a.permute(2, 0, 1).contiguous() * 2, a.transpose(0, 1).repeat(1, 2, 1),
                                    a[:, :1].expand(2, 3, 8) + 1, a.t() if a.dim() == 2 else a.mT), X3),
    "permuted_output": (lambda a: a.permute(2, 0, 1), X3),
    "unfold_patches": (lambda a: a.unfold(2, 2, 2).unfold(3, 2, 2).reshape(2, -1, 16), X4),
    "unfold_overlapping_windows": (lambda a: a.unfold(1, 3, 1).sum(-1), r(2, 7)),
    "as_strided_window": (lambda a: a.as_strided((3, 3, 2), (2, 1, 1)).sum(-1), r(9)),
    "diagonal": (lambda a: (torch.diagonal(a, 1) * 2, torch.diag_embed(a[:, :3], 1)), r(4, 5)),
    "expanded_transpose_reduced": (lambda a: a.t()[None].expand(3, 6, 4).sum(0), X2),
    "flip_roll": (lambda a: (torch.flip(a, [0, 2]) + 1, torch.roll(a, shifts=(-1, 2), dims=(1, 2)),
                             torch.roll(a, 3)), X3),
    "pixel_shuffle_im2col": (lambda a: (F.pixel_shuffle(a, 2), F.pixel_unshuffle(a, 2), F.unfold(a, 3, padding=1)),
                             X4),
    "upsample_nearest": (lambda a: (F.interpolate(a, scale_factor=2), F.interpolate(a, size=(9, 4))), X4),
    "cdist": (lambda a, b: torch.cdist(a, b), r(2, 4, 3), r(2, 5, 3)),
    # in-place variants, dtype casts, dropout in eval
    "in_place": (lambda a: a.clone().add_(1).mul_(2).clamp_(-1, 1).sigmoid_().masked_fill_(a > 0, 0.0), X2),
    "fill_tensor": (lambda a: a.clone().fill_(torch.tensor(2.0)) + a, X2),
    "casts": (lambda a: (a.half().float(), a.long(), (a > 0).int(), a.to(torch.float64) * 2), X2),
    "dropout_eval": (lambda a: F.dropout(a, 0.5, training=False) * 2, X2),
    # losses
    "cross_entropy_label_smoothing": (lambda a, t: F.cross_entropy(a, t, label_smoothing=0.1), r(4, 5),
                                      torch.tensor([1, 0, 4, 2])),
    "cross_entropy_weight": (lambda a, t, w: F.cross_entropy(a, t, weight=w), r(4, 5), torch.tensor([1, 0, 4, 2]),
                             torch.rand(5)),
    "cross_entropy_ignore_index": (lambda a, t: F.cross_entropy(a, t, ignore_index=1), r(4, 5),
                                   torch.tensor([1, 0, 4, 1])),
    "cross_entropy_2d_weight": (lambda a, t, w: F.cross_entropy(a, t, weight=w, reduction="sum"),
                                r(2, 5, 3, 3), torch.randint(0, 5, (2, 3, 3)), torch.rand(5)),
    "nll_none": (lambda a, t: F.nll_loss(a, t, reduction="none", ignore_index=0), r(4, 5), torch.tensor([1, 0, 4, 2])),
    "losses": (lambda a, b: (F.mse_loss(a, b), F.l1_loss(a, b), F.huber_loss(a, b), F.smooth_l1_loss(a, b),
                             F.kl_div(a.log_softmax(1), b.softmax(1), reduction="batchmean"),
                             F.binary_cross_entropy_with_logits(a, b.sigmoid()),
                             F.binary_cross_entropy(a.sigmoid(), b.sigmoid(), weight=b.abs())), X2, r(4, 6)),
    "cosine_triplet": (lambda a, b, c: (F.cosine_similarity(a, b), F.triplet_margin_loss(a, b, c)), X2, r(4, 6),
                       r(4, 6)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_family_lowers_and_matches_torch(name):
    fn, *inputs = CASES[name]
    validate(fn, *inputs)


RANDOM = {
    "dropout_train": (lambda a: F.dropout(a, 0.25, training=True) * 2, r(8, 16)),
    "bernoulli_randn": (lambda a: (a * torch.bernoulli(torch.full_like(a, 0.75)), a + 0.1 * torch.randn_like(a)),
                        r(8, 16)),
    "rand_randint_normal": (lambda a: (a + torch.rand(8, 16), a + torch.randint(0, 5, (8, 16)),
                                       torch.normal(a, 0.5)), r(8, 16)),
    "lstm_random_initial_state": (lambda a, m: m(a, (torch.randn(1, 3, 6), torch.randn(1, 3, 6)))[0],
                                  r(3, 5, 4), nn.LSTM(4, 6, batch_first=True)),
}


@pytest.mark.parametrize("name", sorted(RANDOM))
def test_random_ops_are_counted_and_the_rest_validates(name):
    fn, *inputs = RANDOM[name]
    graph = validate(fn, *inputs, random=True)
    text = graph.to_text()
    assert 'opaque "random_' in text
    # the executor cannot reproduce torch's generator: it refuses by name
    sources = {t.name: torch.zeros(list(t.shape)) for t in graph.tensors
               if _role(t) not in ("output", "intermediate")}
    with pytest.raises(solar.UnsupportedError, match="random_"):
        solar.run(graph, sources)


def test_dropout_in_training_counts_the_mask_it_draws():
    # on the CPU, F.dropout draws an fp32 keep-mask with bernoulli_(1 - p), then scales
    graph = capture_lower(lambda a: F.dropout(a, 0.25, training=True), r(8, 16))[2]
    line = next(x for x in graph.to_text().splitlines() if "random_bernoulli" in x)
    n = 8 * 16
    assert f"vector_flops={n}," in line           # one generator step per mask element
    assert f"bytes={4 * n}," in line              # the fp32 mask written once
    assert "special_ops=0" in line
    assert "p=0.75" in line


def test_randn_counts_box_muller_special_functions():
    graph = capture_lower(lambda a: a + torch.randn(4, 5), r(4, 5))[2]
    line = next(x for x in graph.to_text().splitlines() if "random_normal" in x)
    assert "vector_flops=20," in line            # 4*5 numbers
    assert "special_ops=60," in line             # log, sqrt, sin/cos per number: 3*4*5
    assert "bytes=80," in line                   # 4*5 fp32 numbers written


def test_transposed_convolution_macs_count_the_taps_that_land():
    n, cin, cout, h, k, s, p, op = 2, 4, 3, 5, 3, 2, 1, 1
    m = nn.ConvTranspose2d(cin, cout, k, stride=s, padding=p, output_padding=op, bias=False)
    graph = validate(m, r(n, cin, h, h))
    ho = (h - 1) * s - 2 * p + k + op
    landing = sum(1 for i in range(h) for t in range(k) if 0 <= i * s + t - p < ho)  # per dimension
    assert macs(graph) == n * cin * cout * landing ** 2  # N*Cin*Kg*(input positions x landing taps)


def test_strided_views_are_free_and_read_through_strides():
    # a transpose feeding a matmul costs no copy: the only bytes are the operands and result
    a, b = r(64, 32), r(48, 32)
    graph = validate(lambda x, y: x @ y.t(), a, b)
    rep = solar.analyze(graph, arch="H100_SXM")
    assert rep.totals.macs == 64 * 48 * 32
    assert rep.totals.bytes_unfused == 4 * (64 * 32 + 48 * 32 + 64 * 48)  # fp32: inputs + output


def test_transposed_operands_stay_matmuls_and_attention_is_attention():
    # plain subscripts (no strided or grouped-head affine ones): a transposed operand is still
    # a matmul; SDPA's contractions are `attention` (the math policy prices its fused kernels)
    q, k, v = r(2, 4, 6, 8), r(2, 4, 6, 8), r(2, 4, 6, 8)
    graph = validate(lambda a, b, q, k, v: (a @ b.t(), F.scaled_dot_product_attention(q, k, v)),
                     r(5, 6), r(7, 6), q, k, v)
    rep = solar.analyze(graph, arch="H100_SXM")
    classes = {(op.origin.op.startswith("aten::_scaled_dot_product"), op["class"])
               for op in rep.ops if op.macs}
    assert classes == {(False, "matmul"), (True, "attention")}


def test_uneven_adaptive_pooling_reads_each_window_once():
    graph = validate(nn.AdaptiveAvgPool1d(3), r(1, 1, 7))
    text = graph.to_text()
    assert "unanalyzed" not in text
    # windows [0,3) [2,5) [4,7): 9 reads, one sum each
    rep = solar.analyze(graph, arch="H100_SXM")
    assert rep.totals.macs == 0


def test_boolean_mask_count_comes_from_the_captured_run():
    graph = capture_lower(lambda a: a[a > 0], torch.tensor([1.0, -1.0, 2.0]))[2]
    x = torch.tensor([1.0, 2.0, 3.0])  # three positives where the captured run had two
    with pytest.raises(solar.Error, match="nonzero"):
        solar.run(graph, {t.name: x for t in graph.tensors if _role(t) == "input"})
