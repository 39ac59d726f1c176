"""`solar sweep SPEC | PROGRAM...`: the command (docs/sweep.md).

The spec file is the primary form: it is the sweep's record (copied to OUT/spec.json) and
rerunning it resumes. The command-line form builds the same spec from --arch, --grid,
--set and the fixed options, so `solar sweep OUT/spec.json` reruns it too.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from typing import Any, Dict, List

from .. import _core
from ..atomic_write import write_atomically
from ..command_options import (DEFAULT_ARCH, add_device_options, add_level_options,
                               add_math_options, add_options, arch_ids)
from ..errors import command, parse_args
from ..models import estimate as model_estimate
from ..suite.progress import Progress
from . import plans_cli, plot, run, table
from . import spec as spec_mod

_SPEC_SUFFIXES = (".yaml", ".yml", ".json")
# Options that say what is computed: in a spec file, not beside it.
_ANALYSIS_OPTIONS = ("arch", "grid", "set", "policy", "cache_state", "mode", "no_cache_aware",
                     "crosscheck", "train", "optimizer", "strict", "phase", "dtype")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="solar sweep",
        description="Programs x devices x a grid of --set values, one capture per program "
                    "and grid point analyzed on every device, on a Dask cluster (local by "
                    "default). One row per (program, point, device) in OUT/sweep.parquet and "
                    "OUT/sweep.csv, a plot per swept key; a rerun resumes (docs/sweep.md). "
                    "Exit 0 when the sweep ran, whatever its points did; 2 usage, 3 missing "
                    "file or folder, 4 malformed spec, 6 unknown device.",
        epilog="examples:\n"
               "  solar sweep sweep.yaml\n"
               "  solar sweep examples/torch/mlp.py --arch H100_SXM --arch B200 "
               "--grid batch_size=1,8,64 --grid hidden=1024,4096 --out sweeps/mlp\n"
               "  solar sweep sweep.yaml --address tcp://HOST:8786",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+", metavar="SPEC|PROGRAM",
                   help="a spec file (.yaml, .yml, .json), or programs: PROGRAM.py, hf:NAME, "
                        "a model's config.json")
    add_device_options(p)
    p.add_argument("--grid", action="append", default=[], metavar="NAME=V1,V2,...",
                   help="sweep a module-level constant (or a model setting: batch, seq, "
                        "context, phase, dtype) over these values; repeatable (the product)")
    add_options(p, ("set",))
    p.add_argument("--phase", help="Hugging Face models: the phase (prefill, decode, ...)")
    p.add_argument("--dtype", help="Hugging Face models: the dtype (bf16, ...)")
    # Unset by default: a spec file says them, and they are refused beside one.
    add_math_options(p, unset=True)
    add_level_options(p, unset=True)
    p.add_argument("--crosscheck", action="store_true", default=None,
                   help="also run the FlopCounterMode cross-check (off in sweeps)")
    add_options(p, ("train", "optimizer", "strict"), unset=True)
    p.add_argument("--out", metavar="DIR",
                   help="output folder (created; its parent must exist); a spec's `out`")
    p.add_argument("--jobs", type=int, metavar="N",
                   help="local worker processes (default min(2, cores))")
    p.add_argument("--address", metavar="tcp://HOST:PORT",
                   help="run on the Dask scheduler at this address instead of a local cluster")
    p.add_argument("--memory-limit", dest="memory_limit_gb", type=float, metavar="GB",
                   help="memory per local worker; a point past it fails (default: the "
                        "machine's memory shared among the workers)")
    p.add_argument("--no-plots", dest="plots", action="store_false", default=None,
                   help="write no SVG plots")
    p.add_argument("--checkpoint", type=float, default=30.0, metavar="SECONDS",
                   help="write the table of the points done so far this often (default 30)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--force", action="store_true",
                   help=f"run more than {spec_mod.LIMIT_POINTS:,} points, and models past the "
                        "work estimate's limits (docs/sweep.md, \"Limits\")")
    return p


def _pairs(items: List[str], option: str) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for item in items:
        name, eq, value = item.partition("=")
        name = name.strip()
        if not eq or not name.isidentifier():
            raise spec_mod.user_error(f"{option} {item}: expected NAME=VALUE", "usage")
        if name in out:
            raise spec_mod.user_error(f"{option} {name} given twice", "usage")
        out[name] = value
    return out


def is_spec_file(arg: str) -> bool:
    """A spec file, not a program: .yaml, .yml, or .json other than a model's config.json."""
    return arg.endswith(_SPEC_SUFFIXES) and not spec_mod.is_model(arg)


