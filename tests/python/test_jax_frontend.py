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

from solar.frontends.jax.capture import capture, is_jax_program  # noqa: E402


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
        return jnp.floor(x) + 1.0

    with pytest.warns(RuntimeWarning, match="jax::floor"):
        r = solar.analyze_jax(f, _rand(8))
    assert r.coverage.unanalyzed == 1
    assert r.coverage.unanalyzed_ops[0]["framework_op"] == "jax::floor"
    with pytest.raises(solar.UnsupportedError, match="jax::floor"):
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


def test_box_scatter_lowers_and_general_scatter_is_costed_but_not_run():
    x, u = _rand(5, 7), _rand(2, 3, seed=1)
    # a static box update arrives as a scatter at known indices: a box update (slices + concat)
    r = analyze(lambda x, u: (x.at[1:3, 2:5].set(u), x.at[1:3, 2:5].add(u)), x, u, validate=True)
    assert r.coverage.unanalyzed == 0
    assert r.validation["status"] == "passed", r.validation
    # point updates at two index dimensions: an opaque op with its bytes, which the executor
    # refuses by name (never a silent pass)
    r = analyze(lambda x, i, j, v: x.at[i, j].set(v), x, _ints(4, hi=5), _ints(4, hi=7, seed=1),
                _rand(4, seed=2), validate=True)
    assert r.coverage.unanalyzed == 0
    assert r.validation["status"] == "failed"
    assert "scatter" in r.validation["reason"]


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
