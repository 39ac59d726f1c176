"""One PyTorch program from file to report: load, capture, lower, analyze, and on request
validate by execution and cross-check the MACs with FlopCounterMode.

`solar analyze model.py`, `solar validate model.py` and `solar suite DIR` all go through
analyze_file, so a program gets the same report whichever command reads it.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from typing import Any, Dict, List, Optional, Sequence

from ... import _core
from ...report import Report


@dataclasses.dataclass
class ProgramOptions:
    """What to do with a program; the defaults are `solar analyze model.py`'s."""

    archs: Sequence[str] = ("H100_SXM",)
    policy: str = "pytorch-default"
    cache_state: str = "cold"
    overrides: Dict[str, str] = dataclasses.field(default_factory=dict)  # --set NAME=VALUE
    strict: bool = False  # an op that cannot be lowered is an error
    real: bool = False  # capture on real tensors (validation always does)
    train: bool = False  # forward + backward (+ optimizer step)
    optimizer: Optional[str] = None  # "sgd", "adam", "adamw" (with train)
    validate: bool = False  # run the program and the graph, compare outputs
    crosscheck: bool = True  # MACs against torch.utils.flop_counter.FlopCounterMode
    mode: str = "attainable"  # the cache-aware level's mode: "attainable" or "provable"
    cache_aware: bool = True  # False: no cache-aware level and no ski-slope (huge graphs)
    max_mappings: Optional[int] = None  # per-einsum tiling search cap; None: the default
    reference: Optional[str] = None  # loop programs: a PyTorch/JAX/NumPy program to compare with

    def level_args(self) -> Dict[str, Any]:
        """The cache-aware keyword arguments of `_core.analyze`."""
        args: Dict[str, Any] = {"mode": self.mode, "cache_aware": self.cache_aware}
        if self.max_mappings is not None:
            args["max_mappings"] = self.max_mappings
        return args


@dataclasses.dataclass
class ProgramAnalysis:
    """The outcome for one program. `report` carries the `validation` and `crosscheck`
    sections when they were computed (docs/report-json.md)."""

    report: Report
    warnings: List[str]  # one line per unanalyzed op
    trace: Dict[str, Any]  # the OpTrace (solar.optrace.v1)
    graph: "_core.Graph"
    trace_ids: Dict[str, int]  # graph tensor name -> trace tensor id

    @property
    def validation(self) -> Optional[Dict[str, Any]]:
        return self.report.get_section("validation")

    @property
    def crosscheck(self) -> Optional[Dict[str, Any]]:
        return self.report.get_section("crosscheck")


def lower_trace(trace: Dict[str, Any], file: str, strict: bool):
    """(graph, unanalyzed-op lines, {graph tensor name: trace id}) by the C++ aten table."""
    text = json.dumps(trace, allow_nan=False)
    graph, notes, trace_ids = _core.lower_optrace(text, file, strict)
    return graph, list(notes), dict(trace_ids)


def analyze_trace(trace: Dict[str, Any], file: str, options: ProgramOptions) -> ProgramAnalysis:
    """Lowers and analyzes a captured (or saved) OpTrace."""
    graph, notes, trace_ids = lower_trace(trace, file, options.strict)
    archs = list(options.archs)
    if not archs:
        raise _core.UserError("analyze needs at least one device id")
    report = Report(_core.analyze(graph, archs, options.policy, options.cache_state,
                                  **options.level_args()))
    return ProgramAnalysis(report, notes, trace, graph, trace_ids)


def analyze_file(path: str, options: Optional[ProgramOptions] = None) -> ProgramAnalysis:
    """Captures the KernelBench-format program at `path` and analyzes it; with
    options.validate it is captured on real tensors, run, and its graph executed and
    compared (report section `validation`). With options.crosscheck, FlopCounterMode runs
    stacked under the recorder in the same capture (report section `crosscheck`)."""
    from ..jax.detect import is_jax_program
    from ..loopir.detect import is_loop_program

    if is_loop_program(path):  # imports solar.loopir: the loop language, never executed
        from ..loopir.program import analyze_file as analyze_loop_file

        return analyze_loop_file(path, options or ProgramOptions())
    if options is not None and options.reference:
        from ...errors import user_error

        raise user_error("--reference applies to loop programs (docs/loop-language.md)", "usage")
    if is_jax_program(path):  # imports jax or flax and not torch: the JAX frontend
        from ..jax.program import analyze_file as analyze_jax_file

        return analyze_jax_file(path, options or ProgramOptions())
    from .capture import CaptureRecord, capture_program, load_program

    options = options or ProgramOptions()
    if options.validate:
        from .validation import capture_and_validate

        return capture_and_validate(path, options)
    step = dict(fake=not options.real, train=options.train, optimizer=options.optimizer)
    record = CaptureRecord(flop_counter=True) if options.crosscheck else None
    try:
        trace = capture_program(path, options.overrides, record=record, **step)
    except Exception as e:
        if record is None:
            raise
        # The counter stacked under the recorder must not cost the analysis: capture again
        # without it (a failure of the program itself fails again and is raised from here).
        trace = capture_program(path, options.overrides, **step)
        record = None
        skipped = f"the capture failed with FlopCounterMode stacked: {type(e).__name__}: {e}"
    result = analyze_trace(trace, path, options)
    if options.crosscheck:
        if record is None:
            result.report.attach_section("crosscheck", {
                "tool": "torch.utils.flop_counter.FlopCounterMode", "status": "skipped",
                "reason": skipped})
        else:
            attach_crosscheck(result, lambda: load_program(path, options.overrides), options,
                              record=record)
    return result


def attach_crosscheck(result: ProgramAnalysis, load, options: ProgramOptions,
                      record=None) -> None:
    """Adds the `crosscheck` section (FlopCounterMode's MACs beside Solar's, per aten op);
    a program FlopCounterMode cannot run gets a section saying why, not a failure.
    record: the CaptureRecord of the capture (flop_counter=True); without one, `load()`
    gives the program module to count separately."""
    try:
        from .crosscheck import flop_crosscheck

        section = flop_crosscheck(result, load, options, record=record)
    except Exception as e:  # the counter's own failure must not fail the analysis
        warnings.warn(f"FlopCounterMode cross-check skipped: {type(e).__name__}: {e}",
                      RuntimeWarning, stacklevel=2)
        section = {"tool": "torch.utils.flop_counter.FlopCounterMode", "status": "skipped",
                   "reason": f"{type(e).__name__}: {e}"}
    result.report.attach_section("crosscheck", section)
