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
import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ... import _core
from . import language as lang
from .language import refusal
from .trees import affine_form, fn, has_data, has_var, is_number, jsonable
from .syntax import Program, TensorDecl, constant_value, dims_value, is_tensor_call, tensor_decl

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


# ----------------------------------------------------------------------- the recorder

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Pow: "pow",
           ast.Mod: "mod"}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq",
           ast.NotEq: "ne"}
_AUG = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul"}
# Operators an index may apply to constants only.
_CONSTANT_ONLY = {ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
                  ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a ** b}


class Recorder:
    """Runs model() and accumulates the trace."""

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

    def emit(self, op: str, args: Dict[str, Any], outputs: List[int], line: int) -> None:
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

    def run(self) -> Dict[str, Any]:
        ModelScope(self).block(self.p.model.body, {})
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
        return jsonable({"schema": TRACE_SCHEMA, "name": self.p.name, "frontend": FRONTEND,
                         "source": self.path, "tensors": self.tensors, "ops": self.ops})


def fill_value(d: TensorDecl) -> float:
    return 0.0 if d.fill is None else d.fill


def record(program: Program) -> Tuple[Dict[str, Any], Dict[int, int], List[Tuple[str, int]]]:
    """(the OpTrace of `program`, {trace id of an index tensor: bound of its values},
    [(name, trace id) of each output's final value, in declaration order])."""
    r = Recorder(program)
    trace = r.run()
    outputs = [(h.decl.name, h.version) for h in r.handles if h.decl.role == "output"]
    return trace, r.index_bounds, outputs


# ----------------------------------------------------------------------- names


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
        """Every number visible here (for constant expressions)."""
        out = {k: v for k, v in self.rec.globals.items() if is_number(v)}
        out.update({k: v for k, v in self.names.items() if is_number(v)})
        return out

    def constant(self, node: ast.expr, what: str = "a constant") -> Any:
        return constant_value(node, self.numbers(), self.path, what)

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
                      f"`{ast.unparse(node)}` is not a tensor")


def _names_of(target: ast.expr, path: str) -> List[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
        return [e.id for e in target.elts]
    raise refusal("outside_language", path, target.lineno, "assign to names only here")


def _skip(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Pass) or (
        isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str))


# ----------------------------------------------------------------------- the model


class ModelScope(Scope):
    """model(): tensor declarations, constants, kernel calls, intrinsics, static loops."""

    def __init__(self, rec: Recorder):
        super().__init__(rec, {})

    def block(self, body: Sequence[ast.stmt], _unused: Dict[str, Any]) -> None:
        for stmt in body:
            if _skip(stmt):
                continue
            if isinstance(stmt, ast.Assign):
                self.assign(stmt)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                self.call_statement(stmt.value)
            elif isinstance(stmt, ast.For):
                self.static_loop(stmt)
            elif isinstance(stmt, ast.If):
                test = self.constant(stmt.test, "a condition of model() (constants only)")
                self.block(stmt.body if test else stmt.orelse, {})
            else:
                raise refusal("outside_language", self.path, stmt.lineno,
                              f"a {type(stmt).__name__} statement in model(): model() "
                              "declares tensors, calls kernels and intrinsics, and loops")

    def assign(self, stmt: ast.Assign) -> None:
        if len(stmt.targets) != 1:
            raise refusal("outside_language", self.path, stmt.lineno, "chained assignment")
        names = _names_of(stmt.targets[0], self.path)
        if len(names) == 1:
            values = [self.value(stmt.value, names[0])]
        elif isinstance(stmt.value, ast.Tuple) and len(stmt.value.elts) == len(names):
            values = [self.value(v, n) for v, n in zip(stmt.value.elts, names)]
        else:
            raise refusal("outside_language", self.path, stmt.lineno,
                          f"{len(names)} names need {len(names)} values")
        for n, v in zip(names, values):
            self.bind(n, v, stmt.lineno)

    def value(self, node: ast.expr, name: str) -> Any:
        if is_tensor_call(node):
            return self.rec.declare(tensor_decl(node, name, self.numbers(), self.path))
        if isinstance(node, ast.Name):
            return self.lookup(node.id, node.lineno)
        if isinstance(node, (ast.Call, ast.Subscript)):
            return self.tensor_expr(node, name)
        return self.constant(node, f"the value of `{name}`")

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
                      f"`{ast.unparse(node)}` is not a tensor expression")

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
        for i in range(*values):
            self.bind(stmt.target.id, i, stmt.lineno)
            self.block(stmt.body, {})


