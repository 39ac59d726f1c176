#!/usr/bin/env python3
"""The executor against PyTorch eager on the CPU, side by side (bench/README.md).

Each workload is written as an einsum graph (composite ops decomposed as lowering would) and
as the same computation in idiomatic PyTorch eager; both run on the same inputs with the same
thread count, in interleaved trials after warm-ups, and the script prints the minimum and
median seconds of each and the ratio solar/torch against the target (2x; 3x for the
transformer block). Outputs are validated (solar.validate) before timing.

    python bench/exec_vs_torch.py                      # every workload, all cores
    python bench/exec_vs_torch.py --only matmul,conv --trials 9 --threads 2
    python bench/exec_vs_torch.py --check              # exit 1 when a ratio misses its target
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import solar


class Workload:
    def __init__(self, name, what, text, inputs, torch_fn, target, outputs):
        self.name, self.what, self.text = name, what, text
        self.inputs, self.torch_fn, self.target, self.outputs = inputs, torch_fn, target, outputs


def matmul(n=2048):
    a, b = torch.randn(n, n), torch.randn(n, n)
    text = (f"a = f32[{n},{n}] input\nb = f32[{n},{n}] input\n"
            f'c = f32[{n},{n}]{{output}} einsum "mk,kn->mn" (a, b)')
    return Workload("matmul", f"{n}^3 fp32 matmul", text, {"a": a, "b": b},
                    lambda a, b: {"c": torch.mm(a, b)}, 2.0, ["c"])


def conv(n=8, c=128, k=128, h=56, w=56):
    x, wt = torch.randn(n, c, h, w), torch.randn(k, c, 3, 3) * 0.05
    text = (f"x = f32[{n},{c},{h},{w}] input\nw = f32[{k},{c},3,3] weight\n"
            f"y = f32[{n},{k},{h},{w}]{{output}} einsum [n={n},k={k},p={h},q={w},c={c},r=3,s=3] "
            "sum mul($0,$1) (x[n,c,p+r-1,q+s-1] pad 0, w[k,c,r,s]) -> [n,k,p,q]")
    return Workload("conv", f"ResNet 3x3 conv N={n} C=K={c} {h}x{w} pad 1", text,
                    {"x": x, "w": wt}, lambda x, w: {"y": F.conv2d(x, w, padding=1)}, 2.0, ["y"])


def softmax(r=4096, c=4096):
    x = torch.randn(r, c) * 3
    text = f"""x = f32[{r},{c}] input
mx = f32[{r}] einsum [i={r},j={c}] max $0 (x[i,j]) -> [i]
e = f32[{r},{c}] einsum [i={r},j={c}] none exp(sub($0,$1)) (x[i,j], mx[i]) -> [i,j]
sm = f32[{r}] einsum [i={r},j={c}] sum $0 (e[i,j]) -> [i]
y = f32[{r},{c}]{{output}} einsum [i={r},j={c}] none div($0,$1) (e[i,j], sm[i]) -> [i,j]
"""
    return Workload("softmax", f"softmax over {r}x{c} f32 (max, exp, sum, divide)", text,
                    {"x": x}, lambda x: {"y": torch.softmax(x, -1)}, 2.0, ["y"])


def layernorm(r=4096, d=4096):
    x, g, b = torch.randn(r, d) * 2 + 1, torch.randn(d), torch.randn(d)
    text = f"""x = f32[{r},{d}] input
