"""The source side of a translation: which language a source is in, and the data its
translation is checked against (ReferenceData): the source run in a subprocess with time and
memory limits (runner.py), or an .npz of inputs and outputs for a source Solar cannot run.

The data are made once per translation, before the first attempt: every attempt is checked
against the same inputs, weights and outputs.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from ..errors import user_error
from ..frontends.loopir.language import canonical_dtype
from ..shrink import int_constants, shrink_ladder
from . import client

if TYPE_CHECKING:
    import numpy as np

LANGS = ("pytorch", "jax", "numpy", "triton", "cuda", "c")
# Languages whose source Solar runs itself (runner.py), with the framework it runs them as.
RUNNABLE = {"pytorch": "torch", "jax": "jax", "numpy": "numpy"}
_SUFFIXES = {".cu": "cuda", ".cuh": "cuda", ".c": "c", ".h": "c", ".cc": "c", ".cpp": "c",
             ".cxx": "c", ".hpp": "c"}
SOURCE_SUFFIXES = (".py",) + tuple(_SUFFIXES)


class SourceError(Exception):
    """The source program itself failed (or hit its limits) when Solar ran it."""


def _imports(tree: ast.Module) -> set:
    mods = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            mods.add(node.module.split(".")[0] if node.module != "solar.loopir" else "solar.loopir")
    return mods


def detect_lang(path: str, text: str, lang: str = "auto") -> str:
    """The source's language: `lang` unless "auto"; else by suffix (.cu CUDA, .c/.cc/.cpp C)
    and, for Python, by its imports (triton, then jax/flax, then torch, else NumPy)."""
    if lang != "auto":
        if lang not in LANGS:
            raise user_error(f"--lang {lang}: one of auto, {', '.join(LANGS)}", "usage")
        return lang
    suffix = os.path.splitext(path)[1].lower()
    if suffix in _SUFFIXES:
        return _SUFFIXES[suffix]
    if suffix != ".py":
        raise user_error(f"{path}: cannot tell the source's language from '{suffix}'; give "
                         "--lang", "usage")
    try:
        mods = _imports(ast.parse(text, filename=path))
    except SyntaxError as e:
        raise user_error(f"{path}:{e.lineno}: not Python: {e.msg}", "parse") from None
    if "solar.loopir" in mods:
        raise user_error(f"{path} is already a loop program (it imports solar.loopir)", "usage")
    if "triton" in mods:
        return "triton"
    if mods & {"jax", "flax"} and "torch" not in mods:
        return "jax"
    return "pytorch" if "torch" in mods else "numpy"


def size_constants(text: str, lang: str) -> Dict[str, int]:
    """The source's integer size constants (solar.shrink.int_constants), for a Python source."""
    if lang not in ("pytorch", "jax", "numpy", "triton"):
        return {}
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    return {k: v for k, v in int_constants(tree).items() if k.isidentifier()}


@dataclasses.dataclass
class ReferenceData:
    """What a translation is checked against: the source's inputs and weights by loop tensor
    name, its outputs in order, the sizes they were made at."""

    label: str  # the source or .npz they came from
    framework: str  # torch, jax, numpy or npz
    sizes: Dict[str, str]  # NAME -> VALUE the source ran at (test sizes)
    tensors: Dict[str, np.ndarray]  # inputs and weights, by loop name
    kinds: Dict[str, str]  # loop name -> "input" or "weight"
    dtypes: Dict[str, Optional[str]]  # loop name -> the source's dtype (None: not checked)
    outputs: List[np.ndarray]
    output_dtypes: List[Optional[str]]
    output_names: Optional[List[str]]  # when the source returns a dict
    listing: Dict[str, Any]  # the tensors as the prompt lists them
    capture: Optional[Dict[str, Any]] = None  # Solar's capture of the source at its own sizes
    rejected: List[Dict[str, Any]] = dataclasses.field(default_factory=list)
    # Output index -> {"dtype", "why"}: outputs compared at another precision than their own
    # dtype's, the one the source computed in (compare_precision).
    precision: Dict[int, Dict[str, str]] = dataclasses.field(default_factory=dict)

    def summary(self) -> Dict[str, Any]:
        """What provenance records of the data."""
        out = {"from": self.label, "framework": self.framework, "sizes": dict(self.sizes)}
        if self.rejected:
            out["rejected_sizes"] = self.rejected
        if self.precision:
            out["compared_at"] = {str(i): p for i, p in self.precision.items()}
        return out


