"""The executor against real PyTorch: graphs of PyTorch computations written by hand in the
text form (until the PyTorch frontend writes them), run by solar on the same random inputs
and compared with torch's own outputs through solar.validate (dtype-aware tolerances)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import solar

torch.set_num_threads(2)


def dims(shape) -> str:
    return ",".join(str(int(d)) for d in shape)


def check(text: str, inputs: dict, expected: dict, intermediates=None) -> solar.ValidationResult:
    """Validates the graph against torch's outputs and fails with solar's explanation."""
    g = solar.parse_graph(text)
    r = solar.validate(g, inputs, expected, intermediates)
    assert r, str(r)
    return r


@pytest.fixture(autouse=True)
def seed():
    torch.manual_seed(0)


# ---- contractions ----------------------------------------------------------------------------


def test_matmul():
    a, b = torch.randn(64, 48), torch.randn(48, 80)
    check("a = f32[64,48] input\nb = f32[48,80] input\n"
          'c = f32[64,80]{output} einsum "mk,kn->mn" (a, b)',
          {"a": a, "b": b}, {"c": a @ b})


def test_bmm_with_broadcast_weight():
    a, b = torch.randn(3, 5, 16, 24), torch.randn(24, 8)
    check("a = f32[3,5,16,24] input\nb = f32[24,8] input\n"
          'c = f32[3,5,16,8]{output} einsum "xbmk,kn->xbmn" (a, b)',
          {"a": a, "b": b}, {"c": torch.matmul(a, b)})
    x, y = torch.randn(6, 16, 24), torch.randn(6, 24, 10)
    check("x = f32[6,16,24] input\ny = f32[6,24,10] input\n"
          'z = f32[6,16,10]{output} einsum "bmk,bkn->bmn" (x, y)',
          {"x": x, "y": y}, {"z": torch.bmm(x, y)})


def test_linear_with_bias_in_f64():
    lin = torch.nn.Linear(40, 30).double()
    x = torch.randn(7, 40, dtype=torch.float64)
    text = """x = f64[7,40] input
