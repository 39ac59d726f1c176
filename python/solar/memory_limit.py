"""Whether a program's real run fits in the memory available, decided before anything is
allocated (docs/validation.md, "Memory").

`solar validate`, `analyze --validate` and `--real` run a program on real tensors. Their
frontends first capture it on shapes only (fake tensors, abstract values, or a loop
program's record: sizes known, nothing allocated), estimate the bytes of the real run from
that trace, and refuse a run whose estimate exceeds the memory available with
solar.UserError (kind "too_large", exit 2) naming the estimate, the memory available and
the largest `--shrink N` (a power of two) whose estimate fits.

    avail, where = available_memory()               # bytes, and where the figure comes from
    est = torch_estimate(trace, validate=True)      # an Estimate: parts in bytes, .total
    check_fits(path, overrides, est_at, "validate") # raises when est_at(overrides) > avail
    check_work(path, overrides, points_at, budget, rate, "validating it")  # the same for the
                                                    # loop interpreter's work, in points

Estimates (every figure in bytes; a tensor's bytes are its elements times its dtype's
size; the executor's are its compute words: 4 bytes for floats up to 32 bits, 8 for f64 and
every integer and bool, complex as two floats):
  - the program (torch): every storage the trace creates, once (views share theirs): the
    capture holds every tensor it records until it ends, so its peak is their sum;
  - the program (JAX): every tensor of the trace (a conservative figure for XLA's run);
  - kept for the comparison (torch validation): a clone of every source (input,
    parameter, buffer, constant), of every output and of every random op's output;
  - the executor: the peak of its live tensors (each freed after its last reader, as it
    runs) plus copies of the sources and references whose dtype it converts;
  - a loop program's validation: its interpreter holds every tensor in float64, the
    executor gets every tensor as an array of its compute words, and computes every
    non-source tensor (all kept for the comparison).
"""

from __future__ import annotations

import ast
import dataclasses
import math
import os
import resource
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from . import shrink
from .errors import user_error

ENV = "SOLAR_MEMORY_LIMIT"  # bytes; overrides the machine's figure (tests, shared machines)
_SOURCE_ROLES = ("input", "parameter", "buffer", "constant", "weight")

# Bytes per element by dtype name (the torch frontend's names and the graph's short ones).
_ITEMSIZE = {
    "float64": 8, "f64": 8, "double": 8, "float32": 4, "f32": 4, "tf32": 4, "float": 4,
    "float16": 2, "f16": 2, "half": 2, "bfloat16": 2, "bf16": 2,
    "int64": 8, "i64": 8, "uint64": 8, "u64": 8, "long": 8,
    "int32": 4, "i32": 4, "uint32": 4, "u32": 4, "int": 4,
    "int16": 2, "i16": 2, "uint16": 2, "u16": 2,
    "int8": 1, "i8": 1, "uint8": 1, "u8": 1, "bool": 1,
    "complex64": 8, "c64": 8, "complex128": 16, "c128": 16, "complex32": 4,
}
_EXECUTOR_NATIVE = ("float32", "f32", "float64", "f64", "int64", "i64")


def itemsize(dtype: str) -> int:
    """Bytes per element of a dtype name; fp8/fp6/fp4/int4 count one byte, an unknown
    name 8 (an estimate may be high, never low)."""
    if dtype in _ITEMSIZE:
        return _ITEMSIZE[dtype]
    if dtype.startswith(("float8", "f8", "fp8", "float6", "f6", "fp6", "float4", "f4", "fp4",
                         "int4", "i4", "uint4", "u4")):
        return 1
    return 8


def compute_width(dtype: str) -> int:
    """Bytes per element in the executor (docs/executor.md): f32 words for floats up to 32
    bits, f64 for f64, i64 for integers and bool; complex values as two floats."""
    if dtype.startswith("complex") or dtype in ("c64", "c128"):
        return 16 if dtype in ("complex128", "c128") else 8
    if dtype in ("float64", "f64", "double"):
        return 8
    if dtype.startswith(("float", "f", "bf", "tf", "half")):
        return 4
    return 8


