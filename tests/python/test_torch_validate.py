"""Validation by execution (`solar validate model.py`, `analyze --validate`): the program runs
on real tensors, the lowered graph runs in Solar's executor on the same sources, and every
output is compared (section `validation`, docs/validation.md). Real PyTorch throughout."""

from __future__ import annotations

import json
import textwrap

import pytest

torch = pytest.importorskip("torch")

from conftest import EXAMPLES, run_solar  # noqa: E402

from solar import cli  # noqa: E402
from solar import analysis  # noqa: E402
from solar.programs import ProgramOptions, analyze_file  # noqa: E402

TORCH = EXAMPLES / "torch"


@pytest.fixture(autouse=True)
def _threads():
    n = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(n)


def write(tmp_path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def validate(path, **kw):
    r = analyze_file(str(path), ProgramOptions(validate=True, crosscheck=False, **kw))
    return r.validation


# Examples shrunk with --set (the defaults are sized for an H100, not for a CI core).
EXAMPLE_SETS = {
    "mlp.py": {"batch_size": "2", "hidden": "256"},
    "conv_block.py": {"batch_size": "1", "height": "12", "width": "12"},
    "attention.py": {"batch_size": "1", "seq_len": "24", "d_model": "128"},
}


@pytest.mark.parametrize("name", sorted(EXAMPLE_SETS))
def test_examples_validate(name):
    # --eval for conv_block: its one output; in training (the module's own mode) the batch
    # norm's running statistics and step count are outputs too (test_limits.py covers that)
    v = validate(TORCH / name, overrides=EXAMPLE_SETS[name], eval_mode=name == "conv_block.py")
    assert v["status"] == "passed", v
    assert v["tool"] == "solar executor" and v["seed"] == 0
    assert len(v["outputs"]) == 1 and v["first_divergent_op"] is None
    out = v["outputs"][0]
    assert out["passed"] and out["mismatches"] == 0 and out["dtype"] == "f32"
    assert (out["atol"], out["rtol"]) == (1e-5, 1e-4)  # the f32 tolerances (docs/executor.md)
    assert out["max_abs_error"] < out["atol"] * 10  # well inside the scaled bound


SMALL = """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1, stride=2)
            self.bn = nn.BatchNorm2d(8)

        def forward(self, x, y):
            h = torch.relu(self.bn(self.conv(x)))
            h = nn.functional.max_pool2d(h, 2)
            s = torch.softmax(y, dim=-1) * torch.tanh(y) + y.mean(1, keepdim=True)
            return h.flatten(1).sum(1), torch.bmm(s, s.transpose(1, 2))

    def get_inputs():
        return [torch.randn(2, 3, 16, 16), torch.randn(2, 5, 7)]

    def get_init_inputs():
        return []
"""


def test_small_program_with_two_outputs_validates(tmp_path):
    # eval mode: in training (the module's own mode) the batch norm's updated running
    # statistics would be compared as outputs too
    v = validate(write(tmp_path, "small.py", SMALL), eval_mode=True)
    assert v["status"] == "passed", v
    assert [o["shape"] for o in v["outputs"]] == [[2], [2, 5, 5]]
    assert all(o["passed"] for o in v["outputs"])


def test_validate_cli_json_section_and_table(tmp_path):
    path = write(tmp_path, "small.py", SMALL)
    out = tmp_path / "r.json"
    r = run_solar("validate", path, "--json", str(out))
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text())
    v = d["validation"]
    assert set(v) >= {"status", "tool", "outputs", "first_divergent_op", "excluded", "seed",
                      "given"}
    assert set(v["outputs"][0]) == {"name", "trace_id", "shape", "dtype", "max_abs_error",
                                    "max_rel_error", "atol", "rtol", "scale", "mismatches",
                                    "tightest_error", "tightest_allowance", "passed"}
    assert "crosscheck" in d  # the cross-check runs with validation too
    assert "Validation (solar executor, seed 0): PASSED" in r.stdout


TANH = """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def forward(self, x):
            y = x * 3.0
            z = torch.tanh(y)
            return z + 1.0

    def get_inputs():
        return [torch.randn(8, 8)]

    def get_init_inputs():
        return []
"""


def plant(monkeypatch, frm: str, to: str):
    """A wrong lowering: the trace handed to the C++ table has op `frm` replaced by `to`
    (both in the analysis and in validation, as a bug in the table would be)."""
    real = analysis.lower_trace

    def wrong(trace, file, strict):
        trace = dict(trace, ops=[dict(op, op=to) if op["op"] == frm else op
                                 for op in trace["ops"]])
        return real(trace, file, strict)

    monkeypatch.setattr(analysis, "lower_trace", wrong)