def build_spec(ns: argparse.Namespace) -> spec_mod.Spec:
    """The Spec of the command line: a spec file (with --out, --jobs, --address,
    --memory-limit, --no-plots overriding its own), or programs and options."""
    specs = [a for a in ns.inputs if is_spec_file(a)]
    if specs:
        if len(ns.inputs) > 1:
            raise spec_mod.user_error(
                f"give one spec file, or programs: not {' '.join(ns.inputs)}", "usage")
        given = [f"--{o.replace('_', '-')}" for o in _ANALYSIS_OPTIONS
                 if getattr(ns, o) not in (None, [], False)]
        if given:
            raise spec_mod.user_error(
                f"{', '.join(given)}: with a spec file, say it in the spec ({specs[0]})",
                "usage")
        spec = spec_mod.load_spec(specs[0])
    else:
        grid = {}
        for name, text in _pairs(ns.grid, "--grid").items():
            grid[name] = spec_mod.parse_grid_values(name, text)
        model = {k: getattr(ns, k) for k in ("phase", "dtype") if getattr(ns, k) is not None}
        fields: Dict[str, Any] = {
            "programs": list(ns.inputs),
            "archs": arch_ids(ns.arch) or [DEFAULT_ARCH],
            "grid": grid,
            "set": {k: spec_mod.parse_value(v) for k, v in _pairs(ns.set, "--set").items()},
            "model": model}
        for name, value in (("policy", ns.policy), ("cache_state", ns.cache_state),
                            ("mode", ns.mode), ("crosscheck", ns.crosscheck),
                            ("train", ns.train), ("optimizer", ns.optimizer),
                            ("strict", ns.strict)):
            if value is not None:
                fields[name] = value
        if ns.no_cache_aware:
            fields["cache_aware"] = False
        spec = spec_mod.Spec(**fields)
        spec_mod.check_fields(spec, "solar sweep")
    for name in ("out", "jobs", "address", "memory_limit_gb", "plots"):
        value = getattr(ns, name)
        if value is not None:
            setattr(spec, name, value)
    spec_mod.check_fields(spec, "solar sweep")
    if not spec.out:
        raise spec_mod.user_error("no output folder: give --out DIR (or `out:` in the spec)",
                                  "usage")
    return spec


def _check_out(folder: str) -> None:
    """The output folder: an existing folder, or one whose parent exists (io error
    otherwise; nothing is created until the sweep runs)."""
    if os.path.exists(folder):
        if not os.path.isdir(folder):
            raise spec_mod.user_error(f"--out {folder}: not a folder", "io")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise spec_mod.user_error(f"--out {folder}: the folder is not writable", "io")
        return
    parent = os.path.dirname(os.path.abspath(folder))
    if not os.path.isdir(parent):
        raise spec_mod.user_error(f"--out {folder}: folder '{parent}' does not exist", "io")


