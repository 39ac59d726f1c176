"""A sweep's rows: one per (program, grid point, device), built from the report in the
worker (rows_from_report) or for a failed point (failed_rows), and written as Parquet and
CSV with the same columns and values (write), read back for a resume (read).

Columns (docs/sweep.md): program, arch, each grid key, status, error, then the report's
totals and each level's seconds, bottleneck resource and bound (compute or memory), then
unanalyzed, fits, wall_seconds, worker, point_key.
"""

from __future__ import annotations

import csv
import io
import math
import os
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from ..atomic_write import atomic_file, write_atomically
from ..errors import user_error
from ..report import parse_report_json

PARQUET = "sweep.parquet"
CSV = "sweep.csv"

# The columns after the grid keys, in order, with their Arrow type names.
_COUNTS = ("macs", "flops", "bytes_unfused", "bytes_fused")
_LEVELS = ("unfused", "fused", "cache_aware")
RESULT_COLUMNS: List[Tuple[str, str]] = (
    [("status", "string"), ("error", "string")]
    + [(c, "count") for c in _COUNTS]
    + [col for level in _LEVELS for col in ((f"{level}_seconds", "float64"),
                                             (f"{level}_bottleneck", "string"),
                                             (f"{level}_bound", "string"))]
    # Tokens per step of a model (`model.tokens_per_step`, docs/models.md; null for other
    # programs) and the tokens per second at the fused SOL.
    + [("tokens_per_step", "int64"), ("tokens_per_second", "float64")]
    + [("unanalyzed", "int64"), ("fits", "bool"), ("wall_seconds", "float64"),
       ("worker", "string"), ("point_key", "string")])
LEAD_COLUMNS = ("program", "arch")
RESERVED = set(LEAD_COLUMNS) | {name for name, _ in RESULT_COLUMNS}

# Memory resources of the report's levels (src/report/modules.cc is_memory): a level whose
# bottleneck is one of them is memory-bound, any other (a compute unit) compute-bound.
_MEMORY = ("dram", "l2")


def bound(resource: Optional[str]) -> Optional[str]:
    """compute, memory or none (nothing to do) from a level's bottleneck resource."""
    if resource is None:
        return None
    if resource in ("", "none"):
        return "none"
    return "memory" if resource.split(".")[0] in _MEMORY else "compute"


def _base(task: Dict[str, Any], arch: str) -> Dict[str, Any]:
    row: Dict[str, Any] = {"program": task["program"], "arch": arch}
    for name, value in task["settings"]:
        row[name] = value
    return row


def rows_from_report(report: Any, task: Dict[str, Any], wall_seconds: float,
                     worker: str) -> List[Dict[str, Any]]:
    """One ok row per device of task["archs"] from a solar.Report (read through its JSON
    without the per-op rows: report-json.md's totals, coverage and devices.<ID>)."""
    data = parse_report_json(report.to_json(None, ops=False))
    totals = data["totals"]
    devices = data["devices"]
    rows = []
    for arch in task["archs"]:
        d = devices[arch]
        row = _base(task, arch)
        row.update({"status": "ok", "error": None})
        row.update({c: totals.get(c) for c in _COUNTS})
        for level in _LEVELS:
            lv = d.get(level) or {}
            present = level != "cache_aware" or lv.get("available", False)
            seconds = lv.get("seconds") if present else None
            neck = lv.get("bottleneck") if present else None
            row[f"{level}_seconds"] = seconds
            row[f"{level}_bottleneck"] = neck
            row[f"{level}_bound"] = bound(neck)
        tokens = (data.get("model") or {}).get("tokens_per_step")
        fused = row.get("fused_seconds")
        row["tokens_per_step"] = tokens
        row["tokens_per_second"] = tokens / fused if tokens and fused else None
        row["unanalyzed"] = data.get("coverage", {}).get("unanalyzed")
        row["fits"] = (d.get("memory") or {}).get("fits")
        row["wall_seconds"] = round(wall_seconds, 4)
        row["worker"] = worker
        row["point_key"] = task["key"]
        rows.append(row)
    return rows