# A source may declare the precision it computes in (a module-level string, or `precision`
# in an .npz): its outputs are compared at that dtype's tolerance.
PRECISION_NAME = "SOLAR_PRECISION"
# Float dtypes by width: the precision a source computed in is its widest float operand's.
_FLOAT_BITS = {"f64": 64, "f32": 32, "tf32": 19, "bf16": 16, "f16": 16, "f8e4m3": 8,
               "f8e5m2": 8, "f6": 6, "f4": 4}


def _float_dtype(a: np.ndarray, named: Optional[str]) -> Optional[str]:
    d = named or canonical_dtype(str(a.dtype))
    return d if d in _FLOAT_BITS else None


def compare_precision(data: ReferenceData, declared: Optional[str] = None) -> None:
    """Sets data.precision: the dtype each float output is compared at when it is not the
    output's own. `declared` (SOLAR_PRECISION) wins; else an output wider than every float
    input and weight (a NumPy source that computes in f32 and returns f64) is compared at
    the widest of them, the precision its arithmetic had: f64's tolerance would fail every
    translation on the source's own f32 rounding."""
    if declared:
        want = canonical_dtype(str(declared))
        if want not in _FLOAT_BITS:
            raise user_error(f"{data.label}: {PRECISION_NAME} = {declared!r} is no float dtype "
                             f"({', '.join(_FLOAT_BITS)})", "usage")
    operands = [d for n, a in data.tensors.items() if (d := _float_dtype(a, data.dtypes.get(n)))]
    widest = max(operands, key=_FLOAT_BITS.__getitem__) if operands else None
    for i, (arr, named) in enumerate(zip(data.outputs, data.output_dtypes)):
        own = _float_dtype(arr, named)
        if own is None:
            continue
        if declared:
            if want != own:
                data.precision[i] = {"dtype": want, "why": f"declared by {PRECISION_NAME}"}
        elif widest is not None and _FLOAT_BITS[widest] < _FLOAT_BITS[own]:
            data.precision[i] = {
                "dtype": widest, "why": f"detected: its float inputs and weights are at most "
                                        f"{widest}, its output {own}"}


