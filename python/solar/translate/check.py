"""One attempt's program checked, in order, and the first failure worded for the model
(docs/translate.md, "What validation proves"):

1. the answer holds a program and it stays inside the loop language (extract.py);
2. it parses, records and lifts at its own sizes (a refusal names file:line and the rule);
3. its size constants have the source's values;
4. at the test sizes, its input, weight and output tensors line up with the source's data by
   name, shape and dtype (the convention of runner.py);
5. its interpreter and its lifted graph, run on the source's own inputs and weights, match
   the source's outputs (frontends/loopir/validation.py, one comparison rule: the output
   dtype's tolerance), and each other.

The program is text throughout: parsed with `ast` and interpreted, never executed.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from .. import _core, programs
from ..frontends.loopir import language as lang
from ..frontends.loopir.language import canonical_dtype
from ..frontends.loopir import record, syntax
from ..frontends.loopir.checks import ReferenceOutputs, source_tensors, work_points
from ..frontends.loopir.program import LoopProgram, _gc_paused
from . import extract
from .prompt import tensor_table
from .source import ReferenceData

if TYPE_CHECKING:
    import numpy as np


# Iteration points the interpreter may evaluate at the test sizes (all nests together,
# checks.work_points: every statement over its nest's box): a program whose extents ignore
# the source's size constants would run for hours. The budget of `solar validate`.
MAX_TEST_POINTS = lang.MAX_VALIDATION_POINTS
# Wall-clock seconds the interpreter may run one attempt's validation (the points above
# bound its work from above; this bounds what they do not foresee).
VALIDATION_SECONDS = 120.0


# Items of a listed reason a summary line shows before "(and N more)".
HEADLINE_ITEMS = 3


def headline(message: str) -> str:
    """A failure's message on one line, for summaries: its first line, and when that only
    introduces a list ("At the test sizes (...):"), the list's items joined by `; ` (the
    first HEADLINE_ITEMS, then how many more): the heading alone says nothing."""
    lines = [ln.strip() for ln in (message or "").strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    first, items = lines[0], []
    for ln in lines[1:]:  # the list right under the heading
        if not ln.startswith("- "):
            break
        items.append(ln[2:])
    if first.endswith(":") and items:
        first += " " + "; ".join(items[:HEADLINE_ITEMS])
        if len(items) > HEADLINE_ITEMS:
            first += f" (and {len(items) - HEADLINE_ITEMS} more)"
    elif first.endswith(":") and len(lines) > 1:
        first += " " + lines[1]
    return first


class Failure(Exception):
    """A rejected attempt: `kind` (prompt.KIND_WORDS) and the message the model gets."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclasses.dataclass
class Checked:
    """An accepted attempt: the program, and its validation section (None: unvalidated)."""

    text: str
    validation: Optional[Dict[str, Any]]
    sizes: Dict[str, str]


def load_text(text: str, path: str, overrides: Optional[Dict[str, str]] = None) -> LoopProgram:
    """A loop program from its text (program.load without the file): parse and record."""
    with _gc_paused():
        program = syntax.parse_program(text, path, overrides)
        trace, bounds, outputs = record.record(program)
    return LoopProgram(path, program, trace, bounds, outputs)


def lift(lp: LoopProgram):
    """(graph, {graph tensor name: trace id}) by the C++ loopir table: program.lift without
    its import of the PyTorch frontend (and of torch, 2 s), which a translation never needs."""
    graph, _notes, trace_ids = _core.lower_optrace(json.dumps(lp.trace, allow_nan=False),
                                                   lp.path, True)
    return graph, dict(trace_ids)


def _solar_step(kind: str, fn, *args):
    """fn(*args); Solar's refusal of the program (a solar.Error) becomes Failure(kind)."""
    try:
        return fn(*args)
    except _core.Error as e:
        raise Failure(kind, str(e)) from None
    except (RecursionError, MemoryError, ValueError, TypeError, ArithmeticError, IndexError,
            KeyError) as e:
        raise Failure("run_error", f"{type(e).__name__}: {e}") from None


