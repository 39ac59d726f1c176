"""A torch.distributed program from file to report: every rank captured under the fake
process group (distributed.py), rank 0's graph analyzed, and with validation every rank run
for real over gloo (distributed_gloo.py) and compared with the executor's run of the ranks'
graphs (docs/distributed.md, "PyTorch").
"""

from __future__ import annotations

import warnings
from typing import Any, Dict, List, Optional

from ...analysis import ProgramAnalysis, ProgramOptions, analyze_trace
from ...errors import user_error
from ...ranks import MAX_DEVICES, declared_devices, system_of
from ...ranks import unsupported as refused
from .capture import CaptureRecord, capture_loaded, check_program, load_program
from .crosscheck import TOOL as CROSSCHECK_TOOL
from .distributed_gloo import validate_ranks
from .distributed import fake_process_group

ROUTE = "torch.distributed"
NOTE = ("each rank's graph is the program run as that rank under torch.distributed's fake "
        "process group on fake tensors: its local ops (a DTensor op's local computation) and "
        "its collectives, each over its group")


def world_size(path: str, overrides: Optional[Dict[str, str]] = None) -> Optional[int]:
    """The program's `DEVICES` (docs/distributed.md), or None for a one-process program."""
    return declared_devices(path, overrides)


def capture_rank(path: str, devices: int, rank: int, options: ProgramOptions,
                 record: Optional[CaptureRecord] = None) -> Dict[str, Any]:
    """Rank `rank`'s OpTrace: the program loaded, built and run as that rank of `devices`
    (`record`: the trace ids of what it returned)."""
    from torch._subclasses.fake_tensor import (  # pylint: disable=import-outside-toplevel
        DataDependentOutputException, DynamicOutputShapeException)

    with fake_process_group(devices, rank):
        try:
            mod = load_program(path, options.overrides)
            check_program(mod, path)
            return capture_loaded(mod, path, fake=not options.real, train=options.train,
                                  optimizer=options.optimizer, record=record,
                                  eval_mode=options.eval_mode, unroll=options.unroll)
        except (DataDependentOutputException, DynamicOutputShapeException) as e:
            # A one-process program is captured again on real tensors; here the fake
            # process group's collectives move no data, so values read after one would be
            # wrong: refused.
            raise refused(f"{path}: the program reads tensor values ({type(e).__name__}); "
                          "a torch.distributed program is captured on fake tensors only "
                          "(data-dependent control flow or shapes, docs/distributed.md)") \
                from None


def groups_of(trace: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """The groups a rank's collectives run over: name -> {size, ranks}."""
    out: Dict[str, Dict[str, Any]] = {}
    for op in trace["ops"]:
        a = op["args"]
        if "collective" in a:
            out.setdefault(a["group"], {"size": a["size"], "ranks": a["ranks"]})
    return out


def place(trace: Dict[str, Any], devices: int, rank: int, system: str,
          nodes: Any) -> Dict[str, Any]:
    """Ranks fill the system's scale-up domains in order (rank r in domain r // G): writes
    each collective's `ranks_per_domain` (its group's ranks in `rank`'s domain) into the
    trace and returns the placement for the report, each group's link(s)."""

    _, total, per_domain, _ = system_of(system, nodes)
    if devices > total:
        raise user_error(f"the program's {devices} ranks do not fit in system {system}'s "
                         f"{total} devices (--nodes adds scale-up domains)", "usage")
    links: Dict[str, str] = {}
    for op in trace["ops"]:
        a = op["args"]
        if "collective" not in a:
            continue
        group = [int(r) for r in a["ranks"]]
        shared = sum(1 for r in group if r // per_domain == rank // per_domain)
        if len(group) % shared:
            raise user_error(f"the group {a['group']} (ranks {group}) does not tile the "
                             f"system's scale-up domains of {per_domain}", "usage")
        a["ranks_per_domain"] = shared
        links[a["group"]] = ("scale-up" if shared == len(group) else
                             "scale-out" if shared == 1 else "scale-up+scale-out")
    return {"system": system, "devices_per_domain": per_domain, "group_links": links}


def analyze_distributed(path: str, devices: int,
                        options: ProgramOptions) -> ProgramAnalysis:
    """Rank 0's graph analyzed, with the `distributed` section; with validate every rank's
    graph executed together (run_ranks) and compared with the program's run over gloo."""
    if not 1 <= devices <= MAX_DEVICES:
        raise user_error(f"{path}: DEVICES = {devices}: a distributed program declares 1 to "
                         f"{MAX_DEVICES} ranks", "usage")
    if options.mesh_links:
        raise user_error("--mesh-links: for JAX programs (a torch.distributed program's groups "
                         "are placed in rank order, docs/distributed.md)", "usage")
    records = [CaptureRecord() for _ in range(devices)] if options.validate else [None]
    trace = capture_rank(path, devices, 0, options, records[0])
    placement = place(trace, devices, 0, options.system, options.nodes) if options.system \
        else {}
    result = analyze_trace(trace, path, options)
    section: Dict[str, Any] = {"route": ROUTE, "ranks": devices, "groups": groups_of(trace),
                               "analyzed_rank": 0, "note": NOTE, **placement}
    result.report.attach_section("distributed", section)
    if options.crosscheck:
        result.report.attach_section("crosscheck", {
            "tool": CROSSCHECK_TOOL, "status": "skipped",
            "reason": "a torch.distributed program's rank is not cross-checked (FlopCounterMode "
                      "counts a DTensor op once, at its global shapes)"})
    if options.validate:
        if options.train or options.optimizer:
            raise user_error("--validate of a torch.distributed program: without --train and "
                             "--optimizer (a program's own step validates)", "usage")
        traces: List[Dict[str, Any]] = [trace] + [
            capture_rank(path, devices, r, options, records[r]) for r in range(1, devices)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result.report.attach_section("validation", validate_ranks(
                path, devices, traces, [list(r.returned) for r in records], options))
    return result