def failed_rows(task: Dict[str, Any], error: str, wall_seconds: Optional[float],
                worker: Optional[str]) -> List[Dict[str, Any]]:
    """One failed row per device of the task, with the error message."""
    rows = []
    for arch in task["archs"]:
        row = _base(task, arch)
        row.update({name: None for name, _ in RESULT_COLUMNS})
        row.update({"status": "failed", "error": error, "point_key": task["key"],
                    "worker": worker,
                    "wall_seconds": None if wall_seconds is None else round(wall_seconds, 4)})
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- typing


_INT64_MAX = 2 ** 63 - 1


def _grid_type(values: Iterable[Any]) -> str:
    """bool, int64, float64 or string for a grid key's column (mixed or other values: their
    text)."""
    vals = [v for v in values if v is not None]
    if vals and all(isinstance(v, bool) for v in vals):
        return "bool"
    if vals and all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
        return "int64" if all(abs(v) <= _INT64_MAX for v in vals) else "string"
    if vals and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
        return "float64"
    return "string"


def _count_type(values: Iterable[Any]) -> str:
    """int64, or float64 when a count passes 2^63 (then inexact: docs/sweep.md)."""
    return "int64" if all(v is None or abs(v) <= _INT64_MAX for v in values) else "float64"


def _cell(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if kind == "string":
        return value if isinstance(value, str) else repr(value)
    if kind == "float64":
        return float(value)
    return value


def columns(rows: Sequence[Dict[str, Any]], grid_keys: Sequence[str]) -> List[Tuple[str, str]]:
    """(name, Arrow type) of every column for these rows."""
    cols: List[Tuple[str, str]] = [("program", "string"), ("arch", "string")]
    cols += [(k, _grid_type(r.get(k) for r in rows)) for k in grid_keys]
    for name, kind in RESULT_COLUMNS:
        cols.append((name, _count_type(r.get(name) for r in rows) if kind == "count" else kind))
    return cols


def to_arrow(rows: Sequence[Dict[str, Any]], grid_keys: Sequence[str]):
    """The rows as a pyarrow.Table (the Parquet file's contents)."""
    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(),
             "bool": pa.bool_()}
    cols = columns(rows, grid_keys)
    arrays = {name: pa.array([_cell(r.get(name), kind) for r in rows], type=types[kind])
              for name, kind in cols}
    return pa.table(arrays)


def _csv_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    return str(value)


def to_csv(table) -> str:
    """The table as CSV text: a header, then one line per row; empty = null, booleans
    true/false, floats at full (round-trip) precision."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(table.column_names)
    for row in table.to_pylist():
        w.writerow([_csv_text(row[c]) for c in table.column_names])
    return out.getvalue()


def write(folder: str, rows: Sequence[Dict[str, Any]], grid_keys: Sequence[str]) -> List[str]:
    """Writes FOLDER/sweep.parquet and FOLDER/sweep.csv, each whole or not at all."""
    import pyarrow.parquet as pq

    table = to_arrow(rows, grid_keys)
    paths = [os.path.join(folder, PARQUET), os.path.join(folder, CSV)]
    with atomic_file(paths[0], binary=True) as f:
        pq.write_table(table, f)
    write_atomically(paths[1], to_csv(table))
    return paths


def read(folder: str) -> Tuple[List[Dict[str, Any]], Optional[str]]:
    """The rows of an earlier run in FOLDER (sweep.parquet, else sweep.csv) and the file
    read; ([], None) when there is neither. An unreadable file is an io error."""
    for name in (PARQUET, CSV):
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            continue
        try:
            if name == PARQUET:
                import pyarrow.parquet as pq

                table = pq.read_table(path)
            else:
                import pyarrow.csv as pacsv

                table = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(
                    strings_can_be_null=True))
        except Exception as e:  # noqa: BLE001 - pyarrow raises several kinds
            raise user_error(f"{path}: cannot read the earlier sweep to resume it "
                             f"({type(e).__name__}: {e}); move it away to start over",
                             "io") from None
        missing = [c for c in ("point_key", "arch", "status") if c not in table.column_names]
        if missing:
            raise user_error(f"{path}: not a sweep table (no {', '.join(missing)} column); "
                             "move it away or choose another --out", "io")
        return table.to_pylist(), path
    return [], None
