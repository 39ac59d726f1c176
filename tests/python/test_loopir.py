"""The loop language (docs/loop-language.md): programs run by its interpreter equal NumPy's
answer, the lifted graph equals the interpreter (validation), counts are formulas, and the
CLI, API and suite read loop programs."""

from __future__ import annotations

import json
import math
import textwrap

import numpy as np
import pytest

import solar
import solar.loopir as loopir
from conftest import EXAMPLES, run_solar

HEADER = "from solar.loopir import *\n"


def program(tmp_path, body: str, name: str = "prog.py") -> str:
    path = tmp_path / name
    path.write_text(HEADER + textwrap.dedent(body))
    return str(path)


def totals(path: str, **kw) -> dict:
    return loopir.analyze(path, arch="H100_SXM", cache_aware=False, **kw).to_dict()["totals"]


def passed(path: str, **kw) -> bool:
    v = loopir.validate(path, **kw)
    assert v["status"] == "passed", json.dumps(v, indent=1)
    return True


CONV1D = """
W, O, R = 9, 5, 3
x = Tensor("W", role="input")
w = Tensor("R", role="weight")
y = Tensor("O", role="output")

@kernel
def conv(x, w, y):
    for o in range(O):
        for r in range(R):
            if 0 <= 2*o + r - 1 < W:
                y[o] += x[2*o + r - 1] * w[r]

def model():
    conv(x, w, y)
"""


def test_padded_strided_convolution_runs_and_counts_the_taps_inside(tmp_path):
    path = program(tmp_path, CONV1D)
    x, w = np.arange(9.0), np.array([1.0, -2.0, 0.5])
    y = loopir.run(path, inputs={"x": x, "w": w})["y"]
    xp = np.concatenate([[0.0], x, [0.0]])  # the guard is zero padding of 1
    want = [sum(xp[2 * o + r] * w[r] for r in range(3)) for o in range(5)]
    np.testing.assert_allclose(y, want)
    taps = sum(0 <= 2 * o + r - 1 < 9 for o in range(5) for r in range(3))
    assert int(totals(path)["macs"]) == taps  # mask-aware: the padding taps are not work
    assert passed(path)


