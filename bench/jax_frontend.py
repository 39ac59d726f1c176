#!/usr/bin/env python3
"""The JAX frontend end to end on a 12-layer Flax transformer encoder (bench/README.md):
capture (jaxpr on abstract values), lower (C++ jax table), analyze (cost + bounds), each
timed (wall) plus the process's CPU seconds; target: the three together under 5 s.

    python bench/jax_frontend.py                       # 12 layers, d_model 768, seq 512
    python bench/jax_frontend.py --layers 24 --check   # exit 1 when the target is missed
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--target", type=float, default=5.0, help="seconds")
    p.add_argument("--check", action="store_true")
    a = p.parse_args(argv)

    import flax.linen as nn
    import jax
    import numpy as np

    import solar
    from solar import _core
    from solar.frontends.jax.capture import capture
    from solar.frontends.torch.program import lower_trace

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            h = nn.LayerNorm()(x)
            x = x + nn.MultiHeadDotProductAttention(num_heads=a.heads)(h, h)
            h = nn.LayerNorm()(x)
            return x + nn.Dense(a.dim)(nn.gelu(nn.Dense(4 * a.dim)(h)))

    class Encoder(nn.Module):
        @nn.compact
        def __call__(self, x):
            for _ in range(a.layers):
                x = Block()(x)
            return x

    model = Encoder()
    x = jax.ShapeDtypeStruct((a.batch, a.seq, a.dim), np.float32)
    c0 = time.process_time()
    t0 = time.perf_counter()
    params = jax.eval_shape(model.init, jax.random.PRNGKey(0), x)
    c = capture(model.apply, params, x, param_argnums=(0,), values=False, name="encoder")
    t1 = time.perf_counter()
    graph, notes, _ = lower_trace(c.trace, "<bench>", False)
    t2 = time.perf_counter()
    report = solar.Report(_core.analyze(graph, ["H100_SXM"], "pytorch-default", "cold"))
    t3 = time.perf_counter()
    cpu = time.process_time() - c0  # this process's CPU seconds: robust to a busy machine
    total = t3 - t0
    B, S, D, L = a.batch, a.seq, a.dim, a.layers
    want = L * (12 * B * S * D * D + 2 * B * S * S * D)
    macs = int(report.totals.macs)
    out = {"layers": L, "ops": len(c.trace["ops"]), "graph_ops": len(graph.ops),
           "capture_s": round(t1 - t0, 3), "lower_s": round(t2 - t1, 3),
           "analyze_s": round(t3 - t2, 3), "total_s": round(total, 3), "cpu_s": round(cpu, 3), "target_s": a.target,
           "macs": macs, "macs_formula_ok": macs == want, "unanalyzed": len(notes)}
    print(json.dumps(out, indent=2))
    ok = total <= a.target and macs == want and not notes
    return 0 if ok or not a.check else 1


if __name__ == "__main__":
    sys.exit(main())
