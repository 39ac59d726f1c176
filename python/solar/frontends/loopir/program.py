"""One loop program from file to report: parse, record, lift (C++), analyze; on request
validate it (validation.py: section `validation`, docs/loop-language.md).

`solar analyze prog.py` and `solar validate prog.py` reach analyze_file through the
dispatch (solar.programs), which hands over files that import solar.loopir.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...analysis import ProgramAnalysis, ProgramOptions, analyze_graph, lower_trace
from ...errors import user_error
from ...memory_limit import check_fits, check_work, loop_estimate
from . import language as lang
from . import record, syntax
from .checks import work_points
from .provenance import provenance_of


@dataclasses.dataclass
class LoopProgram:
    """A loop program ready to analyze or run: its trace and what validation needs."""

    path: str
    program: syntax.Program
    trace: Dict[str, Any]
    index_bounds: Dict[int, int]  # trace id of an index tensor -> bound of its values
    outputs: List[Tuple[str, int]]  # (name, trace id) of each output, in declaration order
    # The --set NAME=VALUE settings it was loaded with (a --reference program gets them too).
    overrides: Dict[str, str] = dataclasses.field(default_factory=dict)


def load(path: str, overrides: Optional[Dict[str, str]] = None) -> LoopProgram:
    """Parses and records the loop program at `path` (--set overrides applied)."""
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
    except OSError as e:
        raise user_error(f"{path}: {e.strerror or e}", "io") from None
    with _gc_paused():
        try:
            program = syntax.parse_program(source, path, overrides)
        except syntax.OverrideError as e:
            raise user_error(str(e), "usage") from None
        trace, bounds, outputs = record.record(program)
    return LoopProgram(path, program, trace, bounds, outputs, dict(overrides or {}))


@contextlib.contextmanager
def _gc_paused():
    """Python's cyclic collector off while the AST and the trace are built: they are large
    trees of fresh objects with no cycles, which it would scan over and over (2x the time
    of parsing a program of 1,000 kernels)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def check_runnable(path: str, overrides: Optional[Dict[str, str]], lp: LoopProgram,
                   what: str = "validating it") -> None:
    """Refuses (kind too_large) a run of the program, recorded as `lp` with these overrides,
    that would not fit in memory (the interpreter and the executor allocate) or would take
    the interpreter past its work budget (docs/loop-language.md, "Limits"), before anything
    runs; each refusal names the `--shrink N` that fits."""
    overrides = dict(overrides or {})

    def at(ov: Dict[str, str]) -> LoopProgram:
        return lp if ov == overrides else load(path, ov)

    check_fits(path, overrides, lambda ov: loop_estimate(at(ov).trace), what)
    check_work(path, overrides, lambda ov: work_points(at(ov).trace),
               lang.MAX_VALIDATION_POINTS, lang.INTERPRETER_POINTS_PER_S, what)


def lift(lp: LoopProgram):
    """(graph, {graph tensor name: trace id}) by the C++ loopir table."""
    graph, _notes, trace_ids = lower_trace(lp.trace, lp.path, True)
    return graph, trace_ids


def analyze_file(path: str, options: Optional[ProgramOptions] = None,
                 validate: Optional[Callable[..., Dict[str, Any]]] = None) -> ProgramAnalysis:
    """Parses, records, lifts and analyzes the loop program at `path`; with options.validate
    also runs it and validates the graph (section `validation`) with `validate`
    (validation.validate, which needs NumPy: the dispatch, solar.programs, passes it in)."""
    options = options or ProgramOptions()
    if options.train or options.optimizer:
        raise user_error("--train/--optimizer do not apply to loop programs", "usage")
    lp = load(path, options.overrides)
    if options.validate:
        check_runnable(path, options.overrides, lp)
    graph, trace_ids = lift(lp)
    report = analyze_graph(graph, options)
    result = ProgramAnalysis(report, [], lp.trace, graph, trace_ids)
    translation = provenance_of(path)
    if translation is not None:  # a language model wrote it (solar translate)
        report.attach_section("translation", translation)
    if options.validate:
        if validate is None:
            raise ValueError("analyze_file(validate=...) is needed with options.validate")
        report.attach_section("validation", validate(lp, graph, trace_ids, options.reference))
    return result
