"""Reading a loop program (docs/loop-language.md): the module's top level with Python's `ast`
into a Program (constants, tensor declarations, kernels, the model), and the constant
expressions everything else evaluates. Nothing of the file is ever executed; a construct
outside the language is refused with file:line and the rule it breaks.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import math
import operator
import warnings
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from . import language as lang
from .language import refusal, too_large
from .trees import int_in_range, power

Number = (int, float)


@dataclasses.dataclass
class TensorDecl:
    """A declared tensor: `Tensor(dims, dtype=, role=, sparsity=, fill=, name=)`."""

    name: str
    shape: Tuple[int, ...]
    dtype: str  # canonical (the IR's name)
    role: str  # input weight constant output scratch
    sparsity: Optional[Dict[str, Any]]  # {"zero_fraction": f, "structured_2_4": bool}
    fill: Optional[float]
    dims: Optional[List[str]]  # dimension names, when every entry of `dims` is a name
    line: int


@dataclasses.dataclass
class Program:
    """A parsed loop program. Kernels and the model stay ASTs: the recorder interprets them."""

    path: str
    constants: Dict[str, Any]  # module-level constants (after --set overrides)
    tensors: Dict[str, TensorDecl]  # module-level declarations, in order
    kernels: Dict[str, ast.FunctionDef]
    model: ast.FunctionDef
    name: str  # the program's name (its file's stem)


class OverrideError(ValueError):
    """A --set NAME=VALUE that names no module-level constant or is not a number."""


# ----------------------------------------------------------------------- constructs

# Nodes no loop program may contain anywhere, with the words of the refusal.
_FORBIDDEN = {
    ast.Attribute: "attribute access (`a.b`)",
    ast.While: "`while` loops (loops are `for v in range(...)`)",
    ast.Try: "`try`", ast.With: "`with`", ast.Lambda: "`lambda`",
    ast.ClassDef: "classes", ast.AsyncFunctionDef: "async functions",
    ast.Global: "`global`", ast.Nonlocal: "`nonlocal`", ast.Delete: "`del`",
    ast.Yield: "generators", ast.YieldFrom: "generators", ast.Await: "`await`",
    ast.ListComp: "comprehensions", ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions", ast.GeneratorExp: "comprehensions",
    ast.NamedExpr: "`:=`", ast.Assert: "`assert`", ast.Raise: "`raise`",
    ast.Return: "`return` (kernels write their tensor parameters)",
    ast.Break: "`break`", ast.Continue: "`continue`", ast.JoinedStr: "f-strings",
    ast.Starred: "`*` unpacking", ast.Dict: "dictionaries", ast.Set: "sets",
}


def check_constructs(tree: ast.Module, path: str) -> None:
    """Refuses, anywhere in the file, the constructs the language lacks: imports other than
    `from solar.loopir import ...` at the top level, functions inside functions, attribute
    access, `while`, ..."""
    top = {id(s) for s in tree.body}
    for node in _walk(tree):
        kind = type(node)
        if kind in (ast.Import, ast.ImportFrom):
            check_import(node, path, top_level=id(node) in top)
        elif kind is ast.FunctionDef and id(node) not in top:
            raise refusal("outside_language", path, node.lineno,
                          "functions are defined at the top level only")
        elif kind in _FORBIDDEN:
            raise refusal("outside_language", path, node.lineno,
                          f"{_FORBIDDEN[kind]} is not part of the loop language")


def _walk(root: ast.AST):
    """Every node under root (ast.walk's nodes, in another order), with less overhead per
    node: programs of thousands of kernels hold hundreds of thousands of nodes."""
    stack = [root]
    AST, list_ = ast.AST, list
    while stack:
        node = stack.pop()
        yield node
        for name in node._fields:
            v = getattr(node, name, None)
            if isinstance(v, list_):
                stack.extend(x for x in v if isinstance(x, AST))
            elif isinstance(v, AST):
                stack.append(v)


def check_import(node: ast.stmt, path: str, top_level: bool) -> None:
    """Only `from solar.loopir import NAMES` (or `import solar.loopir`), at the top level."""
    if isinstance(node, ast.ImportFrom):
        modules = [node.module or ""]
        names = [a.name for a in node.names]
    else:
        modules = [a.name for a in node.names]
        names = []
    if not top_level or any(m != "solar.loopir" for m in modules) or getattr(node, "level", 0):
        what = ", ".join(modules) or "."
        raise refusal("outside_language", path, node.lineno,
                      f"`import {what}`: a loop program imports only from solar.loopir, at "
                      "its top level")
    for n in names:
        if n != "*" and n not in lang.ALL_NAMES:
            raise refusal("unknown_intrinsic", path, node.lineno,
                          f"solar.loopir defines no `{n}`")


# ----------------------------------------------------------------------- constants

_BINARY: Dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_CONSTANT_FUNCTIONS: Dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt, "exp": math.exp, "log": math.log, "abs": abs, "min": min, "max": max,
}


def constant_value(node: ast.expr, names: Mapping[str, Any], path: str, what: str = "a constant"):
    """Evaluates a constant expression: numbers, names of constants, arithmetic and the
    functions sqrt exp log abs min max. `what` names the expression in a refusal. Every
    integer it computes stays within 64 bits (too_large past them)."""
    if isinstance(node, ast.BinOp):
        # A chain `a + b - c * d ...` is a spine of left operands: walked, not recursed, so
        # that a long one cannot exhaust Python's stack.
        spine = []
        while isinstance(node, ast.BinOp):
            spine.append(node)
            node = node.left
        value = constant_value(node, names, path, what)
        for b in reversed(spine):
            if type(b.op) not in _BINARY:
                break
            value = _binary(b, value, constant_value(b.right, names, path, what), path, what)
        else:
            return value
        node = b
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, Number):
            raise refusal("outside_language", path, node.lineno,
                          f"{what} must be a number, not {text_of(node)}")
        return _in_range(node.value, node, path, what)
    if isinstance(node, ast.Name):
        if node.id in names:
            value = names[node.id]
            if isinstance(value, Number) and not isinstance(value, bool):
                return value
            if isinstance(value, tuple):
                raise refusal("outside_language", path, node.lineno,
                              f"`{node.id}` is a tuple of {len(value)} constants: {what} "
                              f"takes one of them, `{node.id}[0]`")
            raise refusal("outside_language", path, node.lineno,
                          f"`{node.id}` is not a number, so it cannot be part of {what}")
        if node.id in lang.CONSTANT_NAMES:
            return lang.CONSTANT_NAMES[node.id]
        raise refusal("undeclared", path, node.lineno, f"`{node.id}` is not a declared constant")
    if isinstance(node, ast.Subscript):
        return tuple_element(node, names, path, what)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = constant_value(node.operand, names, path, what)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        name = node.func.id
        if name not in _CONSTANT_FUNCTIONS:
            raise refusal("unknown_intrinsic", path, node.lineno,
                          f"`{name}` is not a function of constants "
                          f"({', '.join(lang.CONSTANT_FUNCTIONS)})")
        if node.keywords:
            raise refusal("outside_language", path, node.lineno, f"`{name}` takes no keywords")
        args = [constant_value(a, names, path, what) for a in node.args]
        try:
            r = _CONSTANT_FUNCTIONS[name](*args)
        except (TypeError, ValueError, OverflowError) as e:
            raise refusal("outside_language", path, node.lineno, f"{what}: {name}: {e}") from None
        return _in_range(r, node, path, what)
    raise refusal("outside_language", path, getattr(node, "lineno", 0),
                  f"{what} must be a constant expression (numbers, constants, arithmetic)")


def constant_definition(node: ast.expr, names: Mapping[str, Any], path: str, what: str):
    """The value of a constant's definition: a constant expression, or a tuple of them
    (`input_shape = (32768,)`, a size constant as KernelBench writes it), whose elements
    other constants, dims and bounds read as `input_shape[0]`."""
    if isinstance(node, ast.Tuple):
        if not node.elts:
            raise refusal("outside_language", path, node.lineno, f"{what} is an empty tuple")
        return tuple(constant_value(e, names, path, what) for e in node.elts)
    return constant_value(node, names, path, what)


def tuple_element(node: ast.Subscript, names: Mapping[str, Any], path: str, what: str):
    """`NAME[i]`: element i (a constant integer, negative from the end) of a tuple constant."""
    base = node.value
    if not (isinstance(base, ast.Name) and isinstance(names.get(base.id), tuple)):
        raise refusal("outside_language", path, node.lineno,
                      f"{what} must be a constant expression: `{text_of(node)}` indexes no "
                      "tuple constant")
    value = names[base.id]
    if isinstance(node.slice, (ast.Slice, ast.Tuple)):
        raise refusal("outside_language", path, node.lineno,
                      f"`{text_of(node)}`: a tuple constant is indexed by one integer")
    i = constant_value(node.slice, names, path, f"the index of `{base.id}`")
    if not isinstance(i, int) or not -len(value) <= i < len(value):
        raise refusal("shape_mismatch", path, node.lineno,
                      f"`{text_of(node)}`: `{base.id}` has {len(value)} element"
                      f"{'s' if len(value) != 1 else ''}, index {i!r} is none of them")
    return value[i]


def is_tuple_element(node: ast.expr, names: Mapping[str, Any]) -> bool:
    """Whether node is `NAME[...]` with NAME a tuple constant (a constant, not a tensor)."""
    return (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
            and isinstance(names.get(node.value.id), tuple))


def _binary(node: ast.BinOp, a: Any, b: Any, path: str, what: str) -> Any:
    """a op b of a constant expression, its integers within 64 bits."""
    try:
        r = power(a, b) if isinstance(node.op, ast.Pow) else _BINARY[type(node.op)](a, b)
    except (ZeroDivisionError, OverflowError, ValueError) as e:
        raise refusal("outside_language", path, node.lineno, f"{what}: {e}") from None
    if r is None:
        raise too_large(path, node.lineno,
                        f"{what}: {a} ** {b} leaves the 64-bit integer range of constants "
                        "(write a float, 2.0 ** 64, for a larger coefficient)")
    return _in_range(r, node, path, what)


def _in_range(value: Any, node: ast.AST, path: str, what: str) -> Any:
    """value, when it is a real number and no integer outside 64 bits."""
    if isinstance(value, complex):
        raise refusal("outside_language", path, getattr(node, "lineno", 0),
                      f"{what} is not a real number ({value})")
    if not int_in_range(value):
        raise too_large(path, getattr(node, "lineno", 0),
                        f"{what} is an integer of {value.bit_length()} bits, outside the "
                        "64-bit range of constants (write a float for a larger coefficient)")
    return value


def text_of(node: ast.AST, limit: int = 200) -> str:
    """The source of a node for a message: unparsed, cut to `limit` characters (a node too
    deep to unparse is `...`)."""
    try:
        text = ast.unparse(node)
    except (RecursionError, ValueError):
        text = "..."
    return text if len(text) <= limit else text[:limit - 3] + "..."


def check_depth(tree: ast.Module, path: str) -> None:
    """Refuses a program whose statements and expressions nest deeper than MAX_DEPTH levels
    (a chain of + and - terms, or of * factors, is one level). Walked with a stack, so a deep
    file cannot exhaust Python's."""
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > lang.MAX_DEPTH:
            raise refusal("outside_language", path, getattr(node, "lineno", 0),
                          f"statements and expressions nest deeper than {lang.MAX_DEPTH} "
                          "levels, the language's limit (docs/loop-language.md, \"Limits\")")
        chain = _chain_class(node)
        for name in node._fields:
            v = getattr(node, name, None)
            for child in (v if isinstance(v, list) else [v]):
                if isinstance(child, ast.AST):
                    flat = chain is not None and name == "left" and _chain_class(child) == chain
                    stack.append((child, depth if flat else depth + 1))


def _chain_class(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, (ast.Add, ast.Sub)):
            return "sum"
        if isinstance(node.op, ast.Mult):
            return "product"
    return None


# ----------------------------------------------------------------------- tensors

_TENSOR_KEYWORDS = ("dtype", "role", "sparsity", "fill", "name")


def tensor_decl(call: ast.Call, default_name: str, names: Mapping[str, Any], path: str,
                default_role: str = "scratch") -> TensorDecl:
    """A `Tensor(dims, dtype=..., role=..., sparsity=..., fill=..., name=...)` call."""
    line = call.lineno
    if len(call.args) != 1:
        raise refusal("outside_language", path, line,
                      "Tensor takes one positional argument, its dims string (\"B,M,K\")")
    dims_node = call.args[0]
    if not (isinstance(dims_node, ast.Constant) and isinstance(dims_node.value, str)):
        raise refusal("outside_language", path, line, "Tensor's dims must be a string (\"B,M,K\")")
    opts: Dict[str, ast.expr] = {}
    for kw in call.keywords:
        if kw.arg not in _TENSOR_KEYWORDS:
            raise refusal("outside_language", path, line,
                          f"Tensor has no option `{kw.arg}` ({', '.join(_TENSOR_KEYWORDS)})")
        opts[kw.arg] = kw.value
    shape, dims = dims_value(dims_node.value, names, path, line)

    def string_opt(key: str, default: Optional[str]) -> Optional[str]:
        node = opts.get(key)
        if node is None:
            return default
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        raise refusal("outside_language", path, line, f"Tensor's {key} must be a string")

    dtype_name = string_opt("dtype", "f32")
    dtype = lang.canonical_dtype(dtype_name)
    if dtype is None:
        raise refusal("outside_language", path, line,
                      f"unknown dtype '{dtype_name}' ({' '.join(lang.DTYPES)})")
    role = string_opt("role", default_role)
    if role not in lang.ROLES:
        raise refusal("outside_language", path, line,
                      f"unknown role '{role}' ({' '.join(lang.ROLES)})")
    name = string_opt("name", default_name)
    sparsity = None
    if "sparsity" in opts:
        sparsity = sparsity_value(opts["sparsity"], names, path, line)
        if sparsity is not None and role not in ("input", "weight", "constant"):
            raise refusal("outside_language", path, line,
                          "sparsity is declared on input, weight and constant tensors "
                          "(apply_mask gives a computed tensor its mask's sparsity)")
    fill = None
    if "fill" in opts:
        fill = float(constant_value(opts["fill"], names, path, "a fill value"))
        if role in ("input", "weight"):
            raise refusal("outside_language", path, line,
                          f"an {role} is given data: it takes no fill")
    return TensorDecl(name, shape, dtype, role, sparsity, fill, dims, line)


def dims_value(text: str, names: Mapping[str, Any], path: str, line: int):
    """(shape, dimension names or None) of a dims string "B, S, 3*D"."""
    if not text.strip():
        return (), None
    shape: List[int] = []
    entries = [e.strip() for e in text.split(",")]
    for entry in entries:
        node = _dims_entry(entry, line)
        if node is None:
            raise refusal("outside_language", path, line,
                          f"dims entry '{entry}' is not an expression")
        value = constant_value(node, names, path, f"dimension '{entry}'")
        if not isinstance(value, int) or value < 1:
            raise refusal("shape_mismatch", path, line,
                          f"dimension '{entry}' is {value!r}: extents are positive integers")
        shape.append(value)
    named = all(e.isidentifier() for e in entries)
    return tuple(shape), (entries if named else None)


@functools.lru_cache(maxsize=4096)
def _dims_entry(entry: str, line: int) -> Optional[ast.expr]:
    """The expression of one dims entry, its nodes placed on the declaration's line (so that a
    refusal inside it names that line); parsed once per line: programs repeat their dims
    strings."""
    try:
        tree = ast.parse(entry, mode="eval")
    except SyntaxError:
        return None
    return ast.increment_lineno(tree, line - 1).body


def sparsity_value(node: ast.expr, names: Mapping[str, Any], path: str, line: int):
    if isinstance(node, ast.Constant) and node.value is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if node.value != "2:4":
            raise refusal("outside_language", path, line,
                          f"sparsity '{node.value}': give a zero fraction or \"2:4\"")
        return {"zero_fraction": 0.5, "structured_2_4": True}
    f = constant_value(node, names, path, "a sparsity")
    if not 0 <= f <= 1:
        raise refusal("outside_language", path, line, f"sparsity {f} is outside [0, 1]")
    return {"zero_fraction": float(f), "structured_2_4": False}


# ----------------------------------------------------------------------- the module


def is_tensor_call(node: ast.expr) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "Tensor")


