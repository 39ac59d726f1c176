"""How the JAX capture writes what a jaxpr holds into an OpTrace: dtypes and shapes (a PRNG key
as its uint32 key data), primitive parameters as JSON, an equation's program line and module
path, and the value helpers the recorder and the walker share.

Op encoding (docs/jax-frontend.md): `args` holds `operands` (a list: `{"tensor": id}`, with
`"value"` when capture knows the value of a small integer tensor, or a JSON number for a
literal) and every primitive parameter by its name (tuples as lists, dtypes as
`{"dtype": name}`, dimension-number records as objects, enums by name, anything else as
`{"repr": ...}`).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import re
from typing import Any, List, Tuple

import numpy as np

def dtype_name(dtype) -> str:
    return np.dtype(dtype).name if not is_key(dtype) else "uint32"


def is_key(dtype) -> bool:
    try:
        import jax

        return jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)
    except Exception:
        return False


def aval_shape_dtype(aval) -> Tuple[List[int], str]:
    """Shape and dtype name of an abstract value; PRNG keys as their uint32 key data."""
    shape = [int(d) for d in aval.shape]
    if is_key(aval.dtype):
        try:
            shape += [int(d) for d in aval.dtype._impl.key_shape]
        except Exception:
            shape += [2]
        return shape, "uint32"
    return shape, np.dtype(aval.dtype).name


def encode(v: Any, depth: int = 0) -> Any:
    """A primitive parameter as JSON (docs/jax-frontend.md)."""
    if depth > 8:
        return {"repr": repr(v)[:200]}
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isfinite(f):
            return f
        return {"float": "nan" if math.isnan(f) else ("inf" if f > 0 else "-inf")}
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, enum.Enum):
        return v.name
    if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
        return {"dtype": dtype_name(v)}
    if hasattr(v, "_fields") and isinstance(v, tuple):  # NamedTuple (ConvDimensionNumbers)
        return {k: encode(getattr(v, k), depth + 1) for k in v._fields}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):  # Gather/ScatterDimensionNumbers
        return {f.name: encode(getattr(v, f.name), depth + 1) for f in dataclasses.fields(v)}
    if isinstance(v, (tuple, list)):
        return [encode(x, depth + 1) for x in v]
    if isinstance(v, np.ndarray) and v.size <= 64:
        return encode(v.tolist(), depth + 1)
    try:
        dt = np.dtype(v)
        if type(v).__name__.endswith("DType") or isinstance(v, np.dtype):
            return {"dtype": dt.name}
    except Exception:
        pass
    return {"repr": repr(v)[:200]}


def source_location(eqn) -> Tuple[str, int]:
    """The innermost user frame of an equation (outside jax, flax and Solar)."""
    try:
        from jax._src import source_info_util

        try:  # JAX >= 0.5 takes the traceback, older versions the SourceInfo
            frame = source_info_util.user_frame(eqn.source_info.traceback)
        except (AttributeError, TypeError):
            frame = source_info_util.user_frame(eqn.source_info)
        if frame is not None:
            return frame.file_name, int(frame.start_line)
    except Exception:
        pass
    return "", 0


_TRANSFORM = re.compile(r"^[A-Za-z_]\w*\((.*)\)$")
AUTO_NAME = re.compile(r"^([A-Za-z_]\w*?)_\d+$")


def name_stack(eqn) -> str:
    """The equation's name stack ("Net/MLP_0/fc1": Flax module names and jax.named_scope
    scopes) as a module path ("Net.MLP_0.fc1"), transformation wrappers (jvp(...),
    transpose(...)) and jit scopes left out."""
    try:
        text = str(eqn.source_info.name_stack)
    except Exception:
        return ""
    parts = []
    for p in text.split("/"):
        while True:
            m = _TRANSFORM.match(p)
            if not m:
                break
            p = m.group(1)
        if p:
            parts.append(p)
    return ".".join(parts)


def join_module(prefix: str, inner: str) -> str:
    """A nested jaxpr's name stack is relative to the equation that holds it."""
    if not prefix or inner == prefix or inner.startswith(prefix + "."):
        return inner or prefix
    return f"{prefix}.{inner}" if inner else prefix


def is_literal(v) -> bool:
    return type(v).__name__ == "Literal"


def is_drop(v) -> bool:
    return type(v).__name__ == "DropVar"


def is_int(dtype) -> bool:
    try:
        return np.issubdtype(np.dtype(dtype), np.integer) or np.dtype(dtype) == np.bool_
    except TypeError:
        return False


def np_dtype(dtype):
    try:
        return np.dtype(dtype)
    except TypeError:
        return np.uint32


def aval_of(value):
    import jax

    if hasattr(value, "aval"):
        return value.aval
    if isinstance(value, jax.ShapeDtypeStruct):
        return value
    arr = np.asarray(value)
    return jax.ShapeDtypeStruct(arr.shape, arr.dtype)


def concrete(value) -> bool:
    import jax

    if isinstance(value, jax.ShapeDtypeStruct):
        return False
    return not type(value).__name__.endswith("Tracer")


def key_data(value):
    import jax

    return np.asarray(jax.random.key_data(value))

