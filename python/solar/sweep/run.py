"""A sweep's points on Dask.distributed workers (docs/sweep.md, "Running").

The parent (this module's `execute`) imports no torch for it. Each point is one task,
`run_point`, run in a worker process: it captures the program once (or builds the model)
and analyzes it on every device the point still needs, and returns the rows; any failure
of the point, the program's own included, is a failed row inside the task. A worker that
dies under a point (out of memory, a crash in native code) ends that point only: the
scheduler marks it KilledWorker (a local cluster is started with allowed-failures 0, so
the point is not retried on the next worker) and the sweep goes on.

At most as many points are in flight as the cluster has worker threads: each worker holds
the point it runs and no queue of others, so a worker's death fails only its own point,
and the table can be checkpointed as points finish.
"""

from __future__ import annotations

import collections
import contextlib
import gc
import hashlib
import io
import logging
import os
import tempfile
import time
import uuid
import warnings
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

from .. import _core, models, programs
from .. import models as models_mod
from ..analysis import ProgramOptions
from ..atomic_write import atomic_file
from ..models import layers_once
from ..errors import failing_line, user_error
from ..program_source import OverrideError, ProgramFormatError
from ..program_worker import reset_torch_state, warm_up
from . import table

_KILLED = ("the worker process running this point died ({what}): out of memory (the "
           "worker's memory limit), or a crash in native code; the point was not retried")


# --------------------------------------------------------------------------- worker side


def _worker_address() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):  # not in a Dask worker (a direct call)
        return "local"


def _torch_one_thread():
    """torch with one intra-op thread, or None when torch is not installed."""
    try:
        import torch
    except ImportError:
        return None
    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)
    return torch


def warm_worker(models: Any = False) -> str:
    """Imports torch and the frontend and captures a one-layer model once per worker
    (client.run), before the first point (solar suite's warm-up): the one-time costs of the
    first capture are not the first point's time. models: import transformers too; a list
    of model tasks' (ref, model_kwargs): each analyzed once with 2 layers, so that its
    model type's modules and its first capture are paid before the first point."""
    torch = _torch_one_thread()
    if torch is not None:
        with contextlib.redirect_stdout(io.StringIO()):
            warm_up(torch)
    if models:
        with contextlib.suppress(Exception):
            import transformers  # noqa: F401
    for ref, kwargs in (models if isinstance(models, list) else []):
        config = {**kwargs.get("config", {}), "num_hidden_layers": 2}
        with contextlib.suppress(Exception), warnings.catch_warnings(), \
                contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            models_mod.analyze_model(models_mod.ModelRun(ref, **{**kwargs, "config": config}),
                                     ProgramOptions(crosscheck=False, cache_aware=False))
    if isinstance(models, list):
        # What the imports and the warm-up left (torch, transformers: millions of objects)
        # lives as long as the worker: out of the collector's full passes, which otherwise
        # walk it every few points (0.2-0.3 s each, measured on an 8B decode point).
        gc.collect()
        gc.freeze()
    return _worker_address()


def _local_copy(task: Dict[str, Any]) -> str:
    """The program file to read on this worker: the task's path when it holds the same
    contents (a shared or the same file system), else a copy of the contents the parent
    sent, in a temporary folder under the same file name (a cluster's other machines)."""
    path = task["path"]
    if task["kind"] == "model" and path.startswith("hf:"):
        return path
    try:
        with open(path, "rb") as f:
            if hashlib.sha256(f.read()).hexdigest() == task["digest"]:
                return path
    except OSError:
        pass
    folder = os.path.join(tempfile.gettempdir(), f"solar-sweep-{task['digest'][:16]}")
    os.makedirs(folder, exist_ok=True)
    copy = os.path.join(folder, os.path.basename(path))
    if not os.path.exists(copy):  # workers of one machine may race: each copy is whole
        with atomic_file(copy, binary=True) as f:
            f.write(task["source"])
    return copy


