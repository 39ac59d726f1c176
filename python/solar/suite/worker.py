"""A `solar suite` worker process: it imports torch and the frontends once, then analyzes the
programs the suite hands it one at a time (JSON lines on its stdin and on the stdout it had at
start), each with its CPU time, peak memory and warnings, a program's failure as an entry."""

from __future__ import annotations

import faulthandler
import json
import os
import resource
import signal
import sys
import threading
import time
import traceback
import warnings
from typing import Any, Dict, Optional

from .. import programs
from ..analysis import ProgramOptions
from ..program_worker import analyze_with_ladder, error_cause, reset_torch_state, warm_up

# Characters of a failure's traceback, and of a dead or killed worker's output, kept in the
# failure entry.
TAIL_CHARS = 4000


def _cpu_seconds() -> float:
    """CPU time (user + system, all threads) of this process so far, in seconds: on a
    shared machine a fairer measure of a program's cost than its wall time."""
    t = os.times()
    return t.user + t.system


def _reset_peak_rss() -> None:
    """Starts a new peak-memory (VmHWM) measurement for this process (Linux: writing 5 to
    /proc/self/clear_refs); elsewhere the peak stays the worker's since it started."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _peak_rss_bytes() -> int:
    """The process's peak resident memory since the last _reset_peak_rss (VmHWM), in bytes;
    the worker's lifetime peak (ru_maxrss) where /proc has no VmHWM: either way at least the
    program's own peak."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _analyze_task(task: Dict[str, Any], threads: int) -> Dict[str, Any]:
    import torch

    o = task["options"]
    ladder = task.get("ladder") or [{"limit": None, "overrides": task["overrides"]}]
    options = ProgramOptions(
        archs=o["archs"], policy=o["policy"], cache_state=o["cache_state"],
        overrides=dict(task["overrides"]), strict=o["strict"], real=o["real"],
        train=o["train"], optimizer=o["optimizer"], validate=o["validate"],
        eval_mode=o.get("eval", False),
        crosscheck=o["crosscheck"], mode=o.get("mode", "attainable"),
        unroll=o.get("unroll", False),
        cache_aware=o.get("cache_aware", True))
    cpu0 = _cpu_seconds()
    _reset_peak_rss()
    shrink: Optional[Dict[str, Any]] = None
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result, shrink = analyze_with_ladder(task["source"], options, ladder)
            # --no-ops: the per-op rows are most of a report's size, and of its making.
            op_rows = o.get("op_rows", True)
            text: Optional[str] = result.report.to_json(None, ops=op_rows)
        report = json.loads(text)
        if not op_rows:
            text = None
        if task.get("spill"):
            # The whole report goes to a file the parent copies into --json; the parent
            # gets it without the per-op rows, so its memory stays small.
            with open(task["spill"], "w", encoding="utf-8") as f:
                f.write(text if text is not None else json.dumps(report, allow_nan=False))
            report.pop("ops", None)
        notes = []
        for w in caught:
            line = f"{w.category.__name__}: {w.message}"
            if line not in notes:
                notes.append(line)
        return {"id": task["id"], "ok": True, "report": report, "notes": notes[:50],
                "cpu_seconds": round(_cpu_seconds() - cpu0, 3), "shrink": shrink,
                "peak_rss_bytes": _peak_rss_bytes()}
    except BaseException as e:  # noqa: BLE001 - SystemExit from a program is its failure
        if isinstance(e, KeyboardInterrupt):
            raise
        cause, code = error_cause(e)
        tb = traceback.format_exc()
        return {"id": task["id"], "ok": False,
                "error": {"cause": cause, "message": f"{type(e).__name__}: {e}",
                          "exit_code": code, "traceback": tb[-TAIL_CHARS:]},
                "cpu_seconds": round(_cpu_seconds() - cpu0, 3),
                "shrink": getattr(e, "solar_shrink", None), "peak_rss_bytes": _peak_rss_bytes()}
    finally:
        reset_torch_state(torch, threads)


def _watch_parent(parent: int) -> None:
    """Ends the worker when the suite process is gone (a hung program would live on)."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(1)


def worker_main() -> None:
    """A worker: reads tasks (JSON lines) on stdin, answers on the stdout it had at start.
    fd 1 then points at fd 2 (the worker log), so the programs' prints do not reach the
    protocol pipe."""
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = os.fdopen(1, "w", encoding="utf-8", buffering=1)
    faulthandler.enable(file=sys.stderr, all_threads=True)
    if hasattr(signal, "SIGUSR1"):  # the parent asks for a traceback before a timeout kill
        faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    parent = int(os.environ.get("SOLAR_SUITE_PARENT", os.getppid()))
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    threads = int(os.environ.get("SOLAR_SUITE_THREADS", "1"))

    import torch

    programs.torch_program()  # imported once, here (its validation with it)
    torch.set_num_threads(threads)
    warm_up(torch)
    limit = int(os.environ.get("SOLAR_SUITE_MEMORY_BYTES", "0"))
    if limit > 0:
        # After the imports, so that only the programs meet it: an allocation past it
        # fails (MemoryError, torch's "can't allocate memory") instead of waking the
        # OOM killer, which may pick another process on a shared machine.
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    proto.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    proto.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        task = json.loads(line)
        sys.stderr.write(f"\n=== solar suite: {task['source']}\n")
        sys.stderr.flush()
        answer = _analyze_task(task, threads)
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            text = json.dumps(answer, allow_nan=False)
        except (TypeError, ValueError) as e:  # a report that is not valid JSON: a Solar bug
            text = json.dumps({"id": task["id"], "ok": False, "error": {
                "cause": "internal", "message": f"the result is not JSON: {e}"}})
        proto.write(text + "\n")
        proto.flush()