def format_bytes(n: int) -> str:
    """"44800000000 bytes (44.80 GB)": exact bytes and decimal units, as the executor
    writes its memory limit."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n} bytes ({n / scale:.2f} {unit})"
    return f"{n} bytes"


# --------------------------------------------------------------------------- memory available


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return None


def _parse_limit(text: str) -> int:
    """SOLAR_MEMORY_LIMIT: bytes, as an integer or a float (4e9), or with a decimal or
    binary suffix (16G, 512MiB)."""
    t = text.strip().upper().removesuffix("B")
    scales = {"KI": 2**10, "MI": 2**20, "GI": 2**30, "TI": 2**40,
              "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
    for suffix, scale in scales.items():
        if t.endswith(suffix):
            return int(float(t[: -len(suffix)]) * scale)
    return int(float(t))


def available_memory() -> Tuple[int, str]:
    """(bytes a run may still allocate, where that figure comes from): SOLAR_MEMORY_LIMIT
    when set; otherwise the least of MemAvailable (/proc/meminfo), the cgroup's room
    (memory.max less memory.current, v2; limit_in_bytes less usage_in_bytes, v1) and the
    address space RLIMIT_AS leaves (`solar suite --memory-limit`). UserError (usage) for a
    SOLAR_MEMORY_LIMIT that is not a number of bytes."""
    env = os.environ.get(ENV)
    if env:
        try:
            value = _parse_limit(env)
        except ValueError:
            raise user_error(f"{ENV}={env!r}: expected a number of bytes (8000000000, 8e9, "
                             "8G, 8GiB)", "usage") from None
        return max(value, 0), f"{ENV}={env}"
    figures: List[Tuple[int, str]] = []
    meminfo = _read("/proc/meminfo") or ""
    for line in meminfo.splitlines():
        if line.startswith("MemAvailable:"):
            figures.append((int(line.split()[1]) * 1024, "MemAvailable in /proc/meminfo"))
    for limit_file, usage_file, what in (
            ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current",
             "the cgroup's memory.max less its memory.current"),
            ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
             "/sys/fs/cgroup/memory/memory.usage_in_bytes",
             "the cgroup's memory.limit_in_bytes less its usage")):
        limit = _read(limit_file)
        if limit and limit.isdigit() and int(limit) < 2**60:
            used = _read(usage_file)
            room = int(limit) - (int(used) if used and used.isdigit() else 0)
            figures.append((max(room, 0), what))
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        status = _read("/proc/self/status") or ""
        vm = next((int(line.split()[1]) * 1024 for line in status.splitlines()
                   if line.startswith("VmSize:")), 0)
        figures.append((max(soft - vm, 0), "the address space RLIMIT_AS leaves"))
    if not figures:
        return 2**63, "no limit found"
    return min(figures)


# --------------------------------------------------------------------------- estimates


@dataclasses.dataclass
class Estimate:
    """Bytes of a real run, by part: [(what, bytes)], in the order they are named."""

    parts: List[Tuple[str, int]]

    @property
    def total(self) -> int:
        return sum(b for _, b in self.parts)

    def describe(self) -> str:
        return "; ".join(f"{what} {format_bytes(b)}" for what, b in self.parts if b)


def _numel(t: Dict[str, Any]) -> int:
    return math.prod(int(n) for n in t.get("shape", ()))


def tensor_bytes(t: Dict[str, Any]) -> int:
    """Bytes of one trace tensor's elements (a dense copy of it)."""
    return _numel(t) * itemsize(str(t.get("dtype", "")))


def _storage_extent(t: Dict[str, Any]) -> int:
    """Elements of its storage a tensor reaches (offset + the farthest element + 1)."""
    shape, strides = t.get("shape", ()), t.get("strides")
    if strides is None or len(strides) != len(shape):
        return _numel(t)
    if any(int(n) == 0 for n in shape):
        return 0
    hi = sum((int(n) - 1) * int(s) for n, s in zip(shape, strides) if int(s) > 0)
    return int(t.get("storage_offset", 0)) + hi + 1


def storage_bytes(trace: Dict[str, Any]) -> Dict[Any, int]:
    """{storage key: bytes}: every storage the trace's tensors live in, sized by the
    farthest element any of its tensors reaches (a tensor without a storage id has its own)."""
    out: Dict[Any, int] = {}
    for t in trace["tensors"]:
        key = t.get("storage", ("tensor", t["id"]))
        b = _storage_extent(t) * itemsize(str(t.get("dtype", "")))
        out[key] = max(out.get(key, 0), b)
    return out


def _tensor_refs(value: Any) -> Iterable[int]:
    """The trace tensor ids an op argument refers to ({"tensor": id}, at any depth)."""
    if isinstance(value, dict):
        if "tensor" in value and isinstance(value["tensor"], int):
            yield value["tensor"]
        else:
            for v in value.values():
                yield from _tensor_refs(v)
    elif isinstance(value, list):
        for v in value:
            yield from _tensor_refs(v)


