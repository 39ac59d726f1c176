"""The loop language (docs/loop-language.md): Solar's way in for any tensor program written as
affine loop nests.

A loop program imports its vocabulary from here (`from solar.loopir import Tensor, kernel,
exp`), so editors know the names; Solar never runs it as Python: it parses it with `ast`,
interprets its model() and lifts each nest to einsum ops. From Python:

    import solar.loopir as loopir
    r = loopir.analyze("examples/loops/gemm.py", arch=["H100_SXM"])
    outs = loopir.run("examples/loops/gemm.py", set={"M": 64})      # {output name: array}
    v = loopir.validate("examples/loops/gemm.py", reference="examples/loops/gemm_torch.py")
"""

from __future__ import annotations

import math
from typing import Any, Dict, Iterable, Mapping, Optional, Union

from . import programs
from .analysis import ProgramOptions

__all__ = [
    # the language (for editors; a loop program is interpreted, never executed)
    "Tensor", "kernel", "exp", "log", "sqrt", "rsqrt", "tanh", "erf", "sigmoid", "sin", "cos",
    "abs", "relu", "floor", "ceil", "min", "max", "where", "select", "cast", "reshape",
    "permute", "slice", "concat", "stack", "gather", "scatter", "apply_mask", "inf", "pi",
    # the API
    "load_trace", "lift", "analyze", "run", "validate",
]

_INTERPRETED = ("a loop program is interpreted by Solar, not run as Python: "
                "`solar analyze prog.py` or `solar validate prog.py`")


class Tensor:
    """`Tensor(dims, dtype="f32", role="scratch", sparsity=None, fill=None, name=None)`: a
    tensor declaration of a loop program (docs/loop-language.md, "Tensors")."""

    def __init__(self, dims: str, dtype: str = "f32", role: str = "scratch",
                 sparsity: Any = None, fill: Optional[float] = None, name: Optional[str] = None):
        self.dims, self.dtype, self.role = dims, dtype, role
        self.sparsity, self.fill, self.name = sparsity, fill, name

    def __getitem__(self, key):
        raise TypeError(_INTERPRETED)

    def __setitem__(self, key, value):
        raise TypeError(_INTERPRETED)


def kernel(fn):
    """Marks a loop-nest kernel (docs/loop-language.md, "Kernels")."""
    return fn


def _intrinsic(name: str):
    def f(*args, **kwargs):
        raise TypeError(f"{name}(): {_INTERPRETED}")
    f.__name__ = name
    f.__doc__ = f"The loop language's `{name}` (docs/loop-language.md)."
    return f


exp = _intrinsic("exp")
log = _intrinsic("log")
sqrt = _intrinsic("sqrt")
rsqrt = _intrinsic("rsqrt")
tanh = _intrinsic("tanh")
erf = _intrinsic("erf")
sigmoid = _intrinsic("sigmoid")
sin = _intrinsic("sin")
cos = _intrinsic("cos")
abs = _intrinsic("abs")  # noqa: A001 (the language's name)
relu = _intrinsic("relu")
floor = _intrinsic("floor")
ceil = _intrinsic("ceil")
min = _intrinsic("min")  # noqa: A001
max = _intrinsic("max")  # noqa: A001
where = _intrinsic("where")
select = _intrinsic("select")
cast = _intrinsic("cast")
reshape = _intrinsic("reshape")
permute = _intrinsic("permute")
slice = _intrinsic("slice")  # noqa: A001
concat = _intrinsic("concat")
stack = _intrinsic("stack")
gather = _intrinsic("gather")
scatter = _intrinsic("scatter")
apply_mask = _intrinsic("apply_mask")
inf = float("inf")
pi = math.pi


def _overrides(values: Optional[Mapping[str, Any]]) -> Dict[str, str]:
    return {str(k): str(v) for k, v in (values or {}).items()}


def load_trace(path: str, set: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:  # noqa: A002
    """The OpTrace (frontend "loopir") the recorder writes for the program at `path`."""
    return programs.loop_program().load(path, _overrides(set)).trace


def lift(path: str, set: Optional[Mapping[str, Any]] = None):  # noqa: A002
    """The EinsumGraph lifted from the loop program at `path`."""
    program = programs.loop_program()
    graph, _ = program.lift(program.load(path, _overrides(set)))
    return graph


def analyze(path: str, arch: Union[str, Iterable[str]] = "H100_SXM",
            set: Optional[Mapping[str, Any]] = None, validate: bool = False,  # noqa: A002
            reference: Optional[str] = None, **options):
    """Lifts and analyzes a loop program (the Report `solar analyze prog.py` prints). With
    validate (or a reference), also runs it and validates the graph (section `validation`).
    options: policy, cache_state, mode, cache_aware, max_mappings."""
    archs = [arch] if isinstance(arch, str) else list(arch)
    opts = ProgramOptions(archs=archs, overrides=_overrides(set), crosscheck=False,
                          validate=validate or reference is not None, **options)
    opts.reference = reference
    return programs.analyze_loop_file(path, opts).report


def run(path: str, set: Optional[Mapping[str, Any]] = None,  # noqa: A002
        inputs: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """Runs the loop program with its interpreter: {output name: numpy array}. `inputs` maps
    input/weight/constant names to arrays; the rest are drawn as validation draws them."""
    import numpy as np

    validation = programs.loop_validation()
    lp = programs.loop_program().load(path, _overrides(set))
    programs.loop_program().check_runnable(path, _overrides(set), lp, "running it")
    sources = validation.make_inputs(lp)
    by_name = {t["name"]: t for t in validation.source_tensors(lp.trace)}
    for name, value in (inputs or {}).items():
        if name not in by_name:
            raise ValueError(f"{path}: `{name}` is not an input, weight or constant "
                             f"(they are {', '.join(by_name)})")
        t = by_name[name]
        arr = np.asarray(value)
        if tuple(arr.shape) != tuple(t["shape"]):
            raise ValueError(f"`{name}` has shape {list(t['shape'])}, got {list(arr.shape)}")
        sources[t["id"]] = arr
    values = programs.loop_interpret().run_trace(lp.trace, sources)
    return {name: values[tid] for name, tid in lp.outputs}


def validate(path: str, reference: Optional[str] = None,
             set: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:  # noqa: A002
    """The `validation` section of `solar validate prog.py [--reference ref.py]`."""
    program = programs.loop_program()
    lp = program.load(path, _overrides(set))
    program.check_runnable(path, _overrides(set), lp)
    graph, trace_ids = program.lift(lp)
    return programs.loop_validation().validate(lp, graph, trace_ids, reference)
