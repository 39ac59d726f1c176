"""`solar suite DIR`: every KernelBench-format or loop program of a folder analyzed in one run, each
in a worker process so that one crash, hang or exception does not stop the rest.

The parent process never imports torch. It finds the programs (recursive `*.py`, sorted),
starts `--jobs` worker processes (each imports torch and the frontend once, then analyzes
many programs through `solar.programs.analyze_file`, so a program gets the
report `solar analyze model.py` gives it), hands them one program at a time, kills and
replaces a worker whose program exceeds `--timeout` or which dies, and writes the results:
JSON (`solar.suite.v1`), CSV and a summary table. docs/suite.md describes it.

Workers are plain subprocesses speaking JSON lines on a private pipe (not multiprocessing):
the programs print to their stdout freely, and nothing of the user's `__main__` is
re-imported in the worker.
"""

from __future__ import annotations

import argparse
import ast
import collections
import csv
import faulthandler
import io
import json
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _core, headroom, programs
from .analysis import ProgramOptions
from .atomic_write import atomic_file, write_atomically
from .atomic_write import check as check_outputs
from .errors import command, parse_args
from .html import write as write_html
from .program_source import imports_loopir, module_constants, parse_overrides
from .program_worker import analyze_with_ladder, error_cause, reset_torch_state, warm_up
from .shrink import int_constants, shrink_ladder

SUITE_SCHEMA = "solar.suite.v1"
# A worker that dies this many times in a row before it is ready (torch failing to import,
# say) means the environment is broken: the suite stops instead of respawning forever.
_MAX_START_FAILURES = 3
# Seconds a worker gets to import torch and the frontend before it counts as failed.
_START_TIMEOUT_S = 300.0
# Characters of a dead or killed worker's output kept in the failure entry.
_TAIL_CHARS = 4000


# --------------------------------------------------------------------------- discovery


def _defines(tree: ast.Module, name: str) -> bool:
    """Whether the module binds `name` at top level (class, def, assignment or import)."""
    for stmt in tree.body:
        if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if stmt.name == name:
                return True
        elif isinstance(stmt, ast.Assign):
            if any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
                return True
        elif isinstance(stmt, ast.AnnAssign):
            if isinstance(stmt.target, ast.Name) and stmt.target.id == name:
                return True
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name.split(".")[0]) == name for a in stmt.names):
                return True
    return False


def _sort_key(rel: str) -> Tuple[str, ...]:
    return tuple(rel.split(os.sep))


