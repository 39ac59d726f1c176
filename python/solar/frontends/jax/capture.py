"""The JAX capture: a function's jaxpr walked equation by equation into an OpTrace
(solar.optrace.v1, `"frontend": "jax"`), one op per primitive equation (`jax::dot_general`,
...), and the module table of its name stacks.

The program is traced with `jax.make_jaxpr` on abstract values (shapes and dtypes, no data,
any size). Nested jaxprs are inlined: `jit`/`pjit`, `closed_call`, `custom_jvp_call`,
`custom_vjp_call`, `remat`/`checkpoint`, single-device `shard_map`. Loops are kept as
loops: a `scan` (and `fori_loop`, which JAX turns into a scan when its bounds are static)
and a `while_loop` whose trip count is known at capture (its condition and the part of the
body it depends on evaluated by constant folding: the counter of a `fori_loop` with traced
bounds) are one `jax::scan_repeat` op whose body is a nested trace walked once on fresh
symbolic params (lowered to one repeat op). A body that needs per-iteration values (a
`dynamic_slice` by the loop counter, a `cond` on it) is unrolled instead, the body emitted
once per iteration, as every loop is with `unroll=True` (`--unroll`); the capture notes
say which loops were kept and which unrolled, and why (docs/jax-frontend.md, "Loops").
A `while_loop` whose trip count depends on data, and a `cond`/`switch` whose branch
does, need real inputs: the capture is redone on the real values (`values=True`, every
equation evaluated eagerly as it is recorded), or, with abstract inputs only, the loop or
branch is recorded as one op that lowering reports as `unanalyzed` with the reason.

Its parts: walker.py walks the jaxpr (inlining, loops, branches), recorder.py holds the trace
(and a loop body's), rng.py expands random numbers, encoding.py writes values, parameters
and program locations; program.py loads a program file and analyzes its capture.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .encoding import AUTO_NAME, concrete
from .recorder import REPEAT_OP, Lit, Recorder
from .walker import NeedsValues, Walker

# Upper bound on the ops one capture emits by unrolling loops: past it a loop is recorded as
# one op (unanalyzed, with the reason) instead of growing the trace without limit.
UNROLL_CAP = int(os.environ.get("SOLAR_JAX_UNROLL_CAP", "200000"))


@dataclasses.dataclass
class Capture:
    """One capture: the OpTrace, the top-level outputs' trace ids (in the program's output
    order, None for an output that is a literal), and with values every tensor's value."""

    trace: Dict[str, Any]
    output_ids: List[Optional[int]]
    values: Dict[int, Any]
    given_ops: List[int]
    notes: List[str]
    with_values: bool


def _leaves_with_names(tree, prefix: str, is_param: bool) -> Tuple[List[Any], List[str]]:
    """Leaves of a pytree argument and their names: a parameter by its pytree path
    (`params/Dense_0/kernel`), an input by the argument's name (and path when nested)."""
    import jax

    flat, _ = jax.tree_util.tree_flatten_with_path(tree)
    leaves, names = [], []
    for path, leaf in flat:
        leaves.append(leaf)
        key = jax.tree_util.keystr(path, simple=True, separator="/") if path else ""
        names.append(key if (is_param and key) else (f"{prefix}/{key}" if key else prefix))
    return leaves, names


