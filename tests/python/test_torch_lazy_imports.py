"""The capture keeps torch's compiler stack (torch._dynamo, torch.fx.experimental.symbolic_shapes,
sympy) unimported (solar/frontends/torch/lazy_torch.py), gives the same trace whether or not
that stack is already imported, and leaves torch's own use of it as it was.

Each case runs in a fresh interpreter: what a process has imported is the thing under test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

import solar  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

# A few ops with torch._refs decompositions on fake tensors (relu, softmax, layer_norm), a
# matmul, a batch norm (its num_batches_tracked is a torch.tensor made under the fake mode)
# and a constructor that reads a value (so the model is built on real tensors, made fake
# one by one), in KernelBench form: the paths that import torch._dynamo, symbolic_shapes and
# sympy when nothing stands in for them.
PROGRAM = """
import torch

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rate = torch.linspace(0, 1, 3)[1].item()
        self.proj = torch.nn.Linear(16, 32)
        self.bn = torch.nn.BatchNorm1d(32)
        self.norm = torch.nn.LayerNorm(32)

    def forward(self, x):
        return torch.softmax(self.norm(torch.relu(self.bn(self.proj(x)))), dim=-1) * self.rate

def get_inputs():
    return [torch.randn(8, 16)]

def get_init_inputs():
    return []
"""

CAPTURE = """
import json, sys
from solar.frontends.torch.capture import capture_program
trace = capture_program(sys.argv[1])
shapes = vars(sys.modules.get("torch.fx.experimental.symbolic_shapes", sys))
print(json.dumps({"ops": [op["op"] for op in trace["ops"]],
                  "tensors": trace["tensors"],
                  "dynamo": "torch._dynamo" in sys.modules,
                  "sympy": "sympy.core" in sys.modules,  # the package's __init__ loads it
                  "symbolic_shapes": "ShapeEnv" in shapes}))
"""


def _run(tmp_path: Path, script: str) -> dict:
    """Runs `script` with the program's path as sys.argv[1]; its last line of output, read
    as JSON."""
    program = tmp_path / "small.py"
    program.write_text(PROGRAM)
    # The solar this test imports: the installed package (a fresh clone's python/ has no
    # built core) or the working tree's, as the caller's path has it.
    env = dict(os.environ, PYTHONPATH=str(Path(solar.__file__).resolve().parents[1]))
    done = subprocess.run([sys.executable, "-c", script, str(program)], cwd=ROOT, env=env,
                          text=True, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_capture_leaves_the_compiler_stack_unimported(tmp_path):
    result = _run(tmp_path, CAPTURE)
    assert result["dynamo"] is False
    assert result["sympy"] is False
    assert result["symbolic_shapes"] is False
    assert "aten::addmm.default" in result["ops"]


@pytest.mark.parametrize("first", [
    "import torch._dynamo",
    "import torch.fx.experimental.symbolic_shapes",
    "import sympy",
])
def test_capture_after_the_real_modules_gives_the_same_trace(tmp_path, first):
    alone = _run(tmp_path, CAPTURE)
    after = _run(tmp_path, first + "\n" + CAPTURE)
    assert after["ops"] == alone["ops"]
    assert after["tensors"] == alone["tensors"]  # shapes, dtypes, strides, roles


def test_dynamic_shapes_with_a_shape_env_after_a_capture(tmp_path):
    # A capture first (stand-ins in place), then a program of torch's own using a ShapeEnv
    # and torch._dynamo: both get the real modules.
    script = CAPTURE + """
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv, DimDynamic, StatelessSymbolicContext
real = sys.modules["torch.fx.experimental.symbolic_shapes"]
assert type(real) is type(sys) and ShapeEnv is vars(real)["ShapeEnv"]
assert torch.fx.experimental.symbolic_shapes is real
# torch.distributed.tensor, imported during the capture, holds the real exception class
from torch.distributed.tensor import _decompositions
assert _decompositions.GuardOnDataDependentSymNode is real.GuardOnDataDependentSymNode
import torch._dynamo
assert hasattr(torch._dynamo, "optimize")
mode = FakeTensorMode(shape_env=ShapeEnv(), allow_non_fake_inputs=True)
ctx = StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DYNAMIC, DimDynamic.STATIC])
fx = mode.from_tensor(torch.randn(5, 16), symbolic_context=ctx)
with mode:
    y = torch.relu(fx @ torch.randn(16, 4))
assert isinstance(y.shape[0], torch.SymInt) and y.shape[1] == 4
print(json.dumps({"ok": str(y.shape[0])}))
"""
    assert _run(tmp_path, script)["ok"].startswith("s")


def test_sympy_after_a_capture_is_sympy(tmp_path):
    script = CAPTURE + """
import sympy.core.numbers
real = sys.modules["sympy"]
assert type(real) is type(sys) and real.core.numbers is sys.modules["sympy.core.numbers"]
assert sympy.core.numbers.__spec__.name == "sympy.core.numbers"
x = real.Symbol("x")
import torch
import torch._prims_common as prims
assert prims.elementwise_dtypes(torch.ones(2), x, type_promotion_kind=
                                prims.ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT)[1] is not None
print(json.dumps({"ok": str(real.expand((x + 1) ** 2))}))
"""
    assert _run(tmp_path, script)["ok"] == "x**2 + 2*x + 1"


def test_torch_dynamo_after_a_capture_is_the_real_one(tmp_path):
    # The capture answered torch._dynamo.source's RandomValueSource and ConstantSource
    # itself; importing torch._dynamo afterwards puts the real module in place, and a
    # capture after that still gives the same trace.
    script = CAPTURE + """
import importlib, torch._dynamo
from torch._dynamo.source import RandomValueSource, ConstantSource
real = sys.modules["torch._dynamo.source"]
assert type(real) is type(sys) and RandomValueSource is vars(real)["RandomValueSource"]
assert torch._dynamo.source is real and ConstantSource.__module__ == "torch._dynamo.source"
assert importlib.import_module("torch._dynamo.source") is real
again = capture_program(sys.argv[1])
print(json.dumps({"ops": [op["op"] for op in again["ops"]], "tensors": again["tensors"]}))
"""
    alone = _run(tmp_path, CAPTURE)
    after = _run(tmp_path, script)
    assert after["ops"] == alone["ops"]
    assert after["tensors"] == alone["tensors"]