def test_planted_wrong_lowering_fails_with_exit_8_and_names_the_op(tmp_path, monkeypatch, capsys):
    path = write(tmp_path, "tanh.py", TANH)
    plant(monkeypatch, "aten::tanh.default", "aten::sigmoid.default")
    out = tmp_path / "r.json"
    code = cli.main(["solar", "validate", path, "--json", str(out), "--no-crosscheck"])
    assert code == 8  # EXIT_CODES["validation_failed"]
    v = json.loads(out.read_text())["validation"]
    assert v["status"] == "failed" and "outside tolerance" in v["reason"]
    assert not v["outputs"][0]["passed"] and v["outputs"][0]["mismatches"] > 0
    first = v["first_divergent_op"]
    assert first["framework_op"] == "aten::sigmoid.default"  # the planted op, not the add after it
    assert first["file"] == path and first["line"] == 8  # `z = torch.tanh(y)`
    assert not first["tensor"]["passed"]
    captured = capsys.readouterr()
    assert "first divergent op" in captured.out and "validation failed" in captured.err


def test_planted_wrong_argument_is_located(tmp_path, monkeypatch):
    """A wrong constant (mul by 3 lowered as mul by 2) is caught at the mul."""
    path = write(tmp_path, "tanh.py", TANH)
    real = analysis.lower_trace

    def wrong(trace, file, strict):
        ops = [dict(op, args=dict(op["args"], other=2.0)) if op["op"] == "aten::mul.Tensor"
               else op for op in trace["ops"]]
        return real(dict(trace, ops=ops), file, strict)

    monkeypatch.setattr(analysis, "lower_trace", wrong)
    v = validate(path)
    assert v["status"] == "failed"
    assert v["first_divergent_op"]["framework_op"] == "aten::mul.Tensor"
    assert v["first_divergent_op"]["line"] == 7  # `y = x * 3.0`


RANDOM = """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(16))
            self.drop = nn.Dropout(0.5)

        def forward(self, x):
            y = self.drop(x * self.w) + 0.1 * torch.randn_like(x)
            return torch.relu(y).sum(dim=1), torch.rand(3)

    def get_inputs():
        return [torch.randn(4, 16)]

    def get_init_inputs():
        return []
"""


def test_random_values_are_given_and_pure_random_outputs_excluded(tmp_path):
    v = validate(write(tmp_path, "rnd.py", RANDOM), eval_mode=True)  # --eval: dropout idle
    assert v["status"] == "passed", v
    # randn_like feeds a computed output: its draw is given, the output compared
    assert [g["op"] for g in v["given"]] == ["aten::randn_like.default", "aten::rand.default"]
    assert [o["shape"] for o in v["outputs"]] == [[4]]
    # torch.rand(3) is returned as drawn: nothing to compare, excluded with the reason
    assert len(v["excluded"]) == 1 and "random op aten::rand.default" in v["excluded"][0]["reason"]
    # eval-mode dropout is the identity, not a random op
    assert not any("dropout" in g["op"] for g in v["given"])


def test_validation_leaves_the_callers_generators_alone(tmp_path):
    import random

    torch.manual_seed(123)
    random.seed(123)
    expect = (torch.rand(4), random.random())
    torch.manual_seed(123)
    random.seed(123)
    validate(write(tmp_path, "rnd.py", RANDOM))
    assert torch.equal(torch.rand(4), expect[0]) and random.random() == expect[1]


def test_state_written_in_place_is_validated(tmp_path):
    """Buffers the program updates in place are outputs: executed and compared too."""
    path = write(tmp_path, "tracker.py", """
        import torch

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("ema", torch.zeros(8))
                self.register_buffer("steps", torch.zeros((), dtype=torch.int64))

            def forward(self, x):
                self.ema.mul_(0.9).add_(x.mean(0), alpha=0.1)
                self.steps.add_(1)
                return x - self.ema

        def get_inputs():
            return [torch.randn(16, 8)]

        def get_init_inputs():
            return []
    """)
    v = validate(path)
    assert v["status"] == "passed", v
    outs = sorted((o["dtype"], o["shape"]) for o in v["outputs"])
    assert outs == [("f32", [8]), ("f32", [16, 8]), ("i64", [])], outs
    assert all(o["passed"] for o in v["outputs"])


def test_batch_norm_running_statistics_are_validated_in_training(tmp_path):
    """native_batch_norm updates its running statistics without declaring the write: the
    capture records it, the lowering makes the new versions ((1 - m) * running + m * batch
    statistic, the variance unbiased; m = 1 / steps without a momentum) and they are compared."""
    path = write(tmp_path, "bn.py", """
        import torch

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.bn = torch.nn.BatchNorm2d(8)
                self.cma = torch.nn.BatchNorm1d(6, momentum=None)

            def forward(self, x, y):
                return self.bn(x).sum() + self.cma(y).sum()

        def get_inputs():
            return [torch.randn(4, 8, 5, 5), torch.randn(10, 6)]

        def get_init_inputs():
            return []
    """)
    v = validate(path, train=True)
    assert v["status"] == "passed", v
    stats = [o for o in v["outputs"] if o["dtype"] == "f32" and o["shape"] in ([8], [6])]
    # per norm: running_mean and running_var, then the weight and bias gradients
    assert sorted(o["shape"][0] for o in stats) == [6] * 4 + [8] * 4
    assert all(o["passed"] for o in v["outputs"])


