"""The loop frontend's recorder: interprets a parsed loop program's model() — its static
loops, kernel calls and composition intrinsics — and writes an OpTrace (frontend "loopir",
docs/optrace.md) with one `loopir::nest` op per loop nest and one op per intrinsic.

Kernels are specialized at each call: parameters bound, constants folded, scalar locals
inlined, loop variables left symbolic. Expressions are JSON trees:

    number | {"float": "inf"}                 a constant
    {"var": "k"}                               a loop variable (subscripts, guards, bounds)
    {"load": ID, "index": [tree, ...]}         an element of trace tensor ID
    {"self": true, "index": [tree, ...]}       an element of the statement's own target
    {"fn": NAME, "args": [tree, ...]}          a combine function (docs/ir-text.md names)
    {"fn": "cast", "dtype": D, "args": [load]} an element read at another dtype

Every write makes a new version (a new trace tensor id) of its tensor; the lifting
(src/lower/loopir.cc) and the interpreter (interpret.py) both read this trace.
"""

from __future__ import annotations

import ast
from typing import Any, Dict, List, Sequence, Tuple

from . import language as lang
from .intrinsics import Intrinsics
from .language import refusal
from .nest import KernelScope
from .scope import Handle, Recorder, Scope, range_args, skip
from .syntax import Program, assignments, is_tensor_call, tensor_decl, text_of


def record(program: Program) -> Tuple[Dict[str, Any], Dict[int, int], List[Tuple[str, int]]]:
    """(the OpTrace of `program`, {trace id of an index tensor: bound of its values},
    [(name, trace id) of each output's final value, in declaration order])."""
    r = Recorder(program)
    ModelScope(r).block(program.model.body)
    trace = r.finish()
    outputs = [(h.decl.name, h.version) for h in r.handles if h.decl.role == "output"]
    return trace, r.index_bounds, outputs