def capture(fn, *args, values: Optional[bool] = None, name: Optional[str] = None,
            source: str = "", param_argnums: Sequence[int] = (),
            unroll_cap: int = UNROLL_CAP, arg_names: Optional[Sequence[str]] = None,
            unroll: bool = False, mesh_rank=None) -> Capture:
    """Captures `fn(*args)` (args: pytrees of arrays or jax.ShapeDtypeStruct).

    values: None records on abstract values and redoes the walk on the real ones when the
    program has data-dependent control flow (and every argument is concrete); True records
    with values (needed for validation); False never evaluates (data-dependent loops and
    branches stay unanalyzed). param_argnums: arguments whose leaves are parameters
    (role `parameter`, named by their pytree path) rather than inputs. unroll: every loop
    unrolled (`--unroll`); by default a scan or a while_loop with a static trip count whose
    body can be recorded once is one `jax::scan_repeat` op (docs/jax-frontend.md, "Loops").
    mesh_rank: a collectives.MeshRank: the capture of that rank of a program that is one
    shard_map over a mesh (docs/distributed.md); its loops are unrolled, so that each
    collective is an op of the rank's graph."""
    import jax

    leaves, names, roles = [], [], []
    for k, a in enumerate(args):
        is_param = k in param_argnums
        prefix = (arg_names[k] if arg_names else ("params" if is_param else f"arg{k}"))
        ls, ns = _leaves_with_names(a, prefix, is_param)
        leaves += ls
        names += ns
        roles += ["parameter" if is_param else "input"] * len(ls)
    treedef = jax.tree_util.tree_structure(args)

    def flat_fn(*flat):
        return fn(*jax.tree_util.tree_unflatten(treedef, flat))

    abstract = [x if isinstance(x, jax.ShapeDtypeStruct)
                else jax.ShapeDtypeStruct(np.shape(x), x.dtype) for x in leaves]
    closed = jax.make_jaxpr(flat_fn)(*abstract)
    all_concrete = all(concrete(x) for x in leaves)
    prog = name or getattr(fn, "__name__", "program")

    def run(with_values: bool, raises: bool) -> Capture:
        rec = Recorder(with_values, unroll_cap, prog, source)
        ins = [rec.source_tensor(x, r, n) for x, r, n in zip(leaves, roles, names)]
        w = Walker(rec, raises, unroll or mesh_rank is not None)
        rank = None
        if mesh_rank is not None:
            rank = dataclasses.replace(mesh_rank, inside=False, done=False)
            w.mesh_rank = rank
        # Arrays the program closes over (its parameters, when forward() closes over them)
        # are weights named by position.
        const_refs = [w.const(v, "parameter", f"const{k}") for k, v in enumerate(closed.consts)]
        outs = w.walk(closed.jaxpr, list(closed.consts), ins, const_refs)
        out_ids: List[Optional[int]] = []
        for o in outs:
            if isinstance(o, Lit):
                out_ids.append(None)
                continue
            t = rec.tensors[o]
            if t["role"] == "intermediate":
                t["role"] = "output"
            out_ids.append(o)
        c = Capture(_with_modules(rec.trace(), getattr(fn, "solar_root_module", "")),
                    out_ids, rec.values, rec.given_ops, rec.notes, with_values)
        c.mesh_rank = rank
        return c

    if values is True:
        if not all_concrete:
            raise ValueError("values=True needs concrete arrays, not abstract shapes")
        return run(True, False)
    if values is False or not all_concrete:
        return run(False, False)
    try:
        return run(False, True)
    except NeedsValues as e:
        warnings.warn(f"solar: {e}: captured again on the real inputs", RuntimeWarning,
                      stacklevel=2)
        return run(True, False)


def _with_modules(trace: Dict[str, Any], root: str) -> Dict[str, Any]:
    """The trace's `modules` table. A Flax model's name stacks start with its own class name
    (`root`): that component is the program itself and is dropped. Flax names a submodule
    it numbers after its class (MLP_0 -> MLP); other names (fc1, a named_scope) have no
    known class."""
    prefix = root + "."
    modules: Dict[str, str] = {}

    def ops_of(ops):  # a loop body's ops too
        for op in ops:
            yield op
            body = op.get("args", {}).get("body")
            if op["op"] == f"jax::{REPEAT_OP}" and isinstance(body, dict):
                yield from ops_of(body.get("ops", []))

    for op in ops_of(trace["ops"]):
        path = op.get("module", "")
        if root and (path == root or path.startswith(prefix)):
            path = path[len(prefix):] if path != root else ""
        if path:
            op["module"] = path
        else:
            op.pop("module", None)
        parts = path.split(".") if path else []
        for k in range(len(parts)):
            sub = ".".join(parts[:k + 1])
            if sub not in modules:
                m = AUTO_NAME.match(parts[k])
                modules[sub] = m.group(1) if m else ""
    if root:
        modules[""] = root
    modules = {k: v for k, v in modules.items() if v}
    if modules:
        trace["modules"] = modules
    return trace
