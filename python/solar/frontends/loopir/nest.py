"""Kernels of a loop program (docs/loop-language.md, "Kernels"): one call specialized —
parameters bound, constants folded, scalar locals inlined — with each loop nest recorded as
one `loopir::nest` op of loops and statements over expression trees (record.py's grammar).
The structure of the language is checked here: perfect nesting, affine subscripts, guards
and bounds, one write per tensor and no read of what the nest writes."""

from __future__ import annotations

import ast
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ... import _core
from . import language as lang
from .language import refusal
from .scope import Handle, Recorder, Scope, fill_value, range_args, skip
from . import recurrence
from .syntax import assignments, is_tensor_call, tensor_decl, text_of
from .trees import (affine_form, chain, fn, has_var, int_in_range, is_number, measure, number,
                    same_index, signed_sum)

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Pow: "pow",
           ast.Mod: "mod"}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq",
           ast.NotEq: "ne"}
_AUG = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul"}
# Coefficients and constants of index expressions stay within ±2^62 (the lifting's range).
_INDEX_LIMIT = 2 ** 62
# Operators an index may apply to constants only.
_CONSTANT_ONLY = {ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
                  ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a ** b}


class KernelScope(Scope):
    """One call of a kernel: its top-level statements, each loop nest recorded as one op."""

    def __init__(self, rec: Recorder, kernel: ast.FunctionDef, args: Dict[str, Any], line: int):
        super().__init__(rec, dict(args))
        self.kernel = kernel
        self.call_line = line
        self.nests = 0

    def run(self) -> None:
        for stmt in self.kernel.body:
            if skip(stmt):
                continue
            self.rec.step(stmt.lineno)
            if isinstance(stmt, ast.Assign):
                for n, v in assignments(stmt, self.path):
                    if is_tensor_call(v):  # named after its kernel: `attention.scores`
                        decl = tensor_decl(v, f"{self.kernel.name}.{n}", self.numbers(),
                                           self.path)
                        if decl.role not in ("scratch", "constant"):
                            raise refusal("outside_language", self.path, stmt.lineno,
                                          "a kernel declares scratch and constant tensors only")
                        self.bind(n, self.rec.declare(decl), stmt.lineno)
                    else:
                        self.bind(n, self.definition(v, f"the constant `{n}`"), stmt.lineno)
            elif isinstance(stmt, ast.For):
                if is_step_loop(stmt):
                    StepLoop(self, stmt).record()
                else:
                    Nest(self, stmt).record()
                self.nests += 1
            else:
                raise refusal("outside_language", self.path, stmt.lineno,
                              f"a {type(stmt).__name__} statement in a kernel body: a kernel "
                              "holds tensor declarations, constants and loop nests")


def contains_for(stmt: ast.stmt) -> bool:
    """Whether a statement is a loop or guards one (the only places a nest's loops stand)."""
    if isinstance(stmt, ast.For):
        return True
    return isinstance(stmt, ast.If) and any(contains_for(s) for s in stmt.body + stmt.orelse)


def written_handles(kernel: KernelScope, stmts: Sequence[ast.stmt]) -> List[Handle]:
    """The tensors the statements under `stmts` assign or accumulate into (what a nest, or a
    step loop's nests, writes), found before they are recorded: a read of one of them is a
    read of the nest's own values (a recurrence's earlier step), not of an earlier version.
    Names that are no tensor are left to the recording to refuse."""
    out: List[Handle] = []
    for stmt in stmts:
        for n in ast.walk(stmt):
            target = n.targets[0] if isinstance(n, ast.Assign) and len(n.targets) == 1 else (
                n.target if isinstance(n, ast.AugAssign) else None)
            if not (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)):
                continue
            try:
                h = kernel.lookup(target.value.id, n.lineno)
            except _core.UserError:
                continue
            if isinstance(h, Handle) and not any(h is w for w in out):
                out.append(h)
    return out


def is_step_loop(stmt: ast.For) -> bool:
    """Whether a kernel's loop is a step loop: a loop around two or more loop nests."""
    body = [s for s in stmt.body if not skip(s)]
    return len(body) > 1 and all(isinstance(s, ast.For) for s in body)


