"""The source program, run in a subprocess of its own (`python -m solar.translate.runner
SPEC.json`) under the time and memory limits SPEC gives, set here with setrlimit before the
source is loaded. It writes the data a translation is checked against (docs/translate.md,
"Same inputs"):

- reference.npz: `inputs/<name>` (get_inputs(), named after the entry point's arguments),
  `weights/<name>` (the model's state_dict(), `.` written `__`; a Flax model's variables,
  `/` written `__`), `outputs/<i>` (what the entry point returns, in order) and
  `sizes/<NAME>` (the size constants it ran at), at the first setting of the shrink ladder
  under which the source runs;
- reference.json: the tensors' source names, dtypes and shapes, the sizes, the settings the
  source failed at, the tensors at the source's own sizes (shapes only: meta tensors, or
  jax.eval_shape) and, for PyTorch and JAX, Solar's own capture of the source at its own sizes
  (its work of every kind, compulsory bytes and fused SOL: capture.py, compared with the
  translation's).

The loop program never comes here: this process sees the source only.
"""

from __future__ import annotations

import inspect
import json
import os
import random
import resource
import sys
import traceback
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .. import programs
from ..analysis import ProgramOptions
from ..frontends.jax.program import load_program, program_from_module  # no jax import
from ..frontends.loopir.language import canonical_dtype
from . import capture
from .source import PRECISION_NAME

SEED = 0


def loop_name(key: str) -> str:
    """The loop tensor name of a state_dict key or variable path: `.` and `/` written `__`,
    a leading digit prefixed with `_` (docs/translate.md)."""
    name = key.replace(".", "__").replace("/", "__")
    return "_" + name if name[:1].isdigit() else name


def _limit(spec: Dict[str, Any]) -> None:
    mem = spec.get("memory_bytes")
    if mem:
        resource.setrlimit(resource.RLIMIT_AS, (int(mem), int(mem)))
    cpu = spec.get("cpu_seconds")
    if cpu:
        resource.setrlimit(resource.RLIMIT_CPU, (int(cpu), int(cpu) + 5))


def _dtype(x: Any) -> Optional[str]:
    name = str(getattr(x, "dtype", type(x).__name__)).replace("torch.", "")
    return canonical_dtype(name)


def _array(x: Any) -> np.ndarray:
    """x as NumPy: narrow floats (bf16, f16, fp8) widened to f32 exactly, ints to i64."""
    if hasattr(x, "detach"):  # torch
        x = x.detach().cpu()
        if x.is_floating_point() and x.dtype.itemsize < 4:
            x = x.float()
        return x.numpy()
    a = np.asarray(x)
    if a.dtype.kind == "f" and a.dtype.itemsize < 4 or a.dtype.kind == "V" or \
            "bfloat16" in str(a.dtype) or "float8" in str(a.dtype):
        a = a.astype(np.float32)
    return a


