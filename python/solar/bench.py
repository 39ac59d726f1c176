"""`solar bench PROGRAM`: time a PyTorch program on this machine's own device and set the
measurement beside the program's SOL bounds for that same device.

The headroom of a SOL level is measured / SOL. The fused SOL (and, where the report has
it, the cache-aware SOL) bounds *every* implementation on the device, so a measured time
below it is a **violation**: a bug in Solar or in the device description, reported, never
tolerated. The unfused SOL models op-by-op execution; beating it is legitimate for fused
code (torch.compile, fused library kernels), so it is reported as headroom only
(docs/bounds.md).

Timing method: the program runs `warmup` times, then `trials` timed runs, each after the
caches are flushed (a buffer twice the last-level cache is written) unless `flush=False`;
the CPU is timed with time.perf_counter around the call, a GPU with CUDA events. The report
gives min, median and mean; headroom and violations use the min (the fastest run is the
one a bound must survive).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import _core, programs
from .analysis import ProgramOptions
from .atomic_write import check as check_outputs
from .atomic_write import write_atomically
from .command_options import add_options
from .errors import command, fail, parse_args, user_error
from .program_source import OverrideError, ProgramFormatError, parse_overrides

# Levels whose SOL bounds every implementation (a run below one is a violation).
BOUND_LEVELS = ("fused", "cache_aware")
# Levels reported as headroom only: the per-einsum-op level and the framework-kernel level,
# one kernel per framework op (docs/bounds.md, "Framework SOL"), the eager reference.
REFERENCE_LEVELS = ("unfused", "framework")

# CUDA device names (torch.cuda.get_device_name) -> Solar device ids. Substrings, tried in
# order: the first that the name contains wins.
_CUDA_NAMES = (
    ("H100 PCIe", "H100_PCIe"),
    ("H100 NVL", None),  # not in the database: refused rather than guessed
    ("H100", "H100_SXM"),
    ("H200", "H200"),
    ("GB200", "GB200"),
    ("B200", "B200"),
    ("A100-SXM4-80GB", "A100_SXM_80GB"),
    ("A100 80GB", "A100_SXM_80GB"),
    ("RTX A6000", "A6000"),
    ("Orin", "Jetson_Orin"),
)


@dataclasses.dataclass
class BenchOptions:
    trials: int = 10
    warmup: int = 3
    flush: bool = True
    compile: bool = False  # time torch.compile(model) instead of the eager model
    profile: bool = False  # per-op times from torch.profiler, joined with per-op bounds
    overrides: Dict[str, str] = dataclasses.field(default_factory=dict)
    policy: str = "pytorch-default"
    device: Optional[str] = None  # "cpu" or "cuda"; default: cuda when available
    eval_mode: bool = False  # --eval: model.eval() (default: the module's own mode)


def device_id_for(torch_device: str) -> str:
    """The Solar device id of the torch device the program runs on: `host` for the CPU,
    the database device whose name matches the CUDA device's otherwise."""
    if torch_device == "cpu":
        return "host"
    import torch

    name = torch.cuda.get_device_name(torch.device(torch_device))
    for needle, dev in _CUDA_NAMES:
        if needle in name:
            if dev is None:
                break
            return dev
    raise user_error(
        f"CUDA device '{name}' has no entry in Solar's device database; describe it in a YAML "
        "file (docs/devices.md) and add its name to solar.bench._CUDA_NAMES", "unknown_device")