def check(answer: Optional[str], name: str, data: Optional[ReferenceData],
          source_constants: Dict[str, int]) -> Checked:
    """The attempt's program when it passes every step (unvalidated when `data` is None);
    else the Failure of the first step it does not pass."""
    try:
        text, _ = extract.candidate(answer, name)
    except extract.Rejected as e:
        raise Failure(e.kind, e.message) from None
    own = _solar_step("refused", load_text, text, name)
    _solar_step("refused", lift, own)
    constants = own.program.constants
    differ = [f"`{k}` is {constants[k]} in your program, {v} in the source"
              for k, v in source_constants.items() if k in constants and constants[k] != v]
    if differ:
        raise Failure("sizes", "; ".join(differ) + ". Size constants keep the source's names "
                                                   "and values.")
    if data is None:
        return Checked(text, None, {})
    sizes = {k: v for k, v in data.sizes.items() if k in constants}
    lp = _solar_step("refused", load_text, text, name, sizes)
    points = test_points(lp)
    if points > MAX_TEST_POINTS:
        raise Failure("too_big", f"at the test sizes ({_at(data)}) your program's loop nests "
                                 f"run {points:,} iterations (each statement over its loops' "
                                 f"ranges), more than {MAX_TEST_POINTS:,}: write every extent "
                                 "in terms of the source's size constants")
    graph, trace_ids = _solar_step("refused", lift, lp)
    sources, ref = bind(lp, data, source_constants)
    validate = programs.loop_validation().validate
    try:
        section = validate(lp, graph, trace_ids, ref, sources, VALIDATION_SECONDS)
    except _core.UserError as e:
        if getattr(e, "kind", None) != "too_large":
            raise Failure("run_error", str(e)) from None
        raise Failure("too_big", f"at the test sizes ({_at(data)}) your program ran past the "
                                 f"{VALIDATION_SECONDS:g} s its validation may take: write every "
                                 "extent in terms of the source's size constants") from None
    except _core.Error as e:
        raise Failure("run_error", str(e)) from None
    except (RecursionError, MemoryError, ValueError, TypeError, ArithmeticError, IndexError,
            KeyError) as e:
        raise Failure("run_error", f"{type(e).__name__}: {e}") from None
    if section["status"] != "passed":
        raise Failure(*_failure_of(section, data, lp))
    return Checked(text, section, sizes)


def test_points(lp: LoopProgram) -> int:
    """Iteration points the interpreter evaluates (checks.work_points): every statement over
    its nest's box, where a bound affine in outer loops takes its widest value over them (an
    upper bound of the points a triangular nest keeps, never an estimate from below)."""
    return work_points(lp.trace)


def _at(data: ReferenceData) -> str:
    return ", ".join(f"{k}={v}" for k, v in data.sizes.items()) or "the source's own sizes"


def bind(lp: LoopProgram, data: ReferenceData, source_constants: Dict[str, int]):
    """(sources by trace id, ReferenceOutputs): the program's input, weight and constant
    tensors given the source's arrays by name, its outputs paired with the source's; every
    name, shape and dtype that does not line up is a Failure("binding") listing them all."""
    problems: List[str] = []
    sources: Dict[int, np.ndarray] = {}
    declared = set()
    for t in source_tensors(lp.trace):
        name, shape, dtype = t["name"], tuple(t["shape"]), t["dtype"]
        declared.add(name)
        what = f"`{name}` ({_role(t)}, {dtype}{list(shape)})"
        if name not in data.tensors:
            problems.append(f"{what} is no argument, parameter or buffer of the source")
            continue
        arr = data.tensors[name]
        want = data.dtypes.get(name)
        if tuple(arr.shape) != shape:
            problems.append(f"{what} has shape {list(shape)} at the test sizes, the source's "
                            f"{data.kinds[name]} `{name}` {list(arr.shape)}")
        elif want is not None and want != dtype:
            problems.append(f"{what} is {dtype}, the source's {data.kinds[name]} `{name}` {want}")
        else:
            sources[t["id"]] = programs.loop_interpret().round_to(arr, dtype)
    for name, kind in data.kinds.items():
        if kind == "input" and name not in declared:
            problems.append(f"the source's argument `{name}` ({list(data.tensors[name].shape)}) "
                            "is not declared (or never read)")
    outs = lp.outputs
    if len(outs) != len(data.outputs):
        problems.append(f"your program declares {len(outs)} output(s) "
                        f"({', '.join(n for n, _ in outs) or 'none'}), the source returns "
                        f"{len(data.outputs)}")
    by_id = {t["id"]: t for t in lp.trace["tensors"]}
    values: Dict[str, np.ndarray] = {}
    if data.output_names and len(outs) == len(data.outputs):
        missing = [n for n in data.output_names if n not in {o for o, _ in outs}]
        if missing:
            problems.append(f"the source returns a dict; your outputs are named "
                            f"{', '.join(o for o, _ in outs)}, its keys "
                            f"{', '.join(data.output_names)}")
        pairs = [(n, tid, data.output_names.index(n)) for n, tid in outs if n not in missing
                 and n in data.output_names]
    else:
        pairs = [(n, tid, i) for i, (n, tid) in enumerate(outs[:len(data.outputs)])]
    for name, tid, i in pairs:
        t, arr, want = by_id[tid], data.outputs[i], data.output_dtypes[i]
        if tuple(arr.shape) != tuple(t["shape"]):
            problems.append(f"output `{name}` has shape {list(t['shape'])} at the test sizes, "
                            f"the source's output {i} {list(arr.shape)}")
        elif want is not None and want != t["dtype"]:
            problems.append(f"output `{name}` is {t['dtype']}, the source's output {i} {want}")
        values[name] = arr
    if problems:
        # The source's constants, and the sizes an .npz was made at (a CUDA source's).
        missing_consts = [k for k in dict.fromkeys([*source_constants, *data.sizes])
                          if k.isidentifier() and k not in lp.program.constants]
        hint = (f"\n\nSize constants of the source your program does not define: "
                f"{', '.join(missing_consts)} (name yours like the source's, convention 3)."
                if missing_consts else "")
        raise Failure("binding", f"At the test sizes ({_at(data)}):\n- " + "\n- ".join(problems)
                      + hint + "\n\nThe source's tensors at these sizes:\n"
                      + tensor_table(_test_listing(data)))
    compare_dtypes = {name: data.precision[i]["dtype"] for name, _, i in pairs
                      if i in data.precision}
    return sources, ReferenceOutputs(data.label, data.framework, values, compare_dtypes)


