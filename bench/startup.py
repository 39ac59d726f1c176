"""Startup: the wall time of short `solar` commands, side by side (bench/README.md).

Each command runs as a fresh process (the installed package or PYTHONPATH, as the caller
has it), the commands alternating within each repetition so that a load change on the
machine touches all of them alike; the table gives the median and the minimum of the
repetitions, the target, and median/target.

| command | what it pays | target |
| --- | --- | --- |
| `solar --help` | the interpreter, Solar's own imports | 0.3 s |
| `python -c "import solar.cli"` | the same, without printing | 0.3 s |
| `solar analyze` one PyTorch op | + torch, the capture, the cross-check, the exit | 2.5 s |
| `solar analyze` one JAX op | + jax, the trace, the exit | 2.5 s |
| `python -c "import torch"` | torch's own import and the interpreter's teardown | none |
| the same, ending with `os._exit` | torch's own import: the floor of the torch rows | none |
| `solar analyze` one PyTorch op, server running | the interpreter, Solar's imports, a fork | 2.5 s |
| `solar analyze` one JAX op, server running | the same | 2.5 s |

The rows without a server run with SOLAR_NO_SERVER=1 (docs/server.md). For the rows with
one, a server of the bench's environment is started first (its start, which imports torch
and JAX, is printed below the table) and stopped at the end.

The machine is shared: `import torch` alone moves between about 2.1 and 3.7 s with the
host's load, and every torch row with it; the last column of the torch rows is also given
over that floor (what Solar adds). `solar` ends without the interpreter's teardown
(solar.cli.exit_without_teardown), which after `import torch` costs 0.8-1.5 s.

    .venv/bin/python bench/startup.py                 # 5 repetitions
    .venv/bin/python bench/startup.py --reps 9 --check  # exit 1 when a median misses
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = os.path.join(ROOT, "bench", "programs")
# The floor of the torch rows: torch's import and nothing else, the process ending as
# `solar` ends it (without the interpreter's teardown, which a plain `import torch` pays).
FLOOR = "import torch, no teardown"


def commands(python: str) -> List[Tuple[str, List[str], Optional[float], bool]]:
    """(label, argv, target seconds or None, run with a server?) of each measured command."""
    solar = [python, "-m", "solar"]
    torch_op = os.path.join(PROGRAMS, "relu_torch.py")
    jax_op = os.path.join(PROGRAMS, "relu_jax.py")
    return [
        ("solar --help", solar + ["--help"], 0.3, False),
        ("import solar.cli", [python, "-c", "import solar.cli"], 0.3, False),
        ("analyze 1 torch op", solar + ["analyze", torch_op], 2.5, False),
        ("analyze 1 torch op --no-crosscheck",
         solar + ["analyze", torch_op, "--no-crosscheck"], 2.5, False),
        ("analyze 1 JAX op", solar + ["analyze", jax_op], 2.5, False),
        ("import torch", [python, "-c", "import torch"], None, False),
        (FLOOR, [python, "-c", "import os, torch; os._exit(0)"], None, False),
        ("analyze 1 torch op, server running", solar + ["analyze", torch_op], 2.5, True),
        ("analyze 1 JAX op, server running", solar + ["analyze", jax_op], 2.5, True),
    ]


def run_once(argv: List[str], env: Dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"startup: {' '.join(argv)} failed ({done.returncode}):\n{done.stderr}")
    return seconds


def _start_server(python: str, env: Dict[str, str]) -> float:
    """Starts the bench's server (`solar server start`); the seconds it took."""
    start = time.perf_counter()
    done = subprocess.run([python, "-m", "solar", "server", "start", "--idle", "10"], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"startup: solar server start failed ({done.returncode}):\n{done.stderr}")
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="repetitions of each command")
    parser.add_argument("--python", default=sys.executable, help="the interpreter to run")
    parser.add_argument("--only", default="", help="labels containing this text only")
    parser.add_argument("--check", action="store_true", help="exit 1 when a median misses")
    args = parser.parse_args()
    cmds = [c for c in commands(args.python) if args.only in c[0]]
    alone = dict(os.environ, SOLAR_NO_SERVER="1")
    with tempfile.TemporaryDirectory(prefix="solar-bench-") as folder:
        served = {k: v for k, v in os.environ.items() if k != "SOLAR_NO_SERVER"}
        served["SOLAR_SERVER_DIR"] = folder
        started = _start_server(args.python, served) if any(c[3] for c in cmds) else None
        times: Dict[str, List[float]] = {label: [] for label, *_ in cmds}
        try:
            for _ in range(args.reps):
                for label, argv, _, with_server in cmds:
                    times[label].append(run_once(argv, served if with_server else alone))
        finally:
            if started is not None:
                subprocess.run([args.python, "-m", "solar", "server", "stop"], env=served,
                               stdout=subprocess.DEVNULL, check=False)
    width = max(len(label) for label, *_ in cmds)
    torch_floor = statistics.median(times[FLOOR]) if FLOOR in times else None
    print(f"{'command':<{width}}  median s  min s  target s  median/target  over torch s")
    missed = False
    for label, _, target, with_server in cmds:
        median = statistics.median(times[label])
        over = (f"{median - torch_floor:12.2f}"
                if torch_floor and "torch op" in label and not with_server else "")
        if target is None:
            print(f"{label:<{width}}  {median:8.2f}  {min(times[label]):5.2f}")
            continue
        ratio = median / target
        missed |= ratio > 1
        print(f"{label:<{width}}  {median:8.2f}  {min(times[label]):5.2f}  {target:8.1f}  "
              f"{ratio:12.2f}x  {over}{'  MISSED' if ratio > 1 else ''}")
    try:
        load = " (load average %.1f)" % os.getloadavg()[0]
    except OSError:
        load = ""
    if started is not None:
        print(f"server start (imports Solar, torch, JAX; before the first served command): "
              f"{started:.2f} s")
    print(f"{args.reps} repetitions, {os.cpu_count()} CPUs{load}")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
