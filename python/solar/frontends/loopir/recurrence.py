"""Recurrences of the loop language (docs/loop-language.md, "Recurrences"): statements that
read what they write one step before along one loop, `y[b, i] = y[b, i - 1] + x[b, i]`.

A recurrence runs its steps in order; each step runs its nests as ordinary nests with the
step variable fixed. It is recorded as one `loopir::recurrence` op: the step loop, the nests'
own loops, and the statements (each naming its nest) over record.py's expression trees, where
a read of a tensor the recurrence writes names the recurrence's new version of it (its earlier
step, or its current step written by an earlier nest). The lifting (src/lower/
loopir_recurrence.cc) makes it a repeat op; the interpreter runs it step by step.

Two forms are recorded here:
- a nest whose statements read their own targets one step before (`single_nest`): the loop
  they step along is found from the subscripts and taken out of the nest, which is the
  recurrence's one nest; the loops around it must read the earlier step at their own values;
- a step loop around several nests (`step_loop`, nest.StepLoop): `for t in range(T):` whose
  nests read each other's values at step t (a later nest reading an earlier one's) or t - 1.

A statement of a recurrence writes its target at `t + a` in one dimension (its step
dimension, t with coefficient 1); a read of a tensor the recurrence writes is at `t + a - 1`
in that dimension (the step before) or at `t + a` from a later nest (the step itself), and
uses t nowhere else."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from .language import refusal
from .scope import fill_value
from .trees import affine_form, has_var

# (nest number, tensor handle, line, the read's tree) of each read of what a recurrence writes
Read = Tuple[int, Any, int, Dict[str, Any]]


def step_dim(index: Sequence[Any], t: str) -> Optional[Tuple[int, int]]:
    """(dimension, a) of a subscript that walks `t` as `t + a` in exactly one dimension and
    nowhere else; None otherwise."""
    found = None
    for d, tree in enumerate(index):
        form = affine_form(tree)
        if form is None:
            return None
        if t in form[0]:
            if found is not None or form[0] != {t: 1}:
                return None
            found = (d, form[1])
    return found


def _vars(tree: Any) -> set:
    form = affine_form(tree)
    return set(form[0]) if form else set()


def _affine_text(terms: Dict[str, int], const: int) -> str:
    """An affine expression as a program writes it: `i - 1`, `2*g + r`."""
    parts = [v if k == 1 else (f"-{v}" if k == -1 else f"{k}*{v}") for v, k in terms.items()]
    text = " + ".join(parts).replace("+ -", "- ")
    if not parts:
        return str(const)
    return text + (f" + {const}" if const > 0 else (f" - {-const}" if const < 0 else ""))


def _text(index: Sequence[Any]) -> str:
    """A subscript for a message: `[b, i - 1]`."""
    forms = [affine_form(x) for x in index]
    return "[" + ", ".join("?" if f is None else _affine_text(*f) for f in forms) + "]"


def single_nest(nest) -> None:
    """Records a nest that reads what it writes (nest.Nest) as a recurrence along the loop
    its reads step back on, or refuses it as a loop-carried dependence."""
    path = nest.path
    reads = nest.recurrence_reads()
    target = {id(h): st["target"]["index"] for st, h in zip(nest.statements, nest.targets)}
    order = [lp["var"] for lp in nest.loops]
    common: Optional[set] = None
    for h, line, tree in reads:
        T, R = target.get(id(h)), tree["index"]
        if T is None:  # a read of what a nest writes before the statement that writes it
            raise refusal("outside_language", path, line,
                          f"reads `{h.decl.name}`, which this nest writes, before writing it")
        if [affine_form(x) for x in T] == [affine_form(x) for x in R]:
            raise refusal("outside_language", path, line,
                          f"reads `{h.decl.name}{_text(R)}`, which another statement of this "
                          "nest writes: split the nest into two (a nest reads what it writes "
                          "only one step before, as a recurrence)")
        steps = set()
        for a, b in zip(T, R):
            fa, fb = affine_form(a), affine_form(b)
            if fa and fb and len(fa[0]) == 1 and list(fa[0].values()) == [1] and \
                    fb[0] == fa[0] and fb[1] == fa[1] - 1:
                steps.update(fa[0])
        common = steps if common is None else common & steps
        if not common:
            raise refusal("outside_language", path, line,
                          f"reads `{h.decl.name}{_text(R)}` while writing "
                          f"`{h.decl.name}{_text(T)}`: a loop-carried dependence; a recurrence "
                          "reads the element one step before along one loop, the same in "
                          f"every read (`y[b, i - 1]` while writing `y[b, i]`)")
    t = min(common, key=order.index)  # the outermost: the fewest loops move
    pos = order.index(t)
    loop = nest.loops[pos]
    if has_var(loop["start"]) or has_var(loop["stop"]) or loop["step"] != 1:
        raise refusal("non_constant_bound", path, loop["line"],
                      f"the loop over `{t}`, which a recurrence steps along, runs over "
                      "constants one step at a time")
    outer = set(order[:pos])
    for h, line, tree in reads:
        T, R = target[id(h)], tree["index"]
        for a, b in zip(T, R):
            if (_vars(a) | _vars(b)) & outer and affine_form(a) != affine_form(b):
                raise refusal("outside_language", path, line,
                              f"reads `{h.decl.name}{_text(R)}` while writing "
                              f"`{h.decl.name}{_text(T)}` inside a loop around the recurrence "
                              f"over `{t}`: the step before is read at the outer loops' own "
                              "values (or make the recurrence's loop the outermost)")
    for st in nest.statements:
        st["nest"] = 0
    others = nest.loops[:pos] + nest.loops[pos + 1:]
    step = dict(loop)
    emit(nest.k, step, [{"loops": others}], nest.statements, nest.targets,
         [(0, h, line, tree) for h, line, tree in reads], nest.node.lineno, nest.size)


def step_loop(k, step: Dict[str, Any], parts: Sequence[Any], line: int) -> None:
    """Records a step loop (nest.StepLoop) around the collected nests `parts`."""
    statements: List[Dict[str, Any]] = []
    targets: List[Any] = []
    reads: List[Read] = []
    for j, n in enumerate(parts):
        for st, h in zip(n.statements, n.targets):
            if any(h is x for x in targets):
                raise refusal("outside_language", k.path, st["line"],
                              f"the recurrence over `{step['var']}` writes `{h.decl.name}` in "
                              "two nests: one statement per tensor")
            st["nest"] = j
            statements.append(st)
            targets.append(h)
        reads += [(j, h, ln, tree) for h, ln, tree in n.own_reads]
        reads += [(j, h, ln, tree) for h, ln, tree in n.self_reads
                  if not _same(tree["index"], n, h)]
    for h, ln, tree in [(h, ln, tree) for j, h, ln, tree in reads]:
        if not any(h is x for x in targets):  # read before the nest that writes it was parsed
            raise refusal("outside_language", k.path, ln,
                          f"`{h.decl.name}` is not written by the recurrence")
    emit(k, step, [{"loops": n.loops} for n in parts], statements, targets, reads, line,
         sum(n.size for n in parts))


def _same(index, nest, h) -> bool:
    st = nest.statements[next(i for i, t in enumerate(nest.targets) if t is h)]
    return [affine_form(x) for x in index] == [affine_form(x) for x in st["target"]["index"]]


def emit(k, step: Dict[str, Any], nests: List[Dict[str, Any]], statements: List[Dict[str, Any]],
         targets: List[Any], reads: Sequence[Read], line: int, size: int) -> None:
    """Checks the recurrence's subscripts (the module docstring's rules), makes a new version
    of each target, points the reads at them and emits the `loopir::recurrence` op."""
    path, t = k.path, step["var"]
    forms = []
    for st, h in zip(statements, targets):
        f = step_dim(st["target"]["index"], t)
        if f is None:
            raise refusal("outside_language", path, st["line"],
                          f"writes `{h.decl.name}{_text(st['target']['index'])}` in a recurrence "
                          f"over `{t}`: each statement writes its step's element, `{t} + a` in "
                          f"one dimension of its target (`{h.decl.name}[b, {t}]`)")
        forms.append(f)
    for n in nests:
        for lp in n["loops"]:
            if t in _vars(lp["start"]) | _vars(lp["stop"]):
                raise refusal("non_constant_bound", path, lp["line"],
                              f"the bounds of the loop over `{lp['var']}` depend on `{t}`, the "
                              "step of a recurrence: a step's loops are the same at every step")
    writer = {id(h): i for i, h in enumerate(targets)}
    for j, h, ln, tree in reads:
        i = writer[id(h)]
        d, a = forms[i]
        R = tree["index"]
        name = f"{h.decl.name}{_text(R)}"
        if any(e != d and t in _vars(x) for e, x in enumerate(R)):
            raise refusal("outside_language", path, ln,
                          f"reads `{name}`: a recurrence over `{t}` reads what it writes at "
                          f"`{t}` in its step dimension only (dimension {d})")
        form = affine_form(R[d])
        if form is None or form[0] != {t: 1} or form[1] not in (a - 1, a):
            raise refusal("outside_language", path, ln,
                          f"reads `{name}`: a recurrence over `{t}` reads what it writes at the "
                          f"step before (`{_affine_text({t: 1}, a - 1)}` in dimension {d}) or, "
                          "from a later nest, at the step itself")
        if form[1] == a and statements[i]["nest"] >= j:
            raise refusal("outside_language", path, ln,
                          f"reads `{name}` at the step it writes, in the nest that writes it or "
                          "an earlier one: read the step before, or write the value in an "
                          "earlier nest of a step loop")
    outputs = []
    for st, h in zip(statements, targets):
        st["target"]["prior"] = ({"tensor": h.version} if h.version is not None
                                 else {"fill": fill_value(h.decl)})
        outputs.append(k.rec.new_version(h))
    for _, h, _, tree in reads:
        tree.pop("self", None)
        tree["load"] = outputs[writer[id(h)]]
    args = {"kernel": k.kernel.name, "call_line": k.call_line, "nest": k.nests, "step": step,
            "nests": nests, "statements": statements}
    k.rec.emit("loopir::recurrence", args, outputs, line, size)
