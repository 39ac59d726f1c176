"""Training-step capture (capture(..., train=True[, optimizer])) lowered by the aten table's
backward and optimizer ops (src/lower/aten_*.cc): every op of real PyTorch training steps
lowers, the MACs match formulas, and the lowered graph, run by Solar's executor on the real
tensors, reproduces the gradients (and optimizer updates) PyTorch computes."""

import copy

import pytest
import solar
import torch
import torch.nn.functional as F
from solar.frontends.torch.capture import CaptureRecord, capture
from solar.frontends.torch.program import ProgramOptions, analyze_trace, lower_trace
from torch import nn

torch.set_num_threads(2)


# ------------------------------------------------------------------ models


class ConvNet(nn.Module):
    """Conv + batch norm + ReLU + max (or average) pool, a strided grouped conv, group norm,
    average pooling and a linear head."""

    def __init__(self, pool="max"):
        super().__init__()
        self.pool = F.max_pool2d if pool == "max" else F.avg_pool2d
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2)
        self.gn = nn.GroupNorm(2, 8)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.c1(x))), 2)
        x = F.avg_pool2d(self.gn(self.c2(x)), 2)
        return self.fc(x.flatten(1))


class Conv1d3d(nn.Module):
    def __init__(self, pool="max"):
        super().__init__()
        self.max = pool == "max"
        self.c1 = nn.Conv1d(3, 4, 5, padding=4, dilation=2)
        self.bn = nn.BatchNorm1d(4)
        self.c3 = nn.Conv3d(2, 3, 3, stride=(1, 2, 2), padding=1)
        self.up = nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x1, x3, x2):
        pool1, pool3 = (F.max_pool1d, F.max_pool3d) if self.max else (F.avg_pool1d, F.avg_pool3d)
        y1 = F.adaptive_avg_pool1d(F.avg_pool1d(pool1(self.bn(self.c1(x1)), 2), 2), 2)
        y3 = pool3(self.c3(x3), 2)
        return y1, y3, self.up(x2)


class LanguageModelHead(nn.Module):
    """Embedding, layer norm, a linear head and cross entropy (the module returns the loss)."""

    def __init__(self, vocab=40, d=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, d, padding_idx=0)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens, targets):
        logits = self.head(self.norm(self.emb(tokens)))
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


class Attention(nn.Module):
    """Causal grouped-query attention through scaled_dot_product_attention."""

    def __init__(self, d=32, heads=4, kv_heads=2):
        super().__init__()
        self.h, self.hk, self.dh = heads, kv_heads, d // heads
        self.q = nn.Linear(d, d, bias=False)
        self.kv = nn.Linear(d, 2 * kv_heads * self.dh, bias=False)
        self.o = nn.Linear(d, d)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.h, self.dh).transpose(1, 2)
        k, v = self.kv(x).view(b, t, 2, self.hk, self.dh).unbind(2)
        y = F.scaled_dot_product_attention(
            q, k.transpose(1, 2), v.transpose(1, 2), is_causal=True, enable_gqa=True
        )
        return self.o(y.transpose(1, 2).reshape(b, t, -1))


class Activations(nn.Module):
    """Every activation whose backward is its own aten op, after a linear layer."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 12)

    def forward(self, x):
        h = self.fc(x)
        outs = [
            F.gelu(h),
            F.gelu(h, approximate="tanh"),
            F.silu(h),
            torch.sigmoid(h),
            torch.tanh(h),
            F.hardtanh(h, -0.5, 0.5),
            F.leaky_relu(h, 0.1),
            F.elu(h),
            F.softplus(h),
            F.mish(h),
            F.hardswish(h),
            F.hardsigmoid(h),
            torch.softmax(h, -1),
            torch.log_softmax(h, 0),
            torch.relu(h),
        ]
        return torch.stack(outs)


class MoreActivations(nn.Module):
    """Activations whose forward and backward are both their own aten ops."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 12)

    def forward(self, x):
        h = self.fc(x)
        return (
            F.logsigmoid(h),
            F.hardshrink(h, 0.3),
            F.softshrink(h, 0.3),
            F.celu(h, 0.7),
            torch.logit(torch.sigmoid(h), eps=1e-3),
            F.glu(h, -1),
        )