class StepLoop:
    """`for t in range(T):` around loop nests, at the top of a kernel (docs/loop-language.md,
    "Recurrences"): step t runs the nests in order, and they read what they write at the step
    before. Recorded as one recurrence op (recurrence.py)."""

    def __init__(self, kernel: KernelScope, node: ast.For):
        self.k = kernel
        self.node = node

    def record(self) -> None:
        node, path = self.node, self.k.path
        if node.orelse:
            raise refusal("outside_language", path, node.lineno, "`for ... else`")
        if not isinstance(node.target, ast.Name):
            raise refusal("outside_language", path, node.lineno, "a loop binds one variable")
        var = node.target.id
        if var in self.k.names or var in self.k.rec.globals or var in lang.ALL_NAMES:
            raise refusal("outside_language", path, node.lineno,
                          f"the loop variable `{var}` shadows another name")
        bounds = [self.k.constant(b, "a bound of a step loop")
                  for b in range_args(node.iter, path)]
        if len(bounds) == 1:
            bounds = [0] + bounds
        if not all(isinstance(b, int) for b in bounds) or (len(bounds) == 3 and bounds[2] != 1):
            raise refusal("non_constant_bound", path, node.lineno,
                          "a step loop runs over integer constants, one step at a time "
                          "(`for t in range(T)`, `range(1, T)`)")
        if bounds[1] <= bounds[0]:
            raise refusal("shape_mismatch", path, node.lineno,
                          f"the step loop over `{var}` runs no step")
        step = {"var": var, "start": bounds[0], "stop": bounds[1], "step": 1,
                "line": node.lineno}
        body = [s for s in node.body if not skip(s)]
        writes = written_handles(self.k, body)
        parts = []
        for s in body:
            n = Nest(self.k, s, writes=writes, outer=[var])
            n.collect()
            parts.append(n)
        recurrence.step_loop(self.k, step, parts, node.lineno)


