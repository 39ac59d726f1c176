"""solar.frontends.torch.fake_shortcuts: each fake result made directly is the one torch's
own fake implementation makes (shape, strides, dtype, device, version counters), the
errors torch raises still come, and captures are identical with and without shortcuts."""

from __future__ import annotations

import importlib
import json

import pytest

torch = pytest.importorskip("torch")

from torch._subclasses.fake_tensor import FakeTensor  # noqa: E402
from torch.utils.flop_counter import flop_registry  # noqa: E402

from solar.frontends.torch import fake_shortcuts  # noqa: E402
from solar.frontends.torch.lazy_torch import fake_mode  # noqa: E402

aten = torch.ops.aten
capture_module = importlib.import_module("solar.frontends.torch.capture")


def _meta(t):
    return (type(t), tuple(t.shape), t.stride(), t.dtype, t.device, t.storage_offset())


def _layouts(channels):
    """Inputs of every layout the shortcut takes or refuses: (name, make(mode, dtype))."""
    def contiguous(shape):
        return lambda dtype: torch.empty(shape, dtype=dtype)

    def channels_last(shape, fmt):
        return lambda dtype: torch.empty(shape, dtype=dtype).to(memory_format=fmt)

    c = channels
    return [
        ("2d", contiguous((4, c))),
        ("3d", contiguous((2, c, 5))),
        ("4d", contiguous((2, c, 4, 5))),
        ("4d batch 1", contiguous((1, c, 4, 5))),
        ("4d 1x1", contiguous((3, c, 1, 1))),
        ("channels last", channels_last((2, c, 4, 5), torch.channels_last)),
        ("channels last batch 1", channels_last((1, c, 4, 5), torch.channels_last)),
        ("channels last 1x1", channels_last((3, c, 1, 1), torch.channels_last)),
        ("5d", contiguous((2, c, 2, 3, 4))),
        ("channels last 3d", channels_last((2, c, 2, 3, 4), torch.channels_last_3d)),
        ("permuted", lambda dtype: torch.empty((4, 5, 2, c), dtype=dtype).permute(2, 3, 0, 1)),
        ("sliced", lambda dtype: torch.empty((2, c, 4, 10), dtype=dtype)[..., ::2]),
    ]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16,
                                   torch.bfloat16])
@pytest.mark.parametrize("training,affine,stats", [
    (True, True, True), (True, False, True), (True, True, False),
    (False, True, True), (False, False, True),  # eval mode needs running statistics
])
def test_batch_norm_results_are_torchs(dtype, training, affine, stats):
    channels = 3
    mode = fake_mode()
    shortcut_taken = 0
    for name, make in _layouts(channels):
        with mode:
            x = make(dtype)
            weight, bias = ((torch.empty(channels, dtype=dtype), torch.empty(channels, dtype=dtype))
                            if affine else (None, None))
            mean, var = ((torch.zeros(channels, dtype=dtype), torch.ones(channels, dtype=dtype))
                         if stats else (None, None))
        args = (x, weight, bias, mean, var, training, 0.1, 1e-5)
        versions = [t._version for t in (mean, var) if t is not None]
        made = fake_shortcuts.result(aten.native_batch_norm.default, args, {})
        moved = [t._version for t in (mean, var) if t is not None]
        versions_now = [t._version for t in (mean, var) if t is not None]
        expected = aten.native_batch_norm.default(*args)
        after = [t._version for t in (mean, var) if t is not None]
        if made is None:
            assert name == "sliced", name  # the one layout that is not dense
            continue
        shortcut_taken += 1
        assert [_meta(t) for t in made] == [_meta(t) for t in expected], name
        assert all(isinstance(t, FakeTensor) for t in made)
        # The running statistics move as torch's own run moves them.
        assert [m - v for m, v in zip(moved, versions)] == [
            a - n for a, n in zip(after, versions_now)], name
    assert shortcut_taken == len(_layouts(channels)) - 1