def test_dropout_in_training_is_given(tmp_path):
    """The examples' random_ops.py: F.dropout(training=True), bernoulli, randn_like."""
    path = write(tmp_path, "drop.py", """
        import torch
        import torch.nn.functional as F

        class Model(torch.nn.Module):
            def forward(self, x):
                return F.dropout(x, 0.25, training=True) * 2.0 + x

        def get_inputs():
            return [torch.randn(4, 16)]

        def get_init_inputs():
            return []
    """)
    v = validate(path)
    assert v["status"] == "passed", v
    # under no_grad F.dropout decomposes: empty_like, bernoulli_ (random: given), div_, mul
    assert [g["op"] for g in v["given"]] == ["aten::bernoulli_.float"]


def test_only_random_outputs_is_inconclusive_and_exits_8(tmp_path, capsys):
    path = write(tmp_path, "only.py", """
        import torch

        class Model(torch.nn.Module):
            def forward(self, x):
                return torch.randn(3, 3)

        def get_inputs():
            return [torch.randn(2)]

        def get_init_inputs():
            return []
    """)
    v = validate(path)
    assert v["status"] == "inconclusive" and "every program output is excluded" in v["reason"]
    assert v["outputs"] == []
    assert cli.main(["solar", "validate", path, "--no-crosscheck"]) == 8
    assert "INCONCLUSIVE" in capsys.readouterr().out


def test_unanalyzed_op_fails_naming_it(tmp_path):
    path = write(tmp_path, "fft.py", """
        import torch

        class Model(torch.nn.Module):
            def forward(self, x):
                return torch.fft.rfft(x).abs()

        def get_inputs():
            return [torch.randn(4, 16)]

        def get_init_inputs():
            return []
    """)
    v = validate(path)
    assert v["status"] == "failed"
    assert "not executable" in v["reason"] and "aten::_fft_r2c" in v["reason"]
    assert f"{path}:6" in v["reason"]  # the program line of the op


@pytest.mark.parametrize("optimizer", [None, "sgd", "adam"])
def test_train_step_outputs_are_loss_gradients_and_updates(tmp_path, optimizer):
    path = write(tmp_path, "lin.py", """
        import torch

        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = torch.nn.Parameter(torch.randn(16, 8))

            def forward(self, x):
                return torch.mm(x, self.w) * 0.5

        def get_inputs():
            return [torch.randn(4, 16)]

        def get_init_inputs():
            return []
    """)
    v = validate(path, train=True, optimizer=optimizer)
    assert v["status"] == "passed", v
    # the loss (a scalar), the gradient of w, and with an optimizer the updated w
    expect = [[], [16, 8]] + ([[16, 8]] if optimizer else [])
    assert sorted(o["shape"] for o in v["outputs"]) == expect


# Writes through views: the in-place op gives only the view a new trace version; the base
# (and other views) must see the write (capture.py, _Trace: as_strided_scatter / as_strided
# versions recorded when a stale object is read).
VIEW_WRITES = """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def forward(self, x, u):
            y = x.clone()
            y[:, 0] = 0.0                  # select view + fill_: the base must see it
            y[1:3, 2:5] = u                # a box through two slices + copy_
            y[::2, -1].mul_(3.0)           # a strided view, in place
            col = y[:, 1]                  # a view made before the next write...
            y.add_(1.0)                    # ...the base written in place: the view sees it
            t = y.t()
            t[0].neg_()                    # a write through a transposed view
            return y, col * 2.0

    def get_inputs():
        return [torch.randn(6, 7), torch.randn(2, 3)]
"""


def test_writes_through_views_reach_the_viewed_tensor(tmp_path):
    path = write(tmp_path, "view_writes.py", VIEW_WRITES)
    r = analyze_file(path, ProgramOptions(validate=True, crosscheck=False))
    v = r.validation
    assert v["status"] == "passed", v
    assert len(v["outputs"]) == 2 and all(o["mismatches"] == 0 for o in v["outputs"])
    ops = [op["op"] for op in r.trace["ops"]]
    # the base is brought up to date by torch's functional form of each write it missed
    assert "aten::as_strided_scatter.default" in ops
    assert r.warnings == []  # nothing unanalyzed


INTERLEAVED = """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def forward(self, x):
            a = x.t()[::2]           # every other column of x
            b = x.t()[:, ::2]        # every other row of x, transposed
            a.mul_(2.0)              # b shares elements with a, neither holds the other
            return b + 1.0

    def get_inputs():
        return [torch.randn(4, 6)]
"""