class Losses(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 6)

    def forward(self, x, target, prob, labels):
        y = self.fc(x)
        return (
            F.mse_loss(y, target)
            + F.l1_loss(y, target)
            + F.smooth_l1_loss(y, target, beta=0.5)
            + F.huber_loss(y, target, delta=2.0, reduction="sum")
            + F.binary_cross_entropy(torch.sigmoid(y), prob)
            + F.binary_cross_entropy_with_logits(y, prob)
            + F.nll_loss(F.log_softmax(y, -1), labels, reduction="sum")
        )


def mlp():
    return nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 4))


def _seeded(make):
    def build():
        torch.manual_seed(0)
        return make()

    return build


# name: (model factory, input factory)
MODELS = {
    "mlp": (mlp, lambda: (torch.randn(8, 16),)),
    "convnet": (ConvNet, lambda: (torch.randn(2, 3, 16, 16),)),
    "convnet_avg": (lambda: ConvNet("avg"), lambda: (torch.randn(2, 3, 16, 16),)),
    "conv1d3d": (
        Conv1d3d,
        lambda: (torch.randn(2, 3, 16), torch.randn(2, 2, 4, 6, 6), torch.randn(2, 3, 5, 5)),
    ),
    "conv1d3d_avg": (
        lambda: Conv1d3d("avg"),
        lambda: (torch.randn(2, 3, 16), torch.randn(2, 2, 4, 6, 6), torch.randn(2, 3, 5, 5)),
    ),
    "lstm": (
        lambda: nn.LSTM(8, 12, num_layers=2, batch_first=True),
        lambda: (torch.randn(2, 5, 8),),
    ),
    "gru": (lambda: nn.GRU(8, 12, batch_first=True), lambda: (torch.randn(2, 5, 8),)),
    "encoder": (
        lambda: nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True),
        lambda: (torch.randn(2, 6, 32),),
    ),
    "lm_head": (
        LanguageModelHead,
        lambda: (torch.randint(0, 40, (2, 6)), torch.randint(0, 40, (2, 6))),
    ),
    "attention": (Attention, lambda: (torch.randn(2, 6, 32),)),
    "activations": (Activations, lambda: (torch.randn(4, 8),)),
    "more_activations": (MoreActivations, lambda: (torch.randn(4, 8),)),
    "upsample": (
        lambda: nn.Sequential(
            nn.Conv2d(2, 3, 3, padding=1),
            nn.Upsample(scale_factor=2),
            nn.Conv2d(3, 2, 3, padding=1),
        ),
        lambda: (torch.randn(2, 2, 5, 4),),
    ),
    "unfold": (
        lambda: nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.Unfold(2, stride=2)),
        lambda: (torch.randn(2, 2, 6, 4),),
    ),
    "edge_pads": (
        lambda: nn.Sequential(
            nn.ReflectionPad2d((1, 2, 2, 1)),
            nn.Conv2d(2, 3, 3),
            nn.ReplicationPad2d((2, 1, 0, 3)),
            nn.Conv2d(3, 2, 2),
            nn.Flatten(2),
            nn.ReflectionPad1d(1),
        ),
        lambda: (torch.randn(2, 2, 5, 4),),
    ),
    "losses": (
        Losses,
        lambda: (torch.randn(4, 8), torch.randn(4, 6), torch.rand(4, 6), torch.randint(0, 6, (4,))),
    ),
}


def _build(name):
    make_model, make_inputs = MODELS[name]
    torch.manual_seed(0)
    model = make_model()
    model.train()
    return model, make_inputs()


# ------------------------------------------------------------------ every op lowers


@pytest.mark.parametrize("name", sorted(MODELS))
def test_training_step_has_no_unanalyzed_op(name):
    model, inputs = _build(name)
    trace = capture(model, *inputs, train=True)
    _, notes, _ = lower_trace(trace, "", False)
    assert notes == []
    # the capture really holds a backward pass
    assert any(
        op["op"].endswith("_backward.default") or op["op"] == "aten::mm.default"
        for op in trace["ops"]
    )


@pytest.mark.parametrize("optimizer", ["sgd", "adam", "adamw"])
def test_optimizer_steps_lower(optimizer):
    model, inputs = _build("convnet")
    trace = capture(model, *inputs, train=True, optimizer=optimizer)
    _, notes, _ = lower_trace(trace, "", False)
    assert notes == []


