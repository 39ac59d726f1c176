"""Expression trees of a loopir trace (record.py's docstring has the grammar): building them
with constant folding, reading their affine form, and recognizing a statement's reduction
from its structure (the interpreter's reading; src/lower/loopir.cc has the lifting's)."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

from .language import INT_LIMIT

_FOLD = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "pow": lambda a, b: power(a, b), "neg": lambda a: -a,
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


def int_in_range(x: Any) -> bool:
    """Whether a number is no integer or an integer within ±(INT_LIMIT - 1) (64-bit)."""
    return not isinstance(x, int) or -INT_LIMIT < x < INT_LIMIT


def power(a: Any, b: Any) -> Any:
    """a ** b, or None (not computed) when both are integers and the result would leave the
    64-bit range: `10 ** 10 ** 8` would take minutes and gigabytes to compute."""
    if isinstance(a, int) and isinstance(b, int) and b > 63 and abs(a) > 1:
        return None
    r = a ** b
    if isinstance(r, complex):
        raise ValueError(f"{a!r} ** {b!r} is not a real number")
    return r if int_in_range(r) else None


def fn(name: str, *args: Any) -> Any:
    """A combine-function node; folded to a number when every argument is one (an integer
    result outside 64 bits is left unfolded)."""
    if all(is_number(a) for a in args) and name in _FOLD:
        try:
            r = _FOLD[name](*args)
            if r is not None and is_number(r) and int_in_range(r):
                return number(r)
        except (ArithmeticError, ValueError, TypeError):
            pass  # left to the graph (inf, nan) as the program wrote it
    return {"fn": name, "args": list(args)}


def chain(name: str, args: List[Any]) -> Any:
    """A chain of one associative function (add, mul, max, min) over args as a balanced tree:
    depth log2(n), so a sum of many terms stays within the IR's expression depth."""
    if len(args) == 1:
        return args[0]
    mid = len(args) // 2
    return fn(name, chain(name, args[:mid]), chain(name, args[mid:]))


def signed_sum(terms: List[Tuple[int, Any]]) -> Any:
    """The sum of (sign, tree) terms as a balanced tree of add, sub and neg (0.0 for none)."""
    if not terms:
        return 0.0

    def build(lo: int, hi: int) -> Tuple[int, Any]:
        if hi - lo == 1:
            return terms[lo]
        mid = (lo + hi) // 2
        (sa, a), (sb, b) = build(lo, mid), build(mid, hi)
        if sa > 0:
            return 1, fn("add" if sb > 0 else "sub", a, b)
        return (1, fn("sub", b, a)) if sb > 0 else (-1, fn("add", a, b))

    sign, tree = build(0, len(terms))
    return tree if sign > 0 else fn("neg", tree)


def measure(tree: Any, memo: Dict[int, Tuple[Any, int, int]]) -> Tuple[int, int]:
    """(depth, leaves) of a value tree as the trace writes it out (a subtree shared by
    inlined locals counts each time it appears; an element read is one leaf: its subscripts
    become affine expressions, not part of the combine); memo keeps the nodes it has
    measured."""
    if not isinstance(tree, dict) or "float" in tree or "var" in tree or "index" in tree:
        return 1, 1
    hit = memo.get(id(tree))
    if hit is not None:
        return hit[1], hit[2]
    depth, leaves = 1, 0
    for a in tree.get("args", []):
        d, n = measure(a, memo)
        depth, leaves = max(depth, d + 1), leaves + n
    memo[id(tree)] = (tree, depth, leaves)
    return depth, leaves


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


def writes_once(terms: List[Tuple[int, int]]) -> bool:
    """Whether a sum of terms k*i, each index i over [0, n), takes each value at most once:
    sorted by |k|, each |k| exceeds the span of the smaller terms (a mixed-radix number,
    `g*G + r` with r over G values). Terms of one value (n = 1) span nothing."""
    span = 0
    for k, n in sorted(((abs(k), n) for k, n in terms if n > 1)):
        if k <= span:
            return False
        span += k * (n - 1)
    return True


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
        return "sum", signed_sum(rest)
    if op in _REDUCTIONS:
        kind, identity = _REDUCTIONS[op]
        leaves = _chain(value, op)
        selfs = [x for x in leaves if is_self(x)]
        rest = [x for x in leaves if not is_self(x)]
        if len(selfs) != 1 or not same_index(selfs[0]["index"], index) or \
                any(has_self(x) for x in rest):
            return None, value
        return kind, chain(op, rest) if rest else identity
    return None, value
