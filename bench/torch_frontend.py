#!/usr/bin/env python3
"""The PyTorch frontend's speed on a GPT-2-small-shaped model (bench/README.md): capture on
fake tensors, lowering, and analysis, each timed, against running the model once eagerly on
real tensors on this CPU.

The model (written here, nn modules) is GPT-2 small: 12 layers, d_model 768, 12 heads, MLP
3072, vocabulary 50257, sequence 1024, batch 1, fp32, tied language-model head. Phases:

- build:   the model's modules constructed under FakeTensorMode (no weight memory);
- capture: the aten-level recording of one forward pass on fake tensors (OpTrace dict);
- lower:   the OpTrace to an EinsumGraph by the C++ aten table (incl. the JSON hand-over);
- analyze: cost, bounds on the device(s) and the report object.

Target: build + capture + lower + analyze under 5 s (median over trials; the first, cold
trial is printed too). The capture overhead is the capture time
over one eager forward pass on real tensors (torch.no_grad, same thread count); the script
also times a capture on real tensors, whose excess over eager is the recorder's own cost.

    python bench/torch_frontend.py                     # 3 trials, every core
    python bench/torch_frontend.py --threads 2 --trials 5 --layers 2
    python bench/torch_frontend.py --check             # exit 1 when the total misses 5 s
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

import solar
from solar import _core
from solar.frontends.torch import capture
from solar.frontends.torch.program import lower_trace
from solar.report import Report

TARGET_S = 5.0


class Block(nn.Module):
    def __init__(self, d: int, heads: int, mlp: int):
        super().__init__()
        self.h = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, mlp), nn.Linear(mlp, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, vocab: int, ctx: int, d: int, heads: int, mlp: int, layers: int):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads, mlp) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)

    def forward(self, tokens):
        x = self.tok(tokens) + self.pos(torch.arange(tokens.shape[1], device=tokens.device))
        for blk in self.blocks:
            x = blk(x)
        return F.linear(self.ln_f(x), self.tok.weight)  # tied head: [batch, seq, vocab]


def expected_macs(a) -> int:
    """GPT-2's MACs: per layer qkv B*T*D*3D + causal attention 2*B*H*(T(T+1)/2)*(D/H)
    + projection B*T*D*D + MLP 2*B*T*D*F; plus the head B*T*D*V."""
    B, T, D, F_, V = a.batch, a.seq, a.d_model, a.mlp, a.vocab
    layer = B * T * D * 3 * D + B * D * T * (T + 1) + B * T * D * D + 2 * B * T * D * F_
    return a.layers * layer + B * T * D * V


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--arch", default="H100_SXM", help="comma-separated device ids")
    ap.add_argument("--check", action="store_true",
                    help=f"exit 1 when the total misses {TARGET_S:g} s")
    args = ap.parse_args()
    args.d_model, args.heads, args.mlp, args.vocab = 768, 12, 3072, 50257
    archs = args.arch.split(",")
    dims = (args.vocab, args.seq, args.d_model, args.heads, args.mlp, args.layers)

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    print(f"solar {solar.__version__}, torch {torch.__version__} (CPU), {args.threads} threads; "
          f"GPT-2 small shape: {args.layers} layers, d_model {args.d_model}, {args.heads} heads, "
          f"MLP {args.mlp}, vocab {args.vocab}, seq {args.seq}, batch {args.batch}, fp32; "
          f"{args.trials} trials (first, min and median seconds)\n")

    phases = {k: [] for k in ("build", "capture", "lower", "analyze", "eager", "real capture")}
    report = ops = None
    for _ in range(args.trials):
        t0 = time.perf_counter()
        mode = FakeTensorMode(allow_non_fake_inputs=True)
        with mode:
            model = GPT2(*dims).eval()
            tokens = torch.randint(0, args.vocab, (args.batch, args.seq))
        t1 = time.perf_counter()
        trace = capture(model, tokens, name="gpt2", _fake_mode=mode)
        t2 = time.perf_counter()
        graph, _, _ = lower_trace(trace, "gpt2", False)
        t3 = time.perf_counter()
        report = Report(_core.analyze(graph, archs, "pytorch-default", "cold"))
        t4 = time.perf_counter()
        for k, dt in zip(("build", "capture", "lower", "analyze"),
                         (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            phases[k].append(dt)
        ops = (len(trace["ops"]), len(graph.ops), len(json.dumps(trace)))
        del model, trace, graph

    # The same model on real tensors: one eager forward, then one capture on real tensors.
    real = GPT2(*dims).eval()
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq))
    with torch.no_grad():
        real(tokens)  # warm-up (allocator, kernels)
    for _ in range(args.trials):
        t0 = time.perf_counter()
        with torch.no_grad():
            real(tokens)
        t1 = time.perf_counter()
        capture(real, tokens, name="gpt2", fake=False)
        t2 = time.perf_counter()
        phases["eager"].append(t1 - t0)
        phases["real capture"].append(t2 - t1)

    def med(k):
        return statistics.median(phases[k])

    print(f"{'phase':<14} {'first s':>8} {'min s':>8} {'median s':>9}")
    for k, v in phases.items():
        print(f"{k:<14} {v[0]:>8.3f} {min(v):>8.3f} {statistics.median(v):>9.3f}")
    total = med("build") + med("capture") + med("lower") + med("analyze")
    ok = total <= TARGET_S
    print(f"\naten ops captured {ops[0]}, graph ops {ops[1]}, OpTrace JSON {ops[2] / 1e6:.1f} MB; "
          f"coverage {report.coverage.analyzed}/{report.coverage.ops} analyzed")
    macs, want = report.totals.macs, expected_macs(args)
    print(f"MACs {macs} ({'=' if macs == want else '!='} formula {want})")
    cold = sum(phases[k][0] for k in ("build", "capture", "lower", "analyze"))
    print(f"build + capture + lower + analyze (median): {total:.3f} s   target <= {TARGET_S:g} s "
          f"{'ok' if ok else 'MISSED'}")
    print(f"the same, first trial: {cold:.3f} s (cold: FakeTensorMode's first construction "
          "imports torch._dynamo, and torch's dispatch caches are empty)")
    print(f"capture (fake) / eager forward:      {med('capture') / med('eager'):.2f}x "
          f"(build + capture: {(med('build') + med('capture')) / med('eager'):.2f}x)")
    print(f"capture (real tensors) / eager:      {med('real capture') / med('eager'):.2f}x")
    if macs != want or not report.coverage.complete:
        print("the analysis does not match the model (MACs or coverage)", file=sys.stderr)
        return 1
    return 1 if (args.check and not ok) else 0


if __name__ == "__main__":
    sys.exit(main())