# ------------------------------------------------------------------ MACs by formula


def _macs(trace):
    return analyze_trace(trace, "", ProgramOptions()).report.totals.macs


def test_mlp_training_macs():
    B, I, H, O = 8, 16, 32, 4
    model = nn.Sequential(nn.Linear(I, H), nn.ReLU(), nn.Linear(H, O))
    x = torch.randn(B, I)
    forward = _macs(capture(model, x))
    assert forward == B * I * H + B * H * O
    step = _macs(capture(model, x, train=True, optimizer="adam"))
    # forward; second layer: grad_input and grad_weight; first layer: grad_weight only (the
    # input needs no gradient); the Adam update is elementwise (no MACs)
    assert step == (B * I * H + B * H * O) + 2 * B * H * O + B * I * H


def test_conv_training_macs():
    N, C, K, H, W = 2, 3, 4, 6, 5
    x, w = torch.randn(N, C, H, W), torch.randn(K, C, 3, 3)
    forward = N * K * C * H * W * 9  # the forward counts every tap (padding read as zero)
    # A module: its input needs no gradient, so only grad_weight, which reads the padding
    # as the forward does.
    model = nn.Conv2d(C, K, 3, padding=1, bias=False)
    assert _macs(capture(model, x, train=True)) == 2 * forward
    # A function of both: grad_input counts the taps that land inside the input, per
    # dimension sum_p #{r : 0 <= p + r - 1 < H} = 3H - 2.
    step = _macs(capture(lambda x, w: F.conv2d(x, w, padding=1), x, w, train=True))
    assert step == 2 * forward + N * K * C * (3 * H - 2) * (3 * W - 2)


def test_causal_attention_backward_macs():
    B, H, L, E = 2, 4, 8, 16
    q, k, v = (torch.randn(B, H, L, E) for _ in range(3))

    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    pairs = L * (L + 1) // 2  # live (query, key) pairs of the causal mask
    forward = 2 * B * H * pairs * E  # QKᵀ and PV
    # backward: QKᵀ recomputed, dV, dP, dQ, dK over the live pairs, and D = rowsum(dO ∘ O)
    backward = 5 * B * H * pairs * E + B * H * L * E
    assert _macs(capture(attend, q, k, v, train=True)) == forward + backward


# ------------------------------------------------------------------ numerical validation


def _flat(v):
    if isinstance(v, torch.Tensor):
        yield v
    elif isinstance(v, (list, tuple)):
        for x in v:
            yield from _flat(x)


def _torch_step(model, inputs, optimizer):
    """PyTorch's own training step on a copy: parameter gradients and updated parameters."""
    m = copy.deepcopy(model)
    out = m(*inputs)
    terms = [t.sum() for t in _flat(out) if t.is_floating_point() and t.requires_grad]
    loss = terms[0]
    for t in terms[1:]:
        loss = loss + t
    opt = None
    if optimizer:
        opt = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[
            optimizer
        ](m.parameters(), lr=1e-3, foreach=False)
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in m.named_parameters() if p.grad is not None}
    if opt is not None:
        opt.step()
    return grads, {n: p.detach().clone() for n, p in m.named_parameters()}


def _graph_step(model, inputs, optimizer):
    """Captures the step on real tensors, runs the lowered graph on the same sources, checks
    every graph output against the capture's value, returns the executor's outputs."""
    record = CaptureRecord(values="io")
    trace = capture(model, *inputs, fake=False, train=True, optimizer=optimizer, record=record)
    graph, notes, ids = lower_trace(trace, "", False)
    assert notes == []
    sources, references = {}, {}
    for t in graph.tensors:
        role = str(t.role).rsplit(".", 1)[-1]
        if role in ("input", "weight", "constant"):
            sources[t.name] = record.values[ids[t.name]]
        elif role == "output":
            references[t.name] = record.values[ids[t.name]]
    result = solar.validate(graph, sources, references)
    assert result, str(result)
    return solar.run(graph, sources)


