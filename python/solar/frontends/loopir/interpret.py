"""The loop language's own interpreter: runs a loopir OpTrace (record.py) with NumPy, so a
loop program can be validated against the graph lifted from it and against a reference.

It implements the loops' meaning independently of the C++ lifting: a nest runs statement by
statement over its whole iteration space at once (vectorized, in chunks of at most
CHUNK_POINTS points), which is what the sequential loops compute because a valid nest does
not depend on its order (docs/loop-language.md): assignments write each element once and
reductions combine with + * max min. Values are held as float64 (int64 for integer and
bool tensors) rounded to each tensor's dtype at every write.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...errors import user_error
from .language import is_integer_dtype, refusal
from .recurrence import step_dim
from .trees import affine_form, has_self, reduction_of, writes_once

# Iteration points evaluated at once (arrays of this many float64: 32 MiB each).
CHUNK_POINTS = 1 << 22


# ----------------------------------------------------------------------- dtypes

def _ml_dtype(dtype: str):
    import ml_dtypes

    return {"bf16": ml_dtypes.bfloat16, "f8e4m3": ml_dtypes.float8_e4m3fn,
            "f8e5m2": ml_dtypes.float8_e5m2, "f6": ml_dtypes.float6_e2m3fn,
            "f4": ml_dtypes.float4_e2m1fn}.get(dtype)


_INT_BITS = {"i64": 64, "i32": 32, "i16": 16, "i8": 8, "i4": 4}


def round_to(x: np.ndarray, dtype: str) -> np.ndarray:
    """Values of x as stored in `dtype` (float64 for floats, int64 for integers, bool)."""
    x = np.asarray(x)
    if dtype == "bool":
        return x != 0
    if is_integer_dtype(dtype):
        with np.errstate(invalid="ignore"):  # NaN and infinities: undefined, as in C++
            v = np.trunc(x).astype(np.int64) if x.dtype.kind == "f" else x.astype(np.int64)
        if dtype == "u8":
            return v & 0xFF
        bits = _INT_BITS[dtype]
        if bits == 64:
            return v
        half = 1 << (bits - 1)
        return ((v + half) & ((1 << bits) - 1)) - half
    if dtype == "f64":
        return x.astype(np.float64)
    if dtype == "f32":
        return x.astype(np.float32).astype(np.float64)
    if dtype == "f16":
        return x.astype(np.float16).astype(np.float64)
    if dtype == "tf32":  # f32 with a 10-bit mantissa, rounded to nearest even
        b = x.astype(np.float32).view(np.uint32)
        b = (b + np.uint32(0xFFF) + ((b >> np.uint32(13)) & np.uint32(1))) & np.uint32(0xFFFFE000)
        return b.view(np.float32).astype(np.float64)
    return x.astype(_ml_dtype(dtype)).astype(np.float64)


def storage(dtype: str) -> Any:
    return np.bool_ if dtype == "bool" else (np.int64 if is_integer_dtype(dtype) else np.float64)


# ----------------------------------------------------------------------- functions

def _erf(x):
    try:
        from scipy.special import erf
    except ImportError:  # scipy comes with jax; fall back to the scalar function
        return np.vectorize(math.erf, otypes=[np.float64])(x)
    return erf(x)


def _cmp(f):
    return lambda a, b: f(a, b).astype(np.float64)


_FUNCTIONS: Dict[str, Callable[..., Any]] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "pow": np.power, "neg": np.negative, "abs": np.abs, "relu": lambda a: np.maximum(a, 0),
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda a: 1 / np.sqrt(a),
    "tanh": np.tanh, "erf": _erf, "sigmoid": lambda a: 1 / (1 + np.exp(-a)),
    "sin": np.sin, "cos": np.cos, "floor": np.floor, "ceil": np.ceil,
    "max": np.maximum, "min": np.minimum, "mod": np.mod,
    "select": lambda c, a, b: np.where(c != 0, a, b),
    "lt": _cmp(np.less), "le": _cmp(np.less_equal), "gt": _cmp(np.greater),
    "ge": _cmp(np.greater_equal), "eq": _cmp(np.equal), "ne": _cmp(np.not_equal),
}
_IDENTITY = {"sum": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}
_UFUNC = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


# ----------------------------------------------------------------------- nests


class _Chunk:
    """The loop variables' values over one chunk of a nest (broadcastable arrays) and the
    mask of its live points (None: every point is live)."""

    def __init__(self, values: Dict[str, np.ndarray], mask: Optional[np.ndarray], shape):
        self.values = values
        self.mask = mask
        self.shape = shape


class _Nest:
    """One nest, statement by statement. In a recurrence (`work`: the recurrence's values by
    trace id, written in place) the nest runs one step, `step` = (variable, value), and
    rounds only that step's elements."""

    def __init__(self, op: Dict[str, Any], values: Dict[int, np.ndarray],
                 tensors: Dict[int, Dict[str, Any]], file: str, clock: "_Clock",
                 work: Optional[Dict[int, np.ndarray]] = None,
                 step: Optional[Tuple[str, int]] = None):
        self.clock = clock
        self.work = work
        self.step = step
        self.op = op
        self.args = op["args"]
        self.values = values
        self.tensors = tensors
        self.file = file
        self.loops = self.args["loops"]
        self.ranges = self.loop_ranges()

    def fail(self, kind: str, line: int, message: str):
        return refusal(kind, self.file, line, message)

    # -- the iteration space

    def loop_ranges(self) -> List[Tuple[int, int, int]]:
        """(first value, count, step) of each loop's box (a triangular bound takes the widest
        range of its outer loops; the bound itself becomes a mask)."""
        out: List[Tuple[int, int, int]] = []
        lo_hi: Dict[str, Tuple[int, int]] = {}
        for lp in self.loops:
            start = self.extreme(lp["start"], lo_hi, min)
            stop = self.extreme(lp["stop"], lo_hi, max)
            step = lp["step"]
            count = max(0, -(-(stop - start) // step))
            if count == 0:
                raise self.fail("shape_mismatch", lp["line"],
                                f"the loop over `{lp['var']}` runs no iteration")
            out.append((start, count, step))
            lo_hi[lp["var"]] = (start, start + (count - 1) * step)
        return out

    def extreme(self, tree, lo_hi, pick) -> int:
        terms, const = affine_form(tree)
        v = const
        for var, k in terms.items():
            lo, hi = lo_hi[var]
            v += pick(k * lo, k * hi)
        return v

    def chunks(self):
        n = len(self.loops)
        counts = [c for _, c, _ in self.ranges]
        inner = 1
        split = n
        while split > 0 and inner * counts[split - 1] <= CHUNK_POINTS:
            split -= 1
            inner *= counts[split]
        # loops [0, split-1) one value at a time, loop split-1 in blocks, the rest whole
        block = max(1, CHUNK_POINTS // inner)
        outer = [range(counts[k]) for k in range(max(0, split - 1))]
        for prefix in np.ndindex(*[len(r) for r in outer]) if outer else [()]:
            if split == 0:
                yield self.chunk([(0, counts[k]) for k in range(n)])
                return
            for b in range(0, counts[split - 1], block):
                spans = [(i, i + 1) for i in prefix]
                spans.append((b, min(b + block, counts[split - 1])))
                spans += [(0, counts[k]) for k in range(split, n)]
                yield self.chunk(spans)

    def chunk(self, spans: Sequence[Tuple[int, int]]) -> _Chunk:
        n = len(spans)
        values = {}
        for k, ((first, _, step), (a, b)) in enumerate(zip(self.ranges, spans)):
            shape = [1] * n
            shape[k] = b - a
            values[self.loops[k]["var"]] = (first + step * np.arange(a, b)).reshape(shape)
        shape = tuple(b - a for a, b in spans)
        mask = None
        for lp in self.loops:  # triangular bounds
            if affine_form(lp["start"])[0] or affine_form(lp["stop"])[0]:
                v = values[lp["var"]]
                live = (v >= self.index(lp["start"], values)) & (v < self.index(lp["stop"], values))
                mask = live if mask is None else mask & live
        return _Chunk(values, mask, shape)

    # -- expressions

    def index(self, tree, values) -> Any:
        terms, const = affine_form(tree)
        out: Any = const
        for var, k in terms.items():
            out = out + k * values[var]
        return out

    def live(self, chunk: _Chunk, guards) -> Optional[np.ndarray]:
        mask = chunk.mask
        for g in guards:
            a, b = self.index(g["lhs"], chunk.values), self.index(g["rhs"], chunk.values)
            c = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
                 "eq": np.equal}[g["cmp"]](a, b)
            mask = c if mask is None else mask & c
        return None if mask is None else np.broadcast_to(mask, chunk.shape)

    def element_index(self, index, shape, chunk: _Chunk, mask, name: str, line: int,
                      write: bool) -> Tuple[np.ndarray, ...]:
        """The subscript's integer arrays, checked to stay inside `shape` at live points and
        clipped elsewhere."""
        out = []
        for d, tree in enumerate(index):
            v = np.broadcast_to(np.asarray(self.index(tree, chunk.values)), chunk.shape)
            bad = (v < 0) | (v >= shape[d])
            if mask is not None:
                bad = bad & mask
            if bad.any():
                at = int(v[bad].flat[0])
                raise self.fail("shape_mismatch", line,
                                f"{'writes' if write else 'reads'} `{name}` at {at} in dimension "
                                f"{d} of size {shape[d]}: guard the statement so it stays inside")
            out.append(np.clip(v, 0, shape[d] - 1) if mask is not None else v)
        return tuple(out)

    def value(self, tree, chunk: _Chunk, mask, line: int) -> Any:
        if isinstance(tree, (int, float)):
            return float(tree)
        if isinstance(tree, dict) and "float" in tree:
            return float(tree["float"])
        if "load" in tree:
            t = self.tensors[tree["load"]]
            arr = self.values[tree["load"]]
            idx = self.element_index(tree["index"], arr.shape, chunk, mask,
                                     t.get("name", ""), line, write=False)
            return arr[idx] if arr.ndim else np.broadcast_to(arr, chunk.shape)
        if tree.get("fn") == "cast":
            return round_to(self.value(tree["args"][0], chunk, mask, line), tree["dtype"])
        args = [self.value(a, chunk, mask, line) for a in tree["args"]]
        with np.errstate(all="ignore"):
            return _FUNCTIONS[tree["fn"]](*args)

    # -- statements

    def run(self) -> List[np.ndarray]:
        outs = []
        for st, out_id in zip(self.args["statements"], self.op["outputs"]):
            outs.append(self.statement(st, out_id))
        return outs

    def statement(self, st: Dict[str, Any], out_id: int) -> np.ndarray:
        target = self.tensors[out_id]
        line = st["line"]
        shape = tuple(target["shape"])
        prior = st["target"]["prior"]
        if self.work is not None:
            out = self.work[out_id]
        else:
            out = (np.array(self.values[prior["tensor"]], dtype=np.float64, copy=True)
                   if "tensor" in prior else np.full(shape, float(_number(prior["fill"]))))
        index = st["target"]["index"]
        kind, body = reduction_of(st["value"], index)
        self.check_loops_used(body, index, line, "assignment" if kind is None else "reduction")
        if kind is None:
            if has_self(st["value"]):
                raise self.fail("outside_language", line,
                                f"reads `{st['target']['name']}` other than as `T[s] = T[s] op "
                                "e`: a loop-carried dependence")
            self.check_assignment(index, line, st["target"]["name"])
        for chunk in self.chunks():
            self.clock.check(self.file, line)
            mask = self.live(chunk, st["guards"])
            if mask is not None and not mask.any():
                continue
            vals = np.broadcast_to(np.asarray(self.value(body, chunk, mask, line),
                                              dtype=np.float64), chunk.shape)
            idx = self.element_index(index, shape, chunk, mask, st["target"]["name"], line,
                                     write=True)
            if kind is None:
                if not idx:  # a 0-d target: each of its loops has one value (check_assignment)
                    out[()] = vals[mask].reshape(-1)[0] if mask is not None else vals.flat[0]
                elif mask is None:
                    out[tuple(np.broadcast_to(i, chunk.shape) for i in idx)] = vals
                else:
                    out[tuple(np.broadcast_to(i, chunk.shape)[mask] for i in idx)] = vals[mask]
            else:
                self.reduce(out, kind, vals, idx, mask, index, chunk)
        if self.work is not None:  # the step's element of each dimension, rounded in place
            d, a = step_dim(index, self.step[0])
            at = tuple(self.step[1] + a if k == d else slice(None) for k in range(out.ndim))
            out[at] = round_to(out[at], target["dtype"])
            return out
        return round_to(out, target["dtype"])

    def check_loops_used(self, body, index, line: int, what: str) -> None:
        """A loop that no subscript of the statement uses repeats its work: refused unless it
        runs once (the lifting's rule)."""
        used = set()
        for tree in list(index) + _subscripts(body):
            used.update(affine_form(tree)[0])
        for lp, (_, count, _) in zip(self.loops, self.ranges):
            if lp["var"] not in used and count > 1:
                raise self.fail("outside_language", line,
                                f"the loop over `{lp['var']}` is used by no subscript of this "
                                f"{what}: its iterations would repeat the same work")

    def check_assignment(self, index, line: int, name: str) -> None:
        """An assignment writes each element once: every loop variable is in the target's
        subscript, and each dimension's subscript is a mixed-radix number of its variables
        (`g*G + r` with r over G values: the lifting's rule, trees.writes_once)."""
        counts = {lp["var"]: (count, step) for lp, (_, count, step) in
                  zip(self.loops, self.ranges)}
        seen: set = set()
        for tree in index:
            terms, _ = affine_form(tree)
            if not writes_once([(k * counts[v][1], counts[v][0]) for v, k in terms.items()]):
                raise self.fail("outside_language", line,
                                f"writes `{name}` at a subscript of several loop variables whose "
                                "values overlap: an assignment writes each element once")
            seen.update(terms)
        missing = [lp["var"] for lp, (_, count, _) in zip(self.loops, self.ranges)
                   if lp["var"] not in seen and count > 1]
        if missing:
            raise self.fail("outside_language", line,
                            f"the assignment to `{name}` repeats over `{', '.join(missing)}` "
                            "(not in its subscript): accumulate with += or max()")

    def reduce(self, out, kind, vals, idx, mask, index, chunk: _Chunk) -> None:
        if mask is not None:
            vals = np.where(mask, vals, _IDENTITY[kind])
        axes = [next(iter(affine_form(t)[0])) if _plain_var(t) else None for t in index]
        var_axis = {lp["var"]: k for k, lp in enumerate(self.loops)}
        if all(a is not None for a in axes) and len(set(axes)) == len(axes):
            # every target dimension a distinct loop variable: reduce the other axes at once
            keep = [var_axis[a] for a in axes]
            drop = tuple(k for k in range(len(self.loops)) if k not in keep)
            r = _UFUNC[kind].reduce(vals, axis=drop) if drop else vals
            r = np.transpose(r, np.argsort(np.argsort(keep)))
            sel = np.ix_(*[np.ravel(chunk.values[a]) for a in axes]) if axes else ()
            out[sel] = _UFUNC[kind](out[sel], r)
            return
        full = tuple(np.broadcast_to(i, chunk.shape) for i in idx)
        _UFUNC[kind].at(out, tuple(i.ravel() for i in full), vals.ravel())


def _subscripts(tree) -> List[Any]:
    """Every subscript expression of the tensor reads in a value tree."""
    if not isinstance(tree, dict):
        return []
    out = list(tree.get("index", []))
    for a in tree.get("args", []):
        out += _subscripts(a)
    return out


def _plain_var(tree) -> bool:
    return isinstance(tree, dict) and "var" in tree


def _number(x) -> float:
    return float(x["float"]) if isinstance(x, dict) else float(x)


# ----------------------------------------------------------------------- intrinsics


def _scatter(data, index, src, dim: int, reduce: str, mode: str) -> np.ndarray:
    """The IR's scatter (docs/executor.md): a copy of data, src written or combined in."""
    out = np.array(data, dtype=np.float64, copy=True)
    index = np.asarray(index)
    index = np.where(index < 0, index + data.shape[dim], index)
    if mode == "take":  # out[a.., index[j..], b..] op= src[a.., j.., b..]
        target = np.moveaxis(out, dim, 0)
        k = index.ndim
        values = np.moveaxis(np.asarray(src), list(range(dim, dim + k)), list(range(k)))
        values = values.reshape((-1,) + target.shape[1:])
        where: Any = index.ravel()
    else:  # out[p with p[dim] = index[p]] op= src[p]
        target = out
        grid = list(np.indices(index.shape))
        grid[dim] = index
        where = tuple(grid)
        values = np.asarray(src)[tuple(slice(0, n) for n in index.shape)]
    if reduce == "none":  # the last write in row-major order wins
        if mode == "take":
            for j, i in enumerate(where):
                target[i] = values[j]
        else:
            target[where] = values
    elif reduce == "mean":  # the data counts as one value (include_self)
        np.add.at(target, where, values)
        counts = np.ones(target.shape)
        np.add.at(counts, where, 1.0)
        target /= counts
    else:
        _UFUNC[reduce].at(target, where, values)
    return out


def _gather(data, index, dim: int, mode: str) -> np.ndarray:
    index = np.asarray(index)
    if mode == "take":
        return np.take(data, index, axis=dim)
    return np.take_along_axis(data[tuple(slice(0, n) if d != dim else slice(None)
                                         for d, n in enumerate(index.shape))], index, axis=dim)


def _slice(x, a) -> np.ndarray:
    sel = [slice(None)] * x.ndim
    sel[a["dim"]] = slice(a["start"], a["stop"], a["step"])
    return x[tuple(sel)]


_INTRINSICS: Dict[str, Callable[[Callable[[Any], np.ndarray], Dict[str, Any]], np.ndarray]] = {
    "loopir::fill": None,  # needs the output's shape: handled in run_trace
    "loopir::reshape": lambda v, a: v(a["self"]).reshape(a["shape"]),
    "loopir::permute": lambda v, a: np.transpose(v(a["self"]), a["perm"]),
    "loopir::slice": lambda v, a: _slice(v(a["self"]), a),
    "loopir::select": lambda v, a: v(a["self"])[tuple(a["index"])],
    "loopir::concat": lambda v, a: np.concatenate([v(t) for t in a["tensors"]], axis=a["dim"]),
    "loopir::stack": lambda v, a: np.stack([v(t) for t in a["tensors"]], axis=a["dim"]),
    "loopir::gather": lambda v, a: _gather(v(a["data"]), v(a["index"]), a["dim"], a["mode"]),
    "loopir::scatter": lambda v, a: _scatter(v(a["data"]), v(a["index"]), v(a["src"]),
                                             a["dim"], a["reduce"], a["mode"]),
    "loopir::apply_mask": lambda v, a: v(a["self"]) * v(a["mask"]),
    "loopir::cast": lambda v, a: v(a["self"]),
}


class _Recurrence:
    """A recurrence (recurrence.py): its steps in order, each running the nests with the step
    variable fixed; the statements write into the recurrence's values in place, so a read of
    what it writes sees the steps before (and, from a later nest, the step itself)."""

    def __init__(self, op: Dict[str, Any], values: Dict[int, np.ndarray],
                 tensors: Dict[int, Dict[str, Any]], file: str, clock: "_Clock"):
        self.op, self.values, self.tensors, self.file, self.clock = op, values, tensors, file, clock

    def run(self) -> List[np.ndarray]:
        args, outputs = self.op["args"], self.op["outputs"]
        step = args["step"]
        work: Dict[int, np.ndarray] = {}
        for st, out_id in zip(args["statements"], outputs):
            prior = st["target"]["prior"]
            work[out_id] = (np.array(self.values[prior["tensor"]], dtype=np.float64, copy=True)
                            if "tensor" in prior else
                            np.full(tuple(self.tensors[out_id]["shape"]),
                                    float(_number(prior["fill"]))))
            self.values[out_id] = work[out_id]
        nests = []
        for j, nest in enumerate(args["nests"]):
            mine = [(st, o) for st, o in zip(args["statements"], outputs) if st["nest"] == j]
            loop = {"var": step["var"], "start": 0, "stop": 1, "step": 1, "line": step["line"]}
            nests.append((loop, {"args": {"loops": [loop] + list(nest["loops"]),
                                          "statements": [st for st, _ in mine]},
                                 "outputs": [o for _, o in mine]}))
        for value in range(step["start"], step["stop"], step["step"]):
            for loop, op in nests:
                if not op["outputs"]:
                    continue
                loop["start"], loop["stop"] = value, value + 1
                _Nest(op, self.values, self.tensors, self.file, self.clock, work,
                      (step["var"], value)).run()
        return [round_to(work[o], self.tensors[o]["dtype"]) for o in outputs]


class _Clock:
    """The interpreter's wall-clock limit: checked before each chunk of points."""

    def __init__(self, seconds: Optional[float]):
        self.seconds = seconds
        self.deadline = None if seconds is None else time.monotonic() + seconds

    def check(self, file: str, line: int) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            where = f"{file}:{line}" if line else file
            raise user_error(f"{where}: the loop interpreter ran past its time limit of "
                             f"{self.seconds:g} s here (docs/loop-language.md, \"Limits\"): "
                             "validate at smaller sizes (--shrink N, --set NAME=VALUE)",
                             "too_large")


def run_trace(trace: Dict[str, Any], sources: Dict[int, np.ndarray],
              seconds: Optional[float] = None) -> Dict[int, np.ndarray]:
    """Runs a loopir trace on `sources` (trace id -> array for every tensor no op writes);
    returns every tensor's value by trace id. Past `seconds` of wall-clock time (None: no
    limit) it stops with solar.UserError, kind too_large."""
    clock = _Clock(seconds)
    tensors = {t["id"]: t for t in trace["tensors"]}
    values: Dict[int, np.ndarray] = {
        k: round_to(v, tensors[k]["dtype"]) for k, v in sources.items()}
    file = trace.get("source", "")
    for op in trace["ops"]:
        name = op["op"]
        if name == "loopir::nest":
            results = _Nest(op, values, tensors, op.get("file", file), clock).run()
        elif name == "loopir::recurrence":
            results = _Recurrence(op, values, tensors, op.get("file", file), clock).run()
        elif name == "loopir::fill":
            t = tensors[op["outputs"][0]]
            results = [np.full(tuple(t["shape"]), _number(op["args"]["value"]))]
        elif name in _INTRINSICS:
            results = [_INTRINSICS[name](lambda r: values[r["tensor"]], op["args"])]
        else:
            raise refusal("outside_language", op.get("file", file), op.get("line", 0),
                          f"the trace holds an op the loop language does not have: {name}")
        clock.check(op.get("file", file), op.get("line", 0))
        for out_id, r in zip(op["outputs"], results):
            values[out_id] = round_to(np.asarray(r), tensors[out_id]["dtype"])
    return values
