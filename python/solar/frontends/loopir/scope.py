"""The loop recorder's state (record.py): tensors and their versions as the trace grows, and
the name resolution that model() and kernels share."""

from __future__ import annotations

import ast
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import language as lang
from .language import refusal
from .syntax import (Program, TensorDecl, constant_definition, constant_value, is_tuple_element,
                     text_of, tuple_element)
from .trees import is_number, number

TRACE_SCHEMA = "solar.optrace.v1"
FRONTEND = "loopir"


class Handle:
    """A tensor while the model runs: its declaration and the trace id of its current value
    (None while it still holds its fill, or before a source is first read)."""

    def __init__(self, decl: TensorDecl, writable: bool, version: Optional[int] = None):
        self.decl = decl
        self.writable = writable
        self.version = version
        self.versions: List[int] = [] if version is None else [version]

    @property
    def shape(self) -> Tuple[int, ...]:
        return self.decl.shape


class Recorder:
    """The trace being written while model() runs: tensors, versions and ops."""

    def __init__(self, program: Program):
        self.p = program
        self.path = program.path
        self.tensors: List[Dict[str, Any]] = []
        self.ops: List[Dict[str, Any]] = []
        self.handles: List[Handle] = []
        self.globals: Dict[str, Any] = dict(program.constants)
        for name, decl in program.tensors.items():
            self.globals[name] = self.declare(decl)
        # Trace ids of tensors used as gather/scatter indices -> exclusive bound of their
        # values (validation draws index data below it).
        self.index_bounds: Dict[int, int] = {}
        self.steps = 0  # what model() has run (step)
        self.nodes = 0  # the size of the trace (grow)
        self.model_line = 0  # the statement of model() running now

    # -- budgets (docs/loop-language.md, "Limits")

    def step(self, line: int, n: int = 1) -> None:
        """Counts n steps of model() (a statement, a loop iteration, a kernel statement);
        past MAX_STEPS the program is refused at `line`."""
        self.steps += n
        if self.steps > lang.MAX_STEPS:
            raise lang.too_large(self.path, line,
                                 f"model() runs more than {lang.MAX_STEPS:,} steps (statements, "
                                 "loop iterations and kernel statements), its step budget")

    def grow(self, n: int) -> None:
        """Counts n nodes (ops, tensors, expression terms) of the trace; past
        MAX_TRACE_NODES the program is refused at the statement of model() running."""
        self.nodes += n
        if self.nodes > lang.MAX_TRACE_NODES:
            raise lang.too_large(self.path, self.model_line,
                                 f"the recorded trace grows past {lang.MAX_TRACE_NODES:,} nodes "
                                 "(ops, tensors and expression terms), its size limit")

    # -- tensors and versions

    def declare(self, decl: TensorDecl) -> Handle:
        h = Handle(decl, writable=decl.role in ("output", "scratch"))
        self.handles.append(h)
        return h

    def new_tensor(self, decl: TensorDecl, role: str = "intermediate") -> int:
        tid = len(self.tensors)
        shape = list(decl.shape)
        strides, step = [0] * len(shape), 1
        for d in reversed(range(len(shape))):
            strides[d] = step
            step *= shape[d]
        t: Dict[str, Any] = {"id": tid, "name": decl.name, "shape": shape, "dtype": decl.dtype,
                             "strides": strides, "storage": tid, "storage_offset": 0,
                             "role": role}
        if decl.dims:
            t["dims"] = list(decl.dims)
        if decl.sparsity:
            t["sparsity"] = dict(decl.sparsity)
        self.tensors.append(t)
        return tid

    def new_version(self, h: Handle) -> int:
        tid = self.new_tensor(h.decl)
        h.version = tid
        h.versions.append(tid)
        return tid

    def read(self, h: Handle, line: int) -> int:
        """The trace id of h's current value: a source is created on first use, a tensor
        still at its fill is filled by a `loopir::fill` op."""
        if h.version is not None:
            return h.version
        d = h.decl
        if d.role in lang.SOURCE_TRACE_ROLE and d.fill is None:
            h.version = self.new_tensor(d, lang.SOURCE_TRACE_ROLE[d.role])
            h.versions.append(h.version)
            return h.version
        out = self.new_version(h)
        self.emit("loopir::fill", {"value": fill_value(d)}, [out], line)
        return out

    def emit(self, op: str, args: Dict[str, Any], outputs: List[int], line: int,
             size: int = 1) -> None:
        """Appends an op of `size` trace nodes (a nest: its loops and expression terms)."""
        self.grow(size + len(outputs))
        self.ops.append({"op": op, "args": args, "outputs": outputs, "file": self.path,
                         "line": line})

    def result(self, name: str, shape: Sequence[int], dtype: str, line: int,
               sparsity: Optional[Dict[str, Any]] = None) -> Tuple[Handle, int]:
        """A read-only tensor an intrinsic computes, and its trace id."""
        decl = TensorDecl(name, tuple(shape), dtype, "scratch", sparsity, None, None, line)
        h = Handle(decl, writable=False)
        self.handles.append(h)
        return h, self.new_version(h)

    # -- the whole program

    def finish(self) -> Dict[str, Any]:
        """The trace, once model() has run: each output's final value marked, names given."""
        for h in self.handles:
            if h.decl.role == "output":
                if not h.versions:
                    raise refusal("outside_language", self.path, h.decl.line,
                                  f"the output `{h.decl.name}` is never written")
                if h.version is not None and self.tensors[h.version]["role"] == "intermediate":
                    self.tensors[h.version]["role"] = "output"
            # The final value keeps the declared name; earlier versions are name.1, name.2...
            computed = [v for v in h.versions if self.tensors[v]["role"] in
                        ("intermediate", "output")]
            for k, v in enumerate(computed[:-1], 1):
                self.tensors[v]["name"] = f"{h.decl.name}.{k}"
        return {"schema": TRACE_SCHEMA, "name": self.p.name, "frontend": FRONTEND,
                "source": self.path, "tensors": self.tensors, "ops": self.ops}