def executor_peak(trace: Dict[str, Any]) -> int:
    """The most bytes the executor holds at once running the trace's graph: each non-source
    tensor at its compute width from the op that writes it to its last reader (outputs to
    the end); sources belong to the caller."""
    tensors = {t["id"]: t for t in trace["tensors"]}
    born: Dict[int, int] = {}
    last: Dict[int, int] = {}
    for i, op in enumerate(trace["ops"]):
        for tid in _tensor_refs(op.get("args", {})):
            last[tid] = i
        for tid in op.get("outputs", ()):
            if tid is not None:
                born.setdefault(tid, i)
    end = len(trace["ops"])
    delta = [0] * (end + 2)
    for tid, i in born.items():
        t = tensors.get(tid)
        if t is None or t.get("role") in _SOURCE_ROLES:
            continue
        b = _numel(t) * compute_width(str(t.get("dtype", "")))
        stop = end if t.get("role") == "output" else max(last.get(tid, i), i)
        delta[i] += b
        delta[stop + 1] -= b
    live = peak = 0
    for d in delta:
        live += d
        peak = max(peak, live)
    return peak


def _converted(tensors: Iterable[Dict[str, Any]]) -> int:
    """Bytes of the executor's copies of arrays whose dtype it converts (bf16 to f32, ...)."""
    return sum(_numel(t) * compute_width(str(t.get("dtype", ""))) for t in tensors
               if str(t.get("dtype", "")) not in _EXECUTOR_NATIVE)