def _is_tensor(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _seed(framework: str) -> None:
    random.seed(SEED)
    np.random.seed(SEED)
    if framework == "torch":
        import torch

        torch.manual_seed(SEED)


def _arg_names(fn: Any, count: int, path: str) -> List[str]:
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(params) < count:
        raise ValueError(f"{path}: get_inputs() gives {count} values, the entry point takes "
                         f"{len(params)} named arguments (name them: they name the loop "
                         "program's tensors)")
    return [p.name for p in params[:count]]


def _outputs(result: Any) -> Tuple[List[Any], Optional[List[str]]]:
    if isinstance(result, dict):
        return list(result.values()), [str(k) for k in result]
    if isinstance(result, (tuple, list)):
        return list(result), None
    return [result], None


class Loaded:
    """The source's entry point, its arguments and its parameters at one size setting."""

    def __init__(self, path: str, framework: str, overrides: Dict[str, str], abstract: bool):
        _seed(framework)
        mod = load_program(path, overrides)
        if not callable(getattr(mod, "get_inputs", None)):
            raise ValueError(f"{path}: the source defines no get_inputs(): Solar runs a Python "
                             "source on its own inputs (or give --reference DATA.npz)")
        self.framework = framework
        self.precision = getattr(mod, PRECISION_NAME, None)
        self.weights: Dict[str, Any] = {}
        init = list(mod.get_init_inputs()) if callable(getattr(mod, "get_init_inputs", None)) \
            else []
        if framework == "torch":
            self._torch(mod, init, abstract)
        elif framework == "jax":
            self._jax(mod, path, abstract)
        else:
            self.inputs = list(mod.get_inputs())
            fn = getattr(mod, "reference", None) or getattr(mod, "forward", None)
            if not callable(fn):
                raise ValueError(f"{path}: a NumPy source defines reference(...) or "
                                 "forward(...) beside get_inputs()")
            self.fn, self.signature_of = fn, fn
        self.names = _arg_names(self.signature_of, len(self.inputs), path)

    def _torch(self, mod, init, abstract: bool) -> None:
        import torch

        if isinstance(getattr(mod, "Model", None), type):
            ctx = torch.device("meta") if abstract else _Null()
            with ctx:
                model = mod.Model(*init)
                self.inputs = list(mod.get_inputs())
            model.eval()
            self.fn, self.signature_of = model, model.forward
            self.weights = {k: v for k, v in model.state_dict().items()}
        else:
            fn = getattr(mod, "reference", None) or getattr(mod, "forward", None)
            if not callable(fn):
                raise ValueError("a PyTorch source defines class Model, reference(...) or "
                                 "forward(...) beside get_inputs()")
            with torch.device("meta") if abstract else _Null():
                self.inputs = list(mod.get_inputs())
            self.fn = self.signature_of = fn

    def _jax(self, mod, path: str, abstract: bool) -> None:
        import jax

        prog = program_from_module(mod, path, abstract=abstract)
        self.inputs = list(prog.inputs)
        if prog.params is not None:
            leaves = jax.tree_util.tree_flatten_with_path(prog.params)[0]
            self.weights = {"/".join(_key(k) for k in keypath): v for keypath, v in leaves}
            params = prog.params
            self.fn = lambda *a: prog.fn(params, *a)
            self.signature_of = _drop_self(mod.Model.__call__)
        else:
            self.fn = self.signature_of = prog.fn
        self.jax_program = prog

    def run(self) -> Any:
        if self.framework == "torch":
            import torch

            with torch.no_grad():
                return self.fn(*self.inputs)
        return self.fn(*self.inputs)


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _drop_self(fn):
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())[1:]

    def f(*a):  # pragma: no cover - only its signature is read
        return None

    f.__signature__ = sig.replace(parameters=params)
    return f


def _key(k: Any) -> str:
    for attr in ("key", "name", "idx"):
        if hasattr(k, attr):
            return str(getattr(k, attr))
    return str(k)


def _listing(loaded: Loaded, outs: List[Any], out_names: Optional[List[str]]) -> Dict[str, Any]:
    """The tensors as reference.json and the prompt list them."""
    inputs, scalars = [], []
    for name, x in zip(loaded.names, loaded.inputs):
        if _is_tensor(x):
            inputs.append({"name": name, "dtype": _dtype(x), "shape": list(map(int, x.shape))})
        else:
            scalars.append({"name": name, "value": x if isinstance(x, (int, float, bool, str))
                            else repr(x)})
    weights = [{"source_name": k, "name": loop_name(k), "dtype": _dtype(v),
                "shape": list(map(int, v.shape))} for k, v in loaded.weights.items()
               if _is_tensor(v)]
    outputs = []
    for i, o in enumerate(outs):
        if not _is_tensor(o):
            raise ValueError(f"the entry point returns a {type(o).__name__} as output {i}, not "
                             "an array")
        entry = {"dtype": _dtype(o), "shape": list(map(int, o.shape))}
        if out_names:
            entry["name"] = out_names[i]
        outputs.append(entry)
    return {"inputs": inputs, "scalars": scalars, "weights": weights, "outputs": outputs}