def _child_env() -> Dict[str, str]:
    """The subprocess's environment: this `solar` package first on the path, and no API key
    (the source has no business with it)."""
    env = {k: v for k, v in os.environ.items() if k not in client.KEY_ENVS}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(
        os.pathsep) if p])
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def run_source(path: str, lang: str, limit: Optional[int], timeout: float, memory_gb: float,
               archs: List[str], key_env: Optional[str] = None) -> ReferenceData:
    """The source at `path` run by runner.py in a subprocess (setrlimit: `memory_gb` of
    address space, CPU seconds; killed after `timeout` s of wall time) at the first setting
    of the shrink ladder (limit: solar.shrink.shrink_ladder) under which it runs."""
    framework = RUNNABLE[lang]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    ladder = shrink_ladder(size_constants(text, lang), limit, {}) if limit else \
        [{"limit": None, "overrides": {}}]
    with tempfile.TemporaryDirectory(prefix="solar-translate-ref-") as work:
        spec = {"source": os.path.abspath(path), "framework": framework, "out": work,
                "ladder": ladder, "probe": True, "capture_archs": list(archs),
                "memory_bytes": int(memory_gb * 2**30),
                "cpu_seconds": int(max(1, timeout) * max(1, os.cpu_count() or 1)) + 10}
        spec_path = os.path.join(work, "spec.json")
        with open(spec_path, "w", encoding="utf-8") as f:
            json.dump(spec, f)
        env = _child_env()
        if key_env:
            env.pop(key_env, None)
        proc = subprocess.Popen(
            [sys.executable, "-m", "solar.translate.runner", spec_path],
            cwd=os.path.dirname(os.path.abspath(path)), env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise SourceError(f"{path}: the source exceeded its time limit ({timeout:g} s) "
                              "when Solar ran it for validation") from None
        meta_path = os.path.join(work, "reference.json")
        if not os.path.isfile(meta_path):
            tail = output.decode("utf-8", "replace").strip()[-600:]
            why = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else \
                f"exit status {proc.returncode}"
            raise SourceError(f"{path}: the source failed when Solar ran it ({why}; limits "
                              f"{timeout:g} s, {memory_gb:g} GiB): {tail}")
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
        if "error" in meta:
            raise SourceError(f"{path}: the source failed when Solar ran it: {meta['error']}")
        import numpy as np

        with np.load(os.path.join(work, "reference.npz")) as z:
            arrays = {k: z[k] for k in z.files}
    data = _data(path, framework, meta, arrays)
    data.listing["constants"] = size_constants(text, lang)
    compare_precision(data, meta.get("precision"))
    return data


def _data(label: str, framework: str, meta: Dict[str, Any],
          arrays: Dict[str, np.ndarray]) -> ReferenceData:
    tensors, kinds, dtypes = {}, {}, {}
    for t in meta["inputs"]:
        tensors[t["name"]] = arrays[f"inputs/{t['name']}"]
        kinds[t["name"]], dtypes[t["name"]] = "input", t["dtype"]
    for t in meta["weights"]:
        tensors[t["name"]] = arrays[f"weights/{t['name']}"]
        kinds[t["name"]], dtypes[t["name"]] = "weight", t["dtype"]
    outs = meta["outputs"]
    sizes = {k: str(v) for k, v in meta["sizes"].items()}
    own = meta.get("own_sizes") or {}
    if own and "error" not in own:
        listing = dict(own, where=" at the source's own sizes")
    else:
        at = ", ".join(f"{k}={v}" for k, v in sizes.items()) or "its own sizes"
        listing = {k: meta[k] for k in ("inputs", "scalars", "weights", "outputs")}
        listing["where"] = f" (at {at})"
    return ReferenceData(
        label=label, framework=framework, sizes=sizes, tensors=tensors, kinds=kinds,
        dtypes=dtypes, outputs=[arrays[f"outputs/{i}"] for i in range(len(outs))],
        output_dtypes=[o["dtype"] for o in outs],
        output_names=[o["name"] for o in outs] if outs and "name" in outs[0] else None,
        listing=listing, capture=meta.get("capture"), rejected=meta.get("rejected", []))


def _array_dtype(a: np.ndarray) -> Optional[str]:
    """The loop-language name of an array's dtype (float32 -> f32), None when it has none."""
    return canonical_dtype(str(a.dtype))


def load_npz(path: str) -> ReferenceData:
    """Reference data from an .npz (docs/translate.md): `inputs/<name>` and `weights/<name>`
    by loop tensor name, `outputs/<i>` (0, 1, ...; or `outputs/<name>`), `sizes/<NAME>`, the
    size constants the data were made at, and optionally `precision` (a dtype name: the
    precision the outputs were computed in). Dtypes are not checked (an .npz may widen)."""
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError) as e:
        raise user_error(f"{path}: not a readable .npz: {e}", "io") from None
    tensors, kinds = {}, {}
    outputs: Dict[str, np.ndarray] = {}
    sizes: Dict[str, str] = {}
    declared = None
    for key, a in arrays.items():
        group, _, name = key.partition("/")
        if key == "precision" and a.shape == ():
            declared = str(a.item())
        elif group in ("inputs", "weights") and name:
            tensors[name], kinds[name] = a, group[:-1]
        elif group == "outputs" and name:
            outputs[name] = a
        elif group == "sizes" and name:
            sizes[name] = str(a.item() if a.shape == () else a)
        else:
            raise user_error(f"{path}: array '{key}' is none of inputs/NAME, weights/NAME, "
                             "outputs/I, sizes/NAME, precision", "parse")
    if not outputs:
        raise user_error(f"{path}: no outputs/ arrays to compare with", "parse")
    numbered = all(k.isdigit() for k in outputs)
    order = sorted(outputs, key=int) if numbered else list(outputs)
    at = ", ".join(f"{k}={v}" for k, v in sizes.items()) or "the sizes it was made at"
    # The prompt lists the arrays' own dtypes (the translation declares them so), which the
    # binding does not check.
    listing = {
        "inputs": [{"name": n, "dtype": _array_dtype(a), "shape": list(a.shape)}
                   for n, a in tensors.items() if kinds[n] == "input"],
        "weights": [{"source_name": n, "name": n, "dtype": _array_dtype(a),
                     "shape": list(a.shape)}
                    for n, a in tensors.items() if kinds[n] == "weight"],
        "outputs": [dict({"dtype": _array_dtype(outputs[k]), "shape": list(outputs[k].shape)},
                         **({} if numbered else {"name": k})) for k in order],
        "where": f" (in {os.path.basename(path)}, at {at})",
    }
    data = ReferenceData(label=path, framework="npz", sizes=sizes, tensors=tensors, kinds=kinds,
                         dtypes={n: None for n in tensors}, outputs=[outputs[k] for k in order],
                         output_dtypes=[None] * len(order),
                         output_names=None if numbered else order, listing=listing)
    compare_precision(data, declared)
    return data
