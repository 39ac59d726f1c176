"""Validation by execution (`solar validate model.py`, `solar analyze model.py --validate`):
run the program on real tensors, execute the lowered graph with Solar's executor on the same
inputs, parameters, buffers and constants, and compare every graph output with the
framework's value (report section `validation`, docs/validation.md).

Randomness: torch's, Python's and numpy's generators are seeded (seed 0) before the program
is loaded. The outputs
of random ops (ops tagged nondeterministic_seeded: randn, rand, bernoulli, dropout in
training, ...) cannot be recomputed by the executor, so the values the framework drew are
given to it: the validation graph is the analyzed graph with those ops' outputs turned into
sources (the trace without the random ops, lowered by the same table). A program output that
is itself a random op's value is then not computed by the graph and is excluded with that
reason; a program all of whose outputs are excluded is "inconclusive", never "passed".
"""

from __future__ import annotations

import contextlib
import random
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from ... import _core, analysis, executor
from ...validation import check_entry, enum_name, first_divergent_op, validation_trace
from .capture import CaptureRecord, capture_loaded, check_program, is_row_major, load_program
from .crosscheck import attach_crosscheck

SEED = 0
TOOL = "solar executor"
_SOURCE_ROLES = ("input", "parameter", "buffer", "constant")


def capture_and_validate(path: str,
                         options: analysis.ProgramOptions) -> analysis.ProgramAnalysis:
    """Captures the program at `path` on real tensors (seeded), analyzes it, cross-checks its
    MACs when options.crosscheck, and attaches the `validation` section."""
    def capture(values: str, flop_counter: bool) -> Tuple[Dict[str, Any], CaptureRecord]:
        record = CaptureRecord(values=values, flop_counter=flop_counter)
        return _capture_seeded(path, options, record), record

    with _seeded_generators():
        trace, record = capture("io", options.crosscheck)
    result = analysis.analyze_trace(trace, path, options)
    if options.crosscheck:
        attach_crosscheck(result, None, options, record=record)

    def rerun() -> Tuple[Dict[str, Any], Any]:
        with _seeded_generators():
            return capture("all", False)

    section = validate_capture(trace, record, path, rerun=rerun)
    result.report.attach_section("validation", section)
    return result


@contextlib.contextmanager
def _seeded_generators():
    """torch's, Python's and numpy's global generators seeded with SEED, and restored to the
    caller's states afterwards: a second capture draws the same weights, inputs and random
    values as the first, and the caller's own draws are not disturbed."""
    try:
        import numpy
    except ImportError:  # numpy is optional for programs
        numpy = None
    py_state = random.getstate()
    np_state = numpy.random.get_state() if numpy is not None else None
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        random.seed(SEED)
        if numpy is not None:
            numpy.random.seed(SEED)
        try:
            yield
        finally:
            random.setstate(py_state)
            if numpy is not None:
                numpy.random.set_state(np_state)


def _capture_seeded(path: str, options, record) -> Dict[str, Any]:
    """Loads and captures the program on real tensors (inside _seeded_generators)."""
    mod = load_program(path, options.overrides)
    check_program(mod, path)
    return capture_loaded(mod, path, fake=False, train=options.train,
                          optimizer=options.optimizer, record=record,
                          eval_mode=options.eval_mode, unroll=options.unroll)


def _reference(value: Any, tensor: Any) -> Any:
    """The framework's value as the executor compares it: complex values as (re, im) pairs
    in a trailing dimension, as the lowering holds them."""
    if value.is_complex():
        value = torch.view_as_real(value.resolve_conj())
    if list(value.shape) != list(tensor.shape):
        raise _core.UserError(
            f"tensor {tensor.name}: the framework's value has shape {list(value.shape)}, the "
            f"graph's tensor {list(tensor.shape)}")
    return value


def _graph_io(graph) -> Tuple[List[Any], List[Any], List[Any]]:
    """(sources, outputs, intermediates) of a graph, as Tensor objects."""
    sources, outputs, inner = [], [], []
    for t in graph.tensors:
        role = enum_name(t.role)
        if role == "output":
            outputs.append(t)
        elif role == "intermediate":
            inner.append(t)
        else:
            sources.append(t)
    return sources, outputs, inner


