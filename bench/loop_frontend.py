#!/usr/bin/env python3
"""The loop frontend's speed on a program of 1,000 kernels (bench/README.md): parsing,
recording (the model interpreted, kernels specialized), lifting (C++), and analysis, each
timed, side by side with the same network written in PyTorch through the torch frontend.

The program: a chain of KERNELS distinct @kernel functions (or, with --calls, one @kernel
called KERNELS times from a static loop of model()), each a linear layer (a GEMM nest
accumulating into a scratch tensor) followed by a ReLU nest, batch 8, width 64, fp32 — so
2 nests per kernel, and 4 graph ops with the free view of the layer's weights. The PyTorch
twin is nn.Sequential of the same layers,
captured on fake tensors.

Target: parse + record + lift + analyze (cost, the unfused and fused levels) of 1,000
kernels under 1 s (median over trials), the convention of bench_analyze_100k. The analysis
with the cache-aware level and the ski-slope is timed and printed beside it: its cost is the
segmentation search over the whole graph, the same for every frontend.

    python bench/loop_frontend.py                 # 1,000 kernels, 3 trials
    python bench/loop_frontend.py --kernels 2000 --trials 5
    python bench/loop_frontend.py --check         # exit 1 when the total misses 1 s
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

from solar import _core
from solar.frontends.loopir import program as loop_program
from solar.frontends.torch.program import lower_trace
from solar.report import Report

TARGET_S = 1.0
B, D = 8, 64


def loop_source(kernels: int, distinct: bool) -> str:
    """The chain of `kernels` linear + ReLU kernels: each a @kernel of its own (distinct), or
    one @kernel called `kernels` times from a static loop of model() (a deep model's shape)."""
    out = ['"""A chain of linear + ReLU kernels (bench/loop_frontend.py)."""',
           "from solar.loopir import Tensor, kernel, relu", "", f"B, D, L = {B}, {D}, {kernels}",
           'x = Tensor("B,D", role="input")', 'W = Tensor("L,D,D", role="weight")',
           'y = Tensor("B,D", role="output")', ""]
    names = [f"layer{k}" for k in range(kernels)] if distinct else ["layer"]
    for name in names:
        out += ["@kernel", f"def {name}(h, w, o):", '    acc = Tensor("B,D")',
                "    for b in range(B):", "        for n in range(D):",
                "            for i in range(D):", "                acc[b, n] += h[b, i] * w[i, n]",
                "    for b in range(B):", "        for n in range(D):",
                "            o[b, n] = relu(acc[b, n])", ""]
    out += ["def model():", "    h = x"]
    if distinct:
        for k in range(kernels - 1):
            out += ['    o = Tensor("B,D")', f"    layer{k}(h, W[{k}], o)", "    h = o"]
        out += [f"    layer{kernels - 1}(h, W[{kernels - 1}], y)"]
    else:
        out += ["    for l in range(L - 1):", '        o = Tensor("B,D")',
                "        layer(h, W[l], o)", "        h = o", "    layer(h, W[L - 1], y)"]
    return "\n".join(out) + "\n"


def time_analysis(graph, archs, t: dict) -> None:
    """analyze: cost, the unfused and fused levels; cache-aware: the same with the cache-aware
    level and the ski-slope on (reported beside, not in the target: bench_analyze_100k's
    convention)."""
    t0 = time.perf_counter()
    Report(_core.analyze(graph, archs, "pytorch-default", "cold", "attainable", False))
    t["analyze"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    Report(_core.analyze(graph, archs, "pytorch-default", "cold", "attainable", True))
    t["with cache-aware"] = time.perf_counter() - t0
    t["ops"] = len(graph.ops)


def time_loop(path: str, archs) -> dict:
    t = {}
    t0 = time.perf_counter()
    lp = loop_program.load(path)  # parse + record
    t["parse + record"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    graph, _ = loop_program.lift(lp)
    t["lift"] = time.perf_counter() - t0
    time_analysis(graph, archs, t)
    return t


def time_torch(kernels: int, archs) -> dict:
    import torch
    import torch.nn as nn
    from torch._subclasses.fake_tensor import FakeTensorMode

    from solar.frontends.torch.capture import capture

    t = {}
    t0 = time.perf_counter()
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    with mode:
        model = nn.Sequential(*[m for _ in range(kernels)
                                for m in (nn.Linear(D, D, bias=False), nn.ReLU())])
        x = torch.empty(B, D)
    trace = capture(model, x, name="chain", _fake_mode=mode)
    t["capture"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    graph, _, _ = lower_trace(trace, "<bench>", False)
    t["lower"] = time.perf_counter() - t0
    time_analysis(graph, archs, t)
    return t


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kernels", type=int, default=1000)
    p.add_argument("--calls", action="store_true",
                   help="one kernel called KERNELS times (default: KERNELS distinct kernels)")
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--arch", default="H100_SXM")
    p.add_argument("--no-torch", action="store_true", help="skip the PyTorch side")
    p.add_argument("--check", action="store_true",
                   help=f"exit 1 when the total misses {TARGET_S} s")
    a = p.parse_args(argv)
    archs = a.arch.split(",")
    source = loop_source(a.kernels, distinct=not a.calls)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "chain.py")
        with open(path, "w") as f:
            f.write(source)
        loops = [time_loop(path, archs) for _ in range(a.trials)]
    torches = [] if a.no_torch else [time_torch(a.kernels, archs) for _ in range(a.trials)]

    def med(rows, key):
        return statistics.median(r[key] for r in rows)

    phases = ("parse + record", "lift", "analyze")
    total = statistics.median(sum(r[k] for k in phases) for r in loops)
    what = "calls of one kernel" if a.calls else "distinct kernels"
    print(f"loop program: {a.kernels} {what}, {loops[0]['ops']} graph ops, {a.trials} trials "
          f"(median seconds; cold first trial {sum(loops[0][k] for k in phases):.3f})")
    for k in phases:
        print(f"  {k:<18} {med(loops, k):8.3f}")
    print(f"  {'total':<18} {total:8.3f}   target < {TARGET_S:g} s: "
          f"{'met' if total < TARGET_S else 'MISSED'}")
    print(f"  {'with cache-aware':<18} {med(loops, 'with cache-aware'):8.3f}   (the analysis with "
          "the cache-aware level and ski-slope, instead of `analyze`)")
    if torches:
        tphases = ("capture", "lower", "analyze")
        ttotal = statistics.median(sum(r[k] for k in tphases) for r in torches)
        print(f"the same network in PyTorch ({torches[0]['ops']} graph ops, fake-tensor capture):")
        for k in tphases:
            print(f"  {k:<18} {med(torches, k):8.3f}")
        print(f"  {'total':<18} {ttotal:8.3f}")
        print(f"  {'with cache-aware':<18} {med(torches, 'with cache-aware'):8.3f}")
        to_graph = med(loops, "parse + record") + med(loops, "lift")
        torch_to_graph = med(torches, "capture") + med(torches, "lower")
        print(f"loop / PyTorch frontend, same run: {total / ttotal:.2f}x (totals), "
              f"{to_graph / torch_to_graph:.2f}x (program to graph)")
    return 1 if a.check and total >= TARGET_S else 0


if __name__ == "__main__":
    sys.exit(main())