def test_causal_softmax_from_a_triangular_loop_and_max_from_minus_infinity(tmp_path):
    path = program(tmp_path, """
        S = 6
        s = Tensor("S,S", role="input")
        p = Tensor("S,S", role="output")

        @kernel
        def softmax(s, p):
            m = Tensor("S", fill=-inf)
            e = Tensor("S,S")
            z = Tensor("S")
            for q in range(S):
                for k in range(q + 1):
                    m[q] = max(m[q], s[q, k])
            for q in range(S):
                for k in range(q + 1):
                    e[q, k] = exp(s[q, k] - m[q])
            for q in range(S):
                for k in range(q + 1):
                    z[q] += e[q, k]
            for q in range(S):
                for k in range(q + 1):
                    p[q, k] = e[q, k] / z[q]

        def model():
            softmax(s, p)
    """)
    s = np.random.default_rng(1).standard_normal((6, 6))
    p = loopir.run(path, inputs={"s": s})["p"]
    want = np.where(np.tril(np.ones((6, 6))) > 0, s, -np.inf)
    want = np.exp(want - want.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    np.testing.assert_allclose(p, want, rtol=1e-6)
    t = totals(path)
    live = 6 * 7 // 2
    assert int(t["special_ops"]) == live  # one exp per live point
    # max: live - S comparisons; exp's sub: live; sum: live - S; divide: live
    assert int(t["vector_flops"]) == (live - 6) + live + (live - 6) + live
    assert passed(path)


def test_locals_intrinsics_and_element_casts(tmp_path):
    path = program(tmp_path, """
        N = 16
        x = Tensor("N", role="input")
        y = Tensor("N", dtype="f32", role="output")

        @kernel
        def f(x, y):
            for i in range(N):
                t = exp(x[i] - 1.0)
                y[i] = where(x[i] > 0, t, -t) + sigmoid(cast(x[i], "bf16")) + abs(x[i]) ** 2

        def model():
            f(x, y)
    """)
    x = np.linspace(-2, 2, 16)
    y = loopir.run(path, inputs={"x": x})["y"]
    xb = x.astype(np.float32)  # x is f32; the cast rounds to bf16
    import ml_dtypes
    xb = xb.astype(ml_dtypes.bfloat16).astype(np.float64)
    t = np.exp(x - 1.0)
    want = np.where(x > 0, t, -t) + 1 / (1 + np.exp(-xb)) + np.abs(x) ** 2
    np.testing.assert_allclose(y, want.astype(np.float32), rtol=1e-6)
    assert passed(path)


def test_reductions_of_every_kind_and_earlier_values(tmp_path):
    path = program(tmp_path, """
        B, D = 3, 4
        x = Tensor("B,D", role="input")
        h = Tensor("B,D", role="output")
        s = Tensor("B", role="output", fill=2.0)
        q = Tensor("B", role="output")

        @kernel
        def residual(x, h):
            for b in range(B):
                for d in range(D):
                    h[b, d] = x[b, d] * 2.0

        @kernel
        def more(x, h, s, q):
            for b in range(B):
                for d in range(D):
                    h[b, d] += x[b, d]
                    s[b] -= x[b, d]
                    q[b] = min(x[b, d], q[b])

        def model():
            residual(x, h)
            more(x, h, s, q)
    """)
    x = np.random.default_rng(2).standard_normal((3, 4))
    out = loopir.run(path, inputs={"x": x})
    np.testing.assert_allclose(out["h"], (3 * x).astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(out["s"], (2.0 - x.sum(1)).astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(out["q"], np.minimum(x.min(1), 0.0).astype(np.float32))
    assert passed(path)


def test_products_and_strided_loops(tmp_path):
    path = program(tmp_path, """
        N = 9
        x = Tensor("N", role="input")
        p = Tensor("", role="output", fill=1.0)
        y = Tensor("N", role="output")

        @kernel
        def f(x, p, y):
            for i in range(1, N, 2):
                p[] = p[] * x[i]
            for i in range(N):
                y[N - 1 - i] = x[i]

        def model():
            f(x, p, y)
    """)
    # a scalar target: `p[]` is not Python; write it with an empty tuple instead
    source = open(path).read().replace("p[] = p[] * x[i]", "p[()] *= x[i]")
    open(path, "w").write(source)
    x = np.linspace(0.5, 1.5, 9)
    out = loopir.run(path, inputs={"x": x})
    np.testing.assert_allclose(out["p"], np.float32(np.prod(x[1::2])), rtol=1e-6)
    np.testing.assert_allclose(out["y"], x[::-1].astype(np.float32))
    assert passed(path)


def test_model_composition_layers_and_intrinsics(tmp_path):
    path = program(tmp_path, """
        L, B, D, V = 3, 2, 4, 10
        tok = Tensor("B", dtype="i64", role="input")
        emb = Tensor("V,D", role="weight")
        W = Tensor("L,D,D", role="weight")
        mask = Tensor("D,D", role="constant", sparsity=0.5)
        y = Tensor("D,B", role="output")

        @kernel
        def linear(x, w, h, n, m):
            for b in range(n):
                for o in range(m):
                    for i in range(m):
                        h[b, o] += x[b, i] * w[i, o]

        @kernel
        def act(h, x):
            for b in range(B):
                for d in range(D):
                    x[b, d] = tanh(h[b, d])

        def model():
            x = gather(emb, tok, 0)
            for l in range(L):
                h = Tensor("B,D")
                linear(x, apply_mask(W[l], mask), h, B, D)
                out = Tensor("B,D")
                act(h, out)
                x = out
            both = concat((x, slice(x, 0, 0, 1)), 0)
            s = stack((x, x), 0)
            r = reshape(permute(slice(both, 0, 0, B), (1, 0)), "D, B")
            last = Tensor("D,B")
            copy(r, last)
            copy(last, y)

        @kernel
        def copy(a, b):
            for i in range(D):
                for j in range(B):
                    b[i, j] = a[i, j]
    """)
    rng = np.random.default_rng(3)
    tok, emb, W = np.array([3, 7]), rng.standard_normal((10, 4)), rng.standard_normal((3, 4, 4))
    mask = (rng.random((4, 4)) < 0.5).astype(float)
    y = loopir.run(path, inputs={"tok": tok, "emb": emb, "W": W, "mask": mask})["y"]
    x = emb[tok]
    for layer in range(3):
        x = np.tanh(x @ (W[layer] * mask))
    np.testing.assert_allclose(y, x.T.astype(np.float32), rtol=1e-5)
    assert passed(path)


def test_scatter_and_elementwise_gather(tmp_path):
    path = program(tmp_path, """
        N, M = 6, 4
        data = Tensor("N,M", role="input")
        idx = Tensor("3", dtype="i64", role="input")
        src = Tensor("3,M", role="input")
        y = Tensor("N,M", role="output")

        @kernel
        def copy(a, b):
            for i in range(N):
                for j in range(M):
                    b[i, j] = a[i, j]

        def model():
            copy(scatter(data, idx, src, 0, "sum"), y)
    """)
    rng = np.random.default_rng(4)
    data, src = rng.standard_normal((6, 4)), rng.standard_normal((3, 4))
    idx = np.array([1, 4, 1])
    y = loopir.run(path, inputs={"data": data, "idx": idx, "src": src})["y"]
    want = data.copy()
    np.add.at(want, idx, src)
    np.testing.assert_allclose(y, want.astype(np.float32), rtol=1e-6)
    assert passed(path)


# ----------------------------------------------------------------------- counts


def test_gemm_counts_are_formulas():
    path = str(EXAMPLES / "loops" / "gemm.py")
    M, N, K = 512, 1024, 256
    t = totals(path)
    assert int(t["macs"]) == M * N * K
    assert int(t["flops"]) == 2 * M * N * K  # 1 MAC = 2 FLOP
    assert int(t["bytes_fused"]) == 2 * (M * K + K * N + M * N)  # bf16 in, weight, out


def test_two_four_sparse_weight_is_compressed_and_eligible(tmp_path):
    path = program(tmp_path, """
        M, N, K = 8, 16, 32
        x = Tensor("M,K", dtype="bf16", role="input")
        w = Tensor("N,K", dtype="bf16", role="weight", sparsity="2:4")
        y = Tensor("M,N", dtype="bf16", role="output")

        @kernel
        def linear(x, w, y):
            for m in range(M):
                for n in range(N):
                    for k in range(K):
                        y[m, n] += x[m, k] * w[n, k]

        def model():
            linear(x, w, y)
    """)
    t = totals(path)
    M, N, K = 8, 16, 32
    assert int(t["macs"]) == M * N * K and int(t["macs_2_4"]) == M * N * K
    # 2:4: half the values plus a 2-bit index per kept value (docs/cost.md)
    w_bytes = math.ceil((N * K // 2) * (16 + 2) / 8)
    assert int(t["bytes_fused"]) == 2 * M * K + w_bytes + 2 * M * N
    assert passed(path)  # the drawn weight has two zeros in every four


# ----------------------------------------------------------------------- CLI, API, suite


def test_cli_analyze_reads_a_loop_program_with_overrides():
    r = run_solar("analyze", str(EXAMPLES / "loops" / "gemm.py"), "--set", "M=64", "--json", "-")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["program"]["frontend"] == "loopir"
    assert int(report["totals"]["macs"]) == 64 * 1024 * 256


def test_cli_validate_against_the_twin():
    r = run_solar("validate", str(EXAMPLES / "loops" / "gemm.py"), "--set", "M=32",
                  "--reference", str(EXAMPLES / "loops" / "gemm_torch.py"))
    assert r.returncode == 0, r.stderr
    assert "graph vs reference" in r.stdout and "PASSED" in r.stdout


def test_a_reference_that_differs_fails_validation(tmp_path):
    ref = tmp_path / "ref.py"
    ref.write_text("import numpy as np\n\ndef reference(A, B):\n    return A @ B + 1.0\n")
    r = run_solar("validate", str(EXAMPLES / "loops" / "gemm.py"), "--set", "M=16",
                  "--reference", str(ref))
    assert r.returncode == solar._core.EXIT_CODES["validation_failed"], r.stdout + r.stderr
    assert "FAIL" in r.stdout


def test_reference_applies_to_loop_programs_only():
    r = run_solar("analyze", str(EXAMPLES / "torch" / "mlp.py"), "--reference", "x.py")
    assert r.returncode == solar._core.EXIT_CODES["usage"]


def test_suite_reads_a_folder_of_loop_programs(tmp_path):
    (tmp_path / "conv.py").write_text(HEADER + textwrap.dedent(CONV1D))
    (tmp_path / "gemm.py").write_text((EXAMPLES / "loops" / "gemm.py").read_text())
    r = run_solar("suite", str(tmp_path), "--jobs", "1", "--no-crosscheck", "--json",
                  str(tmp_path / "s.json"))
    assert r.returncode == 0, r.stdout + r.stderr
    s = json.loads((tmp_path / "s.json").read_text())
    assert len(s["programs"]) == 2
    assert all(p["suite"]["status"] == "analyzed" for p in s["programs"]), s["programs"]
    assert {p["program"]["frontend"] for p in s["programs"]} == {"loopir"}


def test_api_trace_and_graph():
    path = str(EXAMPLES / "loops" / "gemm.py")
    trace = loopir.load_trace(path, set={"M": 8})
    assert trace["frontend"] == "loopir"
    assert [o["op"] for o in trace["ops"]] == ["loopir::nest"]
    g = loopir.lift(path, set={"M": 8})
    assert isinstance(g, solar.Graph) and len(g.ops) == 1


def test_a_divergence_names_the_first_statement_that_differs(tmp_path):
    """A graph lifted from one program, validated against the interpreter of a changed one
    (the second nest's exp made a tanh): validation names that statement."""
    from solar.frontends.loopir import program, validation

    path = str(EXAMPLES / "loops" / "softmax.py")
    lp = program.load(path, {"R": "8", "C": "16"})
    graph, trace_ids = program.lift(lp)
    nests = [op for op in lp.trace["ops"] if op["op"] == "loopir::nest"]
    exp_statement = nests[1]["args"]["statements"][0]
    assert exp_statement["value"]["fn"] == "exp"
    exp_statement["value"]["fn"] = "tanh"
    v = validation.validate(lp, graph, trace_ids)
    assert v["status"] == "failed"
    first = v["first_divergent_op"]
    assert first["framework_op"] == "loopir::softmax"
    source = open(path).read().splitlines()
    assert "exp(" in source[first["line"] - 1]  # the statement's own line


def test_inverse_roofline_of_a_loop_program():
    r = run_solar("inverse", str(EXAMPLES / "loops" / "robot_mlp.py"), "--rate-hz", "500",
                  "--arch", "Jetson_Orin", "--json", "-")
    assert r.returncode == 0, r.stderr
    inv = json.loads(r.stdout)
    assert inv["target_seconds"] == pytest.approx(1 / 500)


def test_jax_and_numpy_references(tmp_path):
    jax_ref = tmp_path / "ref_jax.py"
    jax_ref.write_text("import jax.numpy as jnp\n\n"
                       "def forward(A, B):\n    return jnp.matmul(A, B)\n")
    np_ref = tmp_path / "ref_np.py"
    np_ref.write_text("import numpy as np\n\ndef reference(A, B):\n    return {'C': A @ B}\n")
    path = str(EXAMPLES / "loops" / "gemm.py")
    for ref, framework in ((jax_ref, "jax"), (np_ref, "numpy")):
        v = loopir.validate(path, reference=str(ref), set={"M": 16, "N": 32, "K": 8})
        assert v["status"] == "passed", v
        assert v["reference"]["framework"] == framework


def test_views_of_a_sparse_weight_stay_sparse(tmp_path):
    """W[l] of a stacked 2:4 weight keeps its rows whole: the view is 2:4 too, so the
    layer's GEMM reads it compressed and its MACs are 2:4-eligible."""
    path = program(tmp_path, """
        L, M, N, K = 2, 8, 16, 32
        x = Tensor("M,K", dtype="bf16", role="input")
        W = Tensor("L,N,K", dtype="bf16", role="weight", sparsity="2:4")
        y = Tensor("M,N", dtype="bf16", role="output")

        @kernel
        def linear(x, w, y):
            for m in range(M):
                for n in range(N):
                    for k in range(K):
                        y[m, n] += x[m, k] * w[n, k]

        def model():
            linear(x, W[1], y)
    """)
    t = totals(path)
    M, N, K = 8, 16, 32
    assert int(t["macs_2_4"]) == M * N * K
    assert loopir.lift(path).tensor("w").structured_2_4  # the view bound to the parameter w
    assert passed(path)


def test_a_scalar_assigned_inside_a_loop_of_one_value_runs(tmp_path):
    """A 0-d target assigned in a loop that runs once (the fuzzer's find: the interpreter
    wrote the loop's one-element chunk into the scalar and failed)."""
    path = program(tmp_path, """
        M = 1
        x = Tensor("M", role="input")
        y = Tensor("", role="output")

        @kernel
        def f(x, y):
            for i in range(M):
                y[()] = x[0] * 2.0

        def model():
            f(x, y)
        """)
    assert passed(path)
    out = loopir.run(path, inputs={"x": np.array([3.0], dtype=np.float32)})
    assert float(out["y"]) == 3.0 * 2.0
