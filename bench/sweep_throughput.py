#!/usr/bin/env python3
"""`solar sweep`'s throughput (docs/sweep.md, "Throughput"): the same small sweep run on a
local Dask cluster of 1 worker process and of 2, side by side; prints points/s of each
and the ratio.

Each run gets a fresh output folder (nothing is resumed) and its own LocalCluster; the
rate counts the compute phase only (points submitted to the last row back), after the
cluster is up and every worker has imported torch. The cluster start is printed apart, and
so are the mean seconds of one point (its capture + analysis in the worker) and the mean
number of points in flight (their seconds summed over the compute phase): with N workers
it is close to N when the sweep keeps them all busy, and s/point grows instead of
points/s when the cores are shared with other work.

    PYTHONPATH=python .venv/bin/python bench/sweep_throughput.py
    PYTHONPATH=python .venv/bin/python bench/sweep_throughput.py --program examples/torch/mlp.py \\
        --grid batch_size=1,2,4,8,16,32 --grid hidden=64,128 --jobs 1,2,4
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> int:
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from solar.sweep import spec as spec_mod
    from solar.sweep import table
    from solar.sweep.cli import run_sweep

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--program", default=os.path.join(ROOT, "examples/torch/gpt2.py"))
    ap.add_argument("--arch", default="H100_SXM,B200")
    ap.add_argument("--grid", action="append", default=[], metavar="NAME=V1,V2,...",
                    help="default: batch_size=1,2,4,8 and seq_len=16,32,64 (12 points)")
    ap.add_argument("--jobs", default="1,2", help="worker counts to compare (default 1,2)")
    ap.add_argument("--no-cache-aware", action="store_true")
    args = ap.parse_args()
    grid = {}
    for item in args.grid or ["batch_size=1,2,4,8", "seq_len=16,32,64"]:
        name, _, values = item.partition("=")
        grid[name] = [spec_mod.parse_value(v) for v in values.split(",")]
    jobs = [int(j) for j in args.jobs.split(",")]
    archs = args.arch.split(",")
    points = 1
    for v in grid.values():
        points *= len(v)
    print(f"sweep: {os.path.relpath(args.program, ROOT)} x {points} points x {len(archs)} "
          f"devices ({', '.join(archs)}); {os.cpu_count()} cores")
    print(f"{'workers':>7}  {'points':>6}  {'compute s':>9}  {'points/s':>8}  "
          f"{'s/point':>7}  {'in flight':>9}  {'cluster start s':>15}")
    rates = {}
    for n in jobs:
        with tempfile.TemporaryDirectory(prefix="solar-sweep-bench-") as d:
            spec = spec_mod.Spec(programs=[args.program], archs=archs, grid=grid, out=d,
                                 jobs=n, plots=False, cache_aware=not args.no_cache_aware)
            s = run_sweep(spec, quiet=True, checkpoint_s=0)
            rows, _ = table.read(d)
        # Each point's own capture + analysis time (the same on its device rows), and how
        # many points ran at once on average: their sum over the compute phase.
        per_point = {r["point_key"]: r["wall_seconds"] or 0.0 for r in rows}
        busy = sum(per_point.values())
        if s["rows"] != s["ok_rows"]:
            print(f"  {s['rows'] - s['ok_rows']} failed rows: {s['failed'][0]['error']}")
            return 1
        rates[n] = s["computed_points"] / s["compute_seconds"]
        print(f"{n:>7}  {s['computed_points']:>6}  {s['compute_seconds']:>9.2f}  "
              f"{rates[n]:>8.2f}  {busy / len(per_point):>7.2f}  "
              f"{busy / s['compute_seconds']:>9.2f}  {s['cluster_seconds']:>15.2f}")
    base = rates[jobs[0]]
    for n in jobs[1:]:
        print(f"ratio {n} workers / {jobs[0]}: {rates[n] / base:.2f}x")
    return 0


if __name__ == "__main__":  # the workers are spawned processes: they re-import this file
    sys.exit(main())