def _write_spec(folder: str, spec: spec_mod.Spec) -> str:
    """OUT/spec.json: the spec as it runs (every default filled), written before the first
    point so that `solar sweep OUT/spec.json` resumes an interrupted sweep."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "spec.json")
    write_atomically(path, json.dumps(spec.to_dict(), indent=1, default=repr) + "\n")
    return path


def _about(todo, spec: spec_mod.Spec, programs, jobs: int) -> str:
    """`about 2.5 minutes on 2 workers`: the points' rough seconds (spec_mod.point_seconds)
    over the local workers, or in all on a cluster whose size is not known yet."""
    values = {p.ref: spec_mod.model_values(p, spec) for p in programs if p.kind == "model"}
    total = sum(spec_mod.point_seconds(spec, p, values.get(p.program.ref)) for p, _ in todo)
    if spec.address:
        return f"about {model_estimate.duration(total)} of work for the cluster's workers"
    return f"about {model_estimate.duration(total / jobs)} on {jobs} worker(s)"


def run_sweep(spec: spec_mod.Spec, quiet: bool = False, checkpoint_s: float = 30.0,
              stream=None, force: bool = False) -> Dict[str, Any]:
    """Checks the spec, counts its points (more than spec.LIMIT_POINTS: a too_large error
    unless `force`), says how many and about how long, writes OUT/spec.json before the first
    point, runs what an earlier run in spec.out left to do, writes the table and the plots.
    Returns the summary (counts, seconds, paths). Raises solar.UserError for bad input
    (nothing written then), KeyboardInterrupt after writing the points done."""
    stream = stream or sys.stderr
    programs = spec_mod.check(spec)
    for key in spec.grid:
        if key in table.RESERVED:
            raise spec_mod.user_error(f"grid key '{key}' is also a column of the table "
                                      f"({', '.join(sorted(table.RESERVED))})", "usage")
    folder = spec.out
    _check_out(folder)
    jobs = spec.jobs or min(2, os.cpu_count() or 1)
    count = spec_mod.count_points(spec, programs)
    if count > spec_mod.LIMIT_POINTS and not force:
        grid = " x ".join(str(len(v)) for v in spec.grid.values())
        rough = count * spec_mod.PROGRAM_POINT_SECONDS / jobs
        raise spec_mod.user_error(
            f"the sweep has {model_estimate.fmt(count)} points ({len(programs)} program(s) x "
            f"grid {grid}), "
            f"past the limit of {spec_mod.LIMIT_POINTS:,} (about "
            f"{model_estimate.duration(rough)} on {jobs} worker(s) at "
            f"{spec_mod.PROGRAM_POINT_SECONDS:g} s a point); --force runs them "
            "(docs/sweep.md, \"Limits\")", "too_large")
    points = spec_mod.expand(spec, programs)
    old_rows, old_path = table.read(folder) if os.path.isdir(folder) else ([], None)
    kept, todo, counts = run.plan(points, spec.archs, old_rows)
    rows: Dict[Any, Dict[str, Any]] = dict(kept)
    grid_keys = list(spec.grid)
    summary: Dict[str, Any] = {
        "programs": len(programs), "points": len(points), "devices": len(spec.archs),
        "computed_points": 0, "failed_points": 0, **counts, "compute_seconds": 0.0,
        "cluster_seconds": 0.0, "workers": 0, "address": spec.address or "local"}
    if not quiet:
        stream.write(
            f"solar sweep: {len(programs)} program(s) x {len(points) // len(programs)} "
            f"point(s) x {len(spec.archs)} device(s): {len(todo)} point(s) to compute"
            + (f", {_about(todo, spec, programs, jobs)}" if todo else "")
            + (f", {counts['skipped_points']} skipped (already in {old_path})"
               if counts["skipped_points"] else "")
            + (f"; {counts['retried_rows']} failed row(s) computed again"
               if counts["retried_rows"] else "")
            + (f"; {counts['dropped_rows']} row(s) of {old_path} not in this spec dropped"
               if counts["dropped_rows"] else "") + "\n")
        stream.flush()

    def save() -> None:
        table.write(folder, run.assemble(points, spec.archs, rows), grid_keys)

    spec_path = os.path.join(folder, "spec.json")
    if todo:
        tasks = [spec_mod.task(spec, p, archs, force=force) for p, archs in todo]
        labels = {t["key"]: p.label() for t, (p, _) in zip(tasks, todo)}
        progress = Progress(len(tasks), enabled=not quiet, stream=stream,
                             label="solar sweep")
        running: List[str] = []
        t0 = time.monotonic()
        run.log_silently()
        with run.client_for(spec.address, jobs, spec.memory_limit_gb) as client:
            try:
                summary["workers"] = run.wait_for_workers(client)
            except (TimeoutError, OSError) as e:
                raise spec_mod.user_error(f"no Dask worker joined the scheduler at "
                                          f"{spec.address or 'the local cluster'}: {e}",
                                          "io") from None
            run.warm(client, models=run.model_warm_ups(tasks))
            _write_spec(folder, spec)  # only once the cluster is there; before any point
            summary["cluster_seconds"] = round(time.monotonic() - t0, 3)
            t1 = time.monotonic()
            last_save = t1
            done = 0

            def started(t: Dict[str, Any]) -> None:
                running.append(labels[t["key"]])
                progress.update(done, summary["failed_points"], running)

            try:
                for result in run.execute(client, tasks, on_start=started):
                    done += 1
                    summary["computed_points"] += 1
                    if not result["ok"]:
                        summary["failed_points"] += 1
                    label = labels[result["key"]]
                    if label in running:
                        running.remove(label)
                    for r in result["rows"]:
                        rows[(r["point_key"], r["arch"])] = r
                    progress.update(done, summary["failed_points"], running,
                                    force=done == len(tasks))
                    if checkpoint_s > 0 and time.monotonic() - last_save >= checkpoint_s:
                        save()
                        last_save = time.monotonic()
            except KeyboardInterrupt:
                progress.finish()
                save()
                raise
            finally:
                summary["compute_seconds"] = round(time.monotonic() - t1, 3)
        progress.finish()
    else:
        _write_spec(folder, spec)
    summary["paths"] = save_paths = table.write(
        folder, run.assemble(points, spec.archs, rows), grid_keys)
    save_paths.append(spec_path)
    summary["plots"] = []
    if spec.plots:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            stream.write("solar sweep: note: no plots: matplotlib is not installed "
                         "(pip install 'solar[plot]')\n")
        else:
            summary["plots"] = plot.write_plots(folder, spec.programs, spec.grid,
                                                spec.archs, points, rows)
    final = run.assemble(points, spec.archs, rows)
    summary["rows"] = len(final)
    summary["ok_rows"] = sum(1 for r in final if r.get("status") == "ok")
    summary["failed"] = [r for r in final if r.get("status") != "ok"]
    return summary


def summary_text(summary: Dict[str, Any]) -> str:
    s = summary
    lines = [(f"solar sweep: {s['rows']} row(s): {s['ok_rows']} ok, "
              f"{s['rows'] - s['ok_rows']} failed")]
    if s["computed_points"]:
        rate = s["computed_points"] / s["compute_seconds"] if s["compute_seconds"] else 0.0
        lines.append(f"computed {s['computed_points']} point(s) in {s['compute_seconds']:.1f} s "
                     f"on {s['workers']} worker thread(s) ({rate:.2f} points/s; "
                     f"cluster ready in {s['cluster_seconds']:.1f} s, {s['address']})")
    else:
        lines.append("computed nothing: every point was already done")
    if s["skipped_points"]:
        lines.append(f"skipped {s['skipped_points']} point(s) already done")
    lines.append("wrote " + ", ".join(s["paths"]))
    if s["plots"]:
        lines.append(f"plots: {', '.join(s['plots'])}")
    seen = set()
    failed = []
    for r in s["failed"]:
        if r["point_key"] in seen:
            continue
        seen.add(r["point_key"])
        msg = (r.get("error") or "").strip().splitlines()
        failed.append(f"  {r['program']} "
                      + " ".join(f"{k}={v}" for k, v in r.items()
                                 if k not in table.RESERVED) + f": {msg[-1][:200] if msg else ''}")
    if failed:
        lines.append("failed points:")
        lines += failed
    return "\n".join(lines) + "\n"


@command()
def main(args: List[str]) -> int:
    """`solar sweep ...` (args after `sweep`); returns the exit code."""
    codes = _core.EXIT_CODES
    if args and args[0] == "plans":  # every parallel plan of a model on a system
        return plans_cli.main(args[1:])
    ns = parse_args(parser(), args)
    if ns.checkpoint < 0:
        raise spec_mod.user_error("--checkpoint must be 0 (off) or more seconds", "usage")
    spec = build_spec(ns)

    def terminated(signum, frame):  # SIGTERM: stop as on Ctrl-C, keeping what is done
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        summary = run_sweep(spec, quiet=ns.quiet, checkpoint_s=ns.checkpoint, force=ns.force)
    except KeyboardInterrupt:
        sys.stderr.write(f"solar sweep: interrupted; the points done are in {spec.out} "
                         "(rerun the same command to resume)\n")
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    sys.stdout.write(summary_text(summary))
    return codes["ok"]
