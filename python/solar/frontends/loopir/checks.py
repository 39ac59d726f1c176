"""What the loop program's validation (validation.py), its comparison with a reference
program (reference.py) and solar translate's checks share, without NumPy: the source tensors
of a trace, an executor check written as a report entry, and a reference's outputs computed
elsewhere."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any, Dict, List, Tuple

from ... import validation
from .trees import affine_form
if TYPE_CHECKING:
    import numpy as np


def nest_box(loops: List[Dict[str, Any]]) -> List[int]:
    """The number of values of each loop of a nest over its box: a bound affine in outer
    loops takes its widest value over them (the interpreter's iteration space, which a
    triangular bound masks)."""
    counts: List[int] = []
    lo_hi: Dict[str, Tuple[int, int]] = {}

    def extreme(tree: Any, pick) -> int:
        terms, const = affine_form(tree) or ({}, 0)
        return const + sum(pick(k * lo_hi[v][0], k * lo_hi[v][1]) for v, k in terms.items()
                           if v in lo_hi)

    for lp in loops:
        start, stop, step = extreme(lp["start"], min), extreme(lp["stop"], max), lp["step"]
        count = max(0, -(-(stop - start) // max(1, step)))
        counts.append(count)
        lo_hi[lp["var"]] = (start, start + max(0, count - 1) * step)
    return counts


# What one step of one nest of a recurrence costs the interpreter beyond its points, in
# points (about 0.15 ms a step, measured on a 1-point nest, at about 10^7 points a second):
# a recurrence of many small steps is timed by its steps, not its points.
STEP_POINTS = 1_500


def work_points(trace: Dict[str, Any]) -> int:
    """Iteration points the loop interpreter evaluates to run a trace: each statement of a
    nest sweeps the nest's whole box, a recurrence's nests once per step, each step of each
    nest counted STEP_POINTS more (docs/loop-language.md, "Limits"). An upper bound of the
    points a triangular or guarded nest keeps, and the measure of the interpreter's time."""
    total = 0
    for op in trace["ops"]:
        args = op.get("args") or {}
        if op["op"] == "loopir::nest":
            statements = len(args.get("statements") or [])
            total += math.prod(nest_box(args.get("loops") or [])) * statements
        elif op["op"] == "loopir::recurrence":  # every step sweeps each nest's box
            steps = nest_box([args["step"]])[0] if args.get("step") else 0
            for j, nest in enumerate(args.get("nests") or []):
                statements = sum(1 for st in args.get("statements") or [] if st.get("nest") == j)
                if statements:
                    box = math.prod(nest_box(nest.get("loops") or []))
                    total += steps * (box * statements + STEP_POINTS)
    return total


def source_tensors(trace: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The trace tensors no op writes (inputs, weights, constants)."""
    written = {o for op in trace["ops"] for o in op["outputs"] if o is not None}
    return [t for t in trace["tensors"] if t["id"] not in written]


def check_entry(ch, graph, trace_id) -> Dict[str, Any]:
    """One executor check (solar.Check) of a graph tensor as a `validation` entry, with where
    a failed check is worst."""
    return {**validation.check_entry(ch, graph, trace_id), **_worst(ch)}


def _worst(ch) -> Dict[str, Any]:
    """Where a failed check is worst (index, got, want): what a translation's feedback
    (solar translate) quotes; nothing for a check that passed."""
    if ch.passed or not ch.mismatches:
        return {}
    finite = lambda v: float(v) if math.isfinite(float(v)) else str(float(v))  # noqa: E731
    return {"worst_position": [int(i) for i in ch.worst_position],
            "worst_got": finite(ch.worst_got), "worst_want": finite(ch.worst_want)}


@dataclasses.dataclass
class ReferenceOutputs:
    """A reference's outputs computed elsewhere (solar translate: the source program run in a
    subprocess on its own inputs, or an .npz), compared by compare_reference as a
    reference program's are."""

    source: str  # what produced them (a path)
    framework: str  # torch, jax, numpy or npz
    values: Dict[str, "np.ndarray"]  # by the loop program's output names
    # Output name -> the dtype whose tolerance compares it, when not the output's own (the
    # precision the reference computed in: solar translate, docs/translate.md).
    compare_dtypes: Dict[str, str] = dataclasses.field(default_factory=dict)
