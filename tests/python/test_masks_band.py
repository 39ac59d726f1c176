"""Structural masks in every form (docs/insight.md): a sliding-window band written as a
conjunction of comparisons, as tril & triu, through masked_fill or where, or as an in-graph
SDPA attn_mask; a mask applied after the scores contraction with a large finite fill
(jax.nn.dot_product_attention's finfo.min * 0.7, PyTorch's finfo.min); and a causal mask held
in a module buffer built in __init__. Each counts the live points of both contractions, is
executed and compared with the framework's outputs, and keeps the dense box in macs_dense."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import solar  # noqa: E402
from solar.programs import ProgramOptions, analyze_file  # noqa: E402

B, H, T, D, W = 1, 2, 32, 8, 8

# The live band of a sliding window of W keys over T queries: sum over q of min(q + 1, W)
# key positions, W*T - W*(W-1)/2 per head when T >= W; two contractions (Q K^T and P V),
# each D MACs per (query, key) pair.
BAND = 2 * B * H * (W * T - W * (W - 1) // 2) * D
CAUSAL = 2 * B * H * T * (T + 1) // 2 * D  # key <= query
DENSE = 2 * B * H * T * T * D  # both contractions over their whole boxes

HEADER = f"""
import math
import torch
import torch.nn as nn
B, H, T, D, W = {B}, {H}, {T}, {D}, {W}

def get_inputs():
    return [torch.randn(B, H, T, D), torch.randn(B, H, T, D), torch.randn(B, H, T, D)]

def get_init_inputs():
    return []

def scores(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])

def window():
    i = torch.arange(T).view(T, 1)
    j = torch.arange(T).view(1, T)
    return (j <= i) & (j > i - W)

class Model(nn.Module):
    def forward(self, q, k, v):