def _role(t: Dict[str, Any]) -> str:
    return {"parameter": "weight"}.get(t["role"], t["role"])


def _test_listing(data: ReferenceData) -> Dict[str, Any]:
    def dtype(n: str) -> Optional[str]:  # an .npz's arrays: their own dtype
        return data.dtypes[n] or canonical_dtype(str(data.tensors[n].dtype))

    return {
        "inputs": [{"name": n, "dtype": dtype(n), "shape": list(a.shape)}
                   for n, a in data.tensors.items() if data.kinds[n] == "input"],
        "weights": [{"source_name": _source_name(data, n), "name": n, "dtype": dtype(n),
                     "shape": list(a.shape)}
                    for n, a in data.tensors.items() if data.kinds[n] == "weight"],
        "outputs": [dict({"dtype": d or canonical_dtype(str(a.dtype)), "shape": list(a.shape)},
                         **({"name": data.output_names[i]} if data.output_names else {}))
                    for i, (a, d) in enumerate(zip(data.outputs, data.output_dtypes))],
    }


def _source_name(data: ReferenceData, name: str) -> str:
    for t in data.listing.get("weights", []):
        if t["name"] == name:
            return t["source_name"]
    return name


def _num(x: Any) -> str:
    return "n/a" if x is None else (f"{x:.4g}" if isinstance(x, float) else str(x))


def _pair(a: Any, b: Any) -> Tuple[str, str]:
    """Two values printed with the fewest significant digits (at least 4) that tell them
    apart: 2.116 and 2.116 would hide a difference of 3e-6 that the tolerance sees."""
    if not (isinstance(a, float) and isinstance(b, float)) or a == b:
        return _num(a), _num(b)
    for digits in range(4, 18):
        x, y = f"{a:.{digits}g}", f"{b:.{digits}g}"
        if x != y:
            return x, y
    return repr(a), repr(b)


def _source_index(data: ReferenceData, entry: Dict[str, Any], i: int) -> int:
    """The source's output index of a compared output (by name when the source returns a
    dict, else in order)."""
    names = data.output_names or []
    return names.index(entry["name"]) if entry["name"] in names else i


def _tolerance(c: Dict[str, Any], dtype: str, compared_at: Optional[Dict[str, str]]) -> str:
    """(atol A, rtol R), and the dtype whose tolerance it is when that is not the output's."""
    tol = f"atol {c['atol']:g}, rtol {c['rtol']:g}"
    if not compared_at:
        return tol
    return (f"{tol}; at {compared_at['dtype']}'s tolerance, not {dtype}'s: the precision the "
            f"source computed in, {compared_at['why']}")


def _failure_of(section: Dict[str, Any], data: ReferenceData, lp: LoopProgram):
    """(kind, message) of a failed validation: the first output that differs from the
    source's and by how much; else where the lifted graph leaves the interpreter."""
    ref = section.get("reference") or {}
    if ref.get("status") == "failed":
        bad = [(i, o) for i, o in enumerate(ref["outputs"]) if not o["loop_program"]["passed"]]
        if bad:
            i, o = bad[0]
            c = o["loop_program"]
            total = math.prod(c["shape"]) if c["shape"] else 1
            msg = (f"output `{o['name']}` ({c['dtype']}{c['shape']}, the source's output {i}) "
                   f"differs: {c['mismatches']} of {total} elements outside tolerance "
                   f"({_tolerance(c, c['dtype'], data.precision.get(_source_index(data, o, i)))}"
                   f"); max abs error "
                   f"{_num(c['max_abs_error'])}, max rel error {_num(c['max_rel_error'])}")
            if "worst_position" in c:
                got, want = _pair(c["worst_got"], c["worst_want"])
                msg += (f"; worst at {c['worst_position']}: your program gives {got}, the "
                        f"source {want}")
            msg += "."
            if len(bad) > 1:
                msg += " Also differ: " + ", ".join(f"`{o2['name']}`" for _, o2 in bad[1:]) + "."
            msg += (f"\n\nCompared at the test sizes ({_at(data)}) on the source's own inputs "
                    "and weights.")
            unread = [n for n, k in data.kinds.items() if k == "weight" and n not in {
                t["name"] for t in source_tensors(lp.trace)}]
            if unread:
                msg += (" The source's parameters and buffers your program does not read: "
                        + ", ".join(f"`{n}`" for n in unread) + ".")
            return "mismatch", msg
    first = section.get("first_divergent_op") or {}
    where = f" (at {first['file']}:{first['line']})" if first.get("line") else ""
    return "lifting", (f"{section.get('reason', 'validation failed')}{where}: the graph Solar "
                       "lifts from your program computes something else than the program "
                       "itself; write that nest more plainly (one statement per reduction, "
                       "explicit guards).")
