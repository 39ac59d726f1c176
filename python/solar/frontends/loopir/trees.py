"""Expression trees of a loopir trace (record.py's docstring has the grammar): building them
with constant folding, reading their affine form, and recognizing a statement's reduction
from its structure (the interpreter's reading; src/lower/loopir.cc has the lifting's)."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

_FOLD = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "pow": lambda a, b: a ** b, "neg": lambda a: -a,
    "max": max, "min": min, "abs": abs, "exp": math.exp, "log": math.log, "sqrt": math.sqrt,
    "rsqrt": lambda a: 1 / math.sqrt(a), "tanh": math.tanh, "erf": math.erf,
    "sigmoid": lambda a: 1 / (1 + math.exp(-a)), "sin": math.sin, "cos": math.cos,
    "floor": math.floor, "ceil": math.ceil, "relu": lambda a: max(a, 0),
    "lt": lambda a, b: float(a < b), "le": lambda a, b: float(a <= b),
    "gt": lambda a, b: float(a > b), "ge": lambda a, b: float(a >= b),
    "eq": lambda a, b: float(a == b), "ne": lambda a, b: float(a != b),
    "select": lambda c, a, b: a if c else b, "mod": lambda a, b: a % b,
}


def is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def fn(name: str, *args: Any) -> Any:
    """A combine-function node; folded to a number when every argument is one."""
    if all(is_number(a) for a in args) and name in _FOLD:
        try:
            return number(_FOLD[name](*args))
        except (ArithmeticError, ValueError):
            pass  # left to the graph (inf, nan) as the program wrote it
    return {"fn": name, "args": list(args)}


def affine_form(tree: Any) -> Optional[Tuple[Dict[str, int], int]]:
    """({var: coefficient}, constant) of an index tree, or None when it is not affine."""
    if isinstance(tree, bool) or (is_number(tree) and not float(tree).is_integer()):
        return None
    if is_number(tree):
        return {}, int(tree)
    if "var" in tree:
        return {tree["var"]: 1}, 0
    name, args = tree.get("fn"), tree.get("args", [])
    forms = [affine_form(a) for a in args]
    if any(f is None for f in forms):
        return None
    if name == "neg":
        (t, c), = forms
        return {v: -k for v, k in t.items()}, -c
    if name in ("add", "sub"):
        (ta, ca), (tb, cb) = forms
        sign = 1 if name == "add" else -1
        out = dict(ta)
        for v, k in tb.items():
            out[v] = out.get(v, 0) + sign * k
        return {v: k for v, k in out.items() if k}, ca + sign * cb
    if name == "mul":
        (ta, ca), (tb, cb) = forms
        if ta and tb:
            return None
        terms, const, scale = (tb, cb, ca) if not ta else (ta, ca, cb)
        return {v: k * scale for v, k in terms.items() if k * scale}, const * scale
    return None


def has_var(tree: Any) -> bool:
    if not isinstance(tree, dict):
        return False
    if "var" in tree:
        return True
    return any(has_var(a) for a in tree.get("args", []))


def number(x: float) -> Any:
    """A number as a trace holds it: a non-finite float is {"float": "inf"|"-inf"|"nan"}
    (JSON has no such numbers; docs/optrace.md)."""
    if isinstance(x, float) and not math.isfinite(x):
        return {"float": "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")}
    return x


def is_self(tree: Any) -> bool:
    return isinstance(tree, dict) and tree.get("self") is True


def has_self(tree: Any) -> bool:
    """Whether a tree reads the statement's own target."""
    if not isinstance(tree, dict):
        return False
    return is_self(tree) or any(has_self(a) for a in tree.get("args", []))


def same_index(a: List[Any], b: List[Any]) -> bool:
    """Whether two subscripts are the same affine expressions."""
    return len(a) == len(b) and all(affine_form(x) == affine_form(y) for x, y in zip(a, b))


def _chain(tree: Any, op: str) -> List[Any]:
    """The operands of a chain of one associative op: a*b*c -> [a, b, c]."""
    if isinstance(tree, dict) and tree.get("fn") == op:
        return [x for a in tree["args"] for x in _chain(a, op)]
    return [tree]


def _signed(tree: Any, sign: int = 1) -> List[Tuple[int, Any]]:
    """The terms of a sum with their signs: a - (b + c) -> [(1, a), (-1, b), (-1, c)]."""
    if isinstance(tree, dict) and tree.get("fn") in ("add", "sub"):
        a, b = tree["args"]
        return _signed(a, sign) + _signed(b, sign if tree["fn"] == "add" else -sign)
    if isinstance(tree, dict) and tree.get("fn") == "neg":
        return _signed(tree["args"][0], -sign)
    return [(sign, tree)]


_REDUCTIONS = {"mul": ("prod", 1.0), "max": ("max", -math.inf), "min": ("min", math.inf)}


def reduction_of(value: Any, index: List[Any]) -> Tuple[Optional[str], Any]:
    """(kind, body) of a statement `T[index] = value`: ("sum", e) for T[s] + e (or e + T[s],
    T[s] - e, ...), ("prod", e), ("max", e), ("min", e) when the target is read exactly once,
    at its own subscript, as an operand of that chain; (None, value) otherwise."""
    if not isinstance(value, dict):
        return None, value
    op = value.get("fn")
    if op in ("add", "sub"):
        terms = _signed(value)
        selfs = [k for k, (s, t) in enumerate(terms) if is_self(t)]
        rest = [(s, t) for k, (s, t) in enumerate(terms) if k not in selfs]
        if len(selfs) != 1 or terms[selfs[0]][0] < 0 or \
                not same_index(terms[selfs[0]][1]["index"], index) or \
                any(has_self(t) for _, t in rest):
            return None, value
        body: Any = 0.0
        for k, (s, t) in enumerate(rest):
            if k == 0:
                body = t if s > 0 else fn("neg", t)
            else:
                body = fn("add" if s > 0 else "sub", body, t)
        return "sum", body
    if op in _REDUCTIONS:
        kind, identity = _REDUCTIONS[op]
        leaves = _chain(value, op)
        selfs = [x for x in leaves if is_self(x)]
        rest = [x for x in leaves if not is_self(x)]
        if len(selfs) != 1 or not same_index(selfs[0]["index"], index) or \
                any(has_self(x) for x in rest):
            return None, value
        body = rest[0] if rest else identity
        for x in rest[1:]:
            body = fn(op, body, x)
        return kind, body
    return None, value
