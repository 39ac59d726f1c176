"""The JAX frontend on small real JAX programs: nested jaxprs inlined, loops counted exactly,
data-dependent control flow resolved on real inputs (or reported), unknown primitives
reported and never silent, the CLI routing of JAX files, and abstract capture at any size.
"""

from __future__ import annotations

import json
import textwrap
import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import solar  # noqa: E402
from conftest import EXAMPLES, run_solar  # noqa: E402

from solar.frontends.jax.capture import capture  # noqa: E402
from solar.program_source import is_jax_program  # noqa: E402


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def analyze(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return solar.analyze_jax(fn, *args, **kw)


def test_nested_jaxprs_are_inlined():
    # custom_jvp (relu), custom_vjp, checkpoint/remat and closed_call around matmuls
    @jax.custom_vjp
    def scaled(x, w):
        return x @ w

    scaled.defvjp(lambda x, w: (x @ w, (x, w)), lambda res, g: (g @ res[1].T, res[0].T @ g))

    @jax.checkpoint
    def block(x, w):
        return jax.nn.relu(scaled(x, w))

    def f(x, w1, w2):
        return jax.jit(block)(jax.jit(lambda a: a @ w1)(x), w2)

    M, K = 8, 16
    r = analyze(f, _rand(M, K), _rand(K, K, seed=1), _rand(K, K, seed=2), validate=True)
    assert r.coverage.unanalyzed == 0
    assert int(r.totals.macs) == 2 * M * K * K  # two matmuls, nothing left in a call
    assert r.validation["status"] == "passed"


def test_scan_counts_every_iteration_and_reverse_scan_validates():
    T, B, D = 7, 4, 8

    def f(xs, w):
        def step(h, x):
            h = jnp.tanh(h @ w + x)
            return h, 2.0 * h

        return jax.lax.scan(step, jnp.zeros((B, D)), xs, reverse=True)

    r = analyze(f, _rand(T, B, D), _rand(D, D, seed=1), validate=True)
    assert int(r.totals.macs) == T * B * D * D  # the body T times
    assert r.validation["status"] == "passed"


def test_fori_loop_static_and_traced_bounds_are_exact():
    B, D, N = 4, 8, 5

    def f_static(x, w):
        return jax.lax.fori_loop(0, N, lambda i, h: h @ w, x)

    def f_traced(x, w, n):  # bounds traced: a while loop, its counter folded at capture
        return jax.lax.fori_loop(0, n, lambda i, h: h @ w, x)

    r = analyze(f_static, _rand(B, D), _rand(D, D, seed=1))
    assert int(r.totals.macs) == N * B * D * D
    r = analyze(jax.jit(lambda x, w: f_traced(x, w, N)), _rand(B, D), _rand(D, D, seed=1),
                validate=True)
    assert int(r.totals.macs) == N * B * D * D
    assert r.validation["status"] == "passed"


def test_dynamic_slice_in_a_loop_uses_the_folded_counter():
    T, D = 6, 8

    def f(xs):
        def body(i, acc):
            return acc + jax.lax.dynamic_slice(xs, (i, 0), (1, D))[0]

        return jax.lax.fori_loop(0, T, body, jnp.zeros((D,)))

    r = analyze(f, _rand(T, D), validate=True)
    assert r.coverage.unanalyzed == 0
    assert r.validation["status"] == "passed"


def test_data_dependent_while_is_measured_on_real_inputs_or_reported():
    def f(x):
        # halves until the norm drops below 1: the trip count depends on the data
        return jax.lax.while_loop(lambda v: jnp.sum(v * v) > 1.0, lambda v: v * 0.5, x)

    x = 100.0 * np.ones((4,), np.float32)  # |x|^2 = 40000: 8 halvings to reach < 1
    trips = int(np.ceil(np.log2(np.sqrt(np.sum(x * x)))))
    r = analyze(f, x, validate=True)
    assert r.coverage.unanalyzed == 0
    assert r.validation["status"] == "passed"
    muls = sum(1 for op in r.ops if op["origin"]["op"] == "jax::mul")
    assert muls == (trips + 1) + trips  # v*v in every condition test, v*0.5 in every body
    # abstract inputs: no values, so the loop is reported with the reason
    r = analyze(f, jax.ShapeDtypeStruct((4,), np.float32))
    assert r.coverage.unanalyzed == 1
    assert "trip count" in r.coverage.unanalyzed_ops[0]["reason"]


def test_cond_takes_the_branch_of_the_real_input_or_reports_both():
    D = 16

    def f(p, x, w):
        return jax.lax.cond(p > 0, lambda x: x @ w, lambda x: jnp.tanh(x), x)

    x, w = _rand(2, D), _rand(D, D, seed=1)
    r = analyze(f, np.int32(1), x, w, validate=True)
    assert int(r.totals.macs) == 2 * D * D
    assert r.validation["status"] == "passed"
    r = analyze(f, np.int32(0), x, w)
    assert int(r.totals.macs) == 0 and r.totals.special_ops == 2 * D
    r = analyze(f, jax.ShapeDtypeStruct((), np.int32), x, w)
    reason = r.coverage.unanalyzed_ops[0]["reason"]
    assert "branch 0" in reason and "branch 1" in reason


def test_unknown_primitive_is_reported_never_silent():
    def f(x):
        return jax.scipy.special.digamma(x) + 1.0

    with pytest.warns(RuntimeWarning, match="jax::digamma"):
        r = solar.analyze_jax(f, _rand(8))
    assert r.coverage.unanalyzed == 1
    assert r.coverage.unanalyzed_ops[0]["framework_op"] == "jax::digamma"
    with pytest.raises(solar.UnsupportedError, match="jax::digamma"):
        solar.analyze_jax(f, _rand(8), strict=True)


def test_abstract_capture_at_any_size():
    n = 1 << 16  # a 64Ki x 64Ki fp32 matmul: 16 GiB per operand, never allocated
    spec = jax.ShapeDtypeStruct((n, n), np.float32)
    r = analyze(lambda a, b: a @ b, spec, spec)
    assert int(r.totals.macs) == n ** 3
    with pytest.raises(solar.UserError, match="ShapeDtypeStruct"):
        solar.analyze_jax(lambda a, b: a @ b, spec, spec, validate=True)  # nothing to run


def test_params_are_weights_named_by_path():
    params = {"dense": {"kernel": _rand(8, 4), "bias": np.zeros(4, np.float32)}}

    def f(p, x):
        return x @ p["dense"]["kernel"] + p["dense"]["bias"]

    c = capture(f, params, _rand(2, 8), param_argnums=(0,))
    names = {t.get("name"): t["role"] for t in c.trace["tensors"] if t["role"] == "parameter"}
    assert names == {"dense/bias": "parameter", "dense/kernel": "parameter"}
    assert c.trace["frontend"] == "jax"


def test_is_jax_program_reads_imports(tmp_path):
    a = tmp_path / "a.py"
    a.write_text("import jax.numpy as jnp\n")
    b = tmp_path / "b.py"
    b.write_text("import jax\nimport torch\n")
    c = tmp_path / "c.py"
    c.write_text("from flax import linen as nn\n")
    assert is_jax_program(str(a)) and is_jax_program(str(c))
    assert not is_jax_program(str(b))


def _cli(capsys, *args):
    """`solar ARGS` in this process (the Python entry the console script calls): (exit code,
    stdout, stderr)."""
    from solar.cli import main

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        code = main(["solar", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_validate_jax_program_as_a_user_runs_it():
    p = run_solar("validate", str(EXAMPLES / "jax" / "scan_rnn.py"), "--json", "-")
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert report["program"]["frontend"] == "jax"
    assert report["validation"]["status"] == "passed"
    assert report["xla"]["status"] == "compared"


def test_cli_errors_and_overrides(tmp_path, capsys):
    path = str(EXAMPLES / "jax" / "matmul_chain.py")
    bad = tmp_path / "bad.py"
    bad.write_text("import jax\n\ndef forward(x):\n    return x\n")
    code, _, err = _cli(capsys, "analyze", str(bad))
    assert code == 4 and "get_inputs" in err  # a parse error: not a JAX program file
    code, _, err = _cli(capsys, "analyze", path, "--set", "NOPE=3")
    assert code == 2 and "NOPE" in err
    code, out, err = _cli(capsys, "analyze", path, "--set", "M=8", "--json", "-",
                          "--no-crosscheck")
    assert code == 0, err
    r = json.loads(out)
    assert int(r["totals"]["macs"]) == 8 * 128 * 96 + 8 * 96 * 32  # M*K*N + M*N*P at M = 8


def test_save_trace_round_trips_through_the_jax_table(tmp_path, capsys):
    path = str(EXAMPLES / "jax" / "nested_jit.py")
    t = tmp_path / "t.json"
    code, out, err = _cli(capsys, "analyze", path, "--save-trace", str(t), "--json", "-",
                          "--no-crosscheck")
    assert code == 0, err
    first = json.loads(out)["totals"]["macs"]
    assert json.loads(t.read_text())["frontend"] == "jax"
    code, out, err = _cli(capsys, "analyze", str(t), "--json", "-")
    assert code == 0, err
    assert json.loads(out)["totals"]["macs"] == first

def _ints(*shape, hi=10, seed=0):
    return np.random.default_rng(seed).integers(0, hi, shape, dtype=np.int32)


# Small programs over the primitive families of the jax table, each validated by execution
# (the graph's outputs against JAX's).
PRIMITIVES = {
    "sdpa_causal": (lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=True),
                    [_rand(2, 16, 4, 8), _rand(2, 16, 4, 8, seed=1), _rand(2, 16, 4, 8, seed=2)]),
    "sort_argsort_topk": (lambda x: (jnp.sort(x, axis=-1), jnp.argsort(x, axis=-1),
                                     jax.lax.top_k(x, 3)), [_rand(4, 9)]),
    "cumulative": (lambda x: (jnp.cumsum(x, axis=1), jax.lax.cummax(x, axis=0),
                              jax.lax.cumsum(x, axis=1, reverse=True)), [_rand(4, 9)]),
    "rev_strided": (lambda x: x[::-1, ::2], [_rand(4, 9)]),
    "pad_crop": (lambda x: (jnp.pad(x, ((1, 2), (0, 3)), constant_values=1.5),
                            jax.lax.pad(x, 0.0, ((-1, 2, 0), (1, -2, 0)))), [_rand(4, 9)]),
    "dynamic_update_slice": (lambda x, u: jax.lax.dynamic_update_slice(x, u, (1, 2)),
                             [_rand(5, 7), _rand(2, 3)]),
    "conv_transpose": (lambda x, w: jax.lax.conv_transpose(
        x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
        [_rand(1, 5, 5, 3), _rand(3, 3, 3, 4)]),
    "batch_group_conv": (lambda x, w: jax.lax.conv_general_dilated(
        x, w, (1,), "VALID", dimension_numbers=("NCH", "OIH", "NCH"), batch_group_count=2),
        [_rand(4, 3, 8), _rand(6, 3, 3)]),
    "pools": (lambda x: (jax.lax.reduce_window(x, 0.0, jax.lax.add, (1, 3, 3, 1), (1, 2, 2, 1),
                                               "SAME") / 9.0,
                         jax.lax.reduce_window(x, jnp.inf, jax.lax.min, (1, 2, 2, 1),
                                               (1, 2, 2, 1), "VALID")), [_rand(1, 8, 8, 2)]),
    "one_hot_take": (lambda i, w, x, j: (jax.nn.one_hot(i, 10) @ w, jnp.take(x, j, axis=1)),
                     [_ints(6), _rand(10, 4), _rand(3, 10, 2), _ints(4, 5)]),
    "elementwise": (lambda x: (jnp.clip(x, -0.5, 0.5) + jnp.sign(x) + jnp.expm1(x)
                               + jnp.log1p(jnp.abs(x)) + x ** 3 + jax.nn.gelu(x)
                               + jax.nn.silu(x) + jax.nn.softplus(x)), [_rand(4, 5)]),
    "softmax_family": (lambda x: jax.nn.logsumexp(x, axis=-1) + jax.nn.log_softmax(x).sum(),
                       [_rand(4, 5)]),
    "select_argmax": (lambda x: jnp.where(x > 0, x, 0) + jnp.argmax(x, axis=0).sum(),
                      [_rand(5, 6)]),
    "split_concat_transpose": (lambda x, y: (jnp.split(x, 3, axis=1)[1] * 2,
                                             jnp.concatenate([y, 2 * y[:2]], axis=0),
                                             jnp.transpose(x.reshape(2, 3, 3), (2, 0, 1)) + 1),
                               [_rand(2, 9), _rand(4, 3)]),
    "switch": (lambda i, x: jax.lax.switch(i, [lambda x: x * 2, lambda x: x @ x.T,
                                               lambda x: -x], x), [np.int32(1), _rand(3, 3)]),
    "vmap_grad": (lambda w, x: jax.vmap(jax.grad(lambda w, x: jnp.sum(jnp.tanh(x @ w))),
                                        in_axes=(None, 0))(w, x), [_rand(4, 3), _rand(5, 2, 4)]),
}


@pytest.mark.parametrize("name", sorted(PRIMITIVES))
def test_primitive_families_validate(name):
    fn, args = PRIMITIVES[name]
    r = analyze(fn, *args, validate=True)
    assert r.coverage.unanalyzed == 0, r.coverage.unanalyzed_ops
    assert r.validation["status"] == "passed", r.validation


def test_box_scatter_lowers_as_a_box_update():
    x, u = _rand(5, 7), _rand(2, 3, seed=1)
    # a static box update arrives as a scatter at known indices: a box update (slices + concat)
    r = analyze(lambda x, u: (x.at[1:3, 2:5].set(u), x.at[1:3, 2:5].add(u)), x, u, validate=True)
    assert r.coverage.unanalyzed == 0
    assert r.validation["status"] == "passed", r.validation


def _opaque(r, function):
    return [op for op in r.ops if op["kind"] == "opaque" and op.get("function") == function]


# General gather/scatter dimension numbers: the executor's xla_gather/xla_scatter kernels.
GENERAL_INDEXING = {
    # two index arrays (a point gather: start_index_map of two dims) and a point scatter
    "point_gather_scatter": (lambda x, i, j, v: (x[i, j], x.at[i, j].set(v), x.at[i, j].add(v),
                                                 x.at[i, j].max(v), x.at[i, j].min(v),
                                                 x.at[i, j].multiply(v)),
                             [_rand(5, 7), _ints(4, hi=5), _ints(4, hi=7, seed=1),
                              _rand(4, seed=2)]),
    # rows at (i, :, j): an offset dimension between two collapsed ones
    "middle_window": (lambda x, i, j: x[i, :, j], [_rand(5, 3, 7), _ints(6, hi=5),
                                                   _ints(6, hi=7, seed=1)]),
    # windows of 2x3 at data-dependent starts (dynamic_slice under vmap: batched starts)
    "vmapped_dynamic_slice": (lambda x, s: jax.vmap(
        lambda a, b: jax.lax.dynamic_slice(x, (a, b), (2, 3)))(s[:, 0], s[:, 1]),
        [_rand(6, 8), _ints(5, 2, hi=6)]),
    # out-of-range indices: clip clamps, fill gives the fill value, a dropped scatter skips
    "modes": (lambda x, i, j: (jnp.take(x, i, axis=0, mode="clip"),
                               x.at[i, j].get(mode="fill", fill_value=-1.0),
                               x.at[i, j].set(0.0, mode="drop"),
                               x.at[i].add(1.0, mode="clip")),
              [_rand(4, 3), np.array([0, 5, -7, 2, 3], np.int32),
               np.array([1, 0, 2, 3, -1], np.int32)]),
    # per-row gather/scatter under vmap: operand and index batching dimensions
    "batching_dims": (lambda x, i, u: (jax.vmap(lambda a, k: a[k])(x, i),
                                       jax.vmap(lambda a, k, b: a.at[k].add(b))(x, i, u)),
                      [_rand(3, 6, 2), _ints(3, 4, hi=6), _rand(3, 4, 2, seed=1)]),
    "integer_operand": (lambda x, i, j: (x[i, j], x.at[i, j].add(7)),
                        [_ints(5, 7, hi=100), _ints(4, hi=5), _ints(4, hi=7, seed=1)]),
}


@pytest.mark.parametrize("name", sorted(GENERAL_INDEXING))
def test_general_gather_scatter_execute(name):
    fn, args = GENERAL_INDEXING[name]
    r = analyze(fn, *args, validate=True)
    assert r.coverage.unanalyzed == 0, r.coverage.unanalyzed_ops
    assert r.validation["status"] == "passed", r.validation
    assert _opaque(r, "xla_gather") or _opaque(r, "xla_scatter")


def test_general_gather_bytes_are_what_it_touches():
    x, i, j = _rand(50, 70), _ints(4, hi=50), _ints(4, hi=70, seed=1)
    r = analyze(lambda x, i, j: x[i, j], x, i, j)
    (g,) = _opaque(r, "xla_gather")
    n = 4  # gathered elements (f32), the index pairs (two i32 each)
    assert int(g["bytes"]) == 4 * n + 4 * 2 * n + 4 * n  # reads gathered + indices, writes out


def test_interior_padding_executes():
    x = _rand(3, 4)
    cfg = ((1, 2, 1), (0, -1, 2))  # (low, high, interior) per dimension
    r = analyze(lambda x: jax.lax.pad(x, 1.5, cfg), x, validate=True)
    assert r.coverage.unanalyzed == 0
    assert r.validation["status"] == "passed", r.validation
    rows = 1 + 2 + 3 + (3 - 1) * 1  # low + high + n + (n-1)*interior
    cols = 0 - 1 + 4 + (4 - 1) * 2
    assert int(r.totals.bytes_fused) == 4 * (3 * 4 + rows * cols)  # input read, output written


def test_reduce_window_base_dilation_executes():
    x = _rand(1, 5, 4)
    win, stride, bd, pad = (1, 3, 2), (1, 2, 1), (1, 2, 3), ((0, 0), (1, 1), (0, 2))

    def f(x):
        return (jax.lax.reduce_window(x, 0.0, jax.lax.add, win, stride, pad, base_dilation=bd),
                jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, win, stride, pad,
                                      base_dilation=bd))

    r = analyze(f, x, validate=True)
    assert r.coverage.unanalyzed == 0
    assert r.validation["status"] == "passed", r.validation
    out = 1
    for d in range(3):
        dilated = (x.shape[d] - 1) * bd[d] + 1 + sum(pad[d])
        out *= (dilated - win[d]) // stride[d] + 1
    taps = win[0] * win[1] * win[2]
    # every tap of every window (holes and padding hold the identity): a reduction of `taps`
    # values is taps - 1 combines per output; two reductions
    assert int(r.totals.vector_flops) == 2 * out * (taps - 1)


ROUNDING = {
    "float": (lambda x, y: (jnp.floor(x), jnp.ceil(x), jnp.round(x), jax.lax.round(x),
                            jax.lax.rem(x, y), jnp.arctan2(x, y), jnp.sign(x), x % y,
                            jnp.cbrt(x)),
              [np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.0, 3.7], np.float32),
               np.array([1.5, -2.0, 0.75, 3.0, -1.25, 2.0, 1.0, -0.5], np.float32)]),
    "integer": (lambda i, j: (jax.lax.rem(i, j), i // j, i % j, jnp.sign(i)),
                [np.array([-7, -3, 0, 5, 9, 2], np.int32),
                 np.array([2, -3, 4, -2, 5, 7], np.int32)]),
    "bits": (lambda i, u: (i >> 2, i << 3, i & 12, i | 5, ~i, i ^ 0x55,
                           jax.lax.shift_right_logical(i, 3), jax.lax.population_count(i),
                           u >> 31, u << 1, jax.lax.shift_right_logical(u, jnp.uint32(9)) | u,
                           jax.lax.population_count(u), jax.lax.clz(u),
                           jax.lax.bitcast_convert_type(u, jnp.float32),
                           jax.lax.bitcast_convert_type(jnp.float32(1.5) * u, jnp.int32)),
             [np.array([-7, -1, 0, 5, 2 ** 30, -2 ** 31], np.int32),
              np.array([0, 1, 2 ** 31, 2 ** 32 - 1, 0x3F800000, 12345], np.uint32)]),
}


@pytest.mark.parametrize("name", sorted(ROUNDING))
def test_rounding_remainder_and_bit_ops_execute(name):
    fn, args = ROUNDING[name]
    r = analyze(fn, *args, validate=True)
    assert r.coverage.unanalyzed == 0, r.coverage.unanalyzed_ops
    assert r.validation["status"] == "passed", r.validation


def test_shard_map_on_one_device_is_inlined():
    from jax.sharding import Mesh, PartitionSpec as P

    try:
        from jax import shard_map
    except ImportError:  # older JAX
        from jax.experimental.shard_map import shard_map
    mesh = Mesh(np.array(jax.devices()[:1]), ("x",))
    f = shard_map(lambda a, b: a @ b, mesh=mesh, in_specs=(P("x"), P()), out_specs=P("x"))
    M, K, N = 8, 16, 4
    r = analyze(f, _rand(M, K), _rand(K, N, seed=1), validate=True)
    assert int(r.totals.macs) == M * K * N
    assert r.validation["status"] == "passed"
    # collectives over the mesh's one device: identities (psum, pmax, all_gather, index 0)
    g = shard_map(lambda a: (jax.lax.psum(a, "x") + jax.lax.axis_index("x"),
                             jax.lax.pmax(a, "x"), jax.lax.all_gather(a, "x"),
                             jax.lax.pmean(a @ a.T, "x")),
                  mesh=mesh, in_specs=(P("x"),), out_specs=(P("x"), P("x"), P(), P("x")),
                  check_vma=False)
    r = analyze(g, _rand(M, K), validate=True)
    assert r.coverage.unanalyzed == 0, r.coverage.unanalyzed_ops
    assert int(r.totals.macs) == M * M * K
    assert r.validation["status"] == "passed", r.validation


def test_flax_scan_over_layers_counts_every_layer():
    nn = pytest.importorskip("flax.linen")
    L, B, D = 6, 4, 32

    class Layer(nn.Module):
        @nn.compact
        def __call__(self, x, _):
            return nn.tanh(nn.Dense(D)(x)), None

    class Stack(nn.Module):
        @nn.compact
        def __call__(self, x):
            scanned = nn.scan(Layer, variable_axes={"params": 0}, split_rngs={"params": True},
                              length=L)
            return scanned()(x, None)[0]

    m, x = Stack(), _rand(B, D)
    variables = jax.jit(m.init)(jax.random.PRNGKey(0), x)
    r = analyze(m.apply, x, params=variables, validate=True)
    assert int(r.totals.macs) == L * B * D * D  # every layer's Dense, stacked params sliced
    assert r.validation["status"] == "passed"


# ---------------------------------------------------------------- RNG inside the program


def _rng_program(key, x):
    k1, k2 = jax.random.split(key)
    return (x + jax.random.normal(k1, x.shape),
            jax.random.uniform(jax.random.fold_in(k2, 3), (3, 5), minval=-1.0, maxval=2.0),
            jax.random.bernoulli(k2, 0.3, (7,)),
            jax.random.bits(k1, (2, 3)))


@pytest.mark.parametrize("make_key", [jax.random.PRNGKey, jax.random.key],
                         ids=["raw_uint32_key", "typed_key"])
def test_rng_in_the_program_executes_with_jaxs_bits(make_key):
    # split, fold_in, normal (erf_inv), uniform, bernoulli and raw bits: threefry expanded
    # into integer ops that the executor runs; the bits compare exactly (integer dtype)
    r = analyze(_rng_program, make_key(7), _rand(4, 6), validate=True)
    assert r.coverage.unanalyzed == 0, r.coverage.unanalyzed_ops
    assert r.validation["status"] == "passed", r.validation
    assert r.validation["given"] == []  # nothing handed over: every draw computed
    bits = [o for o in r.validation["outputs"] if o["dtype"] == "i32"]
    assert bits and all(o["max_abs_error"] == 0 for o in bits)


@pytest.mark.parametrize("make_key", [jax.random.PRNGKey, jax.random.key],
                         ids=["raw_uint32_key", "typed_key"])
def test_rng_keys_scanned_over_and_carried(make_key):
    T, D = 5, 3

    def f(key, x):
        def step(c, k):
            k1, k2 = jax.random.split(k)
            return c + jax.random.normal(k1, (D,)), k2  # a key per iteration out

        return jax.lax.scan(step, x, jax.random.split(key, T))

    r = analyze(f, make_key(2), np.zeros(D, np.float32), validate=True)
    assert r.coverage.unanalyzed == 0, r.coverage.unanalyzed_ops
    assert r.validation["status"] == "passed", r.validation


def test_typed_keys_indexed_by_a_loop_counter():
    def f(key, x, n):  # traced bounds: a while loop; keys[i] is a dynamic_slice of keys
        keys = jax.random.split(key, 4)
        return jax.lax.fori_loop(0, n, lambda i, c: c + jax.random.normal(keys[i], (3,)), x)

    r = analyze(f, jax.random.key(2), np.zeros(3, np.float32), np.int32(4), validate=True)
    assert r.coverage.unanalyzed == 0, r.coverage.unanalyzed_ops
    assert r.validation["status"] == "passed", r.validation
    assert sum(1 for op in r.ops if op["origin"]["op"] == "jax::dynamic_slice") == 4


def test_rng_key_derived_inside_the_program():
    def f(seed):
        key = jax.random.PRNGKey(seed)  # random_seed, expanded too
        return jax.random.uniform(key, (16,))

    r = analyze(f, np.int32(42), validate=True)
    assert r.coverage.unanalyzed == 0, r.coverage.unanalyzed_ops
    assert r.validation["status"] == "passed", r.validation


# Distributions built on random bits with unsigned arithmetic: randint (uint32 remainder and
# comparisons), permutation/choice (a sort of uint32 keys), categorical (gumbel + argmax).
DISTRIBUTIONS = {
    "randint": lambda k: jax.random.randint(k, (64,), 0, 1000),
    "permutation": lambda k: jax.random.permutation(k, 16),
    "choice": lambda k: jax.random.choice(k, 10, (5,), replace=False),
    "categorical": lambda k: jax.random.categorical(k, jnp.linspace(-1.0, 1.0, 10), shape=(32,)),
    "truncated_normal": lambda k: jax.random.truncated_normal(k, -1.0, 1.0, (8,)),
}


@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_rng_distributions_execute(name):
    r = analyze(DISTRIBUTIONS[name], jax.random.PRNGKey(3), validate=True)
    assert r.coverage.unanalyzed == 0, r.coverage.unanalyzed_ops
    assert r.validation["status"] == "passed", r.validation


def test_flax_dropout_draws_validate():
    nn = pytest.importorskip("flax.linen")
    B, D, H, O = 4, 16, 32, 8

    class Model(nn.Module):
        @nn.compact
        def __call__(self, x, train=True):
            x = nn.Dropout(0.3, deterministic=not train)(nn.Dense(H)(x))
            return nn.Dense(O)(nn.relu(x))

    m, x = Model(), _rand(B, D)
    variables = m.init(jax.random.PRNGKey(0), x, False)
    r = analyze(lambda v, x, k: m.apply(v, x, rngs={"dropout": k}), x, jax.random.key(2),
                params=variables, validate=True)
    assert r.coverage.unanalyzed == 0, r.coverage.unanalyzed_ops
    assert int(r.totals.macs) == B * D * H + B * H * O
    assert r.validation["status"] == "passed", r.validation


# Integer ops per element of threefry2x32 (jax's unrolled lowering): the two key injections
# before the rounds, 5 groups of 4 rounds of (add, shift_left, shift_right_logical, or, xor),
# and after each group the key injection: x0 + k, (x1 + k) + round number (three adds).
THREEFRY_OPS_PER_WORD = 2 + 5 * 4 * 5 + 5 * 3


def test_rng_bits_count_threefry_integer_ops():
    key = jax.random.PRNGKey(0)

    def vector_flops(n):
        r = analyze(lambda k: jax.random.bits(k, (n,)), key)
        assert r.coverage.unanalyzed == 0, r.coverage.unanalyzed_ops
        return int(r.totals.vector_flops)

    n1, n2 = 64, 1024
    # per element: the hash of the (high, low) counter pair, the xor folding its two words
    # into one 32-bit draw, and the counter's iota (one add per element)
    assert vector_flops(n2) - vector_flops(n1) == (n2 - n1) * (THREEFRY_OPS_PER_WORD + 1 + 1)


# ---------------------------------------------------------------- refusals


def test_loop_past_the_unroll_cap_is_refused_with_its_location():
    def f(x, w):
        return jax.lax.scan(lambda h, _: (jnp.tanh(h @ w), None), x, None, length=1000)[0]

    with pytest.raises(solar.UnsupportedError) as e:
        solar.analyze_jax(f, _rand(2, 4), _rand(4, 4, seed=1), unroll_cap=500, unroll=True)
    msg = str(e.value)
    assert "jax::scan of 1000 iterations" in msg and "unroll cap of 500" in msg
    assert "test_jax_frontend.py:" in msg  # the program location
    assert e.value.exit_code == 7  # unsupported
    # under the cap the same loop is unrolled exactly
    r = analyze(f, _rand(2, 4), _rand(4, 4, seed=1), unroll_cap=1_000_000, unroll=True)
    assert int(r.totals.macs) == 1000 * 2 * 4 * 4
    # a while loop (fori_loop with traced bounds) is refused once its iterations pass the cap

    def g(x, w, n):
        return jax.lax.fori_loop(0, n, lambda i, h: jnp.tanh(h @ w), x)

    with pytest.raises(solar.UnsupportedError, match=r"jax::while past \d+ iterations"):
        solar.analyze_jax(g, _rand(2, 4), _rand(4, 4, seed=1), np.int32(1000), unroll_cap=500,
                          unroll=True)


def test_cli_refuses_a_loop_past_the_cap(tmp_path, capsys, monkeypatch):
    prog = tmp_path / "long_scan.py"
    prog.write_text(textwrap.dedent("""\
        import jax
        import jax.numpy as jnp
        import numpy as np

        T = 300

        def get_inputs():
            return [np.ones((2, 4), np.float32)]

        def forward(x):
            return jax.lax.scan(lambda h, _: (jnp.tanh(h) * 2.0, None), x, None, length=T)[0]
        """))
    from solar.frontends.jax import capture as cap

    monkeypatch.setattr(cap, "UNROLL_CAP", 100)  # what SOLAR_JAX_UNROLL_CAP=100 sets
    code, _, err = _cli(capsys, "analyze", str(prog), "--no-crosscheck", "--unroll")
    assert code == 7, err
    assert "jax::scan of 300 iterations" in err and "long_scan.py:11" in err  # the scan's line
    code, _, err = _cli(capsys, "analyze", str(prog), "--no-crosscheck", "--unroll", "--set",
                        "T=20")
    assert code == 0, err  # fewer iterations fit
    code, _, err = _cli(capsys, "analyze", str(prog), "--no-crosscheck")
    assert code == 0, err  # kept as a loop: no cap


def _solar_env(env, *args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "solar", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, env=env, timeout=300)


def test_multi_device_shard_map_is_refused(tmp_path):
    prog = tmp_path / "sharded.py"
    prog.write_text(textwrap.dedent("""\
        import jax
        import numpy as np
        from jax.sharding import Mesh, PartitionSpec as P
        try:
            from jax import shard_map
        except ImportError:
            from jax.experimental.shard_map import shard_map

        mesh = Mesh(np.array(jax.devices()[:2]), ("x",))

        def get_inputs():
            return [np.ones((8, 16), np.float32), np.ones((16, 4), np.float32)]

        def forward(a, b):
            f = shard_map(lambda a, b: jax.lax.psum(a @ b, "x"), mesh=mesh,
                          in_specs=(P(None, "x"), P("x")), out_specs=P())
            return f(a, b)
        """))
    env = {**__import__("os").environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
           "JAX_PLATFORMS": "cpu"}
    p = _solar_env(env, "analyze", str(prog), "--no-crosscheck")
    assert p.returncode == 7, p.stderr
    assert "jax::shard_map over a 2-device mesh" in p.stderr and "sharded.py:" in p.stderr
