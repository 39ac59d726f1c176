"""Solar: speed-of-light (SOL) performance analysis of deep-learning programs.

    import solar
    g = solar.load_graph("examples/gemm.solar")
    r = solar.analyze(g, arch=["H100_SXM", "B200"])
    print(r.totals.macs, r.devices["H100_SXM"].fused.seconds)
    print(r.table())

Everything after the graph is C++ (solar._core); this package is a thin layer over it.
"""

from __future__ import annotations

import os
from typing import Iterable, Optional, Union

from . import _core
from ._core import (
    DType,
    Device,
    Error,
    Graph,
    InternalError,
    Op,
    OpKind,
    Role,
    Tensor,
    UnitKind,
    UnsupportedError,
    UserError,
)
from .builder import GraphBuilder
from .executor import (Check, ValidationResult, opaque_functions, run, run_ranks, tolerance_for,
                       validate)
from .programs import jax_program, torch_lowering
from .report import Record, Report

__version__ = _core.__version__

__all__ = [
    "Check",
    "DType",
    "Device",
    "Error",
    "Graph",
    "GraphBuilder",
    "InternalError",
    "Op",
    "OpKind",
    "Record",
    "Report",
    "Role",
    "Tensor",
    "UnitKind",
    "UnsupportedError",
    "UserError",
    "ValidationResult",
    "analyze",
    "analyze_jax",
    "device",
    "device_ids",
    "devices",
    "load_graph",
    "opaque_functions",
    "parse_graph",
    "parse_graph_json",
    "run",
    "run_ranks",
    "tolerance_for",
    "validate",
    "__version__",
]

PathLike = Union[str, "os.PathLike[str]"]


def load_graph(path: PathLike) -> Graph:
    """Reads a graph file: JSON (solar.graph.v1) when it starts with '{', the text form
    otherwise. Raises solar.UserError (kind "io", "parse" or "invalid_graph")."""
    return _core.load_graph(os.fspath(path))


def parse_graph(text: str, file: str = "<text>") -> Graph:
    """Parses and verifies the text form (docs/ir-text.md); `file` names it in errors."""
    return _core.parse_graph(text, file)


def parse_graph_json(text: str, file: str = "<json>") -> Graph:
    """Parses and verifies the JSON form (solar.graph.v1)."""
    return _core.parse_graph_json(text, file)


def analyze(
    graph,
    *example_inputs,
    arch: Union[str, Iterable[str], None] = None,
    policy: str = "pytorch-default",
    cache_state: str = "cold",
    strict: bool = False,
    mode: str = "attainable",
    cache_aware: bool = True,
    system: Optional[str] = None,
    nodes: Optional[int] = None,
) -> Report:
    """Costs `graph` and bounds it on each device in `arch` (one id or several; default
    H100_SXM, or none beside a system).

    policy: "pytorch-default", "tf32" or "strict-fp32" (which unit may run fp32
    contractions); cache_state: "cold" or "warm"; mode: the cache-aware level's, "attainable"
    or "provable" (cache_aware=False skips that level). A path is loaded with load_graph.
    A PyTorch nn.Module or function is captured on fake tensors with `example_inputs`
    (frontends/torch, docs/torch-frontend.md); strict: an op that cannot be lowered raises
    solar.UnsupportedError instead of being reported as unanalyzed. system: the graph is one
    rank of this system (a built-in id such as "DGX_H100", a solar.system.v1 file or
    "8xH100_SXM"; `nodes` scale-up domains): its device comes first and its collectives are
    priced on its links (docs/parallel.md).
    """
    if arch is None:
        arch = [] if system is not None else "H100_SXM"
    if not isinstance(graph, (Graph, str, os.PathLike)):
        if system is not None:
            raise UserError("analyze(system=...) takes a graph; capture the program first, or "
                            "run `solar analyze PROGRAM --system ID`")
        return torch_lowering().analyze_program(
            graph, *example_inputs, arch=arch or "H100_SXM", policy=policy,
            cache_state=cache_state, strict=strict, mode=mode, cache_aware=cache_aware)
    if not isinstance(graph, Graph):
        graph = load_graph(graph)
    archs = [arch] if isinstance(arch, str) else list(arch)
    if not archs and system is None:
        raise UserError("analyze() needs at least one device id in `arch`")
    return Report(_core.analyze(graph, archs, policy, cache_state, mode, cache_aware,
                                system=system, nodes=nodes))


def analyze_jax(fn, *args, arch: Union[str, Iterable[str]] = "H100_SXM", **options) -> Report:
    """Captures the JAX function `fn(*args)` (its jaxpr, on abstract values), lowers it with
    the C++ jax table and analyzes it (docs/jax-frontend.md). Options: policy, cache_state,
    strict, params (a pytree passed first, its leaves parameters), validate, crosscheck."""
    return jax_program().analyze_jax(fn, *args, arch=arch, **options)


def device_ids() -> list[str]:
    """The ids of every known device, sorted, plus "host"."""
    return _core.device_ids()


def device(id: str) -> Device:
    """The device with this id (case-insensitive). `host` is detected on first use.
    Raises solar.UserError (kind "unknown_device") listing the known ids."""
    return _core.device(id)


def devices(include_host: bool = False) -> list[Device]:
    """Every device of the database; the detected host only when asked (detection probes
    the memory bandwidth, which takes a moment)."""
    return [device(i) for i in device_ids() if include_host or i != "host"]
