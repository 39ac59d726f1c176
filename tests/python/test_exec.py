"""solar.run / solar.validate: arrays in and out (numpy, DLPack, dtypes), errors, options."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import solar

PERMUTE = """x = f32[2,3] input
y = f32[3,2]{output} move permute {perm=[1,0]} (x)
"""


def lst(values) -> str:
    return "[" + ",".join(str(int(v)) for v in values) + "]"


def graph(text: str) -> solar.Graph:
    return solar.parse_graph(text)


def test_run_returns_numpy_outputs():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = solar.run(graph(PERMUTE), {"x": x})
    assert list(out) == ["y"]
    assert isinstance(out["y"], np.ndarray) and out["y"].dtype == np.float32
    np.testing.assert_array_equal(out["y"], x.T)


def test_torch_tensors_and_non_contiguous_arrays_are_accepted():
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)[:2, 1:]  # a strided view
    out = solar.run(graph(PERMUTE), {"x": x})
    np.testing.assert_array_equal(out["y"], x.T.numpy())
    xr = torch.randn(2, 3, requires_grad=True)  # detached on the way in
    np.testing.assert_array_equal(solar.run(graph(PERMUTE), {"x": xr})["y"], xr.detach().T.numpy())
    xn = np.arange(12, dtype=np.float32).reshape(4, 3)[::2]
    np.testing.assert_array_equal(solar.run(graph(PERMUTE), {"x": xn})["y"], xn.T)


def test_view_of_an_input_does_not_alias_the_caller_array():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = solar.run(graph("x = f32[2,3] input\nv = f32[6]{output} move view (x)"), {"x": x})
    out["v"][0] = 100
    assert x[0, 0] == 0


@pytest.mark.parametrize(
    "dtype,torch_dtype,numpy_dtype",
    [
        ("f64", torch.float64, np.float64),
        ("f16", torch.float16, np.float16),
        ("bf16", torch.bfloat16, np.float32),  # no numpy bfloat16: float32 with bf16 values
        ("f8e4m3", torch.float8_e4m3fn, np.float32),
        ("f8e5m2", torch.float8_e5m2, np.float32),
        ("i64", torch.int64, np.int64),
        ("i32", torch.int32, np.int32),
        ("i16", torch.int16, np.int16),
        ("i8", torch.int8, np.int8),
        ("u8", torch.uint8, np.uint8),
        ("bool", torch.bool, np.bool_),
    ],
)
def test_dtypes_round_trip(dtype, torch_dtype, numpy_dtype):
    if torch_dtype.is_floating_point:
        x = (torch.randn(3, 5) * 4).to(torch_dtype)
    elif torch_dtype == torch.bool:
        x = torch.rand(3, 5) > 0.5
    else:
        x = torch.randint(0, 100, (3, 5)).to(torch_dtype)
    out = solar.run(graph(f"x = {dtype}[3,5] input\ny = {dtype}[5,3]{{output}} move permute "
                          "{perm=[1,0]} (x)"), {"x": x})["y"]
    assert out.dtype == numpy_dtype
    want = x.T.float().numpy() if numpy_dtype == np.float32 else x.T.numpy()
    np.testing.assert_array_equal(out, want)


def test_float_values_round_to_a_narrow_declared_dtype():
    x = np.array([1.00390625, 0.1], dtype=np.float32)  # 1 + 2^-8: a bf16 tie, rounds to 1
    out = solar.run(graph("x = bf16[2] input\ny = bf16[2]{output} move copy (x)"), {"x": x})["y"]
    np.testing.assert_array_equal(out, torch.from_numpy(x).bfloat16().float().numpy())


def test_mismatched_inputs_raise_user_errors():
    g = graph(PERMUTE)
    with pytest.raises(solar.UserError, match="no value for input 'x'"):
        solar.run(g, {})
    with pytest.raises(solar.UserError, match=r"is f32\[3,2\] but the graph declares f32\[2,3\]"):
        solar.run(g, {"x": np.zeros((3, 2), np.float32)})
    with pytest.raises(solar.UserError, match="holds i64 but the graph declares f32"):
        solar.run(g, {"x": np.zeros((2, 3), np.int64)})
    with pytest.raises(solar.UserError, match="'z' is not an input"):
        solar.run(g, {"x": np.zeros((2, 3), np.float32), "z": np.zeros(1)})
    with pytest.raises(solar.UserError, match="does not fit the declared i8"):
        solar.run(graph("x = i8[2] input\ny = i8[2]{output} move copy (x)"),
                  {"x": np.array([1, 300])})


def test_index_out_of_range_names_op_and_value():
    g = graph("w = f32[10,4] weight\ni = i64[3] input\n"
              "emb = f32[3,4]{output} move gather {axis=0} (w, i)")
    with pytest.raises(solar.UserError, match=r"op 'emb'.*gather index value 12"):
        solar.run(g, {"w": np.zeros((10, 4), np.float32), "i": np.array([0, 12, 1])})
    # Negative indices count from the end, as in PyTorch.
    w = np.arange(40, dtype=np.float32).reshape(10, 4)
    out = solar.run(g, {"w": w, "i": np.array([-1, 0, -10])})["emb"]
    np.testing.assert_array_equal(out, w[[9, 0, 0]])


def test_unanalyzed_and_unknown_opaque_are_unsupported():
    with pytest.raises(solar.UnsupportedError, match="unanalyzed framework op 'aten::_fft_r2c'"):
        solar.run(graph('x = f32[4] input\nf = f32[3]{output} unanalyzed "aten::_fft_r2c" (x)'),
                  {"x": np.zeros(4, np.float32)})
    with pytest.raises(solar.UnsupportedError, match='opaque function "unique"'):
        solar.run(graph('x = f32[4] input\nu = f32[4]{output} opaque "unique" {vector_flops=0, '
                        'special_ops=0, bytes=0, assumption="-"} (x)'),
                  {"x": np.zeros(4, np.float32)})
    assert "topk" in solar.opaque_functions()


def test_keep_and_memory_limit():
    text = """x = f64[1024] input
