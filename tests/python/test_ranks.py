"""solar.run_ranks: the ranks of one program run together, their collectives exchanging
buffers as NCCL would. A tensor-parallel MLP written by hand as two rank graphs gives the
unsharded MLP's result; every collective kind gives what numpy computes from the ranks'
inputs."""

from __future__ import annotations

import numpy as np
import pytest

import solar

M, D, H = 4, 8, 16  # tokens, model width, hidden width (split over 2 ranks)


def tp_rank(h: int) -> str:
    """One rank of y = relu(x @ w1) @ w2 with w1 split by columns and w2 by rows."""
    return f"""graph mlp_tp_rank
x = f32[{M},{D}] input
w1 = f32[{D},{h}] weight
w2 = f32[{h},{D}] weight
a = f32[{M},{h}] einsum "mk,kn->mn" (x, w1)
r = f32[{M},{h}] einsum [m={M},n={h}] none relu($0) (a[m,n]) -> [m,n]
p = f32[{M},{D}] einsum "mk,kn->mn" (r, w2)
y = f32[{M},{D}]{{output}} collective all_reduce sum {{size=2, group="tp"}} (p)
"""


def test_tensor_parallel_mlp_equals_the_unsharded_one():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((M, D), dtype=np.float32)
    w1 = rng.standard_normal((D, H), dtype=np.float32)
    w2 = rng.standard_normal((H, D), dtype=np.float32)
    ranks = [solar.parse_graph(tp_rank(H // 2)) for _ in range(2)]
    half = H // 2
    inputs = [{"x": x, "w1": w1[:, :half], "w2": w2[:half]},
              {"x": x, "w1": w1[:, half:], "w2": w2[half:]}]
    outs = solar.run_ranks(ranks, inputs)
    want = np.maximum(x @ w1, 0) @ w2
    for out in outs:  # every rank holds the whole result after the all-reduce
        np.testing.assert_allclose(out["y"], want, rtol=1e-5, atol=1e-5)
    # One graph run as both ranks is the same program.
    same = solar.run_ranks(ranks[0], inputs)
    np.testing.assert_array_equal(same[0]["y"], outs[0]["y"])


N = 4  # ranks


def kind_graph(op: str, out_shape) -> solar.Graph:
    dims = ",".join(str(d) for d in out_shape)
    return solar.parse_graph(f"x = f32[4,6] input\ny = f32[{dims}]{{output}} {op} (x)")


def rank_inputs():
    rng = np.random.default_rng(1)
    return [rng.standard_normal((4, 6), dtype=np.float32) for _ in range(N)]


@pytest.mark.parametrize("op, shape, expected", [
    ("collective all_reduce sum {size=4}", (4, 6), lambda xs, r: np.sum(xs, axis=0)),
    ("collective all_reduce prod {size=4}", (4, 6), lambda xs, r: np.prod(xs, axis=0)),
    ("collective all_reduce max {size=4}", (4, 6), lambda xs, r: np.max(xs, axis=0)),
    ("collective all_reduce min {size=4}", (4, 6), lambda xs, r: np.min(xs, axis=0)),
    ("collective all_reduce avg {size=4}", (4, 6), lambda xs, r: np.mean(xs, axis=0)),
    ("collective all_gather {size=4, axis=1}", (4, 24),
     lambda xs, r: np.concatenate(xs, axis=1)),
    ("collective reduce_scatter sum {size=4, axis=0}", (1, 6),
     lambda xs, r: np.split(np.sum(xs, axis=0), N, axis=0)[r]),
    ("collective broadcast {size=4, root=2}", (4, 6), lambda xs, r: xs[2]),
])
def test_every_kind_matches_numpy(op, shape, expected):
    xs = rank_inputs()
    outs = solar.run_ranks(kind_graph(op, shape), [{"x": x} for x in xs])
    for r in range(N):
        np.testing.assert_allclose(outs[r]["y"], expected(np.stack(xs), r), rtol=1e-6, atol=1e-6)


def test_all_to_all_matches_numpy():
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal((4, 8), dtype=np.float32) for _ in range(N)]
    g = solar.parse_graph("x = f32[4,8] input\n"
                          "y = f32[16,2]{output} collective all_to_all "
                          "{size=4, split_axis=1, concat_axis=0} (x)")
    outs = solar.run_ranks(g, [{"x": x} for x in xs])
    for j in range(N):
        # Rank j receives block j (along axis 1) of every rank, stacked along axis 0.
        want = np.concatenate([np.split(x, N, axis=1)[j] for x in xs], axis=0)
        np.testing.assert_array_equal(outs[j]["y"], want)


def test_send_and_recv_pair_by_peer():
    sender = solar.parse_graph("x = f32[3] input\n"
                               "s = f32[3]{output} collective send {peer=1} (x)")
    receiver = solar.parse_graph("x = f32[3] input\n"
                                 "y = f32[3]{output} collective recv {peer=0} ()")
    x = np.arange(3, dtype=np.float32)
    outs = solar.run_ranks([sender, receiver], [{"x": x}, {"x": np.zeros(3, np.float32)}])
    np.testing.assert_array_equal(outs[1]["y"], x)
    np.testing.assert_array_equal(outs[0]["s"], x)


def test_mismatched_ranks_raise_user_errors():
    a = solar.parse_graph("x = f32[3] input\ny = f32[3]{output} collective all_reduce sum "
                          "{size=2} (x)")
    with pytest.raises(solar.UserError, match="the ranks wait for each other"):
        solar.run_ranks([a, solar.parse_graph("x = f32[3] input\ny = f32[3]{output} einsum "
                                              "[i=3] none $0 (x[i]) -> [i]")],
                        [{"x": np.zeros(3, np.float32)}] * 2)
    with pytest.raises(solar.UserError, match="one input dict per rank"):
        solar.run_ranks([a, a], [{"x": np.zeros(3, np.float32)}])
    with pytest.raises(solar.UnsupportedError, match="run_ranks"):
        solar.run(a, {"x": np.zeros(3, np.float32)})
