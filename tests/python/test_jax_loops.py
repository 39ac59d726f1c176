"""JAX loops kept as loops (docs/jax-frontend.md, "Loops"): a `scan`, a `fori_loop` with
static bounds and a `while_loop` with a static trip count are one `jax::scan_repeat` trace op
and one repeat op in the graph, whose counts equal the unrolled capture's (`--unroll`,
unroll=True) and whose execution equals JAX's outputs; a body that cannot be recorded once
falls back to unrolling, and the capture notes say why."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
lax = pytest.importorskip("jax.lax")

from solar.analysis import ProgramOptions  # noqa: E402
from solar.frontends.jax import program as jprog  # noqa: E402
from solar.frontends.jax.recorder import REPEAT_OP  # noqa: E402

B, D, H = 2, 8, 16


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def _sds(*shape, dtype=np.float32):
    return jax.ShapeDtypeStruct(shape, dtype)


def _analysis(fn, *args, unroll=False, validate=False):
    """(ProgramAnalysis, Capture) of fn(*args)."""
    prog = jprog.Program(fn, None, list(args), getattr(fn, "__name__", "program"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        c = jprog._capture(prog, "", values=True if validate else None, unroll=unroll)
        result = jprog._analyze_capture(c, "<jax>", ProgramOptions(archs=["H100_SXM"]))
        if validate:
            result.report.attach_section("validation", jprog.validate_capture(c, prog, "<jax>"))
    return result, c


def _repeats(trace_ops):
    return [o for o in trace_ops if o["op"] == f"jax::{REPEAT_OP}"]


def _totals(result):
    """Every total of the report: MACs and vector FLOPs (by dtype), special functions,
    unfused and compulsory (fused) bytes read and written."""
    return dict(result.report.to_dict()["totals"])


def _both(fn, *args, loops=1):
    """The repeat form and the unrolled form of fn(*args): one repeat per loop, far fewer
    ops, no op left unanalyzed."""
    r, c = _analysis(fn, *args)
    u, cu = _analysis(fn, *args, unroll=True)
    assert len(_repeats(c.trace["ops"])) == loops, c.notes
    assert not _repeats(cu.trace["ops"])
    assert len(c.trace["ops"]) < len(cu.trace["ops"])
    assert len(r.graph.ops) < len(u.graph.ops)
    assert r.warnings == [] and u.warnings == [], (r.warnings, u.warnings)
    return r, u, c, cu


def _counter_is_the_difference(tr, tu, n):
    """The loop counter (docs/jax-frontend.md, "Loops"): unrolled, a literal folded at
    capture (no op); as a loop, a carried int32 scalar that the body increments. Nothing
    after the loop reads it, so its chain is dead in every iteration, as the unrolled
    graph's folded literal costs nothing: every total is equal (n iterations)."""
    assert n > 1
    for key in ("macs_by_dtype", "special_ops", "vector_flops_by_dtype", "bytes_unfused",
                "bytes_fused"):
        assert tr[key] == tu[key], (key, tr[key], tu[key])


# ---------------------------------------------------------------- programs


def rnn(xs, h0, w, u):
    def step(h, x):
        h = jnp.tanh(x @ w + h @ u)
        return h, h

    return lax.scan(step, h0, xs)


def rnn_args(T, abstract=False):
    if abstract:
        return [_sds(T, B, D), _sds(B, H), _sds(D, H), _sds(H, H)]
    return [_rand(T, B, D), _rand(B, H, seed=1), _rand(D, H, seed=2) * 0.3,
            _rand(H, H, seed=3) * 0.3]


def reverse_scan(xs, w):
    def step(h, x):
        h = jnp.tanh(h @ w + x)
        return h, 2.0 * h

    return lax.scan(step, jnp.zeros((B, H), np.float32), xs, reverse=True)


def several_carries(xs, ys, w):
    def step(carry, inp):
        h, s = carry
        x, y = inp
        h = jnp.tanh(h @ w + x)
        s = s + jnp.sum(h * y, axis=1)
        return (h, s), (h, s, jnp.exp(y))

    return lax.scan(step, (jnp.zeros((B, H), np.float32), jnp.zeros((B,), np.float32)),
                    (xs, ys))


N_FORI = 10


def fori(x, w):
    return lax.fori_loop(0, N_FORI, lambda i, h: jnp.tanh(h @ w), x)


N_WHILE = 7


