"""Loops stay loops: capture + analysis of a recurrent program as one repeat op per layer
and direction against its unrolled form, side by side (bench/README.md).

Prints, measured in one run:
- a 2-layer bidirectional LSTM of 512 steps (bench/programs/lstm_bidirectional.py):
  `solar analyze` wall time and op count as repeat ops and with `--unroll`, and the ratio;
  the totals of both forms: equal but for the in-place gate writes of torch's LSTM cell,
  which the step-by-step capture records as as_strided_scatter ops (4 per step, layer and
  direction, each B*H i64 FLOPs and 24*B*H unfused bytes: docs/torch-frontend.md,
  "Recurrent layers");
- startup (bench/startup.py): `solar --help` and a one-op `solar analyze`, in a fresh
  process and with a server running (docs/server.md);
- with --suite DIR (KernelBench's level1..level3 folders, or any folder of programs):
  `solar suite DIR --jobs 2` at default options, its wall time and its slowest program and
  largest peak memory against the targets (120 s; 10 s and 2 GB per program).

    .venv/bin/python bench/loops.py
    .venv/bin/python bench/loops.py --suite /tmp/kb/KernelBench --check
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LSTM = os.path.join(ROOT, "bench", "programs", "lstm_bidirectional.py")
TOTALS = ("macs", "vector_flops", "special_ops", "bytes_unfused", "bytes_fused")
# bench/programs/lstm_bidirectional.py's sizes: steps, layers, directions, batch, hidden.
T, L, D, B, H = 512, 2, 2, 10, 256
SCATTERS = 4 * T * L * D  # the unrolled capture's as_strided_scatter ops


def expected_difference(key: str) -> int:
    """unrolled - repeat for a total (docs/torch-frontend.md, "Recurrent layers")."""
    return {"vector_flops": SCATTERS * B * H, "bytes_unfused": 24 * SCATTERS * B * H}.get(key, 0)


def analyze(python: str, extra: List[str], env: Dict[str, str]) -> Tuple[float, Dict[str, Any]]:
    """Wall seconds of `solar analyze LSTM --json F` (default options) and its report."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        start = time.perf_counter()
        done = subprocess.run([python, "-m", "solar", "analyze", LSTM, "--json", out] + extra,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            sys.exit(f"loops: analyze {' '.join(extra)} failed:\n{done.stderr[-2000:]}")
        with open(out) as f:
            return seconds, json.load(f)


def lstm_table(python: str, reps: int, env: Dict[str, str]) -> bool:
    runs: Dict[str, List[float]] = {"repeat": [], "unrolled": []}
    reports: Dict[str, Dict[str, Any]] = {}
    for _ in range(reps):  # alternating, so a load change touches both forms alike
        for form, extra in (("repeat", []), ("unrolled", ["--unroll"])):
            seconds, reports[form] = analyze(python, extra, env)
            runs[form].append(seconds)
    print(f"2-layer bidirectional LSTM, 512 steps ({os.path.relpath(LSTM, ROOT)}), "
          f"solar analyze at default options, best of {reps}")
    print(f"  {'form':<10} {'ops':>8} {'seconds':>9}")
    for form in runs:
        print(f"  {form:<10} {len(reports[form]['ops']):>8} {min(runs[form]):>9.2f}")
    ratio = min(runs["unrolled"]) / min(runs["repeat"])
    print(f"  unrolled / repeat: {ratio:.1f}x")
    same = True
    for key in TOTALS:
        a, b = reports["repeat"]["totals"].get(key), reports["unrolled"]["totals"].get(key)
        want = expected_difference(key)
        ok = b - a == want
        mark = ("equal" if want == 0 else f"unrolled + {want} (the scatters)") if ok \
            else f"UNEXPECTED: unrolled - repeat = {b - a}, expected {want}"
        same = same and ok
        print(f"  totals.{key:<14} repeat {a:>14}  unrolled {b:>14}  {mark}")
    return same


def suite_table(python: str, folder: str, env: Dict[str, str]) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "suite.json")
        start = time.perf_counter()
        done = subprocess.run([python, "-m", "solar", "suite", folder, "--jobs", "2", "--json",
                               out, "--quiet"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            sys.exit(f"loops: suite failed:\n{done.stderr[-2000:]}")
        with open(out) as f:
            summary = json.load(f)["summary"]
    slow, big = summary.get("slowest") or {}, summary.get("largest_memory") or {}
    print(f"\nsolar suite {folder} --jobs 2 (default options)")
    print(f"  programs {summary['programs']}, analyzed {summary['analyzed']}, "
          f"failures {sum(summary['failures'].values())}")
    print(f"  {'measure':<22} {'value':>10} {'target':>8} {'ratio':>7}")
    rows = [("wall (s)", wall, 120.0),
            ("slowest program (s)", slow.get("wall_seconds", float("nan")), 10.0),
            ("largest memory (GB)", slow and big.get("peak_rss_bytes", float("nan")) / 1e9, 2.0)]
    ok = True
    for label, value, target in rows:
        print(f"  {label:<22} {value:>10.2f} {target:>8.1f} {value / target:>7.2f}")
        ok = ok and value <= target
    print(f"  slowest: {slow.get('source', '?')}\n  largest: {big.get('source', '?')}")
    return ok and summary["analyzed"] == summary["programs"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1, help="repetitions of the LSTM pair")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--suite", metavar="DIR", help="also run `solar suite DIR --jobs 2`")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when the totals differ or a target is missed")
    args = parser.parse_args()
    env = dict(os.environ, SOLAR_NO_SERVER="1")  # each command in its own process
    ok = lstm_table(args.python, args.reps, env)
    print()
    startup = subprocess.run([args.python, os.path.join(ROOT, "bench", "startup.py"), "--reps",
                              "3", "--python", args.python] + (["--check"] if args.check else []),
                             env=env)
    ok = ok and startup.returncode == 0
    if args.suite:
        ok = suite_table(args.python, args.suite, env) and ok
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