def fill_value(d: TensorDecl) -> Any:
    """The value a tensor starts with, as a trace number."""
    return number(0.0 if d.fill is None else d.fill)


class Scope:
    """Name resolution shared by the model and kernels."""

    def __init__(self, rec: Recorder, names: Dict[str, Any]):
        self.rec = rec
        self.path = rec.path
        self.names = names  # local names over the module's

    def lookup(self, name: str, line: int) -> Any:
        if name in self.names:
            return self.names[name]
        if name in self.rec.globals:
            return self.rec.globals[name]
        if name in lang.CONSTANT_NAMES:
            return lang.CONSTANT_NAMES[name]
        if name in self.rec.p.kernels:
            raise refusal("outside_language", self.path, line,
                          f"the kernel `{name}` is called, never used as a value")
        raise refusal("undeclared", self.path, line,
                      f"`{name}` is not a declared tensor, constant, parameter or loop variable")

    def numbers(self) -> Dict[str, Any]:
        """Every number and tuple constant visible here (for constant expressions)."""
        out = {k: v for k, v in self.rec.globals.items() if is_number(v) or
               isinstance(v, tuple)}
        out.update({k: v for k, v in self.names.items() if is_number(v) or isinstance(v, tuple)})
        return out

    def constant(self, node: ast.expr, what: str = "a constant") -> Any:
        return constant_value(node, self.numbers(), self.path, what)

    def definition(self, node: ast.expr, what: str) -> Any:
        """A constant's value: a constant expression or a tuple of them."""
        return constant_definition(node, self.numbers(), self.path, what)

    def tuple_element(self, node: ast.expr) -> Optional[Any]:
        """The value of `NAME[i]` when NAME is a tuple constant, else None."""
        names = self.numbers()
        if is_tuple_element(node, names):
            return tuple_element(node, names, self.path, f"`{text_of(node)}`")
        return None

    def bind(self, name: str, value: Any, line: int) -> None:
        if name in lang.ALL_NAMES or name in self.rec.p.kernels:
            raise refusal("outside_language", self.path, line,
                          f"`{name}` names a language intrinsic or a kernel")
        self.names[name] = value

    def tensor(self, node: ast.expr) -> Handle:
        if isinstance(node, ast.Name):
            v = self.lookup(node.id, node.lineno)
            if isinstance(v, Handle):
                return v
        raise refusal("outside_language", self.path, getattr(node, "lineno", 0),
                      f"`{text_of(node)}` is not a tensor")


def skip(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Pass) or (
        isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str))


def range_args(node: ast.expr, path: str) -> List[ast.expr]:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "range" and 1 <= len(node.args) <= 3 and not node.keywords):
        raise refusal("outside_language", path, getattr(node, "lineno", 0),
                      "loops are `for v in range(stop)`, `range(start, stop)` or "
                      "`range(start, stop, step)`")
    return list(node.args)