def while_static(x, w):
    def body(c):
        i, h = c
        return i + 1, jnp.tanh(h @ w)

    return lax.while_loop(lambda c: c[0] < N_WHILE, body, (0, x))[1]


def nested(xs, w):
    def inner(h, x):
        h = jnp.tanh(h @ w + x)
        return h, h

    def outer(h, xrow):
        h, ys = lax.scan(inner, h, xrow)
        return h, ys.sum(0)

    return lax.scan(outer, jnp.zeros((B, H), np.float32), xs)


T_REV, T_SEV, T1, T2 = 9, 6, 4, 5
PROGRAMS = {
    "rnn": (rnn, lambda: rnn_args(12)),
    "reverse_scan": (reverse_scan, lambda: [_rand(T_REV, B, H), _rand(H, H, seed=1) * 0.3]),
    "several_carries": (several_carries, lambda: [_rand(T_SEV, B, H), _rand(T_SEV, B, H, seed=1),
                                                  _rand(H, H, seed=2) * 0.3]),
    "fori_loop": (fori, lambda: [_rand(B, H), _rand(H, H, seed=1) * 0.3]),
    "while_loop": (while_static, lambda: [_rand(B, H), _rand(H, H, seed=1) * 0.3]),
    "nested_scans": (nested, lambda: [_rand(T1, T2, B, H), _rand(H, H, seed=1) * 0.3]),
}


def _run(name, **kw):
    fn, args = PROGRAMS[name]
    return _both(fn, *args(), **kw)


# ---------------------------------------------------------------- counts


def test_scan_rnn_is_one_repeat_with_the_unrolled_counts():
    T = 12
    r, u, c, _ = _run("rnn")
    (op,) = _repeats(c.trace["ops"])
    assert op["args"]["trips"] == T and op["args"]["reverse"] is False
    assert [b["how"] for b in op["args"]["inputs"]] == ["invariant", "invariant", "carried",
                                                        "sliced"]
    assert [b["how"] for b in op["args"]["outputs"]] == ["last", "stacked"]
    assert len(op["args"]["body"]["ops"]) == 4  # two dot_generals, add, tanh: walked once
    assert any("kept as a loop" in n for n in c.notes)
    assert len(r.graph.ops) == 1  # the graph: one repeat op
    assert len(u.graph.ops) > 4 * T
    t = _totals(r)
    assert t == _totals(u)  # every total, compulsory bytes included
    assert t["macs"] == T * (B * D * H + B * H * H)
    assert t["special_ops"] == T * B * H


def test_reverse_scan():
    r, u, c, _ = _run("reverse_scan")
    assert _repeats(c.trace["ops"])[0]["args"]["reverse"] is True
    assert _totals(r) == _totals(u)
    assert _totals(r)["macs"] == T_REV * B * H * H


def test_scan_with_several_carries_and_stacked_outputs():
    r, u, c, _ = _run("several_carries")
    (op,) = _repeats(c.trace["ops"])
    assert [b["how"] for b in op["args"]["inputs"]].count("carried") == 2
    assert [b["how"] for b in op["args"]["inputs"]].count("sliced") == 2
    assert [b["how"] for b in op["args"]["outputs"]] == ["last", "last", "stacked", "stacked",
                                                        "stacked"]
    assert _totals(r) == _totals(u)
    assert _totals(r)["special_ops"] == T_SEV * (B * H + B * H)  # tanh and exp


def test_fori_loop_with_static_bounds():
    r, u, c, _ = _run("fori_loop")
    assert _repeats(c.trace["ops"])[0]["args"]["trips"] == N_FORI
    tr, tu = _totals(r), _totals(u)
    assert tr["macs"] == tu["macs"] == N_FORI * B * H * H
    assert tr["special_ops"] == tu["special_ops"] == N_FORI * B * H
    _counter_is_the_difference(tr, tu, N_FORI)


def test_while_loop_with_a_static_trip_count():
    r, u, c, _ = _run("while_loop")
    (op,) = _repeats(c.trace["ops"])
    assert op["args"]["trips"] == N_WHILE and op["args"]["primitive"] == "while"
    tr, tu = _totals(r), _totals(u)
    assert tr["macs"] == tu["macs"] == N_WHILE * B * H * H
    assert tr["special_ops"] == tu["special_ops"] == N_WHILE * B * H
    _counter_is_the_difference(tr, tu, N_WHILE)