def _sources(trace: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [t for t in trace["tensors"] if t.get("role") in _SOURCE_ROLES]


def _outputs(trace: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [t for t in trace["tensors"] if t.get("role") == "output"]


def torch_estimate(trace: Dict[str, Any], validate: bool,
                   random_ops: Iterable[int] = ()) -> Estimate:
    """The real run of a PyTorch program (its fake-tensor trace): the program's storages;
    with validate, the clones the capture keeps and the executor's run."""
    storages = storage_bytes(trace)
    source_keys = {t.get("storage", ("tensor", t["id"])) for t in _sources(trace)}
    parts = [("inputs, parameters and buffers", sum(storages[k] for k in source_keys)),
             ("the program's intermediates and outputs",
              sum(b for k, b in storages.items() if k not in source_keys))]
    if validate:
        random_outs = [trace["tensors"][tid] for i in random_ops
                       for tid in trace["ops"][i]["outputs"] if tid is not None]
        kept = _sources(trace) + _outputs(trace) + random_outs
        parts.append(("copies kept for the comparison", sum(tensor_bytes(t) for t in kept)))
        parts.append(("the executor", executor_peak(trace)
                      + _converted(_sources(trace) + _outputs(trace))))
    return Estimate(parts)


def jax_estimate(trace: Dict[str, Any], validate: bool) -> Estimate:
    """The real run of a JAX program (its abstract trace): every tensor (sources, then the
    rest: XLA's run at most holds them all); with validate, the references and the
    executor's run."""
    sources = _sources(trace)
    ids = {t["id"] for t in sources}
    parts = [("inputs and parameters", sum(tensor_bytes(t) for t in sources)),
             ("the program's intermediates and outputs",
              sum(tensor_bytes(t) for t in trace["tensors"] if t["id"] not in ids))]
    if validate:
        parts.append(("copies kept for the comparison",
                      sum(_numel(t) * compute_width(str(t.get("dtype", "")))
                          for t in _outputs(trace))))
        parts.append(("the executor", executor_peak(trace) + _converted(sources)))
    return Estimate(parts)


def loop_estimate(trace: Dict[str, Any]) -> Estimate:
    """A loop program's validation (it is never run otherwise): the interpreter's float64
    value of every tensor, the executor's array of every tensor, and the executor's run
    computing every non-source tensor."""
    tensors = trace["tensors"]
    written = {o for op in trace["ops"] for o in op.get("outputs", ()) if o is not None}

    def width(t: Dict[str, Any]) -> int:
        return _numel(t) * compute_width(str(t.get("dtype", "")))

    return Estimate([
        ("the interpreter's values (float64)", sum(_numel(t) * 8 for t in tensors)),
        ("the executor's arrays", sum(width(t) for t in tensors)),
        ("the executor", sum(width(t) for t in tensors if t["id"] in written)),
    ])


# --------------------------------------------------------------------------- the check


def shrink_settings(path: str, overrides: Dict[str, str]) -> List[Tuple[int, Dict[str, str]]]:
    """[(N, the overrides `--shrink N` runs at first)] for N = 1, 2, 4, ... below the
    program's largest integer size constant (shrink.shrink_ladder's first setting); [] when
    it has none `--shrink` can reduce."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return []
    constants = shrink.int_constants(tree)
    free = [v for k, v in constants.items() if k.split("[")[0] not in overrides]
    if not free:
        return []
    out = []
    n = 1
    while n < max(free):
        ladder = shrink.shrink_ladder(constants, n, dict(overrides))
        if ladder and ladder[0]["limit"] == n:
            out.append((n, dict(ladder[0]["overrides"])))
        n *= 2
    return out


def _largest_fitting(settings: List[Tuple[int, Dict[str, str]]], avail: int,
                     estimate_at: Callable[[Dict[str, str]], Any],
                     total: Callable[[Any], int] = lambda est: est.total
                     ) -> Optional[Tuple[int, Any]]:
    """(N, estimate) of the largest setting whose estimate (its `total`) fits `avail`, by
    bisection over the settings (estimates grow with N); a setting the program cannot be
    captured at counts as not fitting. None when none fits."""
    lo, hi, best = 0, len(settings) - 1, None
    while lo <= hi:
        mid = (lo + hi) // 2
        n, ov = settings[mid]
        try:
            est = estimate_at(ov)
        except Exception:  # the shrunk program raised: too small to run
            est = None
        if est is not None and total(est) <= avail:
            best = (n, est)
            lo = mid + 1
        else:
            hi = mid - 1
    return best


def check_fits(path: str, overrides: Dict[str, str],
               estimate_at: Callable[[Dict[str, str]], Optional[Estimate]],
               what: str) -> Optional[Estimate]:
    """Refuses (UserError, kind "too_large") a real run of the program at `path` whose
    estimate exceeds the memory available. estimate_at(overrides) captures the program on
    shapes only with these `--set` overrides and estimates its real run (None: it cannot be
    told without running it, and the run goes ahead). `what` names the run in the message
    ("validation", "the --real capture"). Returns the estimate (None when there is none)."""
    est = estimate_at(dict(overrides))
    if est is None:
        return None
    avail, where = available_memory()
    if est.total <= avail:
        return est
    settings = shrink_settings(path, overrides)
    fit = _largest_fitting(settings, avail, estimate_at) if settings else None
    if fit is not None:
        n, small = fit
        hint = (f"run it smaller: --shrink {n} fits (its estimate there: "
                f"{format_bytes(small.total)}), or choose sizes with --set NAME=VALUE")
    elif settings:
        hint = ("even --shrink 1 does not make it fit: choose smaller sizes with --set "
                "NAME=VALUE")
    else:
        hint = ("its sizes are no module-level integer constants --shrink can reduce: "
                "choose smaller sizes with --set NAME=VALUE or in the program")
    raise user_error(
        f"{path}: {what} would need about {format_bytes(est.total)} of memory ("
        f"{est.describe()}), more than the {format_bytes(avail)} available ({where}); "
        f"{hint}. Nothing was allocated (docs/validation.md, \"Memory\")", "too_large")


# --------------------------------------------------------------------------- the time check


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds / 3600:.1f} hours"


def check_work(path: str, overrides: Dict[str, str], points_at: Callable[[Dict[str, str]], int],
               budget: int, rate: float, what: str) -> int:
    """Refuses (UserError, kind "too_large") a run of the loop interpreter whose work, in
    iteration points (points_at(overrides), the program recorded with these `--set`
    overrides), exceeds `budget`, naming its time at `rate` points per second and the
    largest `--shrink N` that fits, as check_fits does for memory. Returns the points."""
    points = points_at(dict(overrides))
    if points <= budget:
        return points
    settings = shrink_settings(path, overrides)
    fit = _largest_fitting(settings, budget, points_at, total=lambda p: p) if settings else None
    if fit is not None:
        n, small = fit
        hint = (f"run it smaller: --shrink {n} fits ({small:,} points), or choose sizes with "
                "--set NAME=VALUE")
    elif settings:
        hint = "even --shrink 1 does not make it fit: choose smaller sizes with --set NAME=VALUE"
    else:
        hint = ("its sizes are no module-level integer constants --shrink can reduce: choose "
                "smaller sizes with --set NAME=VALUE or in the program")
    raise user_error(
        f"{path}: {what} would evaluate {points:,} iteration points with the loop interpreter "
        f"(about {_duration(points / rate)}), more than its budget of {budget:,}; {hint}. "
        "Nothing was run (docs/loop-language.md, \"Limits\")", "too_large")
