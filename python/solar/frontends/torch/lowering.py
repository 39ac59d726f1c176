"""OpTrace -> EinsumGraph through the C++ aten table, and analysis of captured programs."""

from __future__ import annotations

import json
import warnings
from typing import Any, Dict, Iterable, Union

from ... import _core
from ...report import Report
from .capture import capture


class UnanalyzedOpWarning(UserWarning):
    """An op the aten table could not lower: it is in the graph as an `unanalyzed` op."""


def lower(trace: Union[Dict[str, Any], str], strict: bool = False, file: str = "<optrace>"):
    """Lowers an OpTrace (dict or JSON text) with the C++ aten table; returns (Graph,
    warnings). strict: an op that cannot be lowered raises solar.UnsupportedError."""
    text = trace if isinstance(trace, str) else json.dumps(trace, allow_nan=False)
    graph, notes, _ = _core.lower_optrace(text, file, strict)
    return graph, list(notes)


def analyze_program(
    program: Any,
    *example_inputs: Any,
    arch: Union[str, Iterable[str]] = "H100_SXM",
    policy: str = "pytorch-default",
    cache_state: str = "cold",
    strict: bool = False,
    fake: bool = True,
    mode: str = "attainable",
    cache_aware: bool = True,
):
    """solar.analyze for an nn.Module or function: capture on fake tensors, lower, analyze.
    Unanalyzed ops are reported (UnanalyzedOpWarning, and in the report's coverage)."""
    trace = capture(program, *example_inputs, fake=fake)
    graph, notes = lower(trace, strict=strict)
    for n in notes:
        warnings.warn(f"unanalyzed op: {n}", UnanalyzedOpWarning, stacklevel=3)
    archs = [arch] if isinstance(arch, str) else list(arch)
    if not archs:
        raise _core.UserError("analyze() needs at least one device id in `arch`")
    return Report(_core.analyze(graph, archs, policy, cache_state, mode, cache_aware))