def test_fori_loop_with_traced_bounds_known_at_capture():
    # A while_loop: its trip count from the counter part of the loop alone.
    def f(x, w, n):
        return lax.fori_loop(0, n, lambda i, h: jnp.tanh(h @ w), x)

    args = [_rand(B, H), _rand(H, H, seed=1) * 0.3, np.int32(5)]
    r, c = _analysis(f, *args)
    (op,) = _repeats(c.trace["ops"])
    assert op["args"]["trips"] == 5
    assert _totals(r)["macs"] == 5 * B * H * H


def test_nested_scans():
    r, u, c, _ = _run("nested_scans")
    (op,) = _repeats(c.trace["ops"])
    assert op["args"]["trips"] == T1
    inner = _repeats(op["args"]["body"]["ops"])
    assert len(inner) == 1 and inner[0]["args"]["trips"] == T2
    tr, tu = _totals(r), _totals(u)
    # Compulsory bytes: the repeat reads xs whole (every row of every row); the unrolled
    # graph reads it through slices of slices and counts one (docs/jax-frontend.md).
    assert tr["bytes_fused_read"] == 4 * (T1 * T2 * B * H + H * H)
    assert tu["bytes_fused_read"] < tr["bytes_fused_read"]
    for k in ("bytes_fused", "bytes_fused_read"):
        tr.pop(k), tu.pop(k)
    assert tr == tu
    assert tr["macs"] == T1 * T2 * B * H * H


# ---------------------------------------------------------------- fallbacks and options


def test_body_that_needs_the_counter_value_is_unrolled_and_says_why():
    N = 4

    def f(xs, h):
        return lax.fori_loop(0, N, lambda i, h: jnp.tanh(h + xs[i]), h)

    args = [_rand(N, B, H), _rand(B, H, seed=1)]
    r, c = _analysis(f, *args)
    assert not _repeats(c.trace["ops"])
    assert any("unrolled" in n and "dynamic_slice" in n for n in c.notes), c.notes
    assert r.warnings == []
    assert _totals(r)["special_ops"] == N * B * H


def test_data_dependent_while_is_unrolled_on_real_inputs():
    # Its trip count is a property of these inputs: the real-value capture unrolls it.
    def f(x):
        return lax.while_loop(lambda v: jnp.sum(v * v) > 1.0, lambda v: v * 0.5, x)

    r, c = _analysis(f, 100.0 * np.ones((4,), np.float32))
    assert not _repeats(c.trace["ops"])
    assert r.warnings == []


def test_unroll_option_reaches_the_jax_frontend(tmp_path):
    prog = tmp_path / "scan_prog.py"
    prog.write_text(
        "import jax\nimport jax.numpy as jnp\nimport numpy as np\n\n"
        "def get_inputs():\n    return [np.ones((6, 2, 4), np.float32)]\n\n"
        "def forward(xs):\n"
        "    return jax.lax.scan(lambda h, x: (jnp.tanh(h + x), h), jnp.zeros((2, 4)), xs)\n")
    options = ProgramOptions(archs=["H100_SXM"], crosscheck=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        a = jprog.analyze_file(str(prog), options)
        options.unroll = True
        b = jprog.analyze_file(str(prog), options)
    assert _repeats(a.trace["ops"])
    assert not _repeats(b.trace["ops"])
    assert _totals(a) == _totals(b)


def test_long_scan_is_one_op_and_fast():
    T = 512
    t0 = time.perf_counter()
    r, c = _analysis(rnn, *rnn_args(T, abstract=True))
    elapsed = time.perf_counter() - t0
    assert len(c.trace["ops"]) == 1 and len(r.graph.ops) == 1
    assert _totals(r)["macs"] == T * (B * D * H + B * H * H)
    assert elapsed < 10


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize("name", [*PROGRAMS, "rnn_reverse"])
def test_validation_matches_jax(name):
    """The executed graph (repeat ops run by the executor) equals JAX's outputs."""
    if name == "rnn_reverse":
        fn = lambda xs, h0, w, u: lax.scan(  # noqa: E731
            lambda h, x: (jnp.tanh(x @ w + h @ u),) * 2, h0, xs, reverse=True)
        args = rnn_args(5)
    else:
        fn, make = PROGRAMS[name]
        args = make()
    r, c = _analysis(fn, *args, validate=True)
    assert _repeats(c.trace["ops"]), c.notes
    v = r.report.get_section("validation")
    assert v["status"] == "passed", v
