"""`--shrink N`: a program's integer size constants reduced towards N while the file's own
relations between them hold (divisors keep dividing, equal sizes stay equal), as a ladder of
settings tried in order until the program runs (`solar suite --shrink`, `solar analyze
--shrink`; docs/suite.md).
"""

from __future__ import annotations

import ast
import functools
import math
from typing import Any, Dict, List, Optional

from .program_source import assigned_names


def _int_literal(node: Any) -> Optional[int]:
    """The value of an integer literal or of arithmetic on integer literals (`2048 * 2`,
    `1 << 12`), else None. Names are not followed: a constant computed from another
    (`out_channels = in_channels * 2`) follows that one's shrunk value by itself."""
    if isinstance(node, ast.Constant):
        v = node.value
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _int_literal(node.operand)
        return None if v is None else -v
    if isinstance(node, ast.BinOp):
        a, b = _int_literal(node.left), _int_literal(node.right)
        if a is None or b is None:
            return None
        ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
               ast.FloorDiv: lambda: a // b if b else None,
               ast.LShift: lambda: a << b if 0 <= b < 64 else None,
               ast.Pow: lambda: a ** b if 0 <= b < 64 else None}
        f = ops.get(type(node.op))
        return f() if f is not None else None
    return None


def int_constants(tree: ast.Module) -> Dict[str, int]:
    """{NAME: value} of the top-level names bound only to integer literals (`N = 2048 * 2`,
    or one element of `depth, height, width = 16, 32, 32`): the sizes `--shrink` may
    reduce. A name bound to a tuple of integer literals (`input_shape = (32768,)`) gives one
    entry per element, `NAME[i]`. A name also bound to anything else (a float, a call,
    another name) is left out, and so are booleans."""
    values: Dict[str, int] = {}
    other = set()

    def bind(target: Any, value: Any) -> None:
        if isinstance(target, ast.Name):
            v = _int_literal(value) if value is not None else None
            elts = value.elts if isinstance(value, (ast.Tuple, ast.List)) else None
            if v is not None:
                values[target.id] = max(v, values.get(target.id, v))
            elif elts and all(_int_literal(e) is not None for e in elts) and not any(
                    k.startswith(target.id + "[") for k in values):
                for i, e in enumerate(elts):
                    values[f"{target.id}[{i}]"] = _int_literal(e)
            else:
                other.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            elts = value.elts if isinstance(value, (ast.Tuple, ast.List)) else None
            if elts is None or len(elts) != len(target.elts) or any(
                    isinstance(e, ast.Starred) for e in target.elts):
                for n in assigned_names(ast.Assign(targets=[target], value=value)):
                    other.add(n)
                return
            for t, v in zip(target.elts, elts):
                bind(t, v)
        else:
            for n in assigned_names(ast.Assign(targets=[target], value=value)):
                other.add(n)

    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                bind(t, stmt.value)
        elif isinstance(stmt, ast.AnnAssign):
            bind(stmt.target, stmt.value)
    return {k: v for k, v in values.items() if k.split("[")[0] not in other}


# Constants named like a count of parts: as divisors they must stay proper divisors (a group
# of one channel, a head of width one, a single block are degenerate). A batch size never has
# to divide anything: it is no divisor at all (else 16 | 32 | 64 chains of unrelated powers
# of two would hold every size up).
_PART_WORDS = ("group", "head", "block", "patch", "window", "cluster", "chunk")
_BATCH_WORDS = ("batch",)
_BATCH_SIZE = 2  # what --shrink makes of a batch size