def discover(folder: str) -> Tuple[List[Dict[str, Any]], List[Dict[str, str]]]:
    """(programs, skipped) under `folder`, recursively, sorted by path. A program is
    {"source": path, "constants": set of module-level names}; a skipped file is
    {"source": path, "reason": ...}. Hidden folders and __pycache__ are not entered."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                found.append(os.path.relpath(os.path.join(root, name), folder))
    found.sort(key=_sort_key)
    programs, skipped = [], []
    for rel in found:
        path = os.path.join(folder, rel)
        if os.path.basename(rel) == "__init__.py":
            skipped.append({"source": path, "reason": "package __init__.py"})
            continue
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            skipped.append({"source": path, "reason": f"unreadable: {e}"})
            continue
        try:
            tree = ast.parse(text, filename=path)
        except SyntaxError as e:
            # A file that names both parts of the format but does not parse is a broken
            # program (a failure); anything else is simply not one of ours.
            if "class Model" in text and "def get_inputs" in text:
                programs.append({"source": path, "constants": set(),
                                 "syntax_error": f"line {e.lineno}: {e.msg}"})
            else:
                skipped.append({"source": path, "reason": f"not Python 3 ({e.msg})"})
            continue
        # class Model (KernelBench), or a module-level forward() (JAX-style, torch too)
        missing = [n for n in ("Model", "get_inputs") if not _defines(tree, n)
                   and not (n == "Model" and _defines(tree, "forward"))]
        if missing and not imports_loopir(tree):
            skipped.append({"source": path, "reason": "not a KernelBench-format program "
                                                      f"(no top-level {', '.join(missing)})"})
            continue
        programs.append({"source": path, "constants": module_constants(tree),
                         "int_constants": int_constants(tree)})
    return programs, skipped


# --------------------------------------------------------------------------- worker side


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
                          "exit_code": code, "traceback": tb[-_TAIL_CHARS:]},
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


def _worker_main() -> None:
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


# --------------------------------------------------------------------------- parent side


class _Worker:
    """One worker subprocess: its pipes, its log file and the task it is running."""

    def __init__(self, env: Dict[str, str], log_dir: str, serial: int):
        self.log_path = os.path.join(log_dir, f"worker{serial}.log")
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from solar.suite import _worker_main; _worker_main()"],
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
        return text[-_TAIL_CHARS:]

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


class Progress:
    """Progress on stderr: one updating line on a terminal, periodic plain lines otherwise.
    `solar sweep` shares it (label: the command's name on the plain lines)."""

    def __init__(self, total: int, enabled: bool, stream=None, label: str = "solar suite"):
        self.stream = stream or sys.stderr
        self.label = label
        self.total = total
        self.enabled = enabled and total > 0
        self.tty = self.enabled and self.stream.isatty()
        self.start = time.monotonic()
        self.last = 0.0
        self.last_done = -1
        self.interval = 0.1 if self.tty else 10.0

    def update(self, done: int, failed: int, running: Sequence[str], force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self.last < self.interval:
            return
        if not self.tty and done == self.last_done:
            return  # a plain line only says something new
        self.last, self.last_done = now, done
        elapsed = now - self.start
        line = f"{self.label}: {done}/{self.total} done, {failed} failed, {elapsed:.0f} s"
        if self.tty:
            width = shutil.get_terminal_size((100, 20)).columns
            bar_w = 24
            filled = bar_w * done // self.total
            bar = "[" + "#" * filled + "." * (bar_w - filled) + "]"
            line = f"{bar} {done}/{self.total}  failed {failed}  {elapsed:.0f} s"
            if running:
                line += "  " + os.path.basename(running[0])
            elif done < self.total:
                line += "  (starting workers: importing torch)"
            line = line[: max(10, width - 1)]
            self.stream.write("\r" + line + "\x1b[K")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


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
    pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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


# --------------------------------------------------------------------------- outputs


def _status_counts(entries: List[Dict[str, Any]], section: str) -> Dict[str, int]:
    counts: Dict[str, int] = collections.Counter()
    for e in entries:
        s = e.get(section)
        if isinstance(s, dict):
            counts[str(s.get("status", "unknown"))] += 1
    return dict(sorted(counts.items()))


def summarize(entries: List[Dict[str, Any]], skipped: List[Dict[str, str]],
              wall: float) -> Dict[str, Any]:
    analyzed = [e for e in entries if "error" not in e]
    by_op: Dict[str, int] = collections.Counter()
    programs_by_op: Dict[str, int] = collections.Counter()
    unanalyzed = 0
    with_unanalyzed = 0
    dead = 0
    with_dead = 0
    for e in analyzed:
        cov = e.get("coverage", {})
        n = int(cov.get("unanalyzed", 0))
        unanalyzed += n
        with_unanalyzed += n > 0
        d = int(cov.get("dead", 0))
        dead += d
        with_dead += d > 0
        ops = [u.get("framework_op") or u.get("name", "?") for u in cov.get("unanalyzed_ops", [])]
        by_op.update(ops)
        programs_by_op.update(set(ops))
    failures = collections.Counter(e["error"]["cause"] for e in entries if "error" in e)
    top = sorted(by_op.items(), key=lambda kv: (-kv[1], kv[0]))
    return {
        "programs": len(entries),
        "analyzed": len(analyzed),
        "zero_unanalyzed": len(analyzed) - with_unanalyzed,
        "with_unanalyzed": with_unanalyzed,
        "unanalyzed_ops": unanalyzed,
        "unanalyzed_by_op": [{"op": op, "count": n, "programs": programs_by_op[op]}
                             for op, n in top],
        # ops whose results reach no output: in no bound (docs/cost.md)
        "dead_ops": dead,
        "with_dead": with_dead,
        "validation": _status_counts(analyzed, "validation"),
        "crosscheck": _status_counts(analyzed, "crosscheck"),
        # loop programs a language model wrote (solar translate): validated or not
        "translation": _status_counts(analyzed, "translation"),
        "failures": dict(sorted(failures.items())),
        "skipped": {"count": len(skipped), "files": skipped},
        "wall_seconds": round(wall, 3),
        # CPU time of the workers on the programs that returned (not crashed or killed)
        "cpu_seconds": round(sum(e.get("suite", {}).get("cpu_seconds", 0.0)
                                 for e in entries), 3),
        # the program that took longest (wall time in its worker) and the one whose worker
        # held the most memory while it ran
        "slowest": _largest(entries, "wall_seconds"),
        "largest_memory": _largest(entries, "peak_rss_bytes"),
    }


def _largest(entries: List[Dict[str, Any]], key: str) -> Optional[Dict[str, Any]]:
    """{"source", key} of the entry with the largest suite[key], or None when none has it."""
    best = max((e for e in entries if e.get("suite", {}).get(key) is not None),
               key=lambda e: e["suite"][key], default=None)
    if best is None:
        return None
    return {"source": best.get("program", {}).get("source", "?"), key: best["suite"][key]}


def _fmt_counts(counts: Dict[str, int], first: Sequence[str]) -> str:
    keys = [k for k in first] + sorted(k for k in counts if k not in first)
    return "  ".join(f"{k} {counts.get(k, 0)}" for k in keys)


def summary_table(summary: Dict[str, Any], folder: str, archs: Sequence[str], jobs: int,
                  top: int = 10) -> str:
    s = summary
    out = io.StringIO()
    w = out.write
    w(f"Solar suite: {folder}  (devices {', '.join(archs)}, jobs {jobs})\n")
    w(f"  programs                {s['programs']}")
    if s["skipped"]["count"]:
        w(f"  ({s['skipped']['count']} other .py files skipped)")
    w("\n")
    w(f"  analyzed                {s['analyzed']}\n")
    w(f"  zero unanalyzed ops     {s['zero_unanalyzed']}\n")
    w(f"  unanalyzed ops          {s['unanalyzed_ops']} in {s['with_unanalyzed']} programs\n")
    for row in s["unanalyzed_by_op"][:top]:
        w(f"    {row['op']:<40} {row['count']:>5} ops in {row['programs']} programs\n")
    if len(s["unanalyzed_by_op"]) > top:
        w(f"    ... {len(s['unanalyzed_by_op']) - top} more aten ops\n")
    w(f"  dead ops (not counted)  {s['dead_ops']} in {s['with_dead']} programs\n")
    not_run = s["analyzed"] - sum(s["validation"].values())
    w(f"  validation              {_fmt_counts(s['validation'], ['passed', 'failed'])}"
      f"  not run {not_run}\n")
    not_run = s["analyzed"] - sum(s["crosscheck"].values())
    w(f"  crosscheck              "
      f"{_fmt_counts(s['crosscheck'], ['agree', 'explained', 'differ'])}  not run {not_run}\n")
    if s["translation"]:  # programs solar translate wrote; unvalidated ones are called out
        w(f"  translations            "
          f"{_fmt_counts(s['translation'], ['validated', 'unvalidated'])}\n")
    w(f"  failures                {sum(s['failures'].values())}\n")
    for cause, n in s["failures"].items():
        w(f"    {cause:<40} {n:>5}\n")
    w(f"  wall time               {s['wall_seconds']:.1f} s  (worker CPU time on the "
      f"programs {s['cpu_seconds']:.1f} s)\n")
    if s.get("slowest"):
        w(f"  slowest program         {s['slowest']['wall_seconds']:.2f} s  "
          f"{os.path.basename(s['slowest']['source'])}\n")
    if s.get("largest_memory"):
        w(f"  largest peak memory     {s['largest_memory']['peak_rss_bytes'] / 1e9:.2f} GB  "
          f"{os.path.basename(s['largest_memory']['source'])}\n")
    return out.getvalue()


def failure_lines(entries: List[Dict[str, Any]]) -> str:
    lines = []
    for e in entries:
        if "error" in e:
            msg = e["error"]["message"].strip().splitlines()
            first = msg[-1] if msg else ""
            lines.append(f"  {e['error']['cause']:<14} {e['program']['source']}: {first[:160]}\n")
    return "failed programs\n" + "".join(lines) if lines else ""


def _device_seconds(entry: Dict[str, Any], dev: str, which: str) -> Any:
    devices = entry.get("devices")
    if isinstance(devices, dict):
        d = devices.get(dev)
    elif isinstance(devices, list):
        d = next((x for x in devices if x.get("id") == dev), None)
    else:
        d = None
    if not d:
        return ""
    return d.get(which, {}).get("seconds", "")


def write_json(path: str, head: Dict[str, Any], entries: List[Dict[str, Any]],
               summary: Dict[str, Any], spill_dir: Optional[str]) -> None:
    """Writes the solar.suite.v1 document to `path` atomically (a temporary file in the same
    folder, renamed when complete), streaming: an analyzed program's full report is copied
    from spill_dir/INDEX.json with its `suite` object added, one entry per line."""
    with atomic_file(path) as f:
        f.write("{\n")
        for key, value in head.items():
            f.write(f"{json.dumps(key)}: {json.dumps(value, allow_nan=False)},\n")
        f.write('"programs": [')
        for i, e in enumerate(entries):
            f.write(",\n" if i else "\n")
            spilled = os.path.join(spill_dir, f"{i}.json") if spill_dir else None
            if "error" not in e and spilled and os.path.exists(spilled):
                with open(spilled, encoding="utf-8") as r:
                    text = r.read().rstrip()
                if not (text.startswith("{") and text.endswith("}") and len(text) > 2):
                    raise RuntimeError(f"solar suite: the report of {spilled} is not a "
                                       "JSON object")
                f.write(text[:-1] + ', "suite": '
                        + json.dumps(e["suite"], allow_nan=False) + "}")
            else:
                f.write(json.dumps(e, allow_nan=False))
        f.write('\n],\n"summary": ' + json.dumps(summary, indent=1, allow_nan=False)
                + "\n}\n")


def to_csv(entries: List[Dict[str, Any]], archs: Sequence[str]) -> str:
    out = io.StringIO()
    wr = csv.writer(out, lineterminator="\n")
    header = ["source", "status", "ops", "unanalyzed", "macs"]
    for dev in archs:
        header += [f"{dev}_fused_seconds", f"{dev}_unfused_seconds"]
    header += ["validation", "crosscheck", "wall_seconds", "cpu_seconds", "error_cause",
               "error_message"]
    wr.writerow(header)
    for e in entries:
        suite = e.get("suite", {})
        row = [e["program"]["source"], suite.get("status", "")]
        if "error" in e:
            row += ["", "", ""] + ["", ""] * len(archs) + ["", ""]
            msg = e["error"]["message"].strip().splitlines()
            row += [suite.get("wall_seconds", ""), suite.get("cpu_seconds", ""),
                    e["error"]["cause"], msg[-1] if msg else ""]
        else:
            cov = e.get("coverage", {})
            row += [cov.get("ops", ""), cov.get("unanalyzed", ""),
                    e.get("totals", {}).get("macs", "")]
            for dev in archs:
                row += [_device_seconds(e, dev, "fused"), _device_seconds(e, dev, "unfused")]
            row += [(e.get("validation") or {}).get("status", ""),
                    (e.get("crosscheck") or {}).get("status", ""),
                    suite.get("wall_seconds", ""), suite.get("cpu_seconds", ""), "", ""]
        wr.writerow(row)
    return out.getvalue()


# --------------------------------------------------------------------------- command


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="solar suite",
        description="Analyze every KernelBench-format program in a folder (recursively), "
                    "each in a worker process. Exit 0 when the suite ran, whatever the "
                    "programs did (see the summary and --json); 2 usage, 3 missing DIR or "
                    "output folder, 6 unknown device.")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--arch", action="append", default=[], help="device id(s); default H100_SXM")
    p.add_argument("--json", dest="json_path", metavar="PATH", help="write solar.suite.v1 JSON")
    p.add_argument("--csv", dest="csv_path", metavar="PATH", help="one row per program")
    p.add_argument("--html", dest="html_path", metavar="PATH",
                   help="the HTML page: programs, rooflines, headroom (docs/html-report.md)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds per program before its worker is killed (default 300)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="replace a module-level constant in the programs that assign it")
    p.add_argument("--shrink", type=int, metavar="N",
                   help="reduce each program's integer size constants to at most N, keeping "
                        "their divisibility (groups, heads); a program that raises at that "
                        "size is retried at 2N, 4N, ..., then at its own sizes")
    p.add_argument("--policy", default="pytorch-default")
    p.add_argument("--cache-state", default="cold")
    p.add_argument("--strict", action="store_true", help="an unanalyzed op fails its program")
    p.add_argument("--real", action="store_true", help="capture on real tensors")
    p.add_argument("--eval", action="store_true",
                   help="model.eval() first (default: each module's own mode)")
    p.add_argument("--train", action="store_true", help="forward + backward")
    p.add_argument("--optimizer", choices=["sgd", "adam", "adamw"])
    p.add_argument("--validate", action="store_true",
                   help="run each program and its graph and compare outputs")
    p.add_argument("--no-crosscheck", action="store_true",
                   help="skip the FlopCounterMode cross-check")
    p.add_argument("--unroll", action="store_true",
                   help="capture loops (LSTM/GRU/RNN layers, JAX scans) step by step, not as "
                        "repeat ops")
    p.add_argument("--memory-limit", type=float, metavar="GB",
                   help="address space per worker in GB (RLIMIT_AS; torch itself takes "
                        "1-2 GB): a program allocating past it fails with cause "
                        "out_of_memory")
    p.add_argument("--mode", default="attainable", choices=["attainable", "provable"],
                   help="the cache-aware level's mode (as for `solar analyze`)")
    p.add_argument("--no-cache-aware", action="store_true",
                   help="skip the cache-aware level and the ski-slope")
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


def canonical_archs(requested: Sequence[str]) -> List[str]:
    """Device ids as the database spells them, each once; UserError for an unknown one.
    The database is consulted without resolving `host` (which would probe this machine)."""
    known = {d.lower(): d for d in _core.device_ids()}
    out: List[str] = []
    for a in requested:
        d = known.get(a.lower())
        if d is None:
            _core.device(a)  # raises the UserError that lists the known devices
            d = a
        if d not in out:
            out.append(d)
    return out


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
    requested: List[str] = []
    for a in ns.arch or ["H100_SXM"]:
        requested.extend(x.strip() for x in a.split(",") if x.strip())
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
