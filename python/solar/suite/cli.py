"""`solar suite DIR ...`: the command: its options, checked before any work, then discovery,
the worker pool and the outputs (docs/suite.md)."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
from typing import List

from .. import _core, headroom
from ..atomic_write import check as check_outputs
from ..atomic_write import write_atomically
from ..command_options import (DEFAULT_ARCH, add_capture_options, add_device_options,
                               add_level_options, add_math_options, add_options, arch_ids,
                               canonical_archs)
from ..errors import command, parse_args
from ..html import write as write_html
from ..program_source import parse_overrides
from .discovery import discover
from .outputs import (SUITE_SCHEMA, failure_lines, heaviest, summarize, summary_table, to_csv,
                      write_json)
from .pool import run_suite
from .progress import Progress


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="solar suite",
        description="Analyze every KernelBench-format program in a folder (recursively), "
                    "each in a worker process. Exit 0 when the suite ran, whatever the "
                    "programs did (see the summary and --json); 2 usage, 3 missing DIR or "
                    "output folder, 6 unknown device.")
    p.add_argument("dir", metavar="DIR")
    add_device_options(p)
    p.add_argument("--json", dest="json_path", metavar="PATH", help="write solar.suite.v1 JSON")
    p.add_argument("--csv", dest="csv_path", metavar="PATH", help="one row per program")
    p.add_argument("--html", dest="html_path", metavar="PATH",
                   help="the HTML page: programs, rooflines, headroom (docs/html-report.md)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds per program before its worker is killed (default 300)")
    add_capture_options(p)
    add_options(p, ("shrink",))
    add_math_options(p)
    add_options(p, ("validate", "no_crosscheck"))
    p.add_argument("--memory-limit", type=float, metavar="GB",
                   help="address space per worker in GB (RLIMIT_AS; torch itself takes "
                        "1-2 GB): a program allocating past it fails with cause "
                        "out_of_memory")
    add_level_options(p)
    p.add_argument("--no-ops", action="store_true",
                   help="leave the per-op rows (`ops`) out of each report in --json")
    p.add_argument("--top", type=int, default=10, help="unanalyzed aten ops listed (default 10)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--timings", metavar="FILE",
                   help="measured times (KernelBench timing JSON, ms) to join with the bounds "
                        "of the one --arch device: headroom and violations (docs/headroom.md)")
    p.add_argument("--plot", metavar="PREFIX",
                   help="with --timings: write PREFIX.svg and PREFIX.png, measured vs fused SOL")
    return p


def _check_policy(policy: str, cache_state: str) -> None:
    """Fails now (UserError) on a policy or cache state analyze would reject for every
    program: a one-einsum graph is analyzed with them."""
    g = _core.parse_graph('graph probe\na = f32[1] input\nb = f32[1]{output} einsum "i->i" (a)\n')
    _core.analyze(g, ["H100_SXM"], policy, cache_state)


@command("solar suite")
def main(args: List[str]) -> int:
    """`solar suite DIR ...` (args after `suite`); returns the exit code."""
    codes = _core.EXIT_CODES
    ns = parse_args(_parser(), args)

    def usage(msg: str) -> int:
        sys.stderr.write(f"solar suite: error: {msg}\n")
        return codes["usage"]

    overrides = parse_overrides(ns.set)
    if ns.jobs < 1:
        return usage("--jobs must be at least 1")
    if ns.shrink is not None and ns.shrink < 1:
        return usage("--shrink must be at least 1")
    if not ns.timeout > 0:
        return usage("--timeout must be positive")
    if ns.optimizer and not ns.train:
        return usage("--optimizer needs --train")
    if ns.memory_limit is not None and not ns.memory_limit > 0:
        return usage("--memory-limit must be positive")
    requested = arch_ids(ns.arch or [DEFAULT_ARCH])
    if not requested:
        return usage("--arch: no device id")
    try:
        archs = canonical_archs(requested)
        _check_policy(ns.policy, ns.cache_state)
    except _core.Error as e:
        sys.stderr.write(f"solar suite: error: {e}\n")
        return getattr(e, "exit_code", codes["usage"])
    timings = None
    if ns.plot and not ns.timings:
        return usage("--plot needs --timings")
    if ns.timings:
        if len(archs) != 1:
            return usage("--timings joins the measurements of one device: give exactly one "
                         "--arch (the device they were measured on)")
        try:
            timings = headroom.load_timings(ns.timings)
        except OSError as e:
            sys.stderr.write(f"solar suite: error: {e}\n")
            return codes["io"]
        except _core.Error as e:
            sys.stderr.write(f"solar suite: error: {e}\n")
            return getattr(e, "exit_code", codes["parse"])
    if not os.path.exists(ns.dir):
        sys.stderr.write(f"solar suite: error: {ns.dir}: no such folder\n")
        return codes["io"]
    if not os.path.isdir(ns.dir):
        return usage(f"{ns.dir} is not a folder (use `solar analyze` for one program)")
    for path in (ns.json_path, ns.csv_path, ns.html_path):
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            sys.stderr.write(f"solar suite: error: {path}: the output folder does not exist\n")
            return codes["io"]

    start = time.monotonic()
    programs, skipped = discover(ns.dir)
    # No output may replace a file the suite reads (a program of DIR, any .py it looked at,
    # the timings) or another output, and each must be writable: checked before any work.
    plots = [f"{ns.plot}.{ext}" for ext in ("svg", "png")] if ns.plot else []
    check_outputs([("PROGRAM", p["source"]) for p in programs + skipped]
                  + [("--timings", ns.timings)],
                  [("--json", ns.json_path), ("--csv", ns.csv_path), ("--html", ns.html_path)]
                  + [("--plot", p) for p in plots])
    options = {"archs": archs, "policy": ns.policy, "cache_state": ns.cache_state,
               "strict": ns.strict, "real": ns.real, "eval": ns.eval, "train": ns.train,
               "optimizer": ns.optimizer, "validate": ns.validate,
               "crosscheck": not ns.no_crosscheck, "op_rows": not ns.no_ops,
               "mode": ns.mode, "cache_aware": not ns.no_cache_aware, "unroll": ns.unroll}
    progress = Progress(len(programs), enabled=not ns.quiet)

    def terminated(signum, frame):  # SIGTERM: stop as on Ctrl-C, killing the workers
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, terminated)
    memory_limit = int(ns.memory_limit * 1e9) if ns.memory_limit else None
    spill_dir = tempfile.mkdtemp(prefix="solar-suite-reports-") if ns.json_path else None
    try:
        try:
            entries = run_suite(programs, options, ns.jobs, ns.timeout, overrides, progress,
                                spill_dir, memory_limit, ns.shrink)
        except KeyboardInterrupt:
            sys.stderr.write("solar suite: interrupted; nothing written\n")
            return 130
        except RuntimeError as e:
            sys.stderr.write(f"{e}\n")
            return codes["internal"]
        summary = summarize(entries, skipped, time.monotonic() - start)
        summary["heaviest"] = heaviest(entries, archs[0])
        joined = None
        if timings is not None:
            joined = headroom.join(entries, timings, archs[0])
            summary["headroom"] = joined
        head = {"schema": SUITE_SCHEMA,
                "options": {"dir": ns.dir, **options, "overrides": overrides,
                            "shrink": ns.shrink,
                            "jobs": ns.jobs, "timeout_seconds": ns.timeout,
                            "memory_limit_bytes": memory_limit}}
        try:
            if ns.json_path:
                write_json(ns.json_path, head, entries, summary, spill_dir)
            if ns.csv_path:
                write_atomically(ns.csv_path, to_csv(entries, archs))
            if ns.html_path:
                write_html({**head, "programs": entries, "summary": summary}, ns.html_path)
            # The plots too are written before anything is printed: on an error stdout
            # stays empty.
            plotted = headroom.plot(joined, ns.plot) if joined is not None and ns.plot else []
        except OSError as e:
            sys.stderr.write(f"solar suite: error: {e}\n")
            return codes["io"]
    finally:
        signal.signal(signal.SIGTERM, previous)
        if spill_dir:
            shutil.rmtree(spill_dir, ignore_errors=True)
    sys.stdout.write(summary_table(summary, ns.dir, archs, ns.jobs, ns.top))
    sys.stdout.write(failure_lines(entries))
    if joined is not None:
        sys.stdout.write(headroom.format_summary(joined))
        for path in plotted:
            sys.stdout.write(f"wrote {path}\n")
    sys.stdout.flush()
    return codes["ok"]