def _assert_found(name, want, outputs):
    """Some graph output holds `want` (gradients of equal shape are told apart by value)."""
    want = want.numpy()
    scale = max(1.0, float(abs(want).max()))
    close = [
        k
        for k, v in outputs.items()
        if v.shape == want.shape and abs(v - want).max() <= 1e-4 * scale
    ]
    assert close, f"no graph output matches {name} {list(want.shape)}"


@pytest.mark.parametrize(
    "name,optimizer",
    [
        ("mlp", "adam"),
        ("convnet_avg", None),
        ("conv1d3d_avg", None),
        ("lstm", None),
        ("gru", "sgd"),
        ("encoder", None),
        ("lm_head", "adamw"),
        ("attention", None),
        ("activations", None),
        ("more_activations", None),
        ("upsample", None),
        ("unfold", None),
        ("edge_pads", None),
        ("losses", None),
    ],
)
def test_training_graph_reproduces_pytorch(name, optimizer):
    model, inputs = _build(name)
    grads, updated = _torch_step(model, inputs, optimizer)
    outputs = _graph_step(model, inputs, optimizer)
    assert grads
    for pname, g in grads.items():
        _assert_found(f"grad of {pname}", g, outputs)
    if optimizer:
        for pname, p in updated.items():
            _assert_found(f"updated {pname}", p, outputs)


# The forward's max-pooling indices are an opaque "pool_argmax" (src/lower/aten.cc) the
# executor runs (src/exec/opaque_pool.cc): the max-pooling gradients (a scatter at those
# indices) validate too.
@pytest.mark.parametrize("name", ["convnet", "conv1d3d"])
def test_max_pool_training_graph_reproduces_pytorch(name):
    test_training_graph_reproduces_pytorch(name, None)


# ------------------------------------------------------------------ backward ops one by one

aten = torch.ops.aten


def _validate_call(fn, *inputs):
    """Captures fn(*inputs) on real tensors (the backward op called directly, its saved
    tensors given as inputs), lowers it with no unanalyzed op and checks the executor's
    outputs against PyTorch's."""
    record = CaptureRecord(values="io")
    trace = capture(fn, *inputs, fake=False, record=record)
    graph, notes, ids = lower_trace(trace, "", False)
    assert notes == []
    sources, references = {}, {}
    for t in graph.tensors:
        role = str(t.role).rsplit(".", 1)[-1]
        if role in ("input", "weight", "constant"):
            sources[t.name] = record.values[ids[t.name]]
        elif role == "output":
            references[t.name] = record.values[ids[t.name]]
    assert references
    result = solar.validate(graph, sources, references)
    assert result, str(result)


def _pooled(pool, x, *args):
    out, idx = pool(x, *args)
    return torch.randn_like(out), idx


def _case_max_pool2d():
    x = torch.randn(2, 3, 9, 8)
    g, idx = _pooled(aten.max_pool2d_with_indices, x, [3, 3], [2, 2], [1, 1], [1, 1])
    return (
        lambda g, x, i: aten.max_pool2d_with_indices_backward(
            g, x, [3, 3], [2, 2], [1, 1], [1, 1], False, i
        ),
        g,
        x,
        idx,
    )


def _case_max_pool3d():
    x = torch.randn(2, 2, 4, 6, 6)
    g, idx = _pooled(aten.max_pool3d_with_indices, x, [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1])
    return (
        lambda g, x, i: aten.max_pool3d_with_indices_backward(
            g, x, [2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False, i
        ),
        g,
        x,
        idx,
    )


def _case_adaptive_max_pool2d():
    x = torch.randn(2, 3, 8, 6)
    g, idx = _pooled(aten.adaptive_max_pool2d, x, [4, 3])
    return (lambda g, x, i: aten.adaptive_max_pool2d_backward(g, x, i), g, x, idx)


def _conv_case(transposed, x_shape, w_shape, stride, padding, dilation, groups, output_padding):
    x, w = torch.randn(x_shape), torch.randn(w_shape)
    y = aten.convolution(x, w, None, stride, padding, dilation, transposed, output_padding, groups)
    return (
        lambda g, x, w: aten.convolution_backward(
            g,
            x,
            w,
            [y.shape[1]],
            stride,
            padding,
            dilation,
            transposed,
            output_padding,
            groups,
            [True, True, True],
        ),
        torch.randn_like(y),
        x,
        w,
    )


def _case_sdpa(causal, mask, L, S, hq, hk):
    q, k, v = torch.randn(2, hq, L, 8), torch.randn(2, hk, S, 8), torch.randn(2, hk, S, 8)
    m = torch.randn(L, S) if mask else None
    out, lse = aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal, attn_mask=m)
    g = torch.randn_like(out)
    return (
        lambda g, q, k, v, o, lse, *m: aten._scaled_dot_product_flash_attention_for_cpu_backward(
            g, q, k, v, o, lse, 0.0, causal, attn_mask=m[0] if m else None
        ),
        g,
        q,
        k,
        v,
        out,
        lse,
        *([m] if mask else []),
    )