class ModelScope(Scope):
    """model(): tensor declarations, constants, kernel calls, intrinsics, static loops."""

    def __init__(self, rec: Recorder):
        super().__init__(rec, {})

    def block(self, body: Sequence[ast.stmt]) -> None:
        for stmt in body:
            if skip(stmt):
                continue
            self.rec.step(stmt.lineno)
            self.rec.model_line = stmt.lineno
            if isinstance(stmt, ast.Assign):
                self.assign(stmt)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                self.call_statement(stmt.value)
            elif isinstance(stmt, ast.For):
                self.static_loop(stmt)
            elif isinstance(stmt, ast.If):
                test = self.constant(stmt.test, "a condition of model() (constants only)")
                self.block(stmt.body if test else stmt.orelse)
            else:
                raise refusal("outside_language", self.path, stmt.lineno,
                              f"a {type(stmt).__name__} statement in model(): model() "
                              "declares tensors, calls kernels and intrinsics, and loops")

    def assign(self, stmt: ast.Assign) -> None:
        pairs = assignments(stmt, self.path)
        # all read before any is bound (swaps); a chained assignment's one value read once
        values: Dict[int, Any] = {}
        for n, v in pairs:
            if id(v) not in values:
                values[id(v)] = self.value(v, n)
        for n, v in pairs:
            self.bind(n, values[id(v)], stmt.lineno)

    def value(self, node: ast.expr, name: str) -> Any:
        if is_tensor_call(node):
            return self.rec.declare(tensor_decl(node, name, self.numbers(), self.path))
        if isinstance(node, ast.Name):
            return self.lookup(node.id, node.lineno)
        element = self.tuple_element(node)
        if element is not None:
            return element
        if isinstance(node, (ast.Call, ast.Subscript)):
            return self.tensor_expr(node, name)
        return self.definition(node, f"the value of `{name}`")

    def tensor_expr(self, node: ast.expr, name: str = "") -> Handle:
        """A tensor: a name, `W[l]`, or a composition intrinsic's result."""
        if isinstance(node, ast.Name):
            return self.tensor(node)
        if isinstance(node, ast.Subscript):
            return Intrinsics(self, node.lineno, name or "select").select(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            f = node.func.id
            if f in self.rec.p.kernels:
                raise refusal("outside_language", self.path, node.lineno,
                              f"the kernel `{f}` returns nothing: it writes its parameters")
            if f not in lang.COMPOSITION_INTRINSICS:
                raise refusal("unknown_intrinsic", self.path, node.lineno,
                              f"`{f}` is not an intrinsic of model() "
                              f"({', '.join(lang.COMPOSITION_INTRINSICS)})")
            return Intrinsics(self, node.lineno, name or f).call(f, node)
        raise refusal("outside_language", self.path, getattr(node, "lineno", 0),
                      f"`{text_of(node)}` is not a tensor expression")

    def call_statement(self, call: ast.Call) -> None:
        if not isinstance(call.func, ast.Name):
            raise refusal("outside_language", self.path, call.lineno, "calls name a kernel")
        name = call.func.id
        if name not in self.rec.p.kernels:
            if name in lang.COMPOSITION_INTRINSICS:
                raise refusal("outside_language", self.path, call.lineno,
                              f"the result of `{name}` is not used: bind it to a name")
            raise refusal("unknown_intrinsic", self.path, call.lineno,
                          f"`{name}` is neither a kernel nor a statement of model()")
        kernel = self.rec.p.kernels[name]
        params = [a.arg for a in kernel.args.args]
        args: Dict[str, Any] = {}
        if len(call.args) > len(params):
            raise refusal("shape_mismatch", self.path, call.lineno,
                          f"`{name}` takes {len(params)} arguments, got {len(call.args)}")
        for p, a in zip(params, call.args):
            args[p] = self.argument(a, p)
        for kw in call.keywords:
            if kw.arg not in params or kw.arg in args:
                raise refusal("shape_mismatch", self.path, call.lineno,
                              f"`{name}` has no parameter `{kw.arg}` left to bind")
            args[kw.arg] = self.argument(kw.value, kw.arg)
        missing = [p for p in params if p not in args]
        if missing:
            raise refusal("shape_mismatch", self.path, call.lineno,
                          f"`{name}` takes {len(params)} arguments; `{', '.join(missing)}` "
                          "not given")
        KernelScope(self.rec, kernel, args, call.lineno).run()

    def argument(self, node: ast.expr, param: str) -> Any:
        if isinstance(node, ast.Name):
            return self.lookup(node.id, node.lineno)
        element = self.tuple_element(node)
        if element is not None:
            return element
        if isinstance(node, (ast.Call, ast.Subscript)) and not (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in lang.CONSTANT_FUNCTIONS):
            return self.tensor_expr(node, param)
        return self.constant(node, f"the argument `{param}`")

    def static_loop(self, stmt: ast.For) -> None:
        if stmt.orelse:
            raise refusal("outside_language", self.path, stmt.lineno, "`for ... else`")
        if not isinstance(stmt.target, ast.Name):
            raise refusal("outside_language", self.path, stmt.lineno, "loops bind one name")
        bounds = range_args(stmt.iter, self.path)
        values = [self.constant(b, "a loop bound of model()") for b in bounds]
        if not all(isinstance(v, int) for v in values):
            raise refusal("non_constant_bound", self.path, stmt.lineno,
                          "model()'s loop bounds are integer constants")
        if len(values) == 3 and values[2] == 0:
            raise refusal("non_constant_bound", self.path, stmt.lineno,
                          "a loop step is a non-zero integer")
        iterations = range(*values)
        # Each iteration is a step: a loop past the budget is refused before it starts.
        count = max(0, -(-(iterations.stop - iterations.start) // iterations.step))
        if self.rec.steps + count > lang.MAX_STEPS:
            self.rec.step(stmt.lineno, count)
        for i in iterations:
            self.rec.step(stmt.lineno)
            self.bind(stmt.target.id, i, stmt.lineno)
            self.block(stmt.body)