"""

BAND_FORMS = {
    "where_of_a_conjunction": """s = scores(q, k)
        return torch.softmax(torch.where(window(), s, float("-inf")), dim=-1) @ v""",
    "masked_fill_of_a_conjunction": """s = scores(q, k)
        return torch.softmax(s.masked_fill(~window(), float("-inf")), dim=-1) @ v""",
    "tril_times_triu": """s = scores(q, k)
        ones = torch.ones(T, T)
        keep = torch.tril(ones, 0) * torch.triu(ones, -W + 1)
        return torch.softmax(s.masked_fill(keep == 0, float("-inf")), dim=-1) @ v""",
    "tril_and_triu_bool": """s = scores(q, k)
        ones = torch.ones(T, T)
        keep = torch.tril(ones, 0).bool() & torch.triu(ones, -W + 1).bool()
        return torch.softmax(s.masked_fill(~keep, float("-inf")), dim=-1) @ v""",
    "sdpa_bool_attn_mask": """return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=window())""",
    "sdpa_additive_attn_mask": """bias = torch.zeros(T, T).masked_fill(~window(), float("-inf"))
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)""",
}

# A causal mask applied after the scores contraction with a large finite fill.
FILL_FORMS = {
    "masked_fill_finfo_min": """s = scores(q, k)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        return torch.softmax(s.masked_fill(future, torch.finfo(s.dtype).min), dim=-1) @ v""",
    "where_finfo_min": """s = scores(q, k)
        keep = torch.tril(torch.ones(T, T, dtype=torch.bool))
        return torch.softmax(torch.where(keep, s, torch.finfo(s.dtype).min), dim=-1) @ v""",
}


@pytest.fixture(autouse=True)
def _threads():
    n = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(n)


def program(tmp_path, name: str, body: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER + "        " + body + "\n")
    return str(path)


def check(path: str, live: int, dense: int) -> None:
    r = analyze_file(path, ProgramOptions(validate=True, crosscheck=False))
    assert r.report.coverage.unanalyzed == 0
    assert int(r.report.totals.macs) == live
    assert int(r.report.totals.macs_dense) == dense
    assert r.validation["status"] == "passed", r.validation


@pytest.mark.parametrize("name", sorted(BAND_FORMS))
def test_torch_band_forms_count_the_live_window(tmp_path, name):
    check(program(tmp_path, name, BAND_FORMS[name]), BAND, DENSE)


@pytest.mark.parametrize("name", sorted(FILL_FORMS))
def test_torch_finfo_min_fills_make_both_contractions_live(tmp_path, name):
    check(program(tmp_path, name, FILL_FORMS[name]), CAUSAL, DENSE)


def jax_forms():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def scores(q, k):
        return jnp.einsum("bhid,bhjd->bhij", q, k) / np.sqrt(D)

    def attend(s, v):
        return jnp.einsum("bhij,bhjd->bhid", jax.nn.softmax(s, axis=-1), v)

    def iota_conjunction(q, k, v):
        i = jax.lax.broadcasted_iota(jnp.int32, (T, T), 0)
        j = jax.lax.broadcasted_iota(jnp.int32, (T, T), 1)
        return attend(jnp.where((j <= i) & (j > i - W), scores(q, k), -jnp.inf), v)

    def tril_and_triu(q, k, v):
        ones = jnp.ones((T, T), bool)
        keep = jnp.tril(ones) & jnp.triu(ones, -W + 1)
        return attend(jnp.where(keep, scores(q, k), -jnp.inf), v)

    def finfo_min(q, k, v):
        keep = jnp.tril(jnp.ones((T, T), bool))
        return attend(jnp.where(keep, scores(q, k), jnp.finfo(jnp.float32).min), v)

    return {"iota_conjunction": (iota_conjunction, BAND),
            "tril_and_triu": (tril_and_triu, BAND),
            "finfo_min": (finfo_min, CAUSAL)}


@pytest.mark.parametrize("name", ["iota_conjunction", "tril_and_triu", "finfo_min"])
def test_jax_forms_count_the_live_points(name):
    fn, live = jax_forms()[name]
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((B, H, T, D)).astype(np.float32) for _ in range(3))
    report = solar.analyze_jax(fn, q, k, v, validate=True)
    assert report.coverage.unanalyzed == 0
    assert int(report.totals.macs) == live
    assert int(report.totals.macs_dense) == DENSE
    assert report.validation["status"] == "passed", report.validation


def test_jax_dot_product_attention_is_causal_masks_both_contractions():
    """implementation="xla" fills the scores with finfo(f32).min * 0.7 after the contraction:
    the scores are dead where the fill is taken, and exp(fill - max) is 0, so P V is live too.
    At the 2*8*256*64 shapes (B, N, T, H), 2*B*N*T*(T+1)/2*H = 67,371,008 MACs."""
    jax = pytest.importorskip("jax")
    b, t, n, h = 2, 256, 8, 64
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((b, t, n, h)).astype(np.float32) for _ in range(3))

    def fn(q, k, v):
        return jax.nn.dot_product_attention(q, k, v, is_causal=True, implementation="xla")

    report = solar.analyze_jax(fn, q, k, v, validate=True)
    assert int(report.totals.macs) == 2 * b * n * t * (t + 1) // 2 * h == 67_371_008
    assert int(report.totals.macs_dense) == 2 * b * n * t * t * h
    assert report.validation["status"] == "passed", report.validation


BUFFER_PROGRAM = """
import math
import torch
import torch.nn as nn
B, H, T, D = {B}, {H}, {T}, {D}

def get_inputs():
    return [torch.randn(B, T, H * D)]

def get_init_inputs():
    return []