def _is_kernel(f: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "kernel" for d in f.decorator_list)


def _check_function(f: ast.FunctionDef, path: str, kernel: bool) -> None:
    a = f.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults or a.kw_defaults:
        raise refusal("outside_language", path, f.lineno,
                      f"`{f.name}` takes plain positional parameters only")
    if len(f.decorator_list) != (1 if kernel else 0):
        raise refusal("outside_language", path, f.lineno,
                      f"`{f.name}`: the only decorator is @kernel, on kernels")
    if not kernel and a.args:
        raise refusal("outside_language", path, f.lineno, "model() takes no parameters")


def assignments(node: ast.Assign, path: str) -> List[Tuple[str, ast.expr]]:
    """(name, value) of each name an assignment binds: `a = v`, `a, b = v, w` (values
    evaluated before any name is bound, as Python does) or `a = b = v` (a chained assignment
    of names: each is bound to the one value node, which the caller evaluates once)."""
    if len(node.targets) != 1:
        if not all(isinstance(t, ast.Name) for t in node.targets):
            raise refusal("outside_language", path, node.lineno,
                          "a chained assignment binds names (`H = W = 128`)")
        if is_tensor_call(node.value):
            raise refusal("outside_language", path, node.lineno,
                          "a chained assignment of a tensor declaration: declare each tensor "
                          "with its own Tensor(...)")
        return [(t.id, node.value) for t in node.targets]
    t = node.targets[0]
    if isinstance(t, ast.Name):
        return [(t.id, node.value)]
    if not (isinstance(t, ast.Tuple) and all(isinstance(e, ast.Name) for e in t.elts)):
        raise refusal("outside_language", path, node.lineno, "an assignment binds names only")
    names = [e.id for e in t.elts]
    if not (isinstance(node.value, ast.Tuple) and len(node.value.elts) == len(names)):
        raise refusal("outside_language", path, node.lineno,
                      f"{len(names)} names need {len(names)} values (`B, S = 2, 128`)")
    return list(zip(names, node.value.elts))