def _describe(e: BaseException, task: Dict[str, Any], path: str) -> str:
    """The failed row's error: Solar's own message for its errors and bad --set values; for
    the program's own failure, PROGRAM:LINE and the exception, as `solar analyze` says it."""
    if isinstance(e, (_core.Error, OverrideError, ProgramFormatError)):
        return f"{type(e).__name__}: {e}"
    if task["kind"] == "model":
        return f"{type(e).__name__}: {e}"
    where = failing_line(e, path)
    where = task["program"] + where[len(path):] if where.startswith(path) else where
    return f"{where}: the program failed: {type(e).__name__}: {e}"


def _analyze(task: Dict[str, Any], path: str):
    o = task["options"]
    options = ProgramOptions(
        archs=list(task["archs"]), policy=o["policy"], cache_state=o["cache_state"],
        overrides=dict(task.get("overrides", {})), strict=o["strict"], train=o["train"],
        optimizer=o["optimizer"], validate=False, crosscheck=o["crosscheck"],
        mode=o["mode"], cache_aware=o["cache_aware"])
    if task["kind"] == "model":
        return models.analyze_model(models.ModelRun(path, **task["model_kwargs"]), options)
    return programs.analyze_file(path, options)


def run_point(task: Dict[str, Any]) -> Dict[str, Any]:
    """One point in a worker: {"key", "rows", "worker", "ok"}. Never raises for the
    point's own failure (that is a failed row)."""
    worker = _worker_address()
    torch = _torch_one_thread()
    start = time.perf_counter()
    path = task["path"]
    try:
        path = _local_copy(task)
        # The program's prints and warnings would interleave with the progress line.
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            result = _analyze(task, path)
            seconds = time.perf_counter() - start
            rows = table.rows_from_report(result.report, task, seconds, worker)
        ok = True
    except BaseException as e:  # noqa: BLE001 - a program's SystemExit is its failure
        if isinstance(e, KeyboardInterrupt):
            raise
        rows = table.failed_rows(task, _describe(e, task, path), time.perf_counter() - start,
                                 worker)
        ok = False
    finally:
        if torch is not None:
            reset_torch_state(torch, 1)
    return {"key": task["key"], "rows": rows, "worker": worker, "ok": ok}


# --------------------------------------------------------------------------- cluster


@contextlib.contextmanager
def client_for(address: Optional[str], jobs: int,
               memory_limit_gb: Optional[float] = None) -> Iterator[Any]:
    """A distributed.Client: connected to the scheduler at `address`, or to a new
    LocalCluster of `jobs` worker processes (one thread each, 127.0.0.1, no dashboard),
    closed when the block ends. The workers' OMP/MKL thread counts are 1 already (dask's
    distributed.nanny.pre-spawn-environ); run_point sets torch's."""
    import dask
    from distributed import Client, LocalCluster

    if address:
        try:
            client = Client(address, timeout="30s")
        except (OSError, TimeoutError, ValueError) as e:
            raise user_error(f"--address {address}: cannot reach the Dask scheduler: "
                             f"{type(e).__name__}: {e}", "io") from None
        try:
            yield client
        finally:
            client.close()
        return
    memory = "auto" if memory_limit_gb is None else int(memory_limit_gb * 1e9)
    # allowed-failures 0: a point whose worker dies fails at once (KilledWorker) instead
    # of killing three more workers first. No statistical profiler (a stack sample of the
    # running point every 10 ms, for a dashboard there is not).
    with dask.config.set({"distributed.scheduler.allowed-failures": 0,
                          "distributed.worker.profile.enabled": False}):
        cluster = LocalCluster(n_workers=jobs, processes=True, threads_per_worker=1,
                               host="127.0.0.1", dashboard_address=None,
                               silence_logs=logging.CRITICAL, memory_limit=memory)
    try:
        client = Client(cluster)
        try:
            yield client
        finally:
            client.close()
    finally:
        cluster.close()


def _slots(client) -> int:
    try:
        return max(1, sum(client.nthreads().values()))
    except Exception:  # noqa: BLE001 - a scheduler that went away: one at a time
        return 1


