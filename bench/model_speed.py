#!/usr/bin/env python3
"""How long `solar analyze hf:NAME` takes for every registry model, prefill and decode: each
command in a fresh process (imports included) and with `solar server` running (its imports
paid once, docs/server.md), against the targets (10 s fresh, 5 s served), and the 70B case
the docs quote (Llama-3.1-70B prefill, batch 4, 4096 tokens).

Each command runs as `python -m solar analyze hf:NAME --phase P --arch H100_SXM --quiet`
with its output discarded (the default report: every level, the cache-aware one and the
module table included) and must exit 0. The rows without a server run with
SOLAR_NO_SERVER=1; for the others a server of this environment is started first, in its own
folder, and stopped at the end (its start is printed apart, not in any row). Models whose
task has no decode phase (encoders, image classifiers) run prefill only.

    PYTHONPATH=python .venv/bin/python bench/model_speed.py
    PYTHONPATH=python .venv/bin/python bench/model_speed.py --only llama --phases decode
    PYTHONPATH=python bench/run model-speed --check     # exit 1 when a target is missed
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REGISTRY = os.path.join(ROOT, "python", "solar", "models", "registry")
FRESH_TARGET = 10.0  # seconds, a fresh process
SERVED_TARGET = 5.0  # seconds, with `solar server` running
HEADLINE = ("llama-3.1-70b", "prefill", ["--batch", "4", "--seq", "4096"])
PHASED = ("causal-lm", "seq2seq-lm")  # tasks with a decode phase
NO_DECODE = ("reformer",)  # refused at decode (solar.models.analyze.NO_DECODE)


def cases(only: str, phases: List[str]) -> List[Tuple[str, str, List[str]]]:
    """(model, phase, extra options) of every registry model (name containing `only`)."""
    out = []
    for path in sorted(glob.glob(os.path.join(REGISTRY, "*.json"))):
        with open(path, encoding="utf-8") as f:
            entry = json.load(f)
        name = entry["name"]
        if only not in name:
            continue
        config = entry.get("config", {})
        # The default 1024 prefill tokens and 4096 cached ones at decode, or the model's own
        # limit of positions when it is shorter (BERT's 512, GPT-2's 1024).
        limit = config.get("max_position_embeddings") or config.get("n_positions")
        limit = limit if isinstance(limit, int) else 1 << 30
        for phase in phases:
            if phase == "decode" and (entry.get("task") not in PHASED or
                                      config.get("model_type") in NO_DECODE):
                continue
            extra = (["--seq", str(limit)] if phase == "prefill" and limit < 1024 else
                     ["--context", str(limit - 1)] if phase == "decode" and limit <= 4096
                     else [])
            out.append((name, phase, extra))
    if only in HEADLINE[0] and HEADLINE[1] in phases:
        out.append(HEADLINE)
    return out


def run_once(argv: List[str], env: Dict[str, str]) -> Tuple[float, Optional[str]]:
    """(wall seconds, None) or (seconds, the error's last line) of one command."""
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, cwd=tempfile.gettempdir())
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"exit {done.returncode}"]
        return seconds, f"exit {done.returncode}: {lines[-1][:160]}"
    return seconds, None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default=sys.executable, help="the interpreter to run")
    ap.add_argument("--only", default="", help="models whose name contains this text")
    ap.add_argument("--phases", default="prefill,decode")
    ap.add_argument("--reps", type=int, default=1, help="repetitions (the median is shown)")
    ap.add_argument("--no-fresh", action="store_true", help="only the served rows")
    ap.add_argument("--no-server", action="store_true", help="only the fresh-process rows")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args()
    todo = cases(args.only, args.phases.split(","))
    if not todo:
        sys.exit("model_speed: no registry model matches")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    alone = dict(env, SOLAR_NO_SERVER="1")
    solar = [args.python, "-m", "solar", "analyze"]
    modes = [m for m, skip in (("fresh", args.no_fresh), ("served", args.no_server)) if not skip]
    times: Dict[Tuple[str, str, str, str], List[float]] = {}
    errors: Dict[Tuple[str, str, str, str], str] = {}
    started = None
    served_count = 0
    # Every module's bytecode written before the server starts: a .pyc a fresh command
    # writes later would change the package's files, so the server's key (docs/server.md).
    subprocess.run([args.python, "-m", "compileall", "-q", os.path.join(ROOT, "python",
                                                                       "solar")],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    with tempfile.TemporaryDirectory(prefix="solar-model-speed-") as folder:
        served = {k: v for k, v in env.items() if k != "SOLAR_NO_SERVER"}
        served["SOLAR_SERVER_DIR"] = folder
        if "served" in modes:
            t0 = time.perf_counter()
            done = subprocess.run([args.python, "-m", "solar", "server", "start", "--idle",
                                   "10"], env=served, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
            if done.returncode != 0:
                sys.exit(f"model_speed: solar server start failed ({done.returncode}):\n"
                         f"{done.stderr}")
            started = time.perf_counter() - t0
        try:
            for _ in range(args.reps):
                for name, phase, extra in todo:
                    argv = solar + [f"hf:{name}", "--phase", phase, "--arch", "H100_SXM",
                                    "--quiet"] + extra
                    for mode in modes:
                        key = (name, phase, " ".join(extra), mode)
                        seconds, error = run_once(argv, alone if mode == "fresh" else served)
                        times.setdefault(key, []).append(seconds)
                        if error:
                            errors[key] = error
                        print(f"  {name} {phase} {' '.join(extra)} {mode}: {seconds:.2f} s"
                              + (f" ({error})" if error else ""), file=sys.stderr, flush=True)
            if started is not None:
                # A command whose key differs from the server's (an edited Solar file, docs/
                # server.md "the key") ran in its own process: the served rows say how many.
                status = subprocess.run([args.python, "-m", "solar", "server", "status"],
                                        env=served, capture_output=True, text=True).stdout
                found = re.search(r"(\d+) command\(s\) served", status)
                served_count = int(found.group(1)) if found else 0
        finally:
            if started is not None:
                subprocess.run([args.python, "-m", "solar", "server", "stop"], env=served,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               check=False)
    width = max(len(f"{n} {p} {' '.join(e)}".strip()) for n, p, e in todo)
    header = f"{'model phase':<{width}}"
    for mode in modes:
        target = FRESH_TARGET if mode == "fresh" else SERVED_TARGET
        header += f"  {mode + ' s':>9}  {f'/{target:g} s':>7}"
    print(header)
    missed = False
    for name, phase, extra in todo:
        label = f"{name} {phase} {' '.join(extra)}".strip()
        line, failed = f"{label:<{width}}", []
        for mode in modes:
            key = (name, phase, " ".join(extra), mode)
            target = FRESH_TARGET if mode == "fresh" else SERVED_TARGET
            median = statistics.median(times[key])
            ratio = median / target
            bad = ratio > 1 or key in errors
            missed |= bad
            line += f"  {median:9.2f}  {ratio:6.2f}x" + ("!" if bad else " ")
            if key in errors:
                failed.append(f"{mode}: {errors[key]}")
        print(line + "".join(f"  {f}" for f in failed))
    try:
        load = " (load average %.1f)" % os.getloadavg()[0]
    except OSError:
        load = ""
    if started is not None:
        print(f"server start (its imports, once, before the first served command): "
              f"{started:.2f} s")
        expected = args.reps * len(todo)
        print(f"served by the server: {served_count} of {expected} commands" + (
            "" if served_count == expected else " (the others ran in their own processes: "
            "a Solar file changed while the bench ran, so their key was another)"))
        missed |= served_count != expected
    print(f"targets: fresh {FRESH_TARGET:g} s, served {SERVED_TARGET:g} s ('!': missed or "
          f"failed); {args.reps} repetition(s), {os.cpu_count()} CPUs{load}")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