class Model(nn.Module):
    # Causal self-attention holding its mask in a buffer, as minGPT-style code does.
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(H * D, 3 * H * D, bias=False)
        self.register_buffer("bias", {buffer})

    def forward(self, x):
        q, k, v = self.qkv(x).split(H * D, dim=2)
        q, k, v = (t.view(B, T, H, D).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
        att = att.masked_fill({fill}, float("-inf"))
        return torch.softmax(att, dim=-1) @ v
"""

BUFFERS = {
    "tril_of_ones": ("torch.tril(torch.ones(T, T)).view(1, 1, T, T)",
                     "self.bias[:, :, :T, :T] == 0"),
    "triu_bool": ("torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)", "self.bias"),
}
QKV = B * T * (H * D) * (3 * H * D)  # the projection's MACs


def buffer_program(tmp_path, name: str, buffer: str, fill: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(BUFFER_PROGRAM.format(B=B, H=H, T=T, D=D, buffer=buffer, fill=fill))
    return str(path)


@pytest.mark.parametrize("validate", [False, True], ids=["fake", "real"])
@pytest.mark.parametrize("name", sorted(BUFFERS))
def test_a_causal_mask_buffer_built_in_init_is_structural(tmp_path, name, validate):
    """The fake capture computes the buffer from its recorded construction; the real one
    reads its values. Both give the live triangle."""
    r = analyze_file(buffer_program(tmp_path, name, *BUFFERS[name]),
                     ProgramOptions(validate=validate, crosscheck=False))
    assert int(r.report.totals.macs) == QKV + CAUSAL
    assert int(r.report.totals.macs_dense) == QKV + DENSE
    if validate:
        assert r.validation["status"] == "passed", r.validation


def test_a_random_buffer_is_not_a_mask(tmp_path):
    """A buffer whose values are random has no construction to replay and no band: every
    point counts."""
    path = buffer_program(tmp_path, "random", "torch.rand(T, T) > 0.5", "self.bias")
    r = analyze_file(path, ProgramOptions(crosscheck=False))
    assert int(r.report.totals.macs) == int(r.report.totals.macs_dense) == QKV + DENSE


def test_a_buffer_written_in_place_after_it_was_built_is_not_replayed(tmp_path):
    """An in-place write to the mask's storage in __init__ (here after a view of it was
    taken) leaves its construction unknown: every point counts."""
    path = tmp_path / "written.py"
    path.write_text(BUFFER_PROGRAM.format(
        B=B, H=H, T=T, D=D, buffer="self._made()", fill="self.bias == 0") + textwrap.dedent("""
        def _made(self):
            m = torch.ones(T, T)
            view = m.view(T, T)
            m.tril_()
            return view
        Model._made = _made
        """))
    r = analyze_file(str(path), ProgramOptions(crosscheck=False))
    assert int(r.report.totals.macs) == int(r.report.totals.macs_dense) == QKV + DENSE


def test_the_documented_window_figure(tmp_path):
    """docs/insight.md: a window of 1,024 keys over 4,096 queries, 32 heads of 128:
    30,068,965,376 MACs live of the box's 137,438,953,472 (captured on fake tensors)."""
    b, h, t, d, w = 1, 32, 4096, 128, 1024
    path = tmp_path / "window.py"
    path.write_text(HEADER.replace(f"B, H, T, D, W = {B}, {H}, {T}, {D}, {W}",
                                   f"B, H, T, D, W = {b}, {h}, {t}, {d}, {w}")
                    + "        " + BAND_FORMS["where_of_a_conjunction"] + "\n")
    r = analyze_file(str(path), ProgramOptions(crosscheck=False))
    assert int(r.report.totals.macs) == 2 * b * h * (w * t - w * (w - 1) // 2) * d
    assert int(r.report.totals.macs) == 30_068_965_376
    assert int(r.report.totals.macs_dense) == 2 * b * h * t * t * d == 137_438_953_472


def test_a_causal_mask_and_an_input_padding_mask(tmp_path):
    """causal & padding (an input): the scores above the diagonal are never read, whatever the
    padding holds; a row the padding empties has a uniform softmax under finfo.min, so P V
    keeps its whole box."""
    path = tmp_path / "padded.py"
    path.write_text(HEADER.replace(
        "def get_inputs():\n    return [",
        "def get_inputs():\n    return [torch.rand(B, 1, 1, T) > 0.3, ") .replace(
        "def forward(self, q, k, v):", "def forward(self, pad, q, k, v):") + """        s = scores(q, k)
        keep = torch.tril(torch.ones(T, T, dtype=torch.bool)) & pad
        return torch.softmax(s.masked_fill(~keep, torch.finfo(s.dtype).min), dim=-1) @ v
""")
    r = analyze_file(str(path), ProgramOptions(validate=True, crosscheck=False))
    assert int(r.report.totals.macs) == CAUSAL // 2 + DENSE // 2  # Q K^T live, P V whole
    assert int(r.report.totals.macs_dense) == DENSE
    assert r.validation["status"] == "passed", r.validation


def test_a_buffer_whose_data_was_swapped_is_not_replayed(tmp_path):
    """`bias.data = other` changes the values without an op the record sees: the buffer's
    history no longer gives its values, so every point counts."""
    path = tmp_path / "swapped.py"
    path.write_text(BUFFER_PROGRAM.format(
        B=B, H=H, T=T, D=D, buffer="torch.tril(torch.ones(T, T))",
        fill="self.bias == 0") .replace(
        '        self.register_buffer("bias", torch.tril(torch.ones(T, T)))',
        '        self.register_buffer("bias", torch.tril(torch.ones(T, T)))\n'
        '        self.bias.data = torch.ones(T, T)'))
    r = analyze_file(str(path), ProgramOptions(crosscheck=False))
    assert int(r.report.totals.macs) == int(r.report.totals.macs_dense) == QKV + DENSE
