"""The `solar suite` parent's worker pool: `--jobs` worker processes started, handed one
program at a time, a worker killed and replaced when its program passes `--timeout` or when it
dies, and one entry per program (a report, or a failure with its cause) in the programs'
order."""

from __future__ import annotations

import collections
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..shrink import shrink_ladder
from .progress import Progress
from .worker import TAIL_CHARS

# A worker that dies this many times in a row before it is ready (torch failing to import,
# say) means the environment is broken: the suite stops instead of respawning forever.
_MAX_START_FAILURES = 3
# Seconds a worker gets to import torch and the frontend before it counts as failed.
_START_TIMEOUT_S = 300.0
# Characters of a dead or killed worker's output kept in the failure entry.


class _Worker:
    """One worker subprocess: its pipes, its log file and the task it is running."""

    def __init__(self, env: Dict[str, str], log_dir: str, serial: int):
        self.log_path = os.path.join(log_dir, f"worker{serial}.log")
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from solar.suite.worker import worker_main; worker_main()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=env,
            close_fds=True)
        os.set_blocking(self.proc.stdout.fileno(), False)
        self.buffer = b""
        self.ready = False
        self.started = time.monotonic()
        self.task: Optional[Dict[str, Any]] = None
        self.deadline = 0.0
        self.dispatched = 0.0
        self.log_offset = 0

    def send(self, task: Dict[str, Any], timeout: float) -> None:
        self.log.flush()
        self.log_offset = os.path.getsize(self.log_path)
        self.task = task
        self.dispatched = time.monotonic()
        self.deadline = self.dispatched + timeout
        try:
            self.proc.stdin.write((json.dumps(task) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:  # the worker died: its end of file reports the crash
            pass

    def read(self) -> Tuple[List[Dict[str, Any]], bool]:
        """(complete messages, whether the pipe reached end of file)."""
        eof = False
        while True:
            try:
                chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
            except BlockingIOError:
                break
            if not chunk:
                eof = True
                break
            self.buffer += chunk
        messages = []
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            if line.strip():
                messages.append(json.loads(line))
        return messages, eof

    def log_tail(self, offset: Optional[int] = None) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self.log_offset if offset is None else offset)
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return ""
        return text[-TAIL_CHARS:]

    def kill(self, dump_stack: bool = False) -> None:
        if self.proc.poll() is None:
            if dump_stack and hasattr(signal, "SIGUSR1"):
                try:
                    self.proc.send_signal(signal.SIGUSR1)
                    time.sleep(0.3)  # faulthandler writes the stacks from its handler
                except OSError:
                    pass
            self.proc.kill()
        self.close()

    def close(self) -> None:
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def _exit_description(code: Optional[int]) -> str:
    if code is None:
        return "did not exit"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


def _failure(source: str, cause: str, message: str, **extra: Any) -> Dict[str, Any]:
    error = {"cause": cause, "message": message}
    error.update({k: v for k, v in extra.items() if v is not None})
    return {"program": {"source": source}, "error": error}


def run_suite(programs: List[Dict[str, Any]], options: Dict[str, Any], jobs: int,
              timeout: float, overrides: Dict[str, str], progress: Progress,
              spill_dir: Optional[str] = None,
              memory_limit: Optional[int] = None,
              shrink: Optional[int] = None) -> List[Dict[str, Any]]:
    """Analyzes every program in worker processes; returns one entry per program, in the
    order of `programs` (a report dict, or a failure {"program", "error"}), each with a
    `suite` object: status, wall_seconds, cpu_seconds, overrides applied. With spill_dir,
    the full report of program i is left in spill_dir/i.json and its entry here has no
    `ops` rows (write_json puts them together). memory_limit: bytes of address space per
    worker (RLIMIT_AS), None for no limit. shrink: `--shrink` limit (shrink_ladder), None
    for the programs' own sizes."""
    results: List[Optional[Dict[str, Any]]] = [None] * len(programs)
    queue = collections.deque()
    for i, p in enumerate(programs):
        applied = {k: v for k, v in overrides.items() if k in p["constants"]}
        if p.get("syntax_error"):
            entry = _failure(p["source"], "syntax_error", p["syntax_error"])
            entry["suite"] = {"status": "failed", "wall_seconds": 0.0, "overrides": applied}
            results[i] = entry
            continue
        ladder = (shrink_ladder(p.get("int_constants", {}), shrink, applied)
                  if shrink is not None else None)
        queue.append({"id": i, "source": p["source"],
                      "overrides": ladder[0]["overrides"] if ladder else applied,
                      "ladder": ladder, "options": options,
                      "spill": os.path.join(spill_dir, f"{i}.json") if spill_dir else None})
    pkg_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        x for x in (pkg_root, env.get("PYTHONPATH", "")) if x)
    env["SOLAR_SUITE_PARENT"] = str(os.getpid())
    threads = max(1, (os.cpu_count() or 1) // max(1, jobs))
    env["SOLAR_SUITE_THREADS"] = str(threads)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, str(threads))
    env["PYTHONUNBUFFERED"] = "1"
    if memory_limit:
        env["SOLAR_SUITE_MEMORY_BYTES"] = str(int(memory_limit))

    done = sum(r is not None for r in results)
    failed = done

    def finish(worker: _Worker, entry: Dict[str, Any], notes: Sequence[str] = (),
               cpu: Optional[float] = None, shrink: Optional[Dict[str, Any]] = None,
               peak: Optional[int] = None) -> None:
        nonlocal done, failed
        task = worker.task
        wall = time.monotonic() - worker.dispatched
        ok = "error" not in entry
        entry.setdefault("program", {})["source"] = task["source"]
        entry["suite"] = {"status": "analyzed" if ok else "failed",
                          "wall_seconds": round(wall, 3),
                          "overrides": shrink["overrides"] if shrink else task["overrides"]}
        if task.get("ladder"):
            # --shrink: the size limit the program ran at (null: its own sizes) and the
            # smaller settings it raised under; a crash or timeout leaves it unknown.
            entry["suite"]["shrink"] = ({k: shrink[k] for k in ("limit", "scale", "rejected")
                                         if k in shrink}
                                        if shrink else None)
        if cpu is not None:
            entry["suite"]["cpu_seconds"] = cpu
        if peak is not None:  # the worker's peak resident memory while it ran the program
            entry["suite"]["peak_rss_bytes"] = peak
        if notes:
            entry["suite"]["notes"] = list(notes)
        results[task["id"]] = entry
        worker.task = None
        done += 1
        failed += 0 if ok else 1

    sel = selectors.DefaultSelector()
    workers: List[_Worker] = []
    serial = 0
    start_failures = 0
    log_dir = tempfile.mkdtemp(prefix="solar-suite-")

    def top_up() -> None:
        """Starts workers until there are as many as there is work for (at most jobs)."""
        nonlocal serial
        busy = sum(1 for w in workers if w.task is not None)
        while len(workers) < min(jobs, len(queue) + busy):
            w = _Worker(env, log_dir, serial)
            serial += 1
            workers.append(w)
            sel.register(w.proc.stdout, selectors.EVENT_READ, w)

    def retire(w: _Worker, dump_stack: bool = False) -> None:
        sel.unregister(w.proc.stdout)
        workers.remove(w)
        w.kill(dump_stack)

    def start_failed(w: _Worker, why: str) -> None:
        nonlocal start_failures
        start_failures += 1
        if start_failures >= _MAX_START_FAILURES:
            raise RuntimeError(f"solar suite: worker processes fail to start ({why}); "
                               f"the last one wrote:\n{w.log_tail(0)}")

    try:
        top_up()
        progress.update(done, failed, [], force=True)
        while queue or any(w.task for w in workers):
            for w in workers:
                if w.ready and w.task is None and queue:
                    w.send(queue.popleft(), timeout)
            now = time.monotonic()
            deadlines = [w.deadline if w.task else w.started + _START_TIMEOUT_S
                         for w in workers if w.task or not w.ready]
            wait = max(0.0, min(deadlines) - now) if deadlines else 1.0
            for key, _ in sel.select(min(wait, 0.5)):
                w = key.data
                if w not in workers:
                    continue
                messages, eof = w.read()
                for m in messages:
                    if m.get("ready"):
                        w.ready = True
                        start_failures = 0
                    elif w.task is not None and m.get("id") == w.task["id"]:
                        if m["ok"]:
                            finish(w, m["report"], m.get("notes", ()), m.get("cpu_seconds"),
                                   m.get("shrink"), m.get("peak_rss_bytes"))
                        else:
                            finish(w, _failure(w.task["source"], **m["error"]),
                                   cpu=m.get("cpu_seconds"), shrink=m.get("shrink"),
                                   peak=m.get("peak_rss_bytes"))
                if eof:
                    try:
                        code = w.proc.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        code = None
                    if w.task is not None:
                        finish(w, _failure(w.task["source"], "crash",
                                           f"the worker {_exit_description(code)}",
                                           exit_status=code, output_tail=w.log_tail()))
                    retire(w)
                    if not w.ready:
                        start_failed(w, f"the worker {_exit_description(code)}")
            now = time.monotonic()
            for w in list(workers):
                if w.task is not None and now >= w.deadline:
                    retire(w, dump_stack=True)
                    finish(w, _failure(w.task["source"], "timeout",
                                       f"no result after {timeout:g} s; the worker was killed",
                                       output_tail=w.log_tail()))
                elif not w.ready and now >= w.started + _START_TIMEOUT_S:
                    retire(w)
                    start_failed(w, f"not ready after {_START_TIMEOUT_S:g} s")
            top_up()
            progress.update(done, failed, [w.task["source"] for w in workers if w.task])
        progress.update(done, failed, [], force=True)
    finally:
        progress.finish()
        for w in workers:
            try:
                w.proc.stdin.close()  # end of tasks: an idle worker exits on its own
            except OSError:
                pass
        for w in list(workers):
            try:
                w.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            retire(w)
        sel.close()
        shutil.rmtree(log_dir, ignore_errors=True)
    return results  # type: ignore[return-value]
