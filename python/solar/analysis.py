"""What every frontend returns and the one call into the core for a captured trace: the
options of a program's analysis (ProgramOptions), its outcome (ProgramAnalysis), and
lower_trace / analyze_trace, which lower an OpTrace with the C++ tables and analyze it.

The PyTorch, JAX and loop-language frontends all end here, so a program's report is the same
whichever command reads it (docs/torch-frontend.md, docs/jax-frontend.md).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict, List, Optional, Sequence

from . import _core, progress
from .report import Report


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
    eval_mode: bool = False  # --eval: model.eval() first (default: the module's own mode)
    optimizer: Optional[str] = None  # "sgd", "adam", "adamw" (with train)
    validate: bool = False  # run the program and the graph, compare outputs
    crosscheck: bool = True  # MACs against torch.utils.flop_counter.FlopCounterMode
    mode: str = "attainable"  # the cache-aware level's mode: "attainable" or "provable"
    cache_aware: bool = True  # False: no cache-aware level and no ski-slope (huge graphs)
    max_mappings: Optional[int] = None  # per-einsum tiling search cap; None: the default
    reference: Optional[str] = None  # loop programs: a PyTorch/JAX/NumPy program to compare with
    unroll: bool = False  # --unroll: RNN layers and JAX loops captured step by step
    system: Optional[str] = None  # --system: the graph is one rank of it (docs/parallel.md)
    nodes: Optional[int] = None  # --nodes: the system's scale-up domains
    mesh_links: Optional[str] = None  # --mesh-links: a sharded program's mesh axes on links

    def level_args(self) -> Dict[str, Any]:
        """The cache-aware keyword arguments of `_core.analyze`."""
        args: Dict[str, Any] = {"mode": self.mode, "cache_aware": self.cache_aware}
        if self.max_mappings is not None:
            args["max_mappings"] = self.max_mappings
        if self.system is not None:
            args["system"] = self.system
            args["nodes"] = self.nodes
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
    """(graph, unanalyzed-op lines, {graph tensor name: trace id}) by the C++ tables (the
    trace's `frontend` picks aten, jax or loopir)."""
    progress.stage(f"lowering {len(trace.get('ops', [])):,} traced ops")
    text = json.dumps(trace, allow_nan=False)
    graph, notes, trace_ids = _core.lower_optrace(text, file, strict)
    return graph, list(notes), dict(trace_ids)


def analyze_graph(graph: "_core.Graph", options: ProgramOptions) -> Report:
    """The report of a lowered graph on options.archs."""
    archs = list(options.archs)
    if not archs and options.system is None:
        raise _core.UserError("analyze needs at least one device id")
    progress.stage("analyzing on " + ", ".join(archs + ([options.system] if options.system
                                                        else [])))
    return Report(_core.analyze(graph, archs, options.policy, options.cache_state,
                                **options.level_args()))


def analyze_trace(trace: Dict[str, Any], file: str, options: ProgramOptions) -> ProgramAnalysis:
    """Lowers and analyzes a captured (or saved) OpTrace."""
    graph, notes, trace_ids = lower_trace(trace, file, options.strict)
    result = ProgramAnalysis(analyze_graph(graph, options), notes, trace, graph, trace_ids)
    if trace.get("mode"):  # a PyTorch module's training/eval mode (docs/torch-frontend.md)
        result.report.describe_program(mode=trace["mode"])
    return result