def test_batch_norm_refusals_run_torchs_own_errors():
    mode = fake_mode()
    with mode:
        x = torch.empty(2, 3, 4, 4)
        short = torch.empty(2)
    bn = aten.native_batch_norm.default
    bad = [
        (x, short, None, None, None, True, 0.1, 1e-5),  # weight of the wrong size
        (x, None, None, short, short, True, 0.1, 1e-5),  # running stats of the wrong size
        (x, None, None, None, None, False, 0.1, 1e-5),  # eval without running stats
    ]
    for args in bad:
        assert fake_shortcuts.result(bn, args, {}) is None
        with pytest.raises(Exception):
            bn(*args)
    real = torch.empty(2, 3, 4, 4)  # real tensors are never taken
    assert fake_shortcuts.result(bn, (real, None, None, None, None, True, 0.1, 1e-5), {}) is None


@pytest.mark.parametrize("fill", [
    lambda t: t.uniform_(), lambda t: t.uniform_(-0.5, 0.5), lambda t: t.normal_(),
    lambda t: t.normal_(0.0, 0.02), lambda t: torch.nn.init.kaiming_uniform_(t, a=5 ** 0.5),
    lambda t: torch.nn.init.xavier_normal_(t), lambda t: torch.nn.init.orthogonal_(t),
])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_random_fills_leave_self_as_torch_leaves_it(fill, dtype):
    mode = fake_mode()
    with mode:
        plain, shortcut = torch.empty(8, 6, dtype=dtype), torch.empty(8, 6, dtype=dtype)
        out_plain = fill(plain)
    with mode, fake_shortcuts.FakeShortcuts():
        out_shortcut = fill(shortcut)
    assert out_shortcut is shortcut and out_plain is plain
    assert _meta(shortcut) == _meta(plain) and shortcut._version == plain._version > 0


def _outcome(fill, t):
    """What fill(t) does: the exception's type, or the result's metadata."""
    try:
        return _meta(fill(t))
    except Exception as e:  # noqa: BLE001 - the outcome compared is the exception's type
        return type(e)


@pytest.mark.parametrize("dtype,fill", [
    (torch.float32, lambda t: t.uniform_(1.0, 0.0)),  # from > to
    (torch.float32, lambda t: t.normal_(0.0, -1.0)),  # std < 0
    (torch.float16, lambda t: t.uniform_(-1e6, 1e6)),  # outside float16's range
    (torch.float32, lambda t: t.uniform_(float("-inf"), 0.0)),
    (torch.int64, lambda t: t.uniform_()),  # not a floating tensor
])
def test_arguments_it_refuses_run_as_torch_runs_them(dtype, fill):
    # Whatever torch's fake mode does with them (an error, or a result where only a real
    # run would fail), the shortcuts' mode does the same.
    mode = fake_mode()
    with mode:
        plain, shortcut = torch.empty(4, dtype=dtype), torch.empty(4, dtype=dtype)
        expected = _outcome(fill, plain)
    with mode, fake_shortcuts.FakeShortcuts():
        assert _outcome(fill, shortcut) == expected
    assert fake_shortcuts.result(aten.uniform_.default, (shortcut, 1.0, 0.0), {}) is None
    assert fake_shortcuts.result(aten.normal_.default, (shortcut, 0.0, -1.0), {}) is None


def test_no_shortcut_op_has_a_flop_counter_formula():
    # The recorder takes shortcuts above FlopCounterMode: an op it counts must not be one.
    packets = {op.overloadpacket for op in fake_shortcuts._SHORTCUTS}
    assert not packets & set(flop_registry)


PROGRAM = '''
import torch

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
            torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.BatchNorm2d(8, affine=False),
            torch.nn.ReLU())
        self.head = torch.nn.Linear(8, 5)
        torch.nn.init.normal_(self.head.weight, std=0.02)

    def forward(self, x):
        return self.head(self.features(x).mean((2, 3)))

def get_inputs():
    return [torch.randn(2, 3, 8, 8).to(memory_format=torch.channels_last)]

def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("options", [{}, {"eval_mode": True}, {"train": True}])
def test_captures_are_identical_without_shortcuts(tmp_path, monkeypatch, options):
    path = tmp_path / "model.py"
    path.write_text(PROGRAM)
    def capture():  # one call site: the loss's source line is this line in both
        return capture_module.capture_program(str(path), {}, fake=True, **options)

    taken = capture()
    monkeypatch.setattr(fake_shortcuts, "_SHORTCUTS", {})
    plain = capture()
    assert json.dumps(taken, sort_keys=True) == json.dumps(plain, sort_keys=True)
    assert any(op["op"] == "aten::native_batch_norm.default" for op in taken["ops"])