class Nest:
    """One perfectly nested loop nest of a kernel call: its loops and statements. A nest that
    reads what it writes one step before along one loop is a recurrence (recurrence.py); so is
    each nest of a step loop, whose step variable (`outer`) its subscripts may use."""

    def __init__(self, kernel: KernelScope, node: ast.For,
                 writes: Optional[List[Handle]] = None, outer: Sequence[str] = ()):
        self.k = kernel
        self.rec = kernel.rec
        self.path = kernel.path
        self.node = node
        self.loops: List[Dict[str, Any]] = []
        self.vars: set = set(outer)
        self.statements: List[Dict[str, Any]] = []
        self.targets: List[Handle] = []
        # What the nest (or its step loop) writes, and the reads of it: (tensor, line, node)
        # of each, the node's trace id set once the recurrence's versions exist.
        self.writes = written_handles(kernel, [node]) if writes is None else writes
        self.own_reads: List[Tuple[Handle, int, Dict[str, Any]]] = []
        self.self_reads: List[Tuple[Handle, int, Dict[str, Any]]] = []
        self.current: Optional[Handle] = None  # the target of the statement being read
        self.locals: Dict[str, Any] = {}  # the scalar locals in scope (data, not indices)
        self.sizes: Dict[int, Any] = {}  # trees.measure's memo
        self.size = 1 + len(node.body)  # trace nodes of the op (Recorder.grow)

    def fail(self, kind: str, node: Any, message: str):
        return refusal(kind, self.path, getattr(node, "lineno", 0), message)

    # -- structure

    def record(self) -> None:
        self.collect()
        if self.recurrence_reads():
            recurrence.single_nest(self)
            return
        outputs = []
        for st, h in zip(self.statements, self.targets):
            st["target"]["prior"] = ({"tensor": h.version} if h.version is not None
                                     else {"fill": fill_value(h.decl)})
            outputs.append(self.rec.new_version(h))
        args = {"kernel": self.k.kernel.name, "call_line": self.k.call_line,
                "nest": self.k.nests, "loops": self.loops, "statements": self.statements}
        self.rec.emit("loopir::nest", args, outputs, self.node.lineno, self.size)

    def collect(self) -> None:
        """Reads the nest's loops and statements (nothing is emitted yet)."""
        self.loop(self.node, [], {})

    def recurrence_reads(self) -> List[Tuple[Handle, int, Dict[str, Any]]]:
        """The reads of what the nest writes, other than a statement reading its own element
        (a reduction's `T[s]`): the reads of a recurrence's earlier steps."""
        out = list(self.own_reads)
        for h, line, node in self.self_reads:
            st = self.statements[next(i for i, t in enumerate(self.targets) if t is h)]
            if not same_index(node["index"], st["target"]["index"]):
                out.append((h, line, node))
        return sorted(out, key=lambda r: r[1])

    def loop(self, node: ast.For, guards: List[Dict[str, Any]], scope: Dict[str, Any]) -> None:
        if node.orelse:
            raise self.fail("outside_language", node, "`for ... else`")
        if not isinstance(node.target, ast.Name):
            raise self.fail("outside_language", node, "a loop binds one variable")
        var = node.target.id
        if var in self.vars or var in self.k.names or var in self.rec.globals or \
                var in lang.ALL_NAMES:
            raise self.fail("outside_language", node,
                            f"the loop variable `{var}` shadows another name")
        bounds = [self.bound(b) for b in range_args(node.iter, self.path)]
        if len(bounds) == 1:
            bounds = [0] + bounds
        start, stop = bounds[0], bounds[1]
        step = bounds[2] if len(bounds) == 3 else 1
        if not (isinstance(step, int) and step >= 1):
            raise self.fail("non_constant_bound", node,
                            "a loop step is a positive integer constant")
        if (has_var(start) or has_var(stop)) and step != 1:
            raise self.fail("non_constant_bound", node,
                            "a loop with bounds that depend on outer loops has step 1")
        self.loops.append({"var": var, "start": start, "stop": stop, "step": step,
                           "line": node.lineno})
        self.size += 4
        self.vars.add(var)
        self.block(node.body, guards, scope)

    def block(self, body: Sequence[ast.stmt], guards: List[Dict[str, Any]],
              scope: Dict[str, Any]) -> None:
        stmts = [s for s in body if not skip(s)]
        if any(contains_for(s) for s in stmts):
            if len(stmts) != 1:
                raise self.fail("outside_language", stmts[0],
                                "an imperfect nest: a loop body is one inner loop (optionally "
                                "under `if`) or the statements of the innermost loop (a step "
                                "loop, the outermost loop of a recurrence, holds loop nests "
                                "only)")
            s = stmts[0]
            if isinstance(s, ast.For):
                return self.loop(s, guards, scope)
            if isinstance(s, ast.If):
                if s.orelse:
                    raise self.fail("outside_language", s, "guards have no `else`")
                return self.block(s.body, guards + self.guard(s.test, scope), scope)
            raise self.fail("outside_language", s, "a loop inside a statement")
        if not self.loops:
            raise self.fail("outside_language", self.node, "a nest has at least one loop")
        self.innermost(stmts, guards, dict(scope))

    def innermost(self, stmts: Sequence[ast.stmt], guards: List[Dict[str, Any]],
                  scope: Dict[str, Any]) -> None:
        for s in stmts:
            if isinstance(s, ast.If):
                if s.orelse:
                    raise self.fail("outside_language", s, "guards have no `else`")
                self.innermost([x for x in s.body if not skip(x)],
                               guards + self.guard(s.test, scope), dict(scope))
            elif isinstance(s, ast.Assign) and len(s.targets) == 1 and \
                    isinstance(s.targets[0], ast.Name):
                name = s.targets[0].id
                if name in self.vars or name in self.k.names or name in self.rec.globals or \
                        name in lang.ALL_NAMES:
                    raise self.fail("outside_language", s,
                                    f"the local `{name}` shadows another name")
                self.locals = scope
                scope[name] = self.value(s.value, scope)
                self.limit(scope[name], s, f"the local `{name}`")
            elif isinstance(s, ast.Assign) and len(s.targets) == 1 and \
                    isinstance(s.targets[0], ast.Subscript):
                self.statement(s.targets[0], s, guards, scope, None)
            elif isinstance(s, ast.AugAssign):
                if isinstance(s.target, ast.Name):
                    raise self.fail("outside_language", s,
                                    f"`{s.target.id} {text_of(s).split()[1]} ...`: "
                                    "accumulate into a tensor element, not a scalar local")
                if type(s.op) not in _AUG:
                    raise self.fail("outside_language", s,
                                    "the reductions are +=, -= and *= (and max(), min())")
                self.statement(s.target, s, guards, scope, _AUG[type(s.op)])
            elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and \
                    isinstance(s.value.func, ast.Name):
                raise self.fail("unknown_intrinsic", s,
                                f"`{s.value.func.id}(...)` as a statement: statements assign "
                                "tensor elements or locals")
            else:
                raise self.fail("outside_language", s,
                                f"a {type(s).__name__} statement in a loop body: statements "
                                "assign tensor elements (`=`, `+=`, `*=`) or scalar locals")

    def statement(self, target: ast.Subscript, s: ast.stmt, guards, scope,
                  aug: Optional[str]) -> None:
        self.locals = scope
        h = self.k.tensor(target.value)
        if not h.writable:
            what = h.decl.role if h.decl.role != "scratch" else "an intrinsic result"
            raise self.fail("outside_language", s,
                            f"`{h.decl.name}` is read-only ({what}): "
                            "kernels write output and scratch tensors")
        if any(h is t for t in self.targets):
            raise self.fail("outside_language", s,
                            f"this nest writes `{h.decl.name}` twice: one statement per tensor")
        index = self.subscript(target, h)
        self.current = h
        value = self.value(s.value, scope)
        if aug is not None:
            value = fn(aug, {"self": True, "index": index}, value)
        leaves = self.limit(value, s, f"the value written to `{h.decl.name}`")
        self.size += 2 * leaves + 4 * len(guards)
        self.current = None
        self.targets.append(h)
        self.statements.append({"line": s.lineno, "target": {"name": h.decl.name,
                                                             "index": index},
                                "value": value, "guards": list(guards)})

    def limit(self, tree: Any, node: ast.stmt, what: str) -> int:
        """Refuses a value (scalar locals inlined) past the language's limits: MAX_DEPTH
        levels, MAX_TERMS leaves. Returns its leaves."""
        depth, leaves = measure(tree, self.sizes)
        if leaves > lang.MAX_TERMS:
            raise self.fail("outside_language", node,
                            f"{what} holds {leaves:,} terms (numbers and element reads, its "
                            f"scalar locals written out), more than the language's limit of "
                            f"{lang.MAX_TERMS:,} (docs/loop-language.md, \"Limits\"): split "
                            "it into statements that accumulate (`+=`)")
        if depth > lang.MAX_DEPTH:
            raise self.fail("outside_language", node,
                            f"{what} nests {depth} levels deep (its scalar locals written "
                            f"out), deeper than the language's limit of {lang.MAX_DEPTH} "
                            "(docs/loop-language.md, \"Limits\")")
        return leaves

    # -- expressions

    def subscript(self, node: ast.Subscript, h: Handle) -> List[Any]:
        keys = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if any(isinstance(k, ast.Slice) for k in keys):
            raise self.fail("outside_language", node, "subscripts are single elements (no `:`)")
        if len(keys) != len(h.shape):
            raise self.fail("shape_mismatch", node,
                            f"`{h.decl.name}` has {len(h.shape)} dimension"
                            f"{'s' if len(h.shape) != 1 else ''} {list(h.shape)} but is "
                            f"subscripted with {len(keys)}")
        return [self.index(k, f"a subscript of `{h.decl.name}`") for k in keys]

    def index(self, node: ast.expr, what: str) -> Any:
        """An affine index tree: integers, loop variables, + - and * by a constant."""
        tree = self.index_tree(node, what)
        form = affine_form(tree)
        if form is None:
            raise self.fail("not_affine", node,
                            f"{what} `{text_of(node)}` is not affine in the loop variables")
        coefs = form[0].values()
        if not -_INDEX_LIMIT < form[1] < _INDEX_LIMIT or coefs and not (
                -_INDEX_LIMIT < min(coefs) and max(coefs) < _INDEX_LIMIT):
            raise lang.too_large(self.path, node.lineno,
                                 f"{what} `{text_of(node)}` has a coefficient or constant "
                                 "outside ±2^62, the range of index arithmetic")
        return tree

    def index_tree(self, node: ast.expr, what: str) -> Any:
        if isinstance(node, ast.Constant) and is_number(node.value):
            return self.literal(node)
        if isinstance(node, ast.BinOp) and isinstance(node.left, ast.BinOp):
            return self.spine(node, lambda x: self.index_tree(x, what), self.index_step(what))
        if isinstance(node, ast.Subscript):
            element = self.k.tuple_element(node)
            if element is not None:
                return number(element)
        if isinstance(node, ast.Subscript) or (isinstance(node, ast.Name)
                                               and node.id in self.locals):
            raise self.fail("data_dependent", node,
                            f"{what} reads tensor data (`{text_of(node)}`): index by loop "
                            "variables, or use gather/scatter")
        if isinstance(node, ast.Name):
            if node.id in self.vars:
                return {"var": node.id}
            v = self.k.lookup(node.id, node.lineno)
            if is_number(v):
                return v
            raise self.fail("not_affine", node,
                            f"{what} uses the {_kind_of(v)} `{node.id}` as a number")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            t = self.index_tree(node.operand, what)
            return fn("neg", t) if isinstance(node.op, ast.USub) else t
        if isinstance(node, ast.BinOp) and type(node.op) in (ast.Add, ast.Sub, ast.Mult):
            return fn(_BINOPS[type(node.op)], self.index_tree(node.left, what),
                      self.index_tree(node.right, what))
        if isinstance(node, ast.BinOp) and type(node.op) in _CONSTANT_ONLY:
            a, b = self.index_tree(node.left, what), self.index_tree(node.right, what)
            return self.index_step(what)(node, a, b)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id not in lang.ALL_NAMES:
            raise self.fail("unknown_intrinsic", node, f"`{node.func.id}` is not an intrinsic")
        raise self.fail("not_affine", node,
                        f"{what} `{text_of(node)}` is not affine in the loop variables")

    def index_step(self, what: str):
        """One operator of an index expression over trees a and b (index_tree's rules)."""

        def step(node: ast.BinOp, a: Any, b: Any) -> Any:
            if type(node.op) in (ast.Add, ast.Sub, ast.Mult):
                return fn(_BINOPS[type(node.op)], a, b)
            if type(node.op) in _CONSTANT_ONLY and is_number(a) and is_number(b):
                try:
                    r = _CONSTANT_ONLY[type(node.op)](a, b)
                except (ArithmeticError, ValueError) as e:
                    raise self.fail("not_affine", node, f"{what}: {e}") from None
                if r is None or isinstance(r, complex) or not int_in_range(r):
                    raise lang.too_large(self.path, node.lineno,
                                         f"{what} `{text_of(node)}` leaves the 64-bit range")
                return r
            raise self.fail("not_affine", node,
                            f"{what} `{text_of(node)}` is not affine in the loop variables")

        return step

    def spine(self, node: ast.BinOp, leaf, step) -> Any:
        """A chain of binary operators `a + b - c * d ...`, walked along its left operands
        (never recursed, however long), with runs of + and - and runs of * built as balanced
        trees (depth log2 of their length: the IR's expressions nest at most 256 deep)."""
        spine = []
        while isinstance(node, ast.BinOp):
            spine.append(node)
            node = node.left
        run_kind, run = None, [(1, leaf(node))]

        def close() -> Any:
            if run_kind == "mul":
                return chain("mul", [t for _, t in run])
            return signed_sum(run) if run_kind == "sum" else run[0][1]

        for b in reversed(spine):
            kind = "sum" if isinstance(b.op, (ast.Add, ast.Sub)) else (
                "mul" if isinstance(b.op, ast.Mult) else None)
            right = leaf(b.right)
            if kind is not None and kind == run_kind or (run_kind is None and len(run) == 1
                                                         and kind is not None):
                run_kind = kind
                run.append((-1 if isinstance(b.op, ast.Sub) else 1, right))
                continue
            left = close()
            if kind is None:
                run_kind, run = None, [(1, step(b, left, right))]
            else:
                run_kind = kind
                run = [(1, left), (-1 if isinstance(b.op, ast.Sub) else 1, right)]
        return close()

    def literal(self, node: ast.Constant) -> Any:
        if not int_in_range(node.value):
            raise lang.too_large(self.path, node.lineno,
                                 f"the integer {text_of(node, 40)} is outside the 64-bit range")
        return number(node.value)

    def bound(self, node: ast.expr) -> Any:
        """A loop bound: a constant integer, or affine in the enclosing loops' variables."""
        try:
            tree = self.index_tree(node, "a loop bound")
        except _core.UserError as e:
            if getattr(e, "kind", None) not in ("not_affine", "data_dependent"):
                raise
            tree = None
        if tree is None or affine_form(tree) is None:
            raise self.fail("non_constant_bound", node,
                            f"the loop bound `{text_of(node)}` is not a constant (nor "
                            "affine in the enclosing loops' variables)")
        return tree

    def guard(self, test: ast.expr, scope: Dict[str, Any]) -> List[Dict[str, Any]]:
        """The affine constraints of an `if` condition."""
        self.locals = scope
        parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) \
            else [test]
        out = []
        for p in parts:
            if any(isinstance(n, ast.Subscript) or (isinstance(n, ast.Name) and n.id in scope)
                   for n in ast.walk(p)):
                raise self.fail("data_dependent", p,
                                f"`if {text_of(p)}:` branches on tensor data: compute "
                                "both values and pick with where(cond, a, b)")
            if not isinstance(p, ast.Compare):
                raise self.fail("outside_language", p,
                                f"`if {text_of(p)}:`: a guard is comparisons of affine "
                                "expressions joined by `and` (one convex region: no `or`, `not`)")
            trees = [self.index(t, "a guard") for t in [p.left] + list(p.comparators)]
            for op, a, b in zip(p.ops, trees, trees[1:]):
                if isinstance(op, ast.NotEq):
                    raise self.fail("outside_language", p,
                                    "`!=` in a guard is two regions: write two nests")
                if type(op) not in _CMPOPS:
                    raise self.fail("outside_language", p, "guards compare with < <= > >= ==")
                out.append({"cmp": _CMPOPS[type(op)], "lhs": a, "rhs": b, "line": p.lineno})
        return out

    def value(self, node: ast.expr, scope: Dict[str, Any]) -> Any:
        """A value tree: numbers, constants, locals, tensor elements, arithmetic, intrinsics."""
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                return float(node.value)
            if is_number(node.value):
                return self.literal(node)
            raise self.fail("outside_language", node, f"{text_of(node, 40)} is not a number")
        if isinstance(node, ast.Name):
            if node.id in scope:
                return scope[node.id]
            if node.id in self.vars:
                raise self.fail("not_affine", node,
                                f"the loop variable `{node.id}` is used as a value: loop "
                                "variables index tensors (put the values in a tensor)")
            v = self.k.lookup(node.id, node.lineno)
            if is_number(v):
                return number(v)
            raise self.fail("outside_language", node,
                            f"the {_kind_of(v)} `{node.id}` is used as a value: read an element "
                            f"`{node.id}[...]`")
        if isinstance(node, ast.Subscript):
            element = self.k.tuple_element(node)
            if element is not None:
                return self.literal(ast.copy_location(ast.Constant(element), node))
            return self.load(node)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub):
                return fn("neg", self.value(node.operand, scope))
            if isinstance(node.op, ast.UAdd):
                return self.value(node.operand, scope)
            raise self.fail("outside_language", node, "`not` and `~`: use comparisons and where()")
        if isinstance(node, ast.BinOp):
            if isinstance(node.left, ast.BinOp):  # a chain: balanced trees
                return self.spine(node, lambda x: self.value(x, scope), self.value_step)
            a, b = self.value(node.left, scope), self.value(node.right, scope)
            if type(node.op) in _BINOPS:
                return fn(_BINOPS[type(node.op)], a, b)
            return self.value_step(node, a, b)
        if isinstance(node, ast.Compare):
            terms = [self.value(t, scope) for t in [node.left] + list(node.comparators)]
            tests = []
            for op, a, b in zip(node.ops, terms, terms[1:]):
                if type(op) not in _CMPOPS:
                    raise self.fail("outside_language", node, "compare with < <= > >= == !=")
                tests.append(fn(_CMPOPS[type(op)], a, b))
            return chain("mul", tests)
        if isinstance(node, ast.IfExp):
            return self.select(node.test, node.body, node.orelse, scope, node)
        if isinstance(node, ast.Call):
            return self.intrinsic(node, scope)
        if isinstance(node, ast.BoolOp):
            raise self.fail("outside_language", node,
                            "`and`/`or` on values: multiply comparisons, or use where()")
        raise self.fail("outside_language", node,
                        f"`{text_of(node)}` is not an expression of the loop language")

    def value_step(self, node: ast.BinOp, a: Any, b: Any) -> Any:
        """One operator of a value expression over trees a and b (not + - *: spine's)."""
        if isinstance(node.op, ast.FloorDiv):
            return fn("floor", fn("div", a, b))
        if type(node.op) not in _BINOPS:
            raise self.fail("outside_language", node,
                            f"the operator `{text_of(node)}` (use + - * / ** // %)")
        return fn(_BINOPS[type(node.op)], a, b)

    def select(self, test, a, b, scope, node) -> Any:
        if not any(isinstance(n, ast.Subscript) or (isinstance(n, ast.Name) and n.id in scope)
                   for n in ast.walk(test)) and any(
                isinstance(n, ast.Name) and n.id in self.vars for n in ast.walk(test)):
            raise self.fail("not_affine", node, "a condition on loop variables inside an "
                                                "expression: use an `if` guard")
        c = self.value(test, scope)
        return fn("select", c, self.value(a, scope), self.value(b, scope))

    def intrinsic(self, node: ast.Call, scope: Dict[str, Any]) -> Any:
        if not isinstance(node.func, ast.Name):
            raise self.fail("outside_language", node, "calls name an intrinsic")
        name = node.func.id
        if node.keywords:
            raise self.fail("outside_language", node, f"`{name}` takes no keywords")
        if name == lang.CAST:
            if len(node.args) != 2 or not isinstance(node.args[0], ast.Subscript) or not (
                    isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
                raise self.fail("outside_language", node,
                                "cast reads one element at another dtype: cast(T[...], \"bf16\")")
            dtype = lang.canonical_dtype(node.args[1].value)
            if dtype is None:
                raise self.fail("outside_language", node, f"unknown dtype '{node.args[1].value}'")
            return {"fn": "cast", "dtype": dtype, "args": [self.load(node.args[0])]}
        if name not in lang.ELEMENT_INTRINSICS:
            if name in self.rec.p.kernels:
                raise self.fail("outside_language", node, "kernels are called from model() only")
            if name in lang.COMPOSITION_INTRINSICS:
                raise self.fail("outside_language", node,
                                f"`{name}` is an intrinsic of model(), not of a loop body")
            raise self.fail("unknown_intrinsic", node,
                            f"`{name}` is not an intrinsic of the loop language "
                            f"({', '.join(sorted(lang.ELEMENT_INTRINSICS))}, cast)")
        ir_name, arity = lang.ELEMENT_INTRINSICS[name]
        n = len(node.args)
        if (arity is None and n < 2) or (arity is not None and n != arity):
            raise self.fail("unknown_intrinsic", node,
                            f"`{name}` takes {'2 or more' if arity is None else arity} "
                            f"argument{'s' if arity != 1 else ''}, got {len(node.args)}")
        if ir_name == "select":
            return self.select(node.args[0], node.args[1], node.args[2], scope, node)
        args = [self.value(a, scope) for a in node.args]
        if arity is None:  # min/max of several: a chain
            return chain(ir_name, args)
        return fn(ir_name, *args)

    def load(self, node: ast.Subscript) -> Dict[str, Any]:
        h = self.k.tensor(node.value)
        index = self.subscript(node, h)
        if h is self.current:
            tree = {"self": True, "index": index}
            self.self_reads.append((h, node.lineno, tree))
            return tree
        if any(h is w for w in self.writes):  # the nest's own values: a recurrence's
            tree = {"load": -1, "index": index}
            self.own_reads.append((h, node.lineno, tree))
            return tree
        return {"load": self.rec.read(h, node.lineno), "index": index}


def _kind_of(value: Any) -> str:
    """What a name that is no number stands for, in a refusal."""
    return "tuple constant" if isinstance(value, tuple) else "tensor"