class _Prepared:
    """A validation trace lowered, with the executor's inputs and references."""

    def __init__(self, trace: Dict[str, Any], record, file: str, with_intermediates: bool):
        self.vtrace = validation_trace(trace, record.random_ops)
        self.graph, self.notes, self.trace_ids = analysis.lower_trace(self.vtrace, file, False)
        graph = self.graph
        self.unanalyzed = [op for op in graph.ops if enum_name(op.kind) == "unanalyzed"]
        sources, outputs, inner = _graph_io(graph)
        self.inputs: Dict[str, Any] = {}
        self.references: Dict[str, Any] = {}
        self.intermediates: Dict[str, Any] = {}
        self.missing: List[str] = []
        self.skip: set = set()  # outputs excluded from the comparison (still fed: the
        # executor wants a reference for every output)
        for t in sources:
            tid = self.trace_ids.get(t.name)
            if tid is None or tid not in record.values:
                self.missing.append(t.name)
                continue
            self.inputs[t.name] = _reference(record.values[tid], t)
        for t in outputs:
            tid = self.trace_ids.get(t.name)
            if tid is None or tid not in record.values:
                self.missing.append(t.name)
                continue
            self.references[t.name] = _reference(record.values[tid], t)
        if with_intermediates:
            aliases = _strided_aliases(graph, self.vtrace, self.trace_ids)
            # Only what the outputs depend on: keeping another tensor would make the executor
            # run ops the outputs never needed, which cannot explain their divergence.
            needed = _ancestors(graph, [t.name for t in outputs])
            for t in inner:
                tid = self.trace_ids.get(t.name)
                value = record.values.get(tid) if tid is not None else None
                if value is None or t.name in aliases or t.name not in needed:
                    continue
                if value.is_complex():
                    continue  # held as float pairs by unanalyzed ops only: nothing to locate
                if list(value.shape) == list(t.shape):
                    self.intermediates[t.name] = value


def _producers(graph) -> Dict[str, Any]:
    """{tensor name: the op that writes it}."""
    producer = {}
    for op in graph.ops:
        for out in graph.output_names(op):
            producer[out] = op
    return producer


def _ancestors(graph, names: List[str]) -> set:
    """The tensors `names` are computed from (themselves included)."""
    producer = _producers(graph)
    seen, stack = set(), list(names)
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        op = producer.get(t)
        if op is not None:
            stack.extend(graph.input_names(op))
    return seen


def _strided_aliases(graph, trace: Dict[str, Any], trace_ids: Dict[str, int]) -> set:
    """Graph tensors made by a move op for a torch view that is not row-major (a transpose,
    a permute, a window): the lowering may hold these as strided aliases whose consumers read
    the base tensor through strides (docs/torch-frontend.md), so the tensor's own executed
    value is not the view's value and must not be compared as an intermediate."""
    out = set()
    for op in graph.ops:
        if enum_name(op.kind) != "move":
            continue
        for name in graph.output_names(op):
            tid = trace_ids.get(name)
            if tid is None:
                continue
            t = trace["tensors"][tid]
            if t.get("strides") is not None and not is_row_major(t["shape"], t["strides"]):
                out.add(name)
    return out


def _moved_from_given(graph, producer, name: str, given: set) -> Optional[str]:
    """The given source an output only moves (views, copies) from, or None when the graph
    computes something for it."""
    seen, stack, found = set(), [name], None
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        if t in given:
            found = found or t
            continue
        op = producer.get(t)
        if op is None or enum_name(op.kind) != "move":
            return None
        stack.extend(graph.input_names(op))
    return found


def _excluded(trace: Dict[str, Any], record, prepared: _Prepared) -> List[Dict[str, Any]]:
    """Program outputs (everything the program returned) the graph does not compute, each
    with the reason; the references of outputs that merely move a given random value are
    added to prepared.skip (comparing them would pass by construction)."""
    given_by = {}
    for i in record.random_ops:
        op = trace["ops"][i]
        for tid in op["outputs"]:
            if tid is not None:
                given_by[tid] = op
    given_names = {n for n, tid in prepared.trace_ids.items() if tid in given_by}
    excluded = []
    producer = _producers(prepared.graph) if given_names else {}
    for t in _graph_io(prepared.graph)[1]:
        src = (_moved_from_given(prepared.graph, producer, t.name, given_names)
               if given_names else None)
        if src is not None:
            prepared.skip.add(t.name)
            op = given_by[prepared.trace_ids[src]]
            where = f" ({op['file']}:{op.get('line', 0)})" if op.get("file") else ""
            excluded.append({"name": t.name, "trace_id": prepared.trace_ids.get(t.name),
                             "reason": f"a view or copy of the value of random op {op['op']}"
                             f"{where}, which is given to the executor: nothing to compare"})
    computed = set(prepared.trace_ids[t.name] for t in _graph_io(prepared.graph)[1]
                   if t.name in prepared.trace_ids)
    for tid in dict.fromkeys(record.returned):
        if tid in computed:
            continue
        t = trace["tensors"][tid]
        name = t.get("name") or f"t{tid}"
        if tid in given_by:
            op = given_by[tid]
            where = f" ({op['file']}:{op.get('line', 0)})" if op.get("file") else ""
            reason = (f"the value of random op {op['op']}{where}: the framework's draw is given "
                      "to the executor, so the graph computes nothing to compare")
        elif t["role"] in _SOURCE_ROLES:
            reason = f"returned unchanged (a graph source: {t['role']})"
        else:
            reason = "not computed by the graph"
        excluded.append({"name": name, "trace_id": tid, "reason": reason})
    return excluded