def _case_nll(reduction, weighted):
    x = torch.log_softmax(torch.randn(6, 5), -1)
    t = torch.tensor([0, 4, -100, 2, 2, 1])
    w = torch.rand(5) + 0.5 if weighted else None
    loss, total = aten.nll_loss_forward(x, t, w, reduction, -100)
    g = torch.randn_like(loss)
    return (
        lambda g, x, t, total, *w: aten.nll_loss_backward(
            g, x, t, w[0] if w else None, reduction, -100, total
        ),
        g,
        x,
        t,
        total,
        *([w] if weighted else []),
    )


def _case_nll2d():
    x = torch.log_softmax(torch.randn(2, 4, 3, 5), 1)
    t = torch.randint(0, 4, (2, 3, 5))
    t[0, 1, 2] = -100
    w = torch.rand(4) + 0.5
    _, total = aten.nll_loss2d_forward(x, t, w, 1, -100)
    return (
        lambda g, x, t, total, w: aten.nll_loss2d_backward(g, x, t, w, 1, -100, total),
        torch.randn(()),
        x,
        t,
        total,
        w,
    )


BACKWARD_CASES = {
    "max_pool2d": _case_max_pool2d,
    "max_pool3d": _case_max_pool3d,
    "adaptive_max_pool2d": _case_adaptive_max_pool2d,
    "avg_pool2d_padded": lambda: (
        lambda g, x: aten.avg_pool2d_backward(g, x, [3, 3], [2, 2], [1, 1], False, True, None),
        torch.randn(2, 3, 5, 4),
        torch.randn(2, 3, 10, 8),
    ),
    "avg_pool3d_divisor": lambda: (
        lambda g, x: aten.avg_pool3d_backward(
            g, x, [2, 3, 2], [2, 1, 2], [0, 1, 1], False, True, 5
        ),
        torch.randn(2, 2, 2, 6, 4),
        torch.randn(2, 2, 4, 6, 6),
    ),
    "adaptive_avg_pool2d": lambda: (
        lambda g, x: aten._adaptive_avg_pool2d_backward(g, x),
        torch.randn(2, 3, 2, 3),
        torch.randn(2, 3, 8, 9),
    ),
    "conv2d_strided_dilated_grouped": lambda: _conv_case(
        False, (2, 4, 9, 8), (6, 2, 3, 3), [2, 2], [1, 2], [2, 1], 2, [0, 0]
    ),
    "conv1d_stride3": lambda: _conv_case(False, (2, 3, 17), (4, 3, 4), [3], [2], [1], 1, [0]),
    "conv3d": lambda: _conv_case(
        False, (1, 2, 5, 6, 5), (3, 2, 3, 2, 3), [1, 2, 1], [1, 0, 1], [1, 1, 1], 1, [0, 0, 0]
    ),
    "conv_transpose2d": lambda: _conv_case(
        True, (2, 4, 5, 4), (4, 3, 3, 3), [2, 2], [1, 2], [2, 1], 2, [1, 0]
    ),
    "conv_transpose1d": lambda: _conv_case(True, (2, 3, 6), (3, 4, 4), [3], [1], [1], 1, [2]),
    "embedding_padding_freq": lambda: (
        lambda g, i: aten.embedding_dense_backward(g, i, 12, 3, True),
        torch.randn(2, 7, 5),
        torch.tensor([[3, 1, 1, 0, 11, 3, 5], [1, 2, 2, 2, 9, 0, 3]]),
    ),
    "nll_mean_weighted": lambda: _case_nll(1, True),
    "nll_sum": lambda: _case_nll(2, False),
    "nll_none": lambda: _case_nll(0, False),
    "sdpa_causal_rectangular": lambda: _case_sdpa(True, False, 5, 7, 2, 2),
    "sdpa_float_mask_gqa": lambda: _case_sdpa(False, True, 6, 6, 4, 2),
    "batch_norm_eval": lambda: (
        lambda g, x, w, rm, rv: aten.native_batch_norm_backward(
            g, x, w, rm, rv, None, None, False, 1e-5, [True, True, True]
        ),
        torch.randn(3, 4, 5),
        torch.randn(3, 4, 5),
        torch.rand(4) + 0.5,
        torch.randn(4),
        torch.rand(4) + 0.5,
    ),
    "slice_step2": lambda: (
        lambda g: aten.slice_backward(g, [3, 9], 1, 1, 9, 2),
        torch.randn(3, 4),
    ),
    "select": lambda: (lambda g: aten.select_backward(g, [3, 5, 2], 1, -2), torch.randn(3, 2)),
    "elu_result": lambda: (
        lambda g, y: aten.elu_backward(g, 1.5, 1.0, 1.0, True, y),
        torch.randn(4, 6),
        F.elu(torch.randn(4, 6), 1.5),
    ),
    "leaky_relu_result": lambda: (
        lambda g, y: aten.leaky_relu_backward(g, y, 0.2, True),
        torch.randn(4, 6),
        F.leaky_relu(torch.randn(4, 6), 0.2),
    ),
    "softplus_beta": lambda: (
        lambda g, x: aten.softplus_backward(g, x, 2.0, 1.0),
        torch.randn(4, 6),
        torch.randn(4, 6),
    ),
    "bce_weighted": lambda: (
        lambda g, x, y, w: aten.binary_cross_entropy_backward(g, x, y, w, 1),
        torch.randn(()),
        torch.rand(4, 6),
        torch.rand(4, 6),
        torch.rand(4, 6),
    ),
    "upsample_nearest3d": lambda: (
        lambda g: aten.upsample_nearest3d_backward(g, [4, 8, 2], [2, 3, 2, 4, 1], None, None, None),
        torch.randn(2, 3, 4, 8, 2),
    ),
    "prelu": lambda: (
        lambda g, x, w: aten._prelu_kernel_backward(g, x, w),
        torch.randn(2, 3, 4, 4),
        torch.randn(2, 3, 4, 4),
        torch.rand(1, 3, 1, 1),
    ),
    "nll2d_weighted_mean": lambda: _case_nll2d(),
    "col2im_strided": lambda: (
        lambda x: aten.col2im(x, [7, 8], [3, 2], [1, 2], [1, 0], [2, 3]),
        torch.randn(2, 3 * 6, 4 * 2),
    ),
    "col2im_unbatched": lambda: (
        lambda x: aten.col2im(x, [5, 6], [2, 3], [2, 1], [1, 1], [1, 1]),
        torch.randn(2 * 6, 5 * 6),
    ),
    "reflection_pad2d": lambda: (
        lambda g, x: aten.reflection_pad2d_backward(g, x, [2, 1, 3, 2]),
        torch.randn(2, 3, 9, 7),
        torch.randn(2, 3, 4, 4),
    ),
    "replication_pad3d": lambda: (
        lambda g, x: aten.replication_pad3d_backward(g, x, [0, 2, 1, 1, 3, 0]),
        torch.randn(1, 2, 6, 5, 5),
        torch.randn(1, 2, 3, 3, 3),
    ),
    "lerp_tensor_addcdiv": lambda: (
        lambda a, b, w, c: torch.addcdiv(torch.lerp(a, b, w), b, c.abs() + 1, value=-0.3),
        torch.randn(5),
        torch.randn(5),
        torch.tensor([0.1, 0.4, 0.5, 0.9, 1.0]),
        torch.randn(5),
    ),
}


@pytest.mark.parametrize("case", sorted(BACKWARD_CASES))
def test_backward_op_lowering_is_exact(case):
    torch.manual_seed(1)
    fn, *inputs = BACKWARD_CASES[case]()
    _validate_call(fn, *inputs)