def _run_at(path: str, framework: str, overrides: Dict[str, str]):
    loaded = Loaded(path, framework, overrides, abstract=False)
    outs, out_names = _outputs(loaded.run())
    return loaded, outs, out_names


def _probe(path: str, framework: str) -> Dict[str, Any]:
    """The tensors at the source's own sizes, without data (meta tensors, jax.eval_shape)."""
    if framework == "numpy":
        return {"error": "a NumPy source is not run at its own sizes (it would allocate them)"}
    try:
        loaded = Loaded(path, framework, {}, abstract=True)
        if framework == "jax":
            import jax

            prog = loaded.jax_program  # abstract parameters are arguments, not closed over
            args = ([prog.params] if prog.params is not None else []) + loaded.inputs
            result = jax.eval_shape(prog.fn, *args)
        else:
            result = loaded.run()
        outs, names = _outputs(result)
        return _listing(loaded, outs, names)
    except Exception as e:  # shapes without data are a courtesy: the test-size run decides
        return {"error": f"{type(e).__name__}: {e}"[:300]}


def _capture(path: str, archs: List[str]) -> Dict[str, Any]:
    """Solar's own capture of the source at its own sizes: its work of every kind, compulsory
    bytes and fused SOL on the first device (work_summary)."""
    try:
        result = programs.analyze_file(path, ProgramOptions(archs=archs, crosscheck=False,
                                                   cache_aware=False))
        return dict(capture.work_summary(result.report, archs[0]),
                    unanalyzed=len(result.warnings))
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"[:300]}



def run(spec: Dict[str, Any]) -> Dict[str, Any]:
    path, framework, out = spec["source"], spec["framework"], spec["out"]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    rejected = []
    ladder = spec["ladder"]
    for i, setting in enumerate(ladder):
        try:
            loaded, outs, out_names = _run_at(path, framework, setting["overrides"])
            break
        except Exception as e:
            if i + 1 == len(ladder) or isinstance(e, MemoryError):
                raise
            rejected.append({"limit": setting["limit"],
                             "error": f"{type(e).__name__}: {e}"[:300]})
    listing = _listing(loaded, outs, out_names)
    arrays: Dict[str, np.ndarray] = {}
    for name, x in zip(loaded.names, loaded.inputs):
        if _is_tensor(x):
            arrays[f"inputs/{name}"] = _array(x)
    for k, v in loaded.weights.items():
        if _is_tensor(v):
            arrays[f"weights/{loop_name(k)}"] = _array(v)
    for i, o in enumerate(outs):
        arrays[f"outputs/{i}"] = _array(o)
    for k, v in setting["overrides"].items():
        arrays[f"sizes/{k}"] = np.asarray(str(v))
    np.savez(os.path.join(out, "reference.npz"), **arrays)
    meta = {"framework": framework, "sizes": setting["overrides"], "limit": setting["limit"],
            "rejected": rejected, **listing}
    if isinstance(loaded.precision, str):
        meta["precision"] = loaded.precision
    if spec.get("probe"):
        meta["own_sizes"] = _probe(path, framework)
    if spec.get("capture_archs") and framework in ("torch", "jax"):
        meta["capture"] = _capture(path, spec["capture_archs"])
    return meta


def main(argv: List[str]) -> int:
    with open(argv[0], encoding="utf-8") as f:
        spec = json.load(f)
    _limit(spec)
    out = os.path.join(spec["out"], "reference.json")
    try:
        meta = run(spec)
        code = 0
    except MemoryError:
        meta = {"error": "MemoryError: the source exceeded the memory limit "
                         f"({spec.get('memory_bytes', 0) / 2**30:.3g} GiB of address space)"}
        code = 1
    except BaseException as e:  # the source's own failure, reported to the parent
        tail = traceback.format_exc().strip().splitlines()[-6:]
        meta = {"error": f"{type(e).__name__}: {e}"[:600], "traceback": tail}
        code = 1
    with open(out, "w", encoding="utf-8") as f:
        json.dump(meta, f, default=str)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
