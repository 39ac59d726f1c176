"""What `solar suite` writes: the summary of its entries, the summary table and the failed
programs' lines on stdout, the solar.suite.v1 JSON document (streamed, a program's full
report copied from its spill file) and the CSV (docs/suite.md)."""

from __future__ import annotations

import collections
import csv
import io
import json
import os
from typing import Any, Dict, List, Optional, Sequence

from ..atomic_write import atomic_file

SUITE_SCHEMA = "solar.suite.v1"


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


def heaviest(entries: List[Dict[str, Any]], arch: str, n: int = 5) -> Dict[str, Any]:
    """The `n` analyzed programs with the most fused SOL on `arch`, and the `n` with the most
    headroom there: the eager reference (the framework-kernel level where the report has
    it, else the unfused level: docs/bounds.md) over the fused SOL, what fusing the program
    could win. Each row: source, fused_seconds, reference ("framework" or "unfused"),
    reference_seconds, headroom. Programs without a fused time on `arch` are left out."""
    rows = []
    for e in entries:
        if "error" in e:
            continue
        fused = _device_seconds(e, arch, "fused")
        if not isinstance(fused, (int, float)) or not fused > 0:
            continue
        reference = "framework"
        seconds = _device_seconds(e, arch, "framework")
        if not isinstance(seconds, (int, float)) or not seconds > 0:
            reference, seconds = "unfused", _device_seconds(e, arch, "unfused")
        rows.append({"source": e.get("program", {}).get("source", "?"), "fused_seconds": fused,
                     "reference": reference, "reference_seconds": seconds,
                     "headroom": seconds / fused})
    return {"arch": arch,
            "most_time": sorted(rows, key=lambda r: -r["fused_seconds"])[:n],
            "most_headroom": sorted(rows, key=lambda r: -r["headroom"])[:n]}


def _heaviest_lines(h: Dict[str, Any], folder: str) -> str:
    """The programs with the most time and the most headroom, a few lines each."""
    def name(row: Dict[str, Any]) -> str:
        return os.path.relpath(row["source"], folder) if folder else row["source"]

    def line(row: Dict[str, Any]) -> str:
        return (f"    {name(row):<40} fused {human_seconds(row['fused_seconds']):>9}  "
                f"{row['reference']} {human_seconds(row['reference_seconds']):>9}  "
                f"headroom {row['headroom']:.3g}x\n")

    if not h or not h.get("most_time"):
        return ""
    return (f"  most time on {h['arch']} (fused SOL)\n"
            + "".join(line(r) for r in h["most_time"])
            + f"  most headroom on {h['arch']} (eager reference / fused SOL: what fusion can "
              "win)\n"
            + "".join(line(r) for r in h["most_headroom"]))


def human_seconds(s: float) -> str:
    """A time in the report's units: 4.641 ms, 9.352 ns."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if s >= scale:
            return f"{s / scale:.4g} {unit}"
    return f"{s / 1e-12:.4g} ps"


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
    w(_heaviest_lines(s.get("heaviest"), folder))
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
