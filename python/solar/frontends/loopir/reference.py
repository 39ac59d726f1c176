"""`solar validate prog.py --reference ref.py`: a PyTorch, JAX or NumPy program run on the
loop program's inputs, its outputs compared with the loop program's (interpreter) and with
the lifted graph's (executor), each under the output dtype's tolerance.

The reference names its inputs like the loop program's input, weight and constant tensors:
a function `reference(...)`, a KernelBench `Model` (built with `get_init_inputs()`) whose
`forward(...)` takes them, or a function `forward(...)`. It returns one array (the single
output), a tuple or list (the outputs in declaration order) or a dict by output name. The
loop program's --set settings are applied to the reference's module-level constants of the
same names (reference_settings), so both run at the same sizes.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import os
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from ... import _core, executor
from ...errors import user_error
from ...program_source import inject_overrides, is_jax_program, module_constants
from .checks import ReferenceOutputs, check_entry, source_tensors

_TORCH_DTYPES = {"f64": "float64", "f32": "float32", "tf32": "float32", "bf16": "bfloat16",
                 "f16": "float16", "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2",
                 "i64": "int64", "i32": "int32", "i16": "int16", "i8": "int8", "u8": "uint8",
                 "bool": "bool"}


def _framework(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if is_jax_program(path):
        return "jax"
    return "torch" if "import torch" in text or "from torch" in text else "numpy"


def _load_module(path: str, overrides: Optional[Dict[str, str]] = None):
    """The reference as a module; `overrides` (NAME -> VALUE, names it assigns at module
    level) injected after their assignments, as --set does to any program."""
    name = f"solar_reference_{abs(hash(os.path.abspath(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise user_error(f"{path}: cannot be loaded as a Python module", "io")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    if not overrides:
        spec.loader.exec_module(mod)
        return mod
    with open(path, encoding="utf-8") as f:
        tree = inject_overrides(ast.parse(f.read(), filename=path), path, overrides)
    exec(compile(tree, path, "exec"), mod.__dict__)  # the reference is the user's program
    return mod


def reference_settings(path: str, overrides: Dict[str, str]) -> Dict[str, Any]:
    """Which of the loop program's --set settings the reference gets: `applied`, those it
    assigns at module level (its constants of the same names, so a shrunk window is the
    same window in both), and `not_in_reference`, the others."""
    try:
        with open(path, encoding="utf-8") as f:
            names = module_constants(ast.parse(f.read(), filename=path))
    except (OSError, SyntaxError, ValueError):
        names = set()
    return {"applied": {k: v for k, v in overrides.items() if k in names},
            "not_in_reference": sorted(k for k in overrides if k not in names)}


def _callable(mod, path: str) -> Callable[..., Any]:
    if callable(getattr(mod, "reference", None)):
        return mod.reference
    if isinstance(getattr(mod, "Model", None), type):
        init = mod.get_init_inputs() if callable(getattr(mod, "get_init_inputs", None)) else []
        model = mod.Model(*init)
        if hasattr(model, "eval"):
            model.eval()
        return model
    if callable(getattr(mod, "forward", None)):
        return mod.forward
    raise user_error(f"{path}: a reference defines reference(...), a Model class or "
                     "forward(...)", "parse")


def _convert(arr: np.ndarray, dtype: str, framework: str) -> Any:
    if framework == "torch":
        import torch

        t = torch.from_numpy(np.ascontiguousarray(arr))
        return t.to(getattr(torch, _TORCH_DTYPES.get(dtype, "float32")))
    if framework == "jax":
        import jax.numpy as jnp

        return jnp.asarray(arr, dtype=_TORCH_DTYPES.get(dtype, "float32"))
    return arr


def _to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach()
        if str(x.dtype) in ("torch.bfloat16",) or "float8" in str(x.dtype):
            x = x.float()
        return x.cpu().numpy()
    return np.asarray(x, dtype=np.float64) if "bfloat16" in str(getattr(x, "dtype", "")) \
        else np.asarray(x)


def run_reference(path: str, named_inputs: Dict[str, Tuple[np.ndarray, str]],
                  output_names: List[str], overrides: Optional[Dict[str, str]] = None
                  ) -> Tuple[str, Dict[str, np.ndarray]]:
    """(framework, {output name: array}) of the reference program at `path`, its module
    constants set by `overrides` (names it assigns: reference_settings)."""
    if not os.path.isfile(path):
        raise user_error(f"{path}: no such file", "io")
    framework = _framework(path)
    try:
        fn = _callable(_load_module(path, overrides), path)
        target = fn.forward if hasattr(fn, "forward") and not inspect.isfunction(fn) else fn
        params = list(inspect.signature(target).parameters)
        missing = [p for p in params if p not in named_inputs]
        if missing:
            raise user_error(f"{path}: the reference takes {', '.join(missing)}, which the loop "
                             f"program does not declare (it has {', '.join(named_inputs)})",
                             "usage")
        args = [_convert(*named_inputs[p], framework) for p in params]
        if framework == "torch":
            import torch

            with torch.no_grad():
                result = fn(*args)
        else:
            result = fn(*args)
    except _core.Error:
        raise
    except Exception as e:  # the reference itself failed
        raise user_error(f"{path}: the reference program failed: {type(e).__name__}: {e}",
                         "usage") from None
    if isinstance(result, dict):
        values = {k: _to_numpy(v) for k, v in result.items()}
    else:
        seq = list(result) if isinstance(result, (tuple, list)) else [result]
        if len(seq) != len(output_names):
            raise user_error(f"{path}: the reference returns {len(seq)} outputs, the loop "
                             f"program {len(output_names)} ({', '.join(output_names)})", "usage")
        values = {n: _to_numpy(v) for n, v in zip(output_names, seq)}
    return framework, values


def compare_reference(path, lp, sources, values, graph, trace_ids, graph_inputs):
    """The `validation.reference` section: each output of the reference (a program at
    `path`, run here on `sources`, or a ReferenceOutputs) compared with the loop program's
    (its interpreter) and the lifted graph's (the executor)."""
    dtypes = {t["id"]: t["dtype"] for t in lp.trace["tensors"]}
    compare_as: Dict[str, str] = {}
    settings = None
    if isinstance(path, ReferenceOutputs):
        framework, ref, compare_as, path = path.framework, path.values, path.compare_dtypes, \
            path.source
    else:
        named = {t["name"]: (sources[t["id"]], t["dtype"]) for t in source_tensors(lp.trace)}
        settings = reference_settings(path, lp.overrides) if lp.overrides else None
        framework, ref = run_reference(path, named, [n for n, _ in lp.outputs],
                                       settings["applied"] if settings else None)
    graph_out = executor.run(graph, graph_inputs)
    by_id = {tid: name for name, tid in trace_ids.items()}
    section: Dict[str, Any] = {"source": path, "framework": framework, "outputs": []}
    if settings:
        section["settings"] = settings
    passed = True
    for name, tid in lp.outputs:
        if name not in ref:
            raise user_error(f"{path}: the reference returns no output `{name}`", "usage")
        dtype = getattr(_core.DType, compare_as.get(name, dtypes[tid]))
        want = np.require(ref[name], dtype=np.float64, requirements="C")
        if want.shape != tuple(values[tid].shape):
            unset = (f" (--set {', '.join(settings['not_in_reference'])} names no module-level "
                     "constant of the reference, which kept its own value)"
                     if settings and settings["not_in_reference"] else "")
            raise user_error(f"{path}: the reference's `{name}` has shape {list(want.shape)}, "
                             f"the loop program's {list(values[tid].shape)}{unset}", "usage")
        got = {"loop": values[tid], "graph": graph_out[by_id[tid]]}
        loop, lifted = (_core.compare(by_id[tid], {
            "got": np.require(got[k], dtype=np.float64, requirements="C"), "want": want}, dtype)
            for k in ("loop", "graph"))
        entry = {"name": name, "loop_program": check_entry(loop, graph, tid),
                 "graph": check_entry(lifted, graph, tid)}
        if name in compare_as:
            entry["compared_at"] = compare_as[name]
        passed = passed and bool(loop.passed) and bool(lifted.passed)
        section["outputs"].append(entry)
    section["status"] = "passed" if passed else "failed"
    return section
