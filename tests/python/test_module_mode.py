"""A KernelBench-format program runs in the mode it leaves its module in, as KernelBench's
harness runs it: a fresh nn.Module trains (batch norm normalizes by the batch's statistics
and updates its running ones, dropout drops); `--eval` calls model.eval() first. The report
states the mode: `program.mode` in the JSON, a `mode:` line in the text
(docs/torch-frontend.md, "Mode")."""

from __future__ import annotations

import json
import textwrap

import pytest

torch = pytest.importorskip("torch")

from conftest import run_solar
from solar.programs import ProgramOptions, analyze_file

B, C, H, W = 4, 8, 6, 6  # the program's batch, channels and spatial size
ELEMS = B * C * H * W  # elements of x and of the output
F32 = 4

BN_DROPOUT = f"""
    import torch
    import torch.nn as nn

    batch_size, channels, size = {B}, {C}, {H}


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm2d(channels)
            self.drop = nn.Dropout(p=0.25)

        def forward(self, x):
            return self.drop(self.bn(x))


    def get_inputs():
        return [torch.randn(batch_size, channels, size, size)]


    def get_init_inputs():
        return []
"""


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "bn_dropout.py"
    path.write_text(textwrap.dedent(BN_DROPOUT))
    return str(path)


def analyze(path: str, **kw):
    return analyze_file(path, ProgramOptions(crosscheck=False, **kw))


def batch_norm_training_flags(trace) -> list:
    return [op["args"]["training"] for op in trace["ops"]
            if op["op"] == "aten::native_batch_norm.default"]


def test_default_is_the_modules_own_training_mode(program):
    r = analyze(program)
    assert r.trace["mode"] == "training"
    assert json.loads(r.report.to_json())["program"]["mode"] == "training"
    assert batch_norm_training_flags(r.trace) == [True]  # batch statistics
    ops = [op["op"] for op in r.trace["ops"]]
    assert "aten::bernoulli_.float" in ops  # dropout draws its keep-mask: a random op
    assert "aten::add_.Tensor" in ops  # num_batches_tracked += 1
    t = r.report.totals
    # Written once: the output, the new running mean and variance (a float a channel) and
    # the i64 step count.
    assert t.bytes_fused_written == F32 * ELEMS + 2 * F32 * C + 8
    # Read once: x, the affine weight and bias, the running statistics and the step count.
    assert t.bytes_fused_read == F32 * ELEMS + 4 * F32 * C + 8
    assert r.report.table().splitlines()[1].startswith("mode: training")


def test_eval_flag_records_the_eval_forms(program):
    r = analyze(program, eval_mode=True)
    assert r.trace["mode"] == "eval"
    assert json.loads(r.report.to_json())["program"]["mode"] == "eval"
    assert batch_norm_training_flags(r.trace) == [False]  # running statistics
    assert not any("bernoulli" in op["op"] or "dropout" in op["op"] for op in r.trace["ops"])
    t = r.report.totals
    # x in, the output out, and four per-channel vectors read (weight, bias, running mean
    # and variance); nothing written back
    assert t.bytes_fused == F32 * (2 * ELEMS + 4 * C)
    assert t.bytes_fused_written == F32 * ELEMS
    # eval batch norm: (x - mean) * rsqrt(var + eps) * w + b, 4 FLOP an element, plus the
    # var + eps of each channel (its rsqrt is a special op)
    assert t.flops == 4 * ELEMS + C and t.special_ops == C
    assert r.report.table().splitlines()[1].startswith("mode: eval")


def test_a_program_that_sets_eval_itself_runs_in_eval(tmp_path):
    path = tmp_path / "self_eval.py"
    path.write_text(textwrap.dedent(BN_DROPOUT).replace(
        "self.drop = nn.Dropout(p=0.25)", "self.drop = nn.Dropout(p=0.25)\n        self.eval()"))
    r = analyze(str(path))
    assert r.trace["mode"] == "eval" and batch_norm_training_flags(r.trace) == [False]


def test_a_module_partly_in_eval_is_mixed(tmp_path):
    path = tmp_path / "mixed.py"
    path.write_text(textwrap.dedent(BN_DROPOUT).replace(
        "self.drop = nn.Dropout(p=0.25)", "self.drop = nn.Dropout(p=0.25)\n        self.bn.eval()"))
    r = analyze(str(path))
    assert r.trace["mode"] == "mixed"
    assert batch_norm_training_flags(r.trace) == [False]
    assert any(op["op"] == "aten::bernoulli_.float" for op in r.trace["ops"])


@pytest.mark.parametrize("flags,mode", [((), "training"), (("--eval",), "eval")])
def test_validate_passes_in_both_modes(program, tmp_path, flags, mode):
    out = tmp_path / "r.json"
    r = run_solar("validate", program, *flags, "--json", str(out))
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text())
    assert d["program"]["mode"] == mode
    v = d["validation"]
    assert v["status"] == "passed", v
    given = [g["op"] for g in v["given"]]
    if mode == "training":
        # the dropout mask is the framework's draw, given; the output and the updated
        # running statistics and step count are compared
        assert given == ["aten::bernoulli_.float"]
        assert sorted(o["shape"] for o in v["outputs"]) == sorted([[], [C], [C], [B, C, H, W]])
    else:
        assert given == [] and [o["shape"] for o in v["outputs"]] == [[B, C, H, W]]
    assert d["crosscheck"]["status"] in ("agree", "explained")
    assert f"mode: {mode}" in r.stdout


def test_eval_is_a_usage_error_for_a_graph():
    from conftest import EXAMPLES

    r = run_solar("analyze", str(EXAMPLES / "gemm.solar"), "--eval")
    assert r.returncode == 2 and "--eval" in r.stderr
