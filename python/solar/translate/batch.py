"""`solar translate DIR --jobs N`: every source of a folder translated (agent.translate), N at
a time, with a progress bar; resumable and summarized (docs/translate.md, "Batch").

Each finished source appends one line to OUT/translate-state.jsonl; a rerun skips the sources
recorded there with the same content, model and language-reference version ("resumed"; a
failed one is tried again with retry_failed). OUT/translate-summary.json holds the summary:
translated / validated / unvalidated / failed, the attempts histogram, the tokens, the capture
disagreements. OUT holds only loop programs and JSON, so `solar suite OUT` runs on it.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import shutil
import threading
import time
from typing import Any, Dict, List, Optional, TextIO

from .. import _core
from ..atomic_write import write_atomically
from ..errors import user_error
from ..program_source import is_loop_program
from . import agent, check, prompt, source

STATE = "translate-state.jsonl"
SUMMARY = "translate-summary.json"


def discover(folder: str, out_dir: Optional[str] = None) -> List[str]:
    """Source files under `folder` (relative paths, sorted): Python, CUDA and C files, not
    loop programs, package __init__.py files, hidden folders or the output folder."""
    found = []
    skip = os.path.abspath(out_dir) if out_dir else None
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__"
                         and os.path.abspath(os.path.join(root, d)) != skip)
        for name in files:
            path = os.path.join(root, name)
            if not name.endswith(source.SOURCE_SUFFIXES) or name == "__init__.py":
                continue
            if name.endswith(".py") and is_loop_program(path):
                continue
            found.append(os.path.relpath(path, folder))
    return sorted(found, key=lambda r: tuple(r.split(os.sep)))


def runnable(path: str) -> bool:
    """Whether Solar runs the source itself (PyTorch, JAX, NumPy); a Triton .py, like a CUDA
    or C file, is validated against the .npz beside it."""
    if not path.endswith(".py"):
        return False
    with open(path, encoding="utf-8") as f:
        return source.detect_lang(path, f.read()) in source.RUNNABLE


def out_path(rel: str, out_dir: str) -> str:
    """The translation of `rel` in `out_dir`: the same relative path, a .py; a non-Python
    source keeps its suffix in the name (kernels/softmax.cu -> kernels/softmax_cu.py)."""
    stem, ext = os.path.splitext(rel)
    return os.path.join(out_dir, stem + (".py" if ext == ".py" else f"_{ext[1:]}.py"))


def _read_state(path: str) -> Dict[str, Dict[str, Any]]:
    state: Dict[str, Dict[str, Any]] = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # a line cut short by an interruption
                state[rec["source"]] = rec
    except OSError:
        pass
    return state


class _Progress:
    """One updating bar on a terminal, a line per finished source otherwise."""

    def __init__(self, total: int, stream: Optional[TextIO]):
        self.total, self.stream = total, stream
        self.tty = bool(stream) and stream.isatty()
        self.start = time.monotonic()

    def update(self, done: int, counts: Dict[str, int], last: str) -> None:
        if not self.stream:
            return
        elapsed = time.monotonic() - self.start
        tally = (f"validated {counts['validated']}  unvalidated {counts['unvalidated']}  "
                 f"failed {counts['failed']}")
        if self.tty:
            width = shutil.get_terminal_size((100, 20)).columns
            filled = 24 * done // max(1, self.total)
            line = (f"[{'#' * filled}{'.' * (24 - filled)}] {done}/{self.total}  {tally}  "
                    f"{elapsed:.0f} s  {last}")
            self.stream.write("\r" + line[: max(10, width - 1)] + "\x1b[K")
        else:
            self.stream.write(f"solar translate: {done}/{self.total} {last}\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def translate_dir(folder: str, out_dir: Optional[str] = None,
                  options: Optional[agent.TranslateOptions] = None, jobs: int = 1,
                  retry_failed: bool = False, progress: Optional[TextIO] = None) -> Dict[str, Any]:
    """Translates every source under `folder` into `out_dir` (default <folder>_loop), `jobs`
    at a time; returns the summary (also written to out_dir/translate-summary.json). A
    source Solar does not run (CUDA, C, Triton) is validated against <stem>.npz beside it
    when there is one."""
    if not os.path.isdir(folder):
        raise user_error(f"{folder}: no such folder", "io")
    options = agent._resolve(options or agent.TranslateOptions())
    if jobs < 1:
        raise user_error("--jobs must be at least 1", "usage")
    out_dir = out_dir or folder.rstrip("/\\") + "_loop"
    os.makedirs(out_dir, exist_ok=True)
    version = prompt.reference_version(prompt.system_prompt(options.examples))
    mode = "unvalidated" if options.unvalidated else "validated"
    sources = discover(folder, out_dir)
    state_path = os.path.join(out_dir, STATE)
    state = _read_state(state_path)
    records: Dict[str, Dict[str, Any]] = {}
    todo = []
    for rel in sources:
        with open(os.path.join(folder, rel), "rb") as f:
            sha = prompt.digest(f.read().decode("utf-8", "replace"))
        old = state.get(rel)
        if old and old.get("sha256") == sha and old.get("model") == options.model and \
                old.get("language_reference_version") == version and old.get("mode") == mode \
                and (old["status"] != "failed" or not retry_failed):
            records[rel] = dict(old, resumed=True)
        else:
            todo.append((rel, sha))
    lock = threading.Lock()
    counts = {"validated": 0, "unvalidated": 0, "failed": 0}
    for r in records.values():
        counts[r["status"]] += 1
    bar = _Progress(len(sources), progress)
    done = [len(records)]

    def one(rel: str, sha: str) -> Dict[str, Any]:
        start = time.monotonic()
        path = os.path.join(folder, rel)
        rec: Dict[str, Any] = {"source": rel, "sha256": sha, "model": options.model,
                               "language_reference_version": version, "mode": mode}
        opts = options
        sibling = os.path.splitext(path)[0] + ".npz"
        if not options.unvalidated and os.path.isfile(sibling) and not runnable(path):
            opts = dataclasses.replace(options, reference=sibling)
        try:
            t = agent.translate(path, out_path(rel, out_dir), opts)
            rec.update(status=t.status, attempts=t.attempts, usage=t.provenance.get("usage"),
                       cache_hit=t.provenance.get("cache", {}).get("hit", False))
            if t.program_path:
                rec["program"] = os.path.relpath(t.program_path, out_dir)
            if t.error:
                rec["error"] = t.error
            capture_check = t.provenance.get("capture_check")
            if capture_check:
                rec["capture_check"] = capture_check
            if t.provenance.get("warnings"):
                rec["warnings"] = t.provenance["warnings"]
        except (_core.Error, source.SourceError, OSError) as e:
            rec.update(status="failed", attempts=0, error=str(e))
        except Exception as e:  # one source's bug must not stop the batch
            rec.update(status="failed", attempts=0, error=f"internal: {type(e).__name__}: {e}")
        rec["seconds"] = round(time.monotonic() - start, 2)
        with lock:
            with open(state_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(rec) + "\n")
            counts[rec["status"]] += 1
            done[0] += 1
            word = rec["status"] + (f" ({rec['attempts']} attempt(s))" if rec["attempts"] else "")
            bar.update(done[0], counts, f"{rel}: {word}")
        return rec

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for rec in pool.map(lambda a: one(*a), todo):
            records[rec["source"]] = rec
    bar.finish()
    ordered = [records[r] for r in sources]
    summary = summarize(ordered, folder, out_dir, options)
    write_atomically(os.path.join(out_dir, SUMMARY), json.dumps(summary, indent=1))
    return summary


def summarize(records: List[Dict[str, Any]], folder: str, out_dir: str,
              options: agent.TranslateOptions) -> Dict[str, Any]:
    counts = {"validated": 0, "unvalidated": 0, "failed": 0}
    histogram: Dict[str, int] = {}
    tokens = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    disagreements, failures, warnings = [], [], []
    for r in records:
        counts[r["status"]] += 1
        if r["status"] != "failed":
            histogram[str(r["attempts"])] = histogram.get(str(r["attempts"]), 0) + 1
        else:
            failures.append({"source": r["source"], "error": r.get("error", "")})
        if not r.get("cache_hit") and not r.get("resumed"):
            for k in tokens:
                tokens[k] += int((r.get("usage") or {}).get(k, 0))
        if (r.get("capture_check") or {}).get("status") == "differ":
            disagreements.append({"source": r["source"], **r["capture_check"]})
        warnings.extend({"source": r["source"], "warning": w} for w in r.get("warnings", []))
    return {"schema": "solar.translate-batch.v1", "folder": folder, "out": out_dir,
            "model": options.model, "sources": len(records),
            "translated": counts["validated"] + counts["unvalidated"], **counts,
            "resumed": sum(1 for r in records if r.get("resumed")),
            "cache_hits": sum(1 for r in records if r.get("cache_hit")),
            "attempts_histogram": dict(sorted(histogram.items(), key=lambda kv: int(kv[0]))),
            "tokens": tokens, "capture_disagreements": disagreements, "warnings": warnings,
            "failures": failures,
            "records": records}


def summary_table(summary: Dict[str, Any]) -> str:
    """The summary as `solar translate DIR` prints it."""
    hist = "  ".join(f"{k}: {v}" for k, v in summary["attempts_histogram"].items()) or "none"
    t = summary["tokens"]
    lines = [
        f"Translated {summary['folder']} -> {summary['out']} with {summary['model']}: "
        f"{summary['sources']} source(s)",
        f"  translated   {summary['translated']}  (validated {summary['validated']}, "
        f"unvalidated {summary['unvalidated']})",
        f"  failed       {summary['failed']}",
        f"  resumed      {summary['resumed']}  cache hits {summary['cache_hits']}",
        f"  attempts     {hist}",
        f"  tokens       prompt {t['prompt_tokens']}, completion {t['completion_tokens']}, "
        f"total {t['total_tokens']}",
    ]
    if summary["unvalidated"]:
        lines.append(f"  !!! {summary['unvalidated']} UNVALIDATED translation(s): their outputs "
                     "were never compared with the sources'")
    for d in summary["capture_disagreements"]:
        lines.append(f"  !!! capture disagrees: {d['source']}: " + ", ".join(
            f"{k} translation {d['translation'][k]} vs capture {d['capture'][k]}"
            for k in d.get("differ", [])))
    for w in summary.get("warnings", []):
        lines.append(f"  !!! warning: {w['source']}: {w['warning']}")
    for f in summary["failures"]:
        lines.append(f"  FAIL {f['source']}: {check.headline(f['error'])}")
    return "\n".join(lines) + "\n"
