"""The composition intrinsics of a loop program's model() (docs/loop-language.md, "The
model"): reshape, permute, slice, W[l], concat, stack, gather, scatter, apply_mask and cast.
Each checks its shapes, emits one `loopir::` op and returns a new read-only tensor."""

from __future__ import annotations

import ast
import math
from typing import Any, Dict, List, Optional, Sequence

from . import language as lang
from .language import refusal
from .scope import Handle, Scope
from .syntax import dims_value


def kept_sparsity(x: Handle, rows_whole: bool) -> Optional[Dict[str, Any]]:
    """The declared sparsity a view of x keeps: an unstructured zero fraction always (zeros
    are assumed spread evenly, docs/cost.md); 2:4 only when the view keeps its rows — the
    groups of 4 along the last dimension — whole."""
    sp = x.decl.sparsity
    if sp is None or (sp.get("structured_2_4") and not rows_whole):
        return None
    return dict(sp)


class Intrinsics:
    """The composition intrinsics of model(): each emits one op and returns its result."""

    def __init__(self, scope: Scope, line: int, name: str):
        self.s = scope
        self.rec = scope.rec
        self.path = scope.path
        self.line = line
        self.name = name

    def fail(self, kind: str, message: str):
        return refusal(kind, self.path, self.line, message)

    def bind_args(self, call: ast.Call, params: Sequence[str],
                  required: int) -> Dict[str, ast.expr]:
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
        keeps_rows = bool(shape) and bool(x.shape) and shape[-1] == x.shape[-1]
        return self.emit("loopir::reshape", {"self": self.ref(x), "shape": list(shape)}, shape,
                         x.decl.dtype, kept_sparsity(x, keeps_rows))

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
                         x.decl.dtype, kept_sparsity(x, not perm or perm[-1] == len(perm) - 1))

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
                                           "stop": stop, "step": step}, shape, x.decl.dtype,
                         kept_sparsity(x, dim != len(x.shape) - 1))

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
                         x.shape[len(index):], x.decl.dtype,
                         kept_sparsity(x, len(index) < len(x.shape)))

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
                                                  f"{list(x.shape)} do not "
                                                  f"{'stack' if stack else 'concatenate'} "
                                                  f"along {dim}")
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
                                              f"{src.decl.dtype}, it must be {want} "
                                              f"{data.decl.dtype}")
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
            raise self.fail("outside_language",
                            f"cast to an unknown dtype ({' '.join(lang.DTYPES)})")
        return self.emit("loopir::cast", {"self": self.ref(x), "dtype": dtype}, x.shape, dtype,
                         x.decl.sparsity)