def shrink_overrides(constants: Dict[str, int], limit: int) -> Dict[str, str]:
    """The `--set` overrides that shrink a program's integer constants (int_constants)
    towards `limit` while keeping the file's own relations. Every constant above `limit`
    gets a new value, in increasing order of the old ones, such that
      - each constant u > 1 that divided it (a batch size aside) still divides it: channels
        stay a multiple of the groups and of the heads, a sequence of the block length; the
        new value is a multiple of the lcm L of those divisors' new values;
      - a divisor named like a count of parts (`num_groups`, `n_head`, `block_len`, ...)
        stays a proper divisor: at least 2 channels per group (GroupNorm over one channel
        of a [B, C] input normalizes one value: PyTorch's f32 result is then rounding noise
        times 1/sqrt(eps)), 2L when L alone would equal it;
      - equal constants stay equal (in_channels == out_channels for a residual add).
    A batch size (a name with `batch`) becomes 2 (or `limit` when smaller), whatever its
    value: it is no divisor, and two samples exercise the batch dimension. The target is
    `limit >> depth`, depth being the longest chain of proper multiples above
    the constant among the file's constants (num_groups | hidden_size): a divisor leaves
    its multiples room below the limit. The new value is the largest multiple of L not above
    the target, or L when L is larger, never above the old value; other constants at most
    `limit` do not change. Names map to the new value's text; the elements of a tuple constant
    (`NAME[i]`) are put back together as one tuple."""
    def divisor_ok(name: str) -> bool:
        return not any(w in name.lower() for w in _BATCH_WORDS)

    def part(name: str) -> bool:
        return any(w in name.lower() for w in _PART_WORDS)

    divisor_values = sorted({v for k, v in constants.items() if divisor_ok(k) and v > 1})

    @functools.lru_cache(maxsize=None)
    def depth(v: int) -> int:
        if v not in divisor_values:
            return 0
        return max((1 + depth(w) for w in divisor_values if w > v and w % v == 0), default=0)

    order = sorted(constants.items(), key=lambda kv: (kv[1], kv[0]))
    new: Dict[str, int] = {}
    for name, v in order:
        if not divisor_ok(name):
            # A batch size: two samples exercise every batch-dependent path (broadcasting
            # over the batch included); the rest of a batch only repeats the work.
            new[name] = min(v, _BATCH_SIZE, limit)
            continue
        if v <= limit:
            new[name] = v
            continue
        divisors = [(u, new[u]) for u, vu in order
                    if 1 < vu < v and v % vu == 0 and divisor_ok(u)]
        lcm = 1
        for _, d in divisors:
            lcm = lcm * d // math.gcd(lcm, d)
        k = max(1, max(1, limit >> depth(v)) // lcm)
        parts = [d for u, d in divisors if part(u)]
        if parts and lcm * k <= max(parts):
            k = 2
        new[name] = min(v, lcm * k)
    out: Dict[str, str] = {}
    tuples: Dict[str, List[int]] = {}
    changed = set()
    for key, v in constants.items():
        base, _, idx = key.partition("[")
        if idx:
            tuples.setdefault(base, []).append(new[key])
            if new[key] != v:
                changed.add(base)
        elif new[key] != v:
            out[key] = str(new[key])
    for base, elems in tuples.items():
        if base in changed:
            out[base] = repr(tuple(elems))
    return out


def scale_overrides(constants: Dict[str, int], limit: int, factor: int) -> Dict[str, str]:
    """The overrides that divide every constant above `limit` that `factor` divides by
    `factor` (the others stay): all their ratios are kept exactly (`out_channels == 2 * W`
    for a LayerNorm over the last dimension of a stride-2 transposed convolution), which
    shrink_overrides' divisibility rule does not promise. Tuple elements as there."""
    out: Dict[str, str] = {}
    tuples: Dict[str, List[int]] = {}
    changed = set()
    for key, v in constants.items():
        nv = v // factor if v > limit and v % factor == 0 else v
        base, _, idx = key.partition("[")
        if idx:
            tuples.setdefault(base, []).append(nv)
            if nv != v:
                changed.add(base)
        elif nv != v:
            out[key] = str(nv)
    for base, elems in tuples.items():
        if base in changed:
            out[base] = repr(tuple(elems))
    return out


def shrink_ladder(constants: Dict[str, int], limit: Optional[int],
                  explicit: Dict[str, str]) -> List[Dict[str, Any]]:
    """The size settings `--shrink limit` tries, in order, for a program with these integer
    constants and these explicit `--set` overrides (which win over shrinking). For L =
    limit, 2*limit, 4*limit, ... while something is still reduced: shrink_overrides at L,
    then a uniform scaling (scale_overrides by the smallest power of two that brings the
    largest constant to at most L; every ratio kept); finally the program's own sizes. A
    setting is {"limit": int or None, "overrides": {NAME: VALUE}}, plus "scale" for a
    uniform one. The first setting under which the program runs is used (a program may
    need room: five 2x2 poolings need 32 pixels, a classifier may expect 7x7 features, a
    LayerNorm a width tied to the channels)."""
    free = {k: v for k, v in constants.items() if k.split("[")[0] not in explicit}
    ladder: List[Dict[str, Any]] = []
    seen: List[Dict[str, str]] = []

    def add(setting: Dict[str, Any], shrunk: Dict[str, str]) -> None:
        if shrunk and shrunk not in seen:
            seen.append(shrunk)
            setting["overrides"] = {**explicit, **shrunk}
            ladder.append(setting)

    step = limit
    big = max((v for v in free.values() if limit is not None and v > limit), default=0)
    while step is not None:
        shrunk = shrink_overrides(free, step)
        if not shrunk or (step > limit and step >= 2 * big):
            break  # nothing reduced, or only batch sizes left to reduce: tried at `limit`
        add({"limit": step}, shrunk)
        factor = 2
        while big // factor > step:
            factor *= 2
        if big // factor >= 1:
            add({"limit": step, "scale": factor}, scale_overrides(free, limit, factor))
        step *= 2
    ladder.append({"limit": None, "overrides": dict(explicit)})
    return ladder