class _Flusher:
    """Writes a buffer twice the last-level cache between trials, so each trial starts
    cold (the report's cache state)."""

    def __init__(self, torch_device: str, llc_bytes: float):
        import torch

        self.bytes = int(2 * llc_bytes)
        self.buf = torch.empty(max(1, self.bytes // 4), dtype=torch.float32, device=torch_device)

    def __call__(self) -> None:
        self.buf.fill_(1.0)


def _last_level_bytes(device: Any) -> float:
    levels = [m for m in device.memory if m.name != "dram" and m.capacity is not None]
    if not levels:
        raise user_error(f"device {device.id} has no cache level to flush; use --no-flush",
                         "usage")
    return max(m.capacity.value for m in levels)


def time_program(fn: Callable[[], Any], torch_device: str, options: BenchOptions,
                 flush: Optional[Callable[[], None]]) -> List[float]:
    """Seconds of each timed trial of fn()."""
    import torch

    for _ in range(options.warmup):
        fn()
    times = []
    cuda = torch_device.startswith("cuda")
    for _ in range(options.trials):
        if flush is not None:
            flush()
        if cuda:
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return times


def judge(report_devices: Dict[str, Any], device_id: str, measured_s: float) -> Dict[str, Any]:
    """Headroom per SOL level and the violations for a measured time (seconds) against the
    report's bounds on `device_id` (report JSON's devices.<id>)."""
    dev = report_devices[device_id]
    headroom: Dict[str, float] = {}
    sol: Dict[str, float] = {}
    violations = []
    for level in REFERENCE_LEVELS + BOUND_LEVELS:
        entry = dev.get(level)
        if not isinstance(entry, dict) or entry.get("seconds") is None:
            continue
        s = float(entry["seconds"])
        sol[level] = s
        headroom[level] = measured_s / s if s > 0 else math.inf
        if level in BOUND_LEVELS and measured_s < s:
            violations.append({"level": level, "sol_seconds": s, "measured_seconds": measured_s,
                               "ratio": measured_s / s})
    return {"sol_seconds": sol, "headroom": headroom, "violations": violations}


def _op_bounds(report: Dict[str, Any], device_id: str) -> Dict[str, float]:
    """aten op name (overload dropped) -> the sum of Solar's per-op bounds on `device_id` of
    the graph ops lowered from it."""
    bound: Dict[str, float] = {}
    for op in report["ops"]:
        aten = op.get("origin", {}).get("op", "")
        name = aten.rsplit(".", 1)[0] if aten.startswith("aten::") else aten
        sec = op.get("seconds", {}).get(device_id)
        if name and sec is not None:
            bound[name] = bound.get(name, 0.0) + sec
    return bound


def _inside(ev: Any, names: Any) -> bool:
    """Whether a profiler event runs inside (is a descendant of) an event named in `names`."""
    parent = ev.cpu_parent
    while parent is not None:
        if parent.name in names:
            return True
        parent = parent.cpu_parent
    return False


def _profile(fn: Callable[[], Any], report: Dict[str, Any], device_id: str,
             cuda: bool = False) -> List[Dict]:
    """Per aten op Solar bounds: the time of that op *including its children* in one
    profiled run beside the sum of Solar's per-op bounds for the graph ops lowered from it.

    The capture records ops at the dispatcher (aten::convolution), while the work runs in
    the kernels they call (aten::mkldnn_convolution on the CPU, cuDNN kernels on a GPU): the
    op's own self time would leave that work out. So each bounded op is joined with its
    inclusive time (CPU: cpu_time_total; CUDA: the device time of the kernels it and its
    children launched), counted once where bounded ops nest. The time of aten ops outside
    every bounded op (aten::conv2d's own dispatch) is listed with no bound. A headroom
    below 1 beats Solar's bound: it is flagged (`below_bound`), never hidden."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        fn()
    bound = _op_bounds(report, device_id)
    measured: Dict[str, float] = {}
    for ev in prof.events():
        name = ev.name
        if not name.startswith("aten::") or _inside(ev, bound):
            continue  # its time is in the bounded op around it
        if name in bound:
            us = ev.device_time_total if cuda else ev.cpu_time_total
        else:
            us = ev.self_device_time_total if cuda else ev.self_cpu_time_total
        measured[name] = measured.get(name, 0.0) + us / 1e6
    rows = []
    for name in sorted(set(measured) | set(bound), key=lambda n: -measured.get(n, 0.0)):
        m, b = measured.get(name), bound.get(name)
        h = (m / b) if m is not None and b else None
        rows.append({"op": name, "measured_seconds": m, "sol_seconds": b, "headroom": h,
                     "below_bound": h is not None and h < 1})
    return rows


def bench_file(path: str, options: BenchOptions):
    """Times the KernelBench-format program at `path` and returns its ProgramAnalysis with a
    `measurement` section (docs/headroom.md)."""
    import torch

    capture = programs.torch_capture()
    if options.device == "cuda" and not torch.cuda.is_available():
        why = ("this torch build has no CUDA support" if torch.version.cuda is None
               else "torch finds no CUDA device")
        raise user_error(f"--device cuda: CUDA is not available ({why}, torch "
                         f"{torch.__version__}); use --device cpu", "usage")
    torch_device = options.device or ("cuda" if torch.cuda.is_available() else "cpu")
    device_id = device_id_for(torch_device)
    device = _core.device(device_id)
    result = programs.analyze_file(path, ProgramOptions(archs=[device_id], policy=options.policy,
                                               overrides=options.overrides, crosscheck=False,
                                               eval_mode=options.eval_mode))
    mod = capture.load_program(path, options.overrides)
    torch.manual_seed(0)
    init = list(mod.get_init_inputs()) if hasattr(mod, "get_init_inputs") else []
    model = capture.build_program(mod, path, init)  # an nn.Module, or a forward() function
    if isinstance(model, torch.nn.Module):  # timed in the mode analyzed (torch-frontend.md)
        model = model.to(torch_device)
        if options.eval_mode:
            model.eval()
    inputs = [x.to(torch_device) if isinstance(x, torch.Tensor) else x for x in mod.get_inputs()]
    runner = torch.compile(model) if options.compile else model  # functions compile too

    def call():
        with torch.no_grad():
            return runner(*inputs)

    flush = _Flusher(torch_device, _last_level_bytes(device)) if options.flush else None
    times = time_program(call, torch_device, options, flush)
    data = result.report.to_dict()
    best = min(times)
    section: Dict[str, Any] = {
        "device": device_id,
        "torch_device": torch_device,
        "mode": "compile" if options.compile else "eager",
        "timer": "cuda-events" if torch_device.startswith("cuda") else "time.perf_counter",
        "warmup": options.warmup,
        "trials": options.trials,
        "cache": "flushed" if flush else "warm",
        "flush_bytes": flush.bytes if flush else 0,
        "times_seconds": times,
        "min_seconds": best,
        "median_seconds": statistics.median(times),
        "mean_seconds": statistics.fmean(times),
    }
    section.update(judge(data["devices"], device_id, best))
    section["status"] = "violation" if section["violations"] else "ok"
    if options.profile:
        section["per_op"] = _profile(call, data, device_id, torch_device.startswith("cuda"))
        section["per_op_below_bound"] = [r["op"] for r in section["per_op"] if r["below_bound"]]
    result.report.attach_section("measurement", section)
    return result


def format_measurement(section: Dict[str, Any], top: int = 10) -> str:
    """The measurement as the lines `solar bench` prints after the report's table."""
    ms = lambda s: f"{s * 1e3:.4g} ms"  # noqa: E731
    lines = [f"measured on {section['device']} ({section['mode']}, {section['trials']} trials, "
             f"{section['cache']} cache): min {ms(section['min_seconds'])}, median "
             f"{ms(section['median_seconds'])}"]
    for level, sol in section["sol_seconds"].items():
        kind = ("bound" if level in BOUND_LEVELS
                else "eager reference" if level == "framework" else "reference")
        lines.append(f"  {level:<12} SOL {ms(sol):>12}   headroom {section['headroom'][level]:8.3g}x"
                     f"   ({kind})")
    for v in section["violations"]:
        lines.append(f"  VIOLATION: measured {ms(v['measured_seconds'])} < {v['level']} SOL "
                     f"{ms(v['sol_seconds'])} ({v['ratio']:.3g}x): a bug in Solar or in the "
                     "device description")
    if section.get("per_op"):
        lines.append("  per aten op (profiler time including the op's children vs Solar's "
                     "bound):")
        below = [r for r in section["per_op"] if r.get("below_bound")]
        shown = section["per_op"][:top]
        for row in shown + [r for r in below if r not in shown]:  # every beaten bound shows
            m = ms(row["measured_seconds"]) if row["measured_seconds"] is not None else "-"
            b = ms(row["sol_seconds"]) if row["sol_seconds"] is not None else "-"
            h = f"{row['headroom']:.3g}x" if row["headroom"] is not None else "-"
            flag = "  BELOW THE BOUND" if row.get("below_bound") else ""
            lines.append(f"    {row['op']:<36} {m:>12} {b:>12} {h:>9}{flag}")
        if below:
            lines.append(f"  {len(below)} op(s) measured below Solar's per-op bound: a bug in "
                         "Solar, in the device description or in the op join (report it)")
    return "\n".join(lines) + "\n"


def parser() -> argparse.ArgumentParser:
    """The command line of `solar bench`."""
    p = argparse.ArgumentParser(prog="solar bench",
                                description="Time a PyTorch program and compare it with its SOL")
    p.add_argument("program")
    p.add_argument("--compile", action="store_true", help="time torch.compile(model)")
    add_options(p, ("eval",))
    p.add_argument("--trials", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--no-flush", action="store_true", help="do not flush caches between trials")
    p.add_argument("--profile", action="store_true", help="per-op times joined with bounds")
    p.add_argument("--device", choices=["cpu", "cuda"])
    add_options(p, ("policy", "set"))
    p.add_argument("--json", dest="json_path")
    p.add_argument("--top", type=int, default=10)
    return p


@command()
def main(args: Sequence[str]) -> int:
    """`solar bench PROGRAM [--compile] [--trials N] ...`; returns the exit code."""
    codes = _core.EXIT_CODES
    ns = parse_args(parser(), args)
    if ns.trials < 1 or ns.warmup < 0:
        raise fail("--trials must be >= 1 and --warmup >= 0", "usage")
    overrides = parse_overrides(ns.set)
    # The output before the program runs (docs/cli.md, "Output files").
    check_outputs([("PROGRAM", ns.program)], [("--json", ns.json_path)])
    options = BenchOptions(trials=ns.trials, warmup=ns.warmup, flush=not ns.no_flush,
                           compile=ns.compile, profile=ns.profile, overrides=overrides,
                           policy=ns.policy, device=ns.device, eval_mode=ns.eval)
    try:
        result = bench_file(ns.program, options)
    except (_core.Error, OSError):
        raise  # command() reports them
    except (OverrideError, ProgramFormatError) as e:
        sys.stderr.write(f"solar: error: {e}\n")
        return codes["usage" if isinstance(e, OverrideError) else "parse"]
    except Exception as e:  # the user's program failed
        sys.stderr.write(f"solar: error: {ns.program}: the program failed: "
                         f"{type(e).__name__}: {e}\n")
        return codes["program_error"]
    report = result.report
    section = report.get_section("measurement")
    if ns.json_path:
        write_atomically(ns.json_path, report.to_json(2) + "\n")
    sys.stdout.write(report.table(ns.top))
    sys.stdout.write(format_measurement(section, ns.top))
    if section["violations"]:
        sys.stderr.write(f"solar: error: {ns.program}: a measured run beats the SOL "
                         "(violation; see above)\n")
        return codes["bound_violated"]
    return codes["ok"]