def _given(trace: Dict[str, Any], record) -> List[Dict[str, Any]]:
    given = []
    for i in record.random_ops:
        op = trace["ops"][i]
        entry = {"op": op["op"], "outputs": [t for t in op["outputs"] if t is not None],
                 "reason": "random op: the framework's values are given to the executor"}
        if op.get("file"):
            entry["origin"] = f"{op['file']}:{op.get('line', 0)}"
        given.append(entry)
    return given


def validate_capture(
    trace: Dict[str, Any],
    record,
    file: str,
    rerun: Optional[Callable[[], Tuple[Dict[str, Any], Any]]] = None,
) -> Dict[str, Any]:
    """The `validation` section for a real-tensor capture whose record kept values ("io" or
    "all"). rerun: captures the program again keeping every op output ("all"); called when
    an output fails, to name the first divergent op."""
    section: Dict[str, Any] = {
        "status": "failed",
        "tool": TOOL,
        "seed": SEED,
        "outputs": [],
        "first_divergent_op": None,
        "excluded": [],
        "given": _given(trace, record),
    }
    try:
        prepared = _Prepared(trace, record, file, record.values_mode == "all")
    except _core.UserError as e:  # a framework value that does not fit its graph tensor
        section["reason"] = f"the graph's sources or outputs do not match the program's: {e}"
        return section
    section["excluded"] = _excluded(trace, record, prepared)
    if prepared.unanalyzed:
        # The lowering's lines name each op with its program line and why it is unanalyzed.
        names = "; ".join(prepared.notes) or ", ".join(
            op.framework_op or op.name for op in prepared.unanalyzed)
        section["reason"] = (f"the graph is not executable: {len(prepared.unanalyzed)} "
                             f"unanalyzed op(s): {names}")
        return section
    if prepared.missing:
        section["reason"] = ("no framework value for graph tensor(s) "
                             f"{', '.join(prepared.missing)}")
        return section
    if not set(prepared.references) - prepared.skip:
        reasons = "; ".join(f"{e['name']}: {e['reason']}" for e in section["excluded"])
        section["status"] = "inconclusive"
        section["reason"] = ("every program output is excluded, nothing was compared"
                             + (f" ({reasons})" if reasons else ""))
        return section
    try:
        result = executor.validate(prepared.graph, prepared.inputs, prepared.references,
                                   prepared.intermediates or None)
    except (_core.UnsupportedError, _core.UserError) as e:
        section["reason"] = f"the graph could not be executed: {e}"
        return section
    tids = prepared.trace_ids
    checks = [c for c in result.outputs if c.name not in prepared.skip]
    section["outputs"] = [check_entry(c, prepared.graph, tids.get(c.name)) for c in checks]
    if all(c.passed for c in checks):
        section["status"] = "passed"
        return section
    section["reason"] = "outputs outside tolerance: " + ", ".join(
        c.name for c in checks if not c.passed)
    section["first_divergent_op"] = _locate(result, prepared, trace, file, rerun)
    return section


def _locate(result, prepared: _Prepared, trace, file: str, rerun) -> Optional[Dict[str, Any]]:
    """The first op whose output leaves tolerance, from a validation with every op output's
    framework value as an intermediate reference (a seeded re-run keeping them all)."""
    if result.first_divergent_op is None and rerun is not None:
        trace2, record2 = rerun()
        if [op["op"] for op in trace2["ops"]] != [op["op"] for op in trace["ops"]]:
            return {"op": None, "reason": "the seeded re-run recorded different ops, so no "
                    "intermediate values line up with the graph"}
        try:
            prepared = _Prepared(trace2, record2, file, True)
            result = executor.validate(prepared.graph, prepared.inputs, prepared.references,
                                       prepared.intermediates or None)
        except (_core.UnsupportedError, _core.UserError) as e:
            return {"op": None, "reason": f"the re-run could not be executed: {e}"}
        if result.passed:
            return {"op": None, "reason": "the seeded re-run passed: the failure did not "
                    "reproduce"}
    return first_divergent_op(result, prepared.graph, prepared.trace_ids,
                              prepared.vtrace["ops"])