w = f64[30,40] weight
b = f64[30] weight
xw = f64[7,30] einsum "bk,nk->bn" (x, w)
y = f64[7,30]{output} einsum [b=7,n=30] none add($0,$1) (xw[b,n], b[n]) -> [b,n]
"""
    check(text, {"x": x, "w": lin.weight, "b": lin.bias}, {"y": lin(x)})


def conv2d_text(n, c, h, w, k, r, s, stride, pad, dil, groups, dtype="f32"):
    p = (h + 2 * pad[0] - dil[0] * (r - 1) - 1) // stride[0] + 1
    q = (w + 2 * pad[1] - dil[1] * (s - 1) - 1) // stride[1] + 1
    cg, kg = c // groups, k // groups
    hx = f"p*{stride[0]}+r*{dil[0]}-{pad[0]}"
    wx = f"q*{stride[1]}+s*{dil[1]}-{pad[1]}"
    return (f"x = {dtype}[{n},{c},{h},{w}] input\nwt = {dtype}[{k},{cg},{r},{s}] weight\n"
            f"y = {dtype}[{n},{k},{p},{q}]{{output}} einsum [n={n},g={groups},o={kg},p={p},q={q},"
            f"c={cg},r={r},s={s}] sum mul($0,$1) (x[n,g*{cg}+c,{hx},{wx}] pad 0, "
            f"wt[g*{kg}+o,c,r,s]) -> [n,g*{kg}+o,p,q]")


@pytest.mark.parametrize(
    "n,c,h,w,k,r,s,stride,pad,dil,groups",
    [
        (2, 8, 12, 12, 16, 3, 3, (1, 1), (1, 1), (1, 1), 1),  # ResNet 3x3
        (1, 6, 13, 11, 4, 3, 5, (2, 1), (0, 2), (1, 1), 1),  # stride, asymmetric padding
        (2, 4, 15, 15, 6, 3, 3, (1, 2), (2, 2), (2, 2), 1),  # dilation
        (1, 8, 10, 10, 12, 3, 3, (1, 1), (1, 1), (1, 1), 4),  # groups
        (2, 8, 9, 9, 8, 3, 3, (2, 2), (1, 1), (1, 1), 8),  # depthwise
        (1, 16, 7, 7, 32, 1, 1, (1, 1), (0, 0), (1, 1), 1),  # pointwise
    ],
)
def test_conv2d(n, c, h, w, k, r, s, stride, pad, dil, groups):
    x, wt = torch.randn(n, c, h, w), torch.randn(k, c // groups, r, s)
    y = F.conv2d(x, wt, stride=stride, padding=pad, dilation=dil, groups=groups)
    check(conv2d_text(n, c, h, w, k, r, s, stride, pad, dil, groups), {"x": x, "wt": wt}, {"y": y})


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    c_per=st.integers(1, 3), k_per=st.integers(1, 3), groups=st.sampled_from([1, 2, 3]),
    h=st.integers(5, 11), w=st.integers(5, 11), r=st.integers(1, 3), s=st.integers(1, 3),
    stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    pad=st.tuples(st.integers(0, 2), st.integers(0, 2)),
    dil=st.tuples(st.integers(1, 2), st.integers(1, 2)),
)
def test_conv2d_property(c_per, k_per, groups, h, w, r, s, stride, pad, dil):
    c, k = c_per * groups, k_per * groups
    if h + 2 * pad[0] < dil[0] * (r - 1) + 1 or w + 2 * pad[1] < dil[1] * (s - 1) + 1:
        return  # no output position
    x, wt = torch.randn(2, c, h, w), torch.randn(k, c_per, r, s)
    y = F.conv2d(x, wt, stride=stride, padding=pad, dilation=dil, groups=groups)
    check(conv2d_text(2, c, h, w, k, r, s, stride, pad, dil, groups), {"x": x, "wt": wt}, {"y": y})


def test_conv1d_and_conv3d():
    x, w = torch.randn(2, 4, 20), torch.randn(6, 4, 5)
    y = F.conv1d(x, w, stride=2, padding=2)  # length (20 + 4 - 5) // 2 + 1 = 10
    check("x = f32[2,4,20] input\nw = f32[6,4,5] weight\n"
          "y = f32[2,6,10]{output} einsum [n=2,k=6,p=10,c=4,r=5] sum mul($0,$1) "
          "(x[n,c,p*2+r-2] pad 0, w[k,c,r]) -> [n,k,p]",
          {"x": x, "w": w}, {"y": y})
    x3, w3 = torch.randn(1, 3, 6, 7, 8), torch.randn(4, 3, 3, 3, 3)
    y3 = F.conv3d(x3, w3, padding=1)
    check("x = f32[1,3,6,7,8] input\nw = f32[4,3,3,3,3] weight\n"
          "y = f32[1,4,6,7,8]{output} einsum [n=1,k=4,d=6,p=7,q=8,c=3,t=3,r=3,s=3] sum "
          "mul($0,$1) (x[n,c,d+t-1,p+r-1,q+s-1] pad 0, w[k,c,t,r,s]) -> [n,k,d,p,q]",
          {"x": x3, "w": w3}, {"y": y3})


def test_conv_transpose2d():
    # Cin=4, Cout=6, 3x3 kernel, stride 2, padding 1: 5x5 -> (5-1)*2 - 2 + 3 = 9x9. Each input
    # pixel scatters a kernel patch into full[h*2+r, v*2+s] (11x11); padding crops one pixel
    # on each side.
    x, w = torch.randn(2, 4, 5, 5), torch.randn(4, 6, 3, 3)
    y = F.conv_transpose2d(x, w, stride=2, padding=1)
    check("x = f32[2,4,5,5] input\nw = f32[4,6,3,3] weight\n"
          "full = f32[2,6,11,11] einsum [n=2,o=6,h=5,v=5,c=4,r=3,s=3] sum mul($0,$1) "
          "(x[n,c,h,v], w[c,o,r,s]) -> [n,o,h*2+r,v*2+s]\n"
          "y = f32[2,6,9,9]{output} move slice {starts=[0,0,1,1], ends=[2,6,10,10]} (full)",
          {"x": x, "w": w}, {"y": y})
    # Grouped, stride 3, no padding: 4x4 -> (4-1)*3 + 2 = 11x11.
    xg, wg = torch.randn(1, 6, 4, 4), torch.randn(6, 2, 2, 2)
    yg = F.conv_transpose2d(xg, wg, stride=3, groups=3)
    check("x = f32[1,6,4,4] input\nw = f32[6,2,2,2] weight\n"
          "y5 = f32[1,3,2,11,11] einsum [n=1,g=3,o=2,h=4,v=4,c=2,r=2,s=2] sum mul($0,$1) "
          "(x[n,g*2+c,h,v], w[g*2+c,o,r,s]) -> [n,g,o,h*3+r,v*3+s]\n"
          "y = f32[1,6,11,11]{output} move view (y5)",
          {"x": xg, "w": wg}, {"y": yg})


def test_int8_matmul_accumulates_exactly():
    a = torch.randint(-128, 128, (32, 64), dtype=torch.int8)
    b = torch.randint(-128, 128, (64, 16), dtype=torch.int8)
    want = (a.to(torch.int32) @ b.to(torch.int32))
    r = check("a = i8[32,64] input\nb = i8[64,16] input\n"
              'c = i32[32,16]{output} einsum "mk,kn->mn" (a, b)',
              {"a": a, "b": b}, {"c": want})
    assert r.outputs[0].max_abs_error == 0  # integers compare exactly


def test_bf16_matmul_and_inputs():
    a, b = torch.randn(32, 256).bfloat16(), torch.randn(256, 24).bfloat16()
    out = solar.run(solar.parse_graph("a = bf16[32,256] input\nb = bf16[256,24] input\n"
                                      'c = bf16[32,24]{output} einsum "mk,kn->mn" (a, b)'),
                    {"a": a, "b": b})
    c = out["c"]
    assert c.dtype == np.float32  # bf16 comes back as float32 holding bf16 values
    assert np.array_equal(c, torch.from_numpy(c).bfloat16().float().numpy())
    r = solar.validate(solar.parse_graph("a = bf16[32,256] input\nb = bf16[256,24] input\n"
                                         'c = bf16[32,24]{output} einsum "mk,kn->mn" (a, b)'),
                       {"a": a, "b": b}, {"c": a @ b})
    assert r, str(r)
    assert r.outputs[0].rtol == pytest.approx(2e-2)


# ---- pooling, normalization, activations -----------------------------------------------------


def test_max_and_avg_pool():
    x = torch.randn(2, 3, 11, 11)
    mp = F.max_pool2d(x, 3, stride=2, padding=1)  # (11 + 2 - 3) // 2 + 1 = 6
    ap = F.avg_pool2d(x, 2, stride=2)  # 5
    check("x = f32[2,3,11,11] input\n"
          "mp = f32[2,3,6,6]{output} einsum [n=2,c=3,p=6,q=6,r=3,s=3] max $0 "
          "(x[n,c,p*2+r-1,q*2+s-1] pad -inf) -> [n,c,p,q]\n"
          "ap = f32[2,3,5,5]{output} einsum [n=2,c=3,p=5,q=5,r=2,s=2] sum mul($0,0.25) "
          "(x[n,c,p*2+r,q*2+s]) -> [n,c,p,q]",
          {"x": x}, {"mp": mp, "ap": ap})


SOFTMAX = """x = f32[{R},{C}] input
mx = f32[{R}] einsum [i={R},j={C}] max $0 (x[i,j]) -> [i]
e = f32[{R},{C}] einsum [i={R},j={C}] none exp(sub($0,$1)) (x[i,j], mx[i]) -> [i,j]
sm = f32[{R}] einsum [i={R},j={C}] sum $0 (e[i,j]) -> [i]
y = f32[{R},{C}]{{output}} einsum [i={R},j={C}] none div($0,$1) (e[i,j], sm[i]) -> [i,j]
ls = f32[{R},{C}]{{output}} einsum [i={R},j={C}] none sub(sub($0,$1),log($2)) (x[i,j], mx[i], sm[i]) -> [i,j]
"""


def test_softmax_and_log_softmax():
    x = torch.randn(33, 257) * 4
    check(SOFTMAX.format(R=33, C=257), {"x": x},
          {"y": torch.softmax(x, -1), "ls": torch.log_softmax(x, -1)})


LAYERNORM = """x = f32[{B},{D}] input
g = f32[{D}] weight
bt = f32[{D}] weight
sum = f32[{B}] einsum "bd->b" (x)
mean = f32[{B}] einsum [b={B}] none div($0,{D}) (sum[b]) -> [b]
xc = f32[{B},{D}] einsum [b={B},d={D}] none sub($0,$1) (x[b,d], mean[b]) -> [b,d]
ssq = f32[{B}] einsum [b={B},d={D}] sum square($0) (xc[b,d]) -> [b]
rstd = f32[{B}] einsum [b={B}] none rsqrt(add(div($0,{D}),1e-05)) (ssq[b]) -> [b]
y = f32[{B},{D}]{{output}} einsum [b={B},d={D}] none add(mul(mul($0,$1),$2),$3) (xc[b,d], rstd[b], g[d], bt[d]) -> [b,d]
"""


def test_layer_norm():
    ln = torch.nn.LayerNorm(96)
    with torch.no_grad():
        ln.weight.normal_()
        ln.bias.normal_()
    x = torch.randn(20, 96) * 3 + 1
    check(LAYERNORM.format(B=20, D=96), {"x": x, "g": ln.weight, "bt": ln.bias}, {"y": ln(x)})


def test_batch_norm_eval():
    bn = torch.nn.BatchNorm2d(5).eval()
    with torch.no_grad():
        bn.running_mean.normal_()
        bn.running_var.uniform_(0.5, 2)
        bn.weight.normal_()
        bn.bias.normal_()
    x = torch.randn(2, 5, 6, 7)
    check("x = f32[2,5,6,7] input\nm = f32[5] weight\nv = f32[5] weight\ng = f32[5] weight\n"
          "b = f32[5] weight\n"
          "y = f32[2,5,6,7]{output} einsum [n=2,c=5,h=6,w=7] none "
          "add(mul(mul(sub($0,$1),rsqrt(add($2,1e-05))),$3),$4) "
          "(x[n,c,h,w], m[c], v[c], g[c], b[c]) -> [n,c,h,w]",
          {"x": x, "m": bn.running_mean, "v": bn.running_var, "g": bn.weight, "b": bn.bias},
          {"y": bn(x)})


def test_gelu_and_silu():
    x = torch.randn(8, 100) * 3
    check("x = f32[8,100] input\n"
          "g = f32[8,100]{output} einsum [i=8,j=100] none "
          "mul(mul($0,0.5),add(erf(mul($0,0.7071067811865476)),1)) (x[i,j]) -> [i,j]\n"
          "s = f32[8,100]{output} einsum [i=8,j=100] none mul($0,sigmoid($0)) (x[i,j]) -> [i,j]",
          {"x": x}, {"g": F.gelu(x), "s": F.silu(x)})


ATTENTION = """q = f32[{B},{H},{S},{E}] input
k = f32[{B},{H},{S},{E}] input
v = f32[{B},{H},{S},{E}] input
scores = f32[{B},{H},{S},{S}] einsum [b={B},h={H},i={S},j={S},e={E}] sum mul($0,$1) (q[b,h,i,e], k[b,h,j,e]) -> [b,h,i,j] where i >= j
scaled = f32[{B},{H},{S},{S}] einsum [b={B},h={H},i={S},j={S}] none mul($0,{scale}) (scores[b,h,i,j]) -> [b,h,i,j] where i >= j
mx = f32[{B},{H},{S}] einsum [b={B},h={H},i={S},j={S}] max $0 (scaled[b,h,i,j]) -> [b,h,i] where i >= j
ex = f32[{B},{H},{S},{S}] einsum [b={B},h={H},i={S},j={S}] none exp(sub($0,$1)) (scaled[b,h,i,j], mx[b,h,i]) -> [b,h,i,j] where i >= j
sm = f32[{B},{H},{S}] einsum [b={B},h={H},i={S},j={S}] sum $0 (ex[b,h,i,j]) -> [b,h,i] where i >= j
p = f32[{B},{H},{S},{S}] einsum [b={B},h={H},i={S},j={S}] none div($0,$1) (ex[b,h,i,j], sm[b,h,i]) -> [b,h,i,j] where i >= j
o = f32[{B},{H},{S},{E}]{{output}} einsum [b={B},h={H},i={S},j={S},e={E}] sum mul($0,$1) (p[b,h,i,j], v[b,h,j,e]) -> [b,h,i,e] where i >= j
"""


def test_causal_attention_matches_sdpa():
    B, H, S, E = 2, 3, 40, 16
    q, k, v = (torch.randn(B, H, S, E) for _ in range(3))
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    check(ATTENTION.format(B=B, H=H, S=S, E=E, scale=1 / math.sqrt(E)),
          {"q": q, "k": k, "v": v}, {"o": want})


# ---- data movement and opaque ops ------------------------------------------------------------


def test_embedding_is_a_take_gather():
    emb = torch.nn.Embedding(50, 12)
    ids = torch.randint(0, 50, (3, 7))
    check("w = f32[50,12] weight\nids = i64[3,7] input\n"
          "h = f32[3,7,12]{output} move gather {axis=0} (w, ids)",
          {"w": emb.weight, "ids": ids}, {"h": emb(ids)})


def test_gather_elements_and_scatter_add():
    x = torch.randn(4, 9)
    idx = torch.randint(0, 9, (4, 5))
    src = torch.randn(4, 5)
    check("x = f32[4,9] input\ni = i64[4,5] input\ns = f32[4,5] input\n"
          'g = f32[4,5]{output} move gather {axis=1, mode="elements"} (x, i)\n'
          'sa = f32[4,9]{output} move scatter {axis=1, reduce="sum"} (x, i, s)\n'
          "sc = f32[4,9]{output} move scatter {axis=1} (x, i, s)",
          {"x": x, "i": idx, "s": src},
          {"g": torch.gather(x, 1, idx), "sa": x.scatter_add(1, idx, src),
           "sc": _scatter_last_wins(x, 1, idx, src)})


def _scatter_last_wins(x, dim, idx, src):
    """torch.scatter with repeated targets leaves the order unspecified; solar writes in
    row-major order of the index (the last write wins). The same rule, in a Python loop."""
    out = x.clone()
    for pos in np.ndindex(*idx.shape):
        t = list(pos)
        t[dim] = int(idx[pos])
        out[tuple(t)] = src[pos]
    return out


def test_scatter_reduce_amax_and_index_add():
    x = torch.randn(6, 3)
    idx = torch.tensor([[0, 1, 2], [0, 4, 2], [5, 1, 0]])
    src = torch.randn(3, 3)
    rows = torch.tensor([4, 0, 4])
    check("x = f32[6,3] input\ni = i64[3,3] input\ns = f32[3,3] input\nr = i64[3] input\n"
          'mx = f32[6,3]{output} move scatter {axis=0, reduce="max", include_self=0} (x, i, s)\n'
          'ia = f32[6,3]{output} move scatter {axis=0, mode="take", reduce="sum"} (x, r, s)',
          {"x": x, "i": idx, "s": src, "r": rows},
          {"mx": x.scatter_reduce(0, idx, src, "amax", include_self=False),
           "ia": x.index_add(0, rows, src)})


def test_sort_topk_cumsum():
    x = torch.randn(5, 30)
    vals, ids = torch.sort(x, dim=1, descending=True, stable=True)
    tv, ti = torch.topk(x, 4, dim=1)
    opaque = 'vector_flops=0, special_ops=0, bytes=0, assumption="test"'
    check("x = f32[5,30] input\n"
          f'v, i = f32[5,30]{{output}}, i64[5,30]{{output}} opaque "sort" {{{opaque}, axis=1, descending=1}} (x)\n'
          f'tv, ti = f32[5,4]{{output}}, i64[5,4]{{output}} opaque "topk" {{{opaque}, k=4}} (x)\n'
          f'cs = f32[5,30]{{output}} opaque "cumsum" {{{opaque}, axis=1}} (x)\n'
          f'cm, cmi = f32[5,30]{{output}}, i64[5,30]{{output}} opaque "cummax" {{{opaque}, axis=0}} (x)',
          {"x": x},
          {"v": vals, "i": ids, "tv": tv, "ti": ti, "cs": torch.cumsum(x, 1),
           "cm": torch.cummax(x, 0).values, "cmi": torch.cummax(x, 0).indices})


def test_cat_permute_pad_slice():
    a, b = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    cat = torch.cat([a, b], 1)
    check("a = f32[2,3,4] input\nb = f32[2,5,4] input\n"
          "c = f32[2,8,4]{output} move concat {axis=1} (a, b)\n"
          "p = f32[4,2,8]{output} move permute {perm=[2,0,1]} (c)\n"
          "d = f32[2,11,7]{output} move pad {pads=[0,0,2,1,0,3], value=0.5} (c)\n"
          "s = f32[2,3,2]{output} move slice {starts=[0,1,0], ends=[2,8,4], steps=[1,3,2]} (c)\n"
          "r = f32[16,4]{output} move view (c)",
          {"a": a, "b": b},
          {"c": cat, "p": cat.permute(2, 0, 1), "d": F.pad(cat, (0, 3, 2, 1), value=0.5),
           "s": cat[:, 1:8:3, 0:4:2], "r": cat.reshape(16, 4)})


def test_cast_to_bf16_and_int():
    x = torch.randn(50) * 10
    check("x = f32[50] input\nb = bf16[50]{output} move cast (x)\ni = i32[50]{output} move cast (x)",
          {"x": x}, {"b": x.bfloat16(), "i": x.to(torch.int32)})


# ---- validation ------------------------------------------------------------------------------


def test_validate_names_the_planted_wrong_op():
    x = torch.randn(16, 64) * 2
    mx = x.max(-1).values
    e = torch.exp(x - mx[:, None])
    sm = e.sum(-1)
    # The planted bug: the sum-reduce sums squares.
    wrong = SOFTMAX.format(R=16, C=64).replace("sum $0 (e[i,j])", "sum square($0) (e[i,j])")
    g = solar.parse_graph(wrong)
    refs = {"y": torch.softmax(x, -1), "ls": torch.log_softmax(x, -1)}
    r = solar.validate(g, {"x": x}, refs, intermediates={"mx": mx, "e": e, "sm": sm})
    assert not r
    assert r.first_divergent_op == "sm"
    assert r.first_divergent_check.name == "sm"
    assert [c.name for c in r.intermediates] == ["mx", "e", "sm"]
    assert [c.passed for c in r.intermediates] == [True, True, False]
    assert not r.outputs[0].passed and r.outputs[0].mismatches > 0
    assert "first divergent op: 'sm'" in str(r)
    # Without intermediate references the outputs still fail, but no op is named.
    r2 = solar.validate(g, {"x": x}, refs)
    assert not r2 and r2.first_divergent_op is None


def test_validate_passes_a_correct_block():
    ln = torch.nn.LayerNorm(32)
    x = torch.randn(10, 32)
    text = LAYERNORM.format(B=10, D=32)
    r = solar.validate(solar.parse_graph(text), {"x": x, "g": ln.weight, "bt": ln.bias},
                       {"y": ln(x)}, intermediates={"mean": x.mean(-1)})
    assert r and r.passed and r.first_divergent_op is None
    assert "validation passed" in repr(r)