def execute(client, tasks: Sequence[Dict[str, Any]],
            on_start: Callable[[Dict[str, Any]], None] = lambda t: None
            ) -> Iterator[Dict[str, Any]]:
    """Runs the tasks on the client's workers, yielding each point's result as it finishes
    (a task that raised or whose worker died gives failed rows)."""
    from distributed import as_completed
    from distributed.client import FutureCancelledError
    from distributed.scheduler import KilledWorker

    pending = collections.deque(tasks)
    inflight: Dict[Any, Dict[str, Any]] = {}
    done = as_completed()
    run_id = uuid.uuid4().hex[:8]

    def top_up() -> None:
        slots = _slots(client)
        while pending and len(inflight) < slots:
            t = pending.popleft()
            f = client.submit(run_point, t, key=f"solar-sweep-{run_id}-{t['key']}",
                              pure=False, retries=0)
            inflight[f] = t
            done.add(f)
            on_start(t)

    top_up()
    for f in done:
        t = inflight.pop(f)
        try:
            result = f.result()
        except KilledWorker as e:
            result = {"key": t["key"], "ok": False, "worker": None,
                      "rows": table.failed_rows(t, _KILLED.format(what=f"KilledWorker: {e}"),
                                                None, None)}
        except (FutureCancelledError, Exception) as e:  # noqa: BLE001 - the task's own
            result = {"key": t["key"], "ok": False, "worker": None,
                      "rows": table.failed_rows(t, f"{type(e).__name__}: {e}", None, None)}
        f.release()
        yield result
        top_up()


def wait_for_workers(client, timeout: float = 60.0) -> int:
    """Waits for the cluster's first worker; the worker-thread count. TimeoutError when no
    worker joins in time."""
    client.wait_for_workers(1, timeout=timeout)
    return _slots(client)


def warm(client, models: Any = False) -> None:
    """warm_worker on every worker now (in parallel); a worker that cannot is left to fail
    its points with the reason."""
    with contextlib.suppress(Exception):
        client.run(warm_worker, models)


def model_warm_ups(tasks: Sequence[Dict[str, Any]]) -> Any:
    """What warm_worker warms for these tasks: with layers captured once (docs/layers-once.md)
    each model's first task, at 2 layers; else whether any task is a model (transformers
    imported)."""
    if not any(t["kind"] == "model" for t in tasks):
        return False
    if not layers_once.enabled():
        return True
    firsts: Dict[str, Any] = {}
    for t in tasks:
        if t["kind"] == "model" and t["path"].startswith("hf:"):
            firsts.setdefault(t["path"], (t["path"], dict(t["model_kwargs"])))
    return list(firsts.values()) or True


def log_silently() -> None:
    """Quiets distributed's own loggers in this process (the client's reconnect notes): the
    sweep reports failures in its rows."""
    for name in ("distributed", "distributed.client", "distributed.worker",
                 "distributed.scheduler", "distributed.nanny"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


# --------------------------------------------------------------------------- resume


def plan(points: Sequence[Any], archs: Sequence[str], old_rows: Sequence[Dict[str, Any]]):
    """What an earlier run in the output folder leaves to do. Returns (kept, todo, counts):
    kept {(point key, arch): row} of its ok rows this spec asks for; todo [(point, [archs
    still needed])]; counts {"skipped_points", "kept_rows", "retried_rows", "dropped_rows"}.
    Failed rows are computed again (a killed worker's point may pass the second time)."""
    wanted = {(p.key, a) for p in points for a in archs}
    kept: Dict[Any, Dict[str, Any]] = {}
    retried = dropped = 0
    for r in old_rows:
        k = (r.get("point_key"), r.get("arch"))
        if k not in wanted:
            dropped += 1
        elif r.get("status") == "ok":
            kept[k] = r
        else:
            retried += 1
    todo = []
    for p in points:
        missing = [a for a in archs if (p.key, a) not in kept]
        if missing:
            todo.append((p, missing))
    counts = {"skipped_points": len(points) - len(todo), "kept_rows": len(kept),
              "retried_rows": retried, "dropped_rows": dropped}
    return kept, todo, counts


def assemble(points: Sequence[Any], archs: Sequence[str],
             rows: Dict[Any, Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The table's rows in the spec's order (points, then devices), of those present."""
    return [rows[(p.key, a)] for p in points for a in archs if (p.key, a) in rows]