a = f64[1024] move copy (x)
b = f64[1024] move copy (a)
y = f64[1024]{output} move copy (b)
"""
    x = np.random.default_rng(0).standard_normal(1024)
    # Each intermediate is freed after its last use: two 8 KiB tensors live at a time.
    np.testing.assert_array_equal(
        solar.run(graph(text), {"x": x}, memory_limit_bytes=2 * 8 * 1024)["y"], x)
    # A kept tensor stays live to the end: three at a time.
    out = solar.run(graph(text), {"x": x}, keep=["a"], memory_limit_bytes=3 * 8 * 1024)
    assert sorted(out) == ["a", "y"]
    np.testing.assert_array_equal(out["a"], x)
    with pytest.raises(solar.UserError, match="24576 bytes of live tensors at op 'y'"):
        solar.run(graph(text), {"x": x}, keep=["a"], memory_limit_bytes=2 * 8 * 1024)
    with pytest.raises(solar.UserError, match="more than the memory limit of 16383 bytes"):
        solar.run(graph(text), {"x": x}, memory_limit_bytes=2 * 8 * 1024 - 1)
    with pytest.raises(solar.UserError, match="tensor 'a' f64\\[1024\\] needs 8192 bytes"):
        solar.run(graph(text), {"x": x}, memory_limit_bytes=100)
    assert solar._core.default_memory_limit_bytes() > 0


def test_runs_release_the_gil():
    """Two runs on two Python threads overlap in C++ (the GIL is released while running)."""
    text = ("a = f32[384,384] input\nb = f32[384,384] input\n"
            'c = f32[384,384]{output} einsum "mk,kn->mn" (a, b)')
    g = graph(text)
    a = np.ones((384, 384), np.float32)
    results = []
    ts = [threading.Thread(target=lambda: results.append(solar.run(g, {"a": a, "b": a},
                                                                   threads=1)))
          for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(results) == 2
    for r in results:
        np.testing.assert_array_equal(r["c"], np.full((384, 384), 384, np.float32))


def test_threads_option_gives_the_same_result():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 96), dtype=np.float32)
    g = graph("a = f32[64,96] input\ns = f32[64]{output} einsum \"mk->m\" (a)")
    np.testing.assert_allclose(solar.run(g, {"a": a}, threads=1)["s"],
                               solar.run(g, {"a": a}, threads=2)["s"], rtol=1e-6)


def test_validation_result_objects():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    want = x.T.copy()
    want[2, 1] += 1  # one wrong element
    r = solar.validate(graph(PERMUTE), {"x": x}, {"y": want})
    assert not r and not r.passed
    c = r.outputs[0]
    assert (c.name, c.passed, c.mismatches) == ("y", False, 1)
    assert c.worst_position == (2, 1) and c.worst_index == 5
    assert (c.worst_got, c.worst_want) == (5.0, 6.0)
    assert c.max_abs_error == 1.0 and c.shape == [3, 2]
    assert (c.atol, c.rtol) == solar.tolerance_for("f32") == (1e-5, 1e-4)
    assert "FAIL y [3,2]: 1 of 6 elements outside tolerance, worst at [2,1]" in repr(r)
    with pytest.raises(solar.UserError, match="no reference for output 'y'"):
        solar.validate(graph(PERMUTE), {"x": x}, {})
    with pytest.raises(solar.UserError, match="reference for 'y' has shape"):
        solar.validate(graph(PERMUTE), {"x": x}, {"y": x})


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=4),
    data=st.data(),
)
def test_slice_and_permute_match_numpy(shape, data):
    perm = data.draw(st.permutations(range(len(shape))))
    starts, ends, steps = [], [], []
    for n in shape:
        s = data.draw(st.integers(0, n - 1))
        e = data.draw(st.integers(s + 1, n))
        starts.append(s)
        ends.append(e)
        steps.append(data.draw(st.integers(1, 3)))
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    sl = x[tuple(slice(s, e, st_) for s, e, st_ in zip(starts, ends, steps))]
    pt = sl.transpose(perm)
    text = (f"x = f32{lst(shape)} input\n"
            f"s = f32{lst(sl.shape)}{{output}} move slice "
            f"{{starts={lst(starts)}, ends={lst(ends)}, steps={lst(steps)}}} (x)\n"
            f"p = f32{lst(pt.shape)}{{output}} move permute {{perm={lst(perm)}}} (s)")
    out = solar.run(graph(text), {"x": x})
    np.testing.assert_array_equal(out["s"], sl)
    np.testing.assert_array_equal(out["p"], pt)