g = f32[{d}] weight
b = f32[{d}] weight
sum = f32[{r}] einsum "rd->r" (x)
mean = f32[{r}] einsum [r={r}] none div($0,{d}) (sum[r]) -> [r]
xc = f32[{r},{d}] einsum [r={r},d={d}] none sub($0,$1) (x[r,d], mean[r]) -> [r,d]
ssq = f32[{r}] einsum [r={r},d={d}] sum square($0) (xc[r,d]) -> [r]
rstd = f32[{r}] einsum [r={r}] none rsqrt(add(div($0,{d}),1e-05)) (ssq[r]) -> [r]
y = f32[{r},{d}]{{output}} einsum [r={r},d={d}] none add(mul(mul($0,$1),$2),$3) (xc[r,d], rstd[r], g[d], b[d]) -> [r,d]
"""
    return Workload("layernorm", f"layer norm over {r}x{d} f32 (mean, center, variance, "
                    "normalize+affine)", text, {"x": x, "g": g, "b": b},
                    lambda x, g, b: {"y": F.layer_norm(x, (d,), g, b, 1e-5)}, 2.0, ["y"])


def block(B=1, S=512, D=512, H=8, Fm=2048):
    """examples/transformer_block.solar in f32 and smaller: pre-norm causal attention + GELU
    MLP, with residuals."""
    E = D // H
    p = {
        "x": torch.randn(B, S, D),
        "g1": 1 + 0.1 * torch.randn(D), "b1": 0.1 * torch.randn(D),
        "wq": torch.randn(D, H, E) / math.sqrt(D), "wk": torch.randn(D, H, E) / math.sqrt(D),
        "wv": torch.randn(D, H, E) / math.sqrt(D), "wo": torch.randn(H, E, D) / math.sqrt(D),
        "g2": 1 + 0.1 * torch.randn(D), "b2": 0.1 * torch.randn(D),
        "w1": torch.randn(D, Fm) / math.sqrt(D), "w2": torch.randn(Fm, D) / math.sqrt(Fm),
    }

    def ln(n, src):
        return f"""{n}_sum = f32[{B},{S}] einsum "bsd->bs" ({src})
{n}_mean = f32[{B},{S}] einsum [b={B},s={S}] none div($0,{D}) ({n}_sum[b,s]) -> [b,s]
{n}_xc = f32[{B},{S},{D}] einsum [b={B},s={S},d={D}] none sub($0,$1) ({src}[b,s,d], {n}_mean[b,s]) -> [b,s,d]
{n}_ssq = f32[{B},{S}] einsum [b={B},s={S},d={D}] sum square($0) ({n}_xc[b,s,d]) -> [b,s]
{n}_rstd = f32[{B},{S}] einsum [b={B},s={S}] none rsqrt(add(div($0,{D}),1e-05)) ({n}_ssq[b,s]) -> [b,s]
{n}_out = f32[{B},{S},{D}] einsum [b={B},s={S},d={D}] none add(mul(mul($0,$1),$2),$3) ({n}_xc[b,s,d], {n}_rstd[b,s], g{n[-1]}[d], b{n[-1]}[d]) -> [b,s,d]
"""

    text = f"""x = f32[{B},{S},{D}] input
