"""The framework-kernel level (docs/bounds.md, "Framework kernels"): one kernel per framework
op, each bounded as one fused kernel. It sits between the per-op level and the whole program
as one kernel: unfused >= framework >= fused on every example, on every device."""

from __future__ import annotations

import os

import pytest

import solar
from conftest import EXAMPLES, ROOT
from solar.analysis import ProgramOptions
from solar.programs import analyze_file

DEVICES = ("H100_SXM", "B200")
GRAPHS = sorted(p.name for p in EXAMPLES.glob("*.solar"))
LOOPS = sorted(p.name for p in (EXAMPLES / "loops").glob("*.py"))
TORCH = ["gpt_block.py", "attention.py", "norms.py", "losses.py"]
JAX = ["mlp_layernorm.py", "attention_causal.py"]
REL = 1e-12  # the sums of the levels in different orders


def levels(report: dict) -> dict:
    return {
        dev: (d["unfused"]["seconds"], d["framework"]["seconds"], d["fused"]["seconds"])
        for dev, d in report["devices"].items()
    }


def assert_ordered(report: dict) -> None:
    for dev, (unfused, framework, fused) in levels(report).items():
        assert unfused * (1 + REL) >= framework, (dev, unfused, framework)
        assert framework * (1 + REL) >= fused, (dev, framework, fused)


def program_report(path) -> dict:
    opts = ProgramOptions(archs=DEVICES, crosscheck=False)
    return analyze_file(str(path), opts).report.to_dict()


@pytest.mark.parametrize("name", GRAPHS)
def test_graph_examples_are_ordered(name):
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        report = solar.analyze(f"examples/{name}", arch=list(DEVICES)).to_dict()
    finally:
        os.chdir(cwd)
    assert_ordered(report)
    # A graph file's op is its own kernel: one kernel per op that is not a free view.
    live = [k for k in report["kernels"] if not k["free"]]
    assert all(len(k["ops"]) == 1 for k in report["kernels"])
    for d in report["devices"].values():
        assert d["framework"]["kernels"] == len(live)


@pytest.mark.parametrize("name", LOOPS)
def test_loop_examples_are_ordered(name):
    assert_ordered(program_report(EXAMPLES / "loops" / name))


@pytest.mark.parametrize("name", TORCH)
def test_torch_examples_are_ordered(name):
    pytest.importorskip("torch")
    assert_ordered(program_report(EXAMPLES / "torch" / name))


@pytest.mark.parametrize("name", JAX)
def test_jax_examples_are_ordered(name):
    pytest.importorskip("jax")
    assert_ordered(program_report(EXAMPLES / "jax" / name))


def test_attention_is_one_kernel_that_keeps_its_scores_on_chip():
    """Scaled-dot-product attention lowers to its einsum steps (scores, max, exp, sum,
    divide, P.V): the unfused level writes the scores through DRAM between them, one
    framework kernel (flash attention) does not. Its kernel moves q, k, v and the output."""
    pytest.importorskip("torch")
    report = program_report(EXAMPLES / "torch" / "gpt_block.py")
    ops = report["ops"]
    sdpa = [k for k in report["kernels"] if "scaled_dot_product" in k["op"]]
    assert sdpa, "no attention kernel"
    for kernel in sdpa:
        assert len(kernel["ops"]) >= 5  # scores, max, exp, sum, divide, P.V: one kernel
        inside = set(kernel["ops"])
        for dev in DEVICES:
            apart = sum(ops[i]["seconds"][dev] for i in inside)
            assert kernel["seconds"][dev] < apart, dev  # the scores stay on chip
    for dev, (unfused, framework, fused) in levels(report).items():
        assert unfused > framework > fused, dev


def test_the_table_names_the_levels():
    out = solar.analyze(str(EXAMPLES / "transformer_block.solar"), arch="H100_SXM").table()
    header = next(line for line in out.splitlines() if line.startswith("device "))
    assert header.index("unfused SOL") < header.index("framework SOL") < header.index(" fused SOL")
    # Each level named in words under the table.
    assert "unfused: every einsum op its own kernel" in out
    assert "framework: one kernel per framework op" in out


NEST_PROGRAM = '''
from solar.loopir import Tensor, kernel

N, D = 16, 32
x = Tensor("N,D", dtype="f32", role="input")
y = Tensor("N,D", dtype="f32", role="output")
z = Tensor("N,D", dtype="f32", role="output")


@kernel
def two_nests(x, y, z):
    s = Tensor("N,D", dtype="f32")
    for n in range(N):
        for d in range(D):
            s[n, d] = x[n, d] * 2.0
            y[n, d] = x[n, d] + 1.0
    for n in range(N):
        for d in range(D):
            z[n, d] = s[n, d] - 1.0


def model():
    two_nests(x, y, z)
'''


def test_a_loop_nest_is_one_kernel(tmp_path):
    """A loop program's framework kernel is its loop nest: the two statements of the first
    nest (lines 15 and 16) are one kernel, the second nest another."""
    path = tmp_path / "two_nests.py"
    path.write_text(NEST_PROGRAM)
    report = program_report(path)
    lines = [[report["ops"][i]["origin"]["line"] for i in k["ops"]]
             for k in report["kernels"] if not k["free"]]
    assert lines == [[15, 16], [19]]


TWO_CALLS = '''
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x), torch.relu(x + 1)  # noqa: E501


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
'''


def test_two_calls_on_one_line_are_two_kernels(tmp_path):
    """Two aten calls of one op on one line (relu, add, relu) are three kernels: the ops of
    one traced op are one kernel, not the ops of one line."""
    pytest.importorskip("torch")
    path = tmp_path / "two_calls.py"
    path.write_text(TWO_CALLS)
    report = program_report(path)
    kernels = [k["op"] for k in report["kernels"] if not k["free"]]
    assert [k.split("::")[-1].split(".")[0] for k in kernels] == ["relu", "add", "relu"]
