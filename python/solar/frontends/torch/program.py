"""One PyTorch program from file to report: load, capture, lower, analyze, and on request
validate by execution and cross-check the MACs with FlopCounterMode.

`solar analyze model.py`, `solar validate model.py` and `solar suite DIR` reach analyze_file
through the dispatch (solar.programs), so a program gets the same report whichever command
reads it. ProgramOptions, ProgramAnalysis, lower_trace and analyze_trace are
solar.analysis's, shared by every frontend (re-exported here).
"""

from __future__ import annotations

from typing import Optional

from ...analysis import ProgramAnalysis, ProgramOptions, analyze_trace, lower_trace
from .capture import CaptureRecord, capture_program, load_program
from .crosscheck import TOOL as CROSSCHECK_TOOL
from .crosscheck import attach_crosscheck
from .distributed_program import analyze_distributed, world_size
from .limits import check_real_run
from .validation import capture_and_validate

__all__ = ["ProgramAnalysis", "ProgramOptions", "analyze_file", "analyze_trace",
           "attach_crosscheck", "lower_trace"]


def preload() -> None:
    """Imports now what a capture's first fake-tensor op imports (solar.server, before it
    forks): torch's C++ dispatch fetches the DTensor class, importing torch.distributed.tensor
    (0.2-0.5 s), the first time a tensor subclass reaches it."""
    import torch.distributed  # pylint: disable=import-outside-toplevel

    if torch.distributed.is_available():
        import torch.distributed.tensor  # noqa: F401  pylint: disable=import-outside-toplevel


def analyze_file(path: str, options: Optional[ProgramOptions] = None) -> ProgramAnalysis:
    """Captures the KernelBench-format program at `path` and analyzes it; with
    options.validate it is captured on real tensors, run, and its graph executed and
    compared (report section `validation`). With options.crosscheck, FlopCounterMode runs
    stacked under the recorder in the same capture (report section `crosscheck`)."""
    options = options or ProgramOptions()
    devices = world_size(path, options.overrides)
    if devices is not None:  # a torch.distributed program: one graph per rank
        return analyze_distributed(path, devices, options)
    check_real_run(path, options)  # a real run that would not fit in memory: refused first
    if options.validate:
        return capture_and_validate(path, options)
    step = dict(fake=not options.real, train=options.train, optimizer=options.optimizer,
                eval_mode=options.eval_mode, unroll=options.unroll)
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
                "tool": CROSSCHECK_TOOL, "status": "skipped", "reason": skipped})
        else:
            attach_crosscheck(result, lambda: load_program(path, options.overrides), options,
                              record=record)
    return result