def test_a_write_between_interleaved_views_goes_through_the_base(tmp_path):
    r = analyze_file(write(tmp_path, "interleaved.py", INTERLEAVED),
                     ProgramOptions(validate=True, crosscheck=False))
    assert r.validation["status"] == "passed", r.validation
    ops = [op["op"] for op in r.trace["ops"]]
    # x (dense, holds both) is brought up to date first, b is read back out of it
    assert ops.count("aten::as_strided_scatter.default") == 1
    assert ops[-2] == "aten::as_strided.default" and ops[-1] == "aten::add.Tensor"


NO_BASE = """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            buf = torch.arange(24.0).reshape(4, 6)
            self.a = buf.t()[::2]        # two interleaved views made outside the capture:
            self.b = buf.t()[:, ::2]     # the trace never sees their dense base

        def forward(self, x):
            before = self.b * 1.0        # b is read before the write and after it
            self.a.mul_(2.0)
            return self.b + x + before

    def get_inputs():
        return [torch.randn(6, 2)]
"""


def test_a_write_the_trace_cannot_place_is_refused_not_stale(tmp_path):
    r = analyze_file(write(tmp_path, "no_base.py", NO_BASE),
                     ProgramOptions(validate=True, crosscheck=False))
    v = r.validation
    assert v["status"] == "failed" and "solar::write_through_view" in v["reason"], v
    assert any("solar::write_through_view" in w for w in r.warnings)


# A dilated transposed convolution whose stride divides its dilation (stride 1 included):
# the lowering solves the tap equality (one residue class receives every tap) instead of
# masking an (o, r, i) space the executor would walk point by point. Exact values and the
# exact MACs: only (input position, tap) pairs that land inside the output.
DILATED_CONVT = """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.ConvTranspose3d(4, 6, 3, stride=2, padding=1, dilation=2)
            self.b = nn.ConvTranspose1d(4, 6, 5, stride=1, padding=2, dilation=3)

        def forward(self, x, y):
            return self.a(x), self.b(y)

    def get_inputs():
        return [torch.randn(2, 4, 5, 6, 7), torch.randn(2, 4, 11)]
"""


def test_dilated_transposed_convolution_with_stride_dividing_dilation(tmp_path):
    r = analyze_file(write(tmp_path, "convt.py", DILATED_CONVT),
                     ProgramOptions(validate=True, crosscheck=False))
    assert r.validation["status"] == "passed", r.validation

    def landed(n, k, s, pad, d):  # (input position, tap) pairs landing in the output
        out = (n - 1) * s - 2 * pad + d * (k - 1) + 1
        return sum(1 for i in range(n) for t in range(k) if 0 <= i * s + t * d - pad < out)

    N, Cin, Cout = 2, 4, 6
    macs_a = N * Cin * Cout * landed(5, 3, 2, 1, 2) * landed(6, 3, 2, 1, 2) * landed(7, 3, 2, 1, 2)
    macs_b = N * Cin * Cout * landed(11, 5, 1, 2, 3)
    assert r.report.totals.macs == macs_a + macs_b
    # the taps stay indices and nothing ties them to a residue: no masked (rho, v, r) space
    convs = [line for line in r.graph.to_text().splitlines()
             if "einsum" in line and "aten::convolution" in line and " sum " in line]
    assert len(convs) == 2 and not any("rho" in line or "v0" in line for line in convs), convs


# The indices of max pooling (opaque "pool_argmax", src/exec/opaque_pool.cc) are executed and
# compared exactly: padded, dilated, strided and ceil-mode windows, and uneven adaptive ones.
POOL_INDICES = """
    import torch
    import torch.nn.functional as F

    class Model(torch.nn.Module):
        def forward(self, x, y, z):
            a = F.max_pool3d(x, 3, stride=2, padding=1, dilation=2, return_indices=True)
            b = F.adaptive_max_pool2d(y, (3, 5), return_indices=True)
            c = F.max_pool1d(z, 4, stride=3, padding=2, ceil_mode=True, return_indices=True)
            return (*a, *b, *c)

    def get_inputs():
        return [torch.randn(2, 3, 7, 8, 9), torch.randn(2, 3, 10, 11), torch.randn(2, 3, 17)]
"""


def test_max_pool_indices_are_executed_and_compared(tmp_path):
    v = validate(write(tmp_path, "pool_indices.py", POOL_INDICES))
    assert v["status"] == "passed", v
    ints = [o for o in v["outputs"] if o["dtype"] == "i64"]
    assert len(v["outputs"]) == 6 and len(ints) == 3  # three values, three index tensors
    assert all(o["mismatches"] == 0 and o["atol"] == 0 for o in ints)  # integers: exact