g1 = f32[{D}] weight
b1 = f32[{D}] weight
wq = f32[{D},{H},{E}] weight
wk = f32[{D},{H},{E}] weight
wv = f32[{D},{H},{E}] weight
wo = f32[{H},{E},{D}] weight
g2 = f32[{D}] weight
b2 = f32[{D}] weight
w1 = f32[{D},{Fm}] weight
w2 = f32[{Fm},{D}] weight
{ln("ln1", "x")}q = f32[{B},{H},{S},{E}] einsum "bsd,dhe->bhse" (ln1_out, wq)
k = f32[{B},{H},{S},{E}] einsum "bsd,dhe->bhse" (ln1_out, wk)
v = f32[{B},{H},{S},{E}] einsum "bsd,dhe->bhse" (ln1_out, wv)
scores = f32[{B},{H},{S},{S}] einsum [b={B},h={H},i={S},j={S},e={E}] sum mul($0,$1) (q[b,h,i,e], k[b,h,j,e]) -> [b,h,i,j] where i >= j
scaled = f32[{B},{H},{S},{S}] einsum [b={B},h={H},i={S},j={S}] none mul($0,{1 / math.sqrt(E)}) (scores[b,h,i,j]) -> [b,h,i,j] where i >= j
sm_max = f32[{B},{H},{S}] einsum [b={B},h={H},i={S},j={S}] max $0 (scaled[b,h,i,j]) -> [b,h,i] where i >= j
sm_exp = f32[{B},{H},{S},{S}] einsum [b={B},h={H},i={S},j={S}] none exp(sub($0,$1)) (scaled[b,h,i,j], sm_max[b,h,i]) -> [b,h,i,j] where i >= j
sm_sum = f32[{B},{H},{S}] einsum [b={B},h={H},i={S},j={S}] sum $0 (sm_exp[b,h,i,j]) -> [b,h,i] where i >= j
probs = f32[{B},{H},{S},{S}] einsum [b={B},h={H},i={S},j={S}] none div($0,$1) (sm_exp[b,h,i,j], sm_sum[b,h,i]) -> [b,h,i,j] where i >= j
ctx = f32[{B},{H},{S},{E}] einsum [b={B},h={H},i={S},j={S},e={E}] sum mul($0,$1) (probs[b,h,i,j], v[b,h,j,e]) -> [b,h,i,e] where i >= j
attn = f32[{B},{S},{D}] einsum "bhse,hed->bsd" (ctx, wo)
h1 = f32[{B},{S},{D}] einsum [b={B},s={S},d={D}] none add($0,$1) (x[b,s,d], attn[b,s,d]) -> [b,s,d]
{ln("ln2", "h1")}up = f32[{B},{S},{Fm}] einsum "bsd,df->bsf" (ln2_out, w1)
act = f32[{B},{S},{Fm}] einsum [b={B},s={S},f={Fm}] none mul(mul($0,0.5),add(erf(mul($0,0.7071067811865476)),1)) (up[b,s,f]) -> [b,s,f]
down = f32[{B},{S},{D}] einsum "bsf,fd->bsd" (act, w2)
out = f32[{B},{S},{D}]{{output}} einsum [b={B},s={S},d={D}] none add($0,$1) (h1[b,s,d], down[b,s,d]) -> [b,s,d]
"""

    def torch_block(x, g1, b1, wq, wk, wv, wo, g2, b2, w1, w2):
        a = F.layer_norm(x, (D,), g1, b1, 1e-5)
        a2 = a.reshape(B * S, D)
        q = (a2 @ wq.reshape(D, D)).view(B, S, H, E).transpose(1, 2)
        k = (a2 @ wk.reshape(D, D)).view(B, S, H, E).transpose(1, 2)
        v = (a2 @ wv.reshape(D, D)).view(B, S, H, E).transpose(1, 2)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        h1 = x + (o.transpose(1, 2).reshape(B * S, D) @ wo.reshape(D, D)).view(B, S, D)
        m = F.layer_norm(h1, (D,), g2, b2, 1e-5).reshape(B * S, D)
        return {"out": h1 + (F.gelu(m @ w1) @ w2).view(B, S, D)}

    return Workload("block", f"transformer block f32 B={B} S={S} D={D} H={H} F={Fm} (causal)",
                    text, p, torch_block, 3.0, ["out"])


WORKLOADS = {"matmul": matmul, "conv": conv, "softmax": softmax, "layernorm": layernorm,
             "block": block}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated workloads")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--trials", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--check", action="store_true", help="exit 1 when a ratio misses its target")
    args = ap.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    print(f"solar {solar.__version__} vs torch {torch.__version__} (CPU eager), "
          f"{args.threads} threads each, {args.trials} interleaved trials after {args.warmup} "
          "warm-ups; ratio = solar / torch (median; min in brackets)\n")
    print(f"{'workload':<10} {'solar min':>10} {'median':>10} {'torch min':>10} {'median':>10} "
          f"{'ratio':>14} {'target':>7}")
    missed = []
    for name in args.only.split(","):
        wl = WORKLOADS[name.strip()]()
        g = solar.parse_graph(wl.text)
        names = list(wl.inputs)
        arrays = {n: wl.inputs[n].contiguous() for n in names}

        def run_solar(g=g, arrays=arrays):
            return solar.run(g, arrays, threads=args.threads)

        def run_torch(wl=wl, names=names):
            with torch.inference_mode():
                return wl.torch_fn(*(wl.inputs[n] for n in names))

        ref = run_torch()
        check = solar.validate(g, arrays, {o: ref[o] for o in wl.outputs}, threads=args.threads)
        if not check:
            print(f"{name}: outputs differ from torch:\n{check}", file=sys.stderr)
            return 1
        for _ in range(args.warmup):
            run_solar()
            run_torch()
        ts, tt = [], []
        for _ in range(args.trials):  # interleaved, so drift affects both alike
            t0 = time.perf_counter()
            run_solar()
            t1 = time.perf_counter()
            run_torch()
            t2 = time.perf_counter()
            ts.append(t1 - t0)
            tt.append(t2 - t1)
        ratio = statistics.median(ts) / statistics.median(tt)
        ratio_min = min(ts) / min(tt)
        ok = ratio <= wl.target
        if not ok:
            missed.append(name)
        print(f"{name:<10} {min(ts):>10.4f} {statistics.median(ts):>10.4f} {min(tt):>10.4f} "
              f"{statistics.median(tt):>10.4f} {ratio:>6.2f}x [{ratio_min:4.2f}x] "
              f"{'<= ' + format(wl.target, 'g') + 'x':>7} {'ok' if ok else 'MISSED'}   "
              f"{wl.what}")
    if missed:
        print(f"\nmissed the target: {', '.join(missed)}")
    return 1 if (args.check and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