def range_args(node: ast.expr, path: str) -> List[ast.expr]:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "range" and 1 <= len(node.args) <= 3 and not node.keywords):
        raise refusal("outside_language", path, getattr(node, "lineno", 0),
                      "loops are `for v in range(stop)`, `range(start, stop)` or "
                      "`range(start, stop, step)`")
    return list(node.args)


# ----------------------------------------------------------------------- intrinsics


class Intrinsics:
    """The composition intrinsics of model(): each emits one op and returns its result."""

    def __init__(self, scope: ModelScope, line: int, name: str):
        self.s = scope
        self.rec = scope.rec
        self.path = scope.path
        self.line = line
        self.name = name

    def fail(self, kind: str, message: str):
        return refusal(kind, self.path, self.line, message)

    def bind_args(self, call: ast.Call, params: Sequence[str], required: int) -> Dict[str, ast.expr]:
        f = call.func.id
        if len(call.args) > len(params):
            raise self.fail("shape_mismatch", f"`{f}` takes at most {len(params)} arguments")
        out = dict(zip(params, call.args))
        for kw in call.keywords:
            if kw.arg not in params or kw.arg in out:
                raise self.fail("shape_mismatch", f"`{f}` has no parameter `{kw.arg}` left")
            out[kw.arg] = kw.value
        if any(p not in out for p in params[:required]):
            raise self.fail("shape_mismatch",
                            f"`{f}` needs {', '.join(params[:required])}")
        return out

    def int_arg(self, node: Optional[ast.expr], default: int, what: str) -> int:
        if node is None:
            return default
        v = self.s.constant(node, what)
        if not isinstance(v, int):
            raise self.fail("shape_mismatch", f"{what} must be an integer, got {v!r}")
        return v

    def str_arg(self, node: Optional[ast.expr], default: str, what: str, allowed) -> str:
        if node is None:
            return default
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or \
                node.value not in allowed:
            raise self.fail("outside_language", f"{what} is one of {', '.join(allowed)}")
        return node.value

    def tensors(self, node: ast.expr) -> List[Handle]:
        if not isinstance(node, (ast.Tuple, ast.List)) or not node.elts:
            raise self.fail("outside_language", "give the tensors as a tuple: (a, b, ...)")
        return [self.s.tensor_expr(e) for e in node.elts]

    def dim(self, node: Optional[ast.expr], rank: int, default: int = 0) -> int:
        d = self.int_arg(node, default, "dim")
        if not -rank <= d < rank:
            raise self.fail("shape_mismatch", f"dim {d} is outside a rank-{rank} tensor")
        return d % rank

    def ref(self, h: Handle) -> Dict[str, int]:
        return {"tensor": self.rec.read(h, self.line)}

    def call(self, f: str, call: ast.Call) -> Handle:
        return getattr(self, f)(call)

    def emit(self, op: str, args: Dict[str, Any], shape, dtype: str,
             sparsity: Optional[Dict[str, Any]] = None) -> Handle:
        h, out = self.rec.result(self.name, shape, dtype, self.line, sparsity)
        self.rec.emit(op, args, [out], self.line)
        return h

    def reshape(self, call: ast.Call) -> Handle:
        a = self.bind_args(call, ("x", "dims"), 2)
        x = self.s.tensor_expr(a["x"])
        d = a["dims"]
        if not (isinstance(d, ast.Constant) and isinstance(d.value, str)):
            raise self.fail("outside_language", "reshape's dims are a string (\"B*S, D\")")
        shape, _ = dims_value(d.value, self.s.numbers(), self.path, self.line)
        if math.prod(shape) != math.prod(x.shape):
            raise self.fail("shape_mismatch", f"reshape of {list(x.shape)} ({math.prod(x.shape)} "
                                              f"elements) to {list(shape)} ({math.prod(shape)})")
        return self.emit("loopir::reshape", {"self": self.ref(x), "shape": list(shape)}, shape,
                         x.decl.dtype)

    def permute(self, call: ast.Call) -> Handle:
        a = self.bind_args(call, ("x", "perm"), 2)
        x = self.s.tensor_expr(a["x"])
        if not isinstance(a["perm"], (ast.Tuple, ast.List)):
            raise self.fail("outside_language", "permute's order is a tuple (1, 0, 2)")
        perm = [self.int_arg(e, 0, "a permutation entry") for e in a["perm"].elts]
        if sorted(perm) != list(range(len(x.shape))):
            raise self.fail("shape_mismatch",
                            f"{perm} is not a permutation of the {len(x.shape)} dimensions")
        shape = [x.shape[p] for p in perm]
        return self.emit("loopir::permute", {"self": self.ref(x), "perm": perm}, shape,
                         x.decl.dtype)

    def slice(self, call: ast.Call) -> Handle:
        a = self.bind_args(call, ("x", "dim", "start", "stop", "step"), 4)
        x = self.s.tensor_expr(a["x"])
        dim = self.dim(a["dim"], len(x.shape))
        start = self.int_arg(a["start"], 0, "start")
        stop = self.int_arg(a["stop"], 0, "stop")
        step = self.int_arg(a.get("step"), 1, "step")
        if not (0 <= start < stop <= x.shape[dim]) or step < 1:
            raise self.fail("shape_mismatch", f"slice [{start}:{stop}:{step}] of a dimension of "
                                              f"size {x.shape[dim]}")
        shape = list(x.shape)
        shape[dim] = -(-(stop - start) // step)
        return self.emit("loopir::slice", {"self": self.ref(x), "dim": dim, "start": start,
                                           "stop": stop, "step": step}, shape, x.decl.dtype)

    def select(self, node: ast.Subscript) -> Handle:
        x = self.s.tensor_expr(node.value)
        keys = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        index = [self.int_arg(k, 0, "a tensor index in model()") for k in keys]
        if len(index) > len(x.shape):
            raise self.fail("shape_mismatch",
                            f"{len(index)} indices into a rank-{len(x.shape)} tensor")
        for i, n in zip(index, x.shape):
            if not 0 <= i < n:
                raise self.fail("shape_mismatch", f"index {i} is outside a dimension of size {n}")
        return self.emit("loopir::select", {"self": self.ref(x), "index": index},
                         x.shape[len(index):], x.decl.dtype)

    def concat(self, call: ast.Call, stack: bool = False) -> Handle:
        a = self.bind_args(call, ("tensors", "dim"), 1)
        xs = self.tensors(a["tensors"])
        rank = len(xs[0].shape)
        dim = self.dim(a.get("dim"), rank + 1 if stack else rank)
        for x in xs:
            if x.decl.dtype != xs[0].decl.dtype:
                raise self.fail("shape_mismatch", "concatenated tensors differ in dtype")
            other = [n for d, n in enumerate(x.shape) if stack or d != dim]
            first = [n for d, n in enumerate(xs[0].shape) if stack or d != dim]
            if len(x.shape) != rank or other != first:
                raise self.fail("shape_mismatch", f"shapes {list(xs[0].shape)} and "
                                                  f"{list(x.shape)} do not {'stack' if stack else 'concatenate'} along {dim}")
        shape = list(xs[0].shape)
        if stack:
            shape.insert(dim, len(xs))
        else:
            shape[dim] = sum(x.shape[dim] for x in xs)
        return self.emit("loopir::stack" if stack else "loopir::concat",
                         {"tensors": [self.ref(x) for x in xs], "dim": dim}, shape,
                         xs[0].decl.dtype)

    def stack(self, call: ast.Call) -> Handle:
        return self.concat(call, stack=True)

    def gather(self, call: ast.Call) -> Handle:
        a = self.bind_args(call, ("data", "index", "dim", "mode"), 2)
        data, index = self.s.tensor_expr(a["data"]), self.s.tensor_expr(a["index"])
        dim = self.dim(a.get("dim"), len(data.shape))
        mode = self.str_arg(a.get("mode"), "take", "gather's mode", ("take", "elements"))
        self.check_index(index)
        if mode == "take":
            shape = list(data.shape[:dim]) + list(index.shape) + list(data.shape[dim + 1:])
        else:
            if len(index.shape) != len(data.shape) or any(
                    i > n for d, (i, n) in enumerate(zip(index.shape, data.shape)) if d != dim):
                raise self.fail("shape_mismatch", "an elements-mode index has the data's rank "
                                                  "and is no larger outside `dim`")
            shape = list(index.shape)
        args = {"data": self.ref(data), "index": self.ref(index), "dim": dim, "mode": mode}
        self.rec.index_bounds[args["index"]["tensor"]] = data.shape[dim]
        return self.emit("loopir::gather", args, shape, data.decl.dtype)

    def scatter(self, call: ast.Call) -> Handle:
        a = self.bind_args(call, ("data", "index", "src", "dim", "reduce", "mode"), 3)
        data, index, src = (self.s.tensor_expr(a[k]) for k in ("data", "index", "src"))
        dim = self.dim(a.get("dim"), len(data.shape))
        reduce = self.str_arg(a.get("reduce"), "none", "scatter's reduce",
                              ("none", "sum", "prod", "max", "min", "mean"))
        mode = self.str_arg(a.get("mode"), "take", "scatter's mode", ("take", "elements"))
        self.check_index(index)
        want = (list(data.shape[:dim]) + list(index.shape) + list(data.shape[dim + 1:])
                if mode == "take" else list(index.shape))
        if list(src.shape) != want or src.decl.dtype != data.decl.dtype:
            raise self.fail("shape_mismatch", f"scatter's src is {list(src.shape)} "
                                              f"{src.decl.dtype}, it must be {want} {data.decl.dtype}")
        args = {"data": self.ref(data), "index": self.ref(index), "src": self.ref(src),
                "dim": dim, "reduce": reduce, "mode": mode}
        self.rec.index_bounds[args["index"]["tensor"]] = data.shape[dim]
        return self.emit("loopir::scatter", args, data.shape, data.decl.dtype)

    def check_index(self, index: Handle) -> None:
        if index.decl.dtype not in ("i64", "i32", "i16", "i8", "u8"):
            raise self.fail("shape_mismatch",
                            f"an index tensor holds integers, not {index.decl.dtype}")

    def apply_mask(self, call: ast.Call) -> Handle:
        a = self.bind_args(call, ("x", "mask"), 2)
        x, m = self.s.tensor_expr(a["x"]), self.s.tensor_expr(a["mask"])
        if x.shape != m.shape:
            raise self.fail("shape_mismatch", f"apply_mask of {list(x.shape)} by a "
                                              f"{list(m.shape)} mask")
        return self.emit("loopir::apply_mask", {"self": self.ref(x), "mask": self.ref(m)},
                         x.shape, x.decl.dtype, m.decl.sparsity)

    def cast(self, call: ast.Call) -> Handle:
        a = self.bind_args(call, ("x", "dtype"), 2)
        x = self.s.tensor_expr(a["x"])
        d = a["dtype"]
        dtype = lang.canonical_dtype(d.value) if isinstance(d, ast.Constant) and \
            isinstance(d.value, str) else None
        if dtype is None:
            raise self.fail("outside_language", f"cast to an unknown dtype ({' '.join(lang.DTYPES)})")
        return self.emit("loopir::cast", {"self": self.ref(x), "dtype": dtype}, x.shape, dtype)


# ----------------------------------------------------------------------- kernels


class KernelScope(Scope):
    """One call of a kernel: its top-level statements, each loop nest recorded as one op."""

    def __init__(self, rec: Recorder, kernel: ast.FunctionDef, args: Dict[str, Any], line: int):
        super().__init__(rec, dict(args))
        self.kernel = kernel
        self.call_line = line
        self.nests = 0

    def run(self) -> None:
        for stmt in self.kernel.body:
            if _skip(stmt):
                continue
            if isinstance(stmt, ast.Assign):
                if len(stmt.targets) != 1:
                    raise refusal("outside_language", self.path, stmt.lineno, "chained assignment")
                names = _names_of(stmt.targets[0], self.path)
                values = [stmt.value] if len(names) == 1 else (
                    list(stmt.value.elts) if isinstance(stmt.value, ast.Tuple)
                    and len(stmt.value.elts) == len(names) else None)
                if values is None:
                    raise refusal("outside_language", self.path, stmt.lineno,
                                  f"{len(names)} names need {len(names)} values")
                for n, v in zip(names, values):
                    if is_tensor_call(v):
                        decl = tensor_decl(v, n, self.numbers(), self.path)
                        if decl.role not in ("scratch", "constant"):
                            raise refusal("outside_language", self.path, stmt.lineno,
                                          "a kernel declares scratch and constant tensors only")
                        self.bind(n, self.rec.declare(decl), stmt.lineno)
                    else:
                        self.bind(n, self.constant(v, f"the constant `{n}`"), stmt.lineno)
            elif isinstance(stmt, ast.For):
                Nest(self, stmt).record()
                self.nests += 1
            else:
                raise refusal("outside_language", self.path, stmt.lineno,
                              f"a {type(stmt).__name__} statement in a kernel body: a kernel "
                              "holds tensor declarations, constants and loop nests")


def _contains_for(stmt: ast.stmt) -> bool:
    return any(isinstance(n, ast.For) for n in ast.walk(stmt))


class Nest:
    """One perfectly nested loop nest of a kernel call: its loops and statements."""

    def __init__(self, kernel: KernelScope, node: ast.For):
        self.k = kernel
        self.rec = kernel.rec
        self.path = kernel.path
        self.node = node
        self.loops: List[Dict[str, Any]] = []
        self.vars: set = set()
        self.statements: List[Dict[str, Any]] = []
        self.targets: List[Handle] = []
        self.reads: List[Tuple[Handle, int]] = []  # (tensor, line) of every non-self read
        self.current: Optional[Handle] = None  # the target of the statement being read
        self.locals: Dict[str, Any] = {}  # the scalar locals in scope (data, not indices)

    def fail(self, kind: str, node: Any, message: str):
        return refusal(kind, self.path, getattr(node, "lineno", 0), message)

    # -- structure

    def record(self) -> None:
        self.loop(self.node, [], {})
        for h, line in self.reads:
            if any(h is t for t in self.targets):
                raise refusal("outside_language", self.path, line,
                              f"reads `{h.decl.name}`, which this nest also writes: a "
                              "loop-carried dependence (split the nest into two)")
        outputs = []
        for st, h in zip(self.statements, self.targets):
            st["target"]["prior"] = ({"tensor": h.version} if h.version is not None
                                     else {"fill": fill_value(h.decl)})
            outputs.append(self.rec.new_version(h))
        args = {"kernel": self.k.kernel.name, "call_line": self.k.call_line,
                "nest": self.k.nests, "loops": self.loops, "statements": self.statements}
        self.rec.emit("loopir::nest", args, outputs, self.node.lineno)

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
            raise self.fail("non_constant_bound", node, "a loop step is a positive integer constant")
        if (has_var(start) or has_var(stop)) and step != 1:
            raise self.fail("non_constant_bound", node,
                            "a loop with bounds that depend on outer loops has step 1")
        self.loops.append({"var": var, "start": start, "stop": stop, "step": step,
                           "line": node.lineno})
        self.vars.add(var)
        self.block(node.body, guards, scope)

    def block(self, body: Sequence[ast.stmt], guards: List[Dict[str, Any]],
              scope: Dict[str, Any]) -> None:
        stmts = [s for s in body if not _skip(s)]
        if any(_contains_for(s) for s in stmts):
            if len(stmts) != 1:
                raise self.fail("outside_language", stmts[0],
                                "an imperfect nest: a loop body is one inner loop (optionally "
                                "under `if`) or the statements of the innermost loop")
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
                self.innermost([x for x in s.body if not _skip(x)],
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
            elif isinstance(s, ast.Assign) and len(s.targets) == 1 and \
                    isinstance(s.targets[0], ast.Subscript):
                self.statement(s.targets[0], s, guards, scope, None)
            elif isinstance(s, ast.AugAssign):
                if isinstance(s.target, ast.Name):
                    raise self.fail("outside_language", s,
                                    f"`{s.target.id} {ast.unparse(s).split()[1]} ...`: "
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
            raise self.fail("outside_language", s,
                            f"`{h.decl.name}` is read-only ({h.decl.role if h.decl.role != 'scratch' else 'an intrinsic result'}): "
                            "kernels write output and scratch tensors")
        if any(h is t for t in self.targets):
            raise self.fail("outside_language", s,
                            f"this nest writes `{h.decl.name}` twice: one statement per tensor")
        index = self.subscript(target, h)
        self.current = h
        value = self.value(s.value, scope)
        if aug is not None:
            value = fn(aug, {"self": True, "index": index}, value)
        self.current = None
        self.targets.append(h)
        self.statements.append({"line": s.lineno, "target": {"name": h.decl.name,
                                                             "index": index},
                                "value": value, "guards": list(guards)})

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
        if affine_form(tree) is None:
            raise self.fail("not_affine", node,
                            f"{what} `{ast.unparse(node)}` is not affine in the loop variables")
        return tree

    def index_tree(self, node: ast.expr, what: str) -> Any:
        if isinstance(node, ast.Constant) and is_number(node.value):
            return node.value
        if isinstance(node, ast.Subscript) or (isinstance(node, ast.Name)
                                               and node.id in self.locals):
            raise self.fail("data_dependent", node,
                            f"{what} reads tensor data (`{ast.unparse(node)}`): index by loop "
                            "variables, or use gather/scatter")
        if isinstance(node, ast.Name):
            if node.id in self.vars:
                return {"var": node.id}
            v = self.k.lookup(node.id, node.lineno)
            if is_number(v):
                return v
            raise self.fail("not_affine", node,
                            f"{what} uses the tensor `{node.id}` as a number")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            t = self.index_tree(node.operand, what)
            return fn("neg", t) if isinstance(node.op, ast.USub) else t
        if isinstance(node, ast.BinOp) and type(node.op) in (ast.Add, ast.Sub, ast.Mult):
            return fn(_BINOPS[type(node.op)], self.index_tree(node.left, what),
                      self.index_tree(node.right, what))
        if isinstance(node, ast.BinOp) and type(node.op) in _CONSTANT_ONLY:
            a, b = self.index_tree(node.left, what), self.index_tree(node.right, what)
            if is_number(a) and is_number(b):
                try:
                    return _CONSTANT_ONLY[type(node.op)](a, b)
                except ArithmeticError as e:
                    raise self.fail("not_affine", node, f"{what}: {e}") from None
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id not in lang.ALL_NAMES:
            raise self.fail("unknown_intrinsic", node, f"`{node.func.id}` is not an intrinsic")
        raise self.fail("not_affine", node,
                        f"{what} `{ast.unparse(node)}` is not affine in the loop variables")

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
                            f"the loop bound `{ast.unparse(node)}` is not a constant (nor "
                            "affine in the enclosing loops' variables)")
        return tree

    def guard(self, test: ast.expr, scope: Dict[str, Any]) -> List[Dict[str, Any]]:
        """The affine constraints of an `if` condition."""
        self.locals = scope
        parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) \
            else [test]
        out = []
        for p in parts:
            if not isinstance(p, ast.Compare):
                if any(isinstance(n, ast.Subscript) or (isinstance(n, ast.Name) and n.id in scope)
                       for n in ast.walk(p)):
                    raise self.fail("data_dependent", p,
                                    f"`if {ast.unparse(p)}:` branches on tensor data: compute "
                                    "both values and pick with where(cond, a, b)")
                raise self.fail("outside_language", p,
                                f"`if {ast.unparse(p)}:`: a guard is comparisons of affine "
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
                return node.value
            raise self.fail("outside_language", node, f"{node.value!r} is not a number")
        if isinstance(node, ast.Name):
            if node.id in scope:
                return scope[node.id]
            if node.id in self.vars:
                raise self.fail("not_affine", node,
                                f"the loop variable `{node.id}` is used as a value: loop "
                                "variables index tensors (put the values in a tensor)")
            v = self.k.lookup(node.id, node.lineno)
            if is_number(v):
                return v
            raise self.fail("outside_language", node,
                            f"the tensor `{node.id}` is used as a value: read an element "
                            f"`{node.id}[...]`")
        if isinstance(node, ast.Subscript):
            return self.load(node)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub):
                return fn("neg", self.value(node.operand, scope))
            if isinstance(node.op, ast.UAdd):
                return self.value(node.operand, scope)
            raise self.fail("outside_language", node, "`not` and `~`: use comparisons and where()")
        if isinstance(node, ast.BinOp):
            a, b = self.value(node.left, scope), self.value(node.right, scope)
            if isinstance(node.op, ast.FloorDiv):
                return fn("floor", fn("div", a, b))
            if type(node.op) not in _BINOPS:
                raise self.fail("outside_language", node,
                                f"the operator `{ast.unparse(node)}` (use + - * / ** // %)")
            return fn(_BINOPS[type(node.op)], a, b)
        if isinstance(node, ast.Compare):
            terms = [self.value(t, scope) for t in [node.left] + list(node.comparators)]
            out = None
            for op, a, b in zip(node.ops, terms, terms[1:]):
                if type(op) not in _CMPOPS:
                    raise self.fail("outside_language", node, "compare with < <= > >= == !=")
                c = fn(_CMPOPS[type(op)], a, b)
                out = c if out is None else fn("mul", out, c)
            return out
        if isinstance(node, ast.IfExp):
            return self.select(node.test, node.body, node.orelse, scope, node)
        if isinstance(node, ast.Call):
            return self.intrinsic(node, scope)
        if isinstance(node, ast.BoolOp):
            raise self.fail("outside_language", node,
                            "`and`/`or` on values: multiply comparisons, or use where()")
        raise self.fail("outside_language", node,
                        f"`{ast.unparse(node)}` is not an expression of the loop language")

    def select(self, test, a, b, scope, node) -> Any:
        c = self.value(test, scope)
        if not has_data(c) and not is_number(c):
            raise self.fail("not_affine", node, "a condition on loop variables inside an "
                                                "expression: use an `if` guard")
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
        if (arity is None and len(node.args) < 2) or (arity is not None and len(node.args) != arity):
            raise self.fail("unknown_intrinsic", node,
                            f"`{name}` takes {'2 or more' if arity is None else arity} "
                            f"argument{'s' if arity != 1 else ''}, got {len(node.args)}")
        if ir_name == "select":
            return self.select(node.args[0], node.args[1], node.args[2], scope, node)
        args = [self.value(a, scope) for a in node.args]
        out = args[0]
        if arity is None:  # min/max of several: a chain
            for a in args[1:]:
                out = fn(ir_name, out, a)
            return out
        return fn(ir_name, *args)

    def load(self, node: ast.Subscript) -> Dict[str, Any]:
        h = self.k.tensor(node.value)
        index = self.subscript(node, h)
        if h is self.current:
            return {"self": True, "index": index}
        self.reads.append((h, node.lineno))
        if any(h is t for t in self.targets):
            raise self.fail("outside_language", node,
                            f"reads `{h.decl.name}`, which this nest also writes: a "
                            "loop-carried dependence (split the nest into two)")
        return {"load": self.rec.read(h, node.lineno), "index": index}