def parse_program(source: str, path: str, overrides: Optional[Mapping[str, str]] = None) -> Program:
    """Parses and checks a loop program's top level; `overrides` (--set NAME=VALUE) replace
    module-level constants (OverrideError for an unknown name or a non-number)."""
    try:
        with warnings.catch_warnings():  # Python's own warnings about the text (escapes)
            warnings.simplefilter("ignore")
            tree = ast.parse(source, filename=path)
    except SyntaxError as e:
        raise refusal("outside_language", path, e.lineno or 0,
                      f"not Python syntax: {e.msg}") from None
    except (RecursionError, MemoryError):  # Python's parser gives up on absurd nesting
        raise refusal("outside_language", path, 0,
                      "the program nests too deeply for Python's parser (the language's limit "
                      f"is {lang.MAX_DEPTH} levels, docs/loop-language.md \"Limits\")") from None
    except ValueError as e:  # a NUL byte
        raise refusal("outside_language", path, 0, f"not Python source: {e}") from None
    check_depth(tree, path)
    check_constructs(tree, path)
    overrides = dict(overrides or {})
    override_values = {k: _override_number(k, v) for k, v in overrides.items()}
    names: Dict[str, Any] = {}
    constants: Dict[str, Any] = {}
    tensors: Dict[str, TensorDecl] = {}
    kernels: Dict[str, ast.FunctionDef] = {}
    model: Optional[ast.FunctionDef] = None

    def bind(name: str, value: Any, line: int) -> None:
        if name in names or name in kernels or (model is not None and name == "model"):
            raise refusal("outside_language", path, line, f"`{name}` is defined twice")
        if name in lang.ALL_NAMES:
            raise refusal("outside_language", path, line,
                          f"`{name}` is a name of the language; choose another")
        names[name] = value

    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and \
                isinstance(stmt.value.value, str):
            continue  # a docstring
        if isinstance(stmt, ast.Assign):
            for name, value in assignments(stmt, path):
                if is_tensor_call(value):
                    decl = tensor_decl(value, name, names, path)
                    bind(name, decl, stmt.lineno)
                    tensors[name] = decl
                else:
                    v = constant_definition(value, names, path, f"the constant `{name}`")
                    if name in override_values:
                        v = override_values.pop(name)
                    bind(name, v, stmt.lineno)
                    constants[name] = v
            continue
        if isinstance(stmt, ast.FunctionDef):
            if _is_kernel(stmt):
                _check_function(stmt, path, kernel=True)
                if stmt.name in names or stmt.name in kernels or stmt.name in lang.ALL_NAMES:
                    raise refusal("outside_language", path, stmt.lineno,
                                  f"`{stmt.name}` is defined twice or is a language name")
                kernels[stmt.name] = stmt
            elif stmt.name == "model":
                _check_function(stmt, path, kernel=False)
                if model is not None:
                    raise refusal("outside_language", path, stmt.lineno, "model() is defined twice")
                model = stmt
            else:
                raise refusal("outside_language", path, stmt.lineno,
                              f"`def {stmt.name}`: a function is a @kernel or model()")
            continue
        raise refusal("outside_language", path, stmt.lineno,
                      f"a {type(stmt).__name__} statement at the top level: the top level "
                      "holds constants, tensors, kernels and model()")
    if override_values:
        raise OverrideError(f"--set {', '.join(sorted(override_values))}: no such module-level "
                            f"constant in {path} (constants: {', '.join(constants) or 'none'})")
    if model is None:
        raise refusal("outside_language", path, 0, "the program has no `def model():`")
    stem = path.replace("\\", "/").rsplit("/", 1)[-1]
    return Program(path, constants, tensors, kernels, model,
                   stem[:-3] if stem.endswith(".py") else stem)


def _override_number(name: str, text: str):
    """A --set value: a number, or a tuple of numbers for a tuple constant (`(16,)`, as
    --shrink writes a shrunk `input_shape`)."""
    for cast in (int, float):
        try:
            value = cast(text)
        except ValueError:
            continue
        if not int_in_range(value):
            raise OverrideError(f"--set {name}={text}: integers are within 64 bits")
        return value
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        value = None
    if isinstance(value, tuple) and value and all(
            isinstance(v, Number) and not isinstance(v, bool) for v in value):
        if not all(int_in_range(v) for v in value):
            raise OverrideError(f"--set {name}={text}: integers are within 64 bits")
        return value
    raise OverrideError(f"--set {name}={text}: a loop program's constants are numbers or "
                        "tuples of numbers")
