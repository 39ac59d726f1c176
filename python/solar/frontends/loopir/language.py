"""The loop language's vocabulary (docs/loop-language.md): its intrinsics, dtypes, roles and
refusals, in one place for the parser, the recorder, the interpreter and the stubs of
`solar.loopir`."""

from __future__ import annotations

import math
from typing import Dict, Optional, Tuple

from ...errors import user_error

# Kernel-body intrinsics: name -> (IR combine function, number of arguments; None: 2 or more).
ELEMENT_INTRINSICS: Dict[str, Tuple[str, Optional[int]]] = {
    "exp": ("exp", 1), "log": ("log", 1), "sqrt": ("sqrt", 1), "rsqrt": ("rsqrt", 1),
    "tanh": ("tanh", 1), "erf": ("erf", 1), "sigmoid": ("sigmoid", 1), "sin": ("sin", 1),
    "cos": ("cos", 1), "abs": ("abs", 1), "relu": ("relu", 1), "floor": ("floor", 1),
    "ceil": ("ceil", 1), "min": ("min", None), "max": ("max", None),
    "where": ("select", 3), "select": ("select", 3),
}
# `cast(T[s], "dtype")` in a kernel, `cast(x, "dtype")` in the model.
CAST = "cast"
# Intrinsics of the model (composition): each returns a new read-only tensor.
COMPOSITION_INTRINSICS = ("reshape", "permute", "slice", "concat", "stack", "gather", "scatter",
                          "apply_mask", "cast")
# Functions of constant expressions (module level, bounds, coefficients).
CONSTANT_FUNCTIONS = ("sqrt", "exp", "log", "abs", "min", "max")
# Names the language defines besides the intrinsics.
DECLARATIONS = ("Tensor", "kernel")
CONSTANT_NAMES = {"inf": float("inf"), "pi": math.pi}

ALL_NAMES = frozenset(ELEMENT_INTRINSICS) | {CAST} | frozenset(COMPOSITION_INTRINSICS) | \
    frozenset(CONSTANT_FUNCTIONS) | frozenset(DECLARATIONS) | frozenset(CONSTANT_NAMES)

ROLES = ("input", "weight", "constant", "output", "scratch")
# The OpTrace role of a tensor no op writes (docs/optrace.md).
SOURCE_TRACE_ROLE = {"input": "input", "weight": "parameter", "constant": "constant"}

# Canonical dtype names (the IR's) and their aliases.
DTYPES = ("f64", "f32", "tf32", "bf16", "f16", "f8e4m3", "f8e5m2", "f6", "f4", "i64", "i32",
          "i16", "i8", "i4", "u8", "bool")
_DTYPE_ALIASES = {
    "fp64": "f64", "float64": "f64", "double": "f64", "fp32": "f32", "float32": "f32",
    "float": "f32", "fp16": "f16", "float16": "f16", "half": "f16", "bfloat16": "bf16",
    "fp8": "f8e4m3", "fp8e4m3": "f8e4m3", "float8_e4m3fn": "f8e4m3", "fp8e5m2": "f8e5m2",
    "float8_e5m2": "f8e5m2", "fp6": "f6", "fp4": "f4", "int64": "i64", "int32": "i32",
    "int16": "i16", "int8": "i8", "int4": "i4", "uint8": "u8",
}


def canonical_dtype(name: str) -> Optional[str]:
    """The IR name of a dtype name or alias, or None."""
    return name if name in DTYPES else _DTYPE_ALIASES.get(name)


def is_integer_dtype(dtype: str) -> bool:
    return dtype in ("i64", "i32", "i16", "i8", "i4", "u8", "bool")


# Refusal kinds (the solar.UserError kinds, each with its exit code) and the rule each names.
RULES = {
    "outside_language": "outside the language",
    "not_affine": "not affine",
    "data_dependent": "data-dependent",
    "unknown_intrinsic": "unknown intrinsic",
    "shape_mismatch": "shape mismatch",
    "undeclared": "undeclared",
    "non_constant_bound": "non-constant bound",
}


def refusal(kind: str, file: str, line: int, message: str):
    """The solar.UserError of a refused loop program: `file:line: rule: message`, with the
    exit code of its rule (docs/loop-language.md, "Refusals")."""
    where = f"{file}:{line}" if line else file
    return user_error(f"{where}: {RULES[kind]}: {message}", kind)


# Limits (docs/loop-language.md, "Limits"). Language limits are refusals `outside the
# language` (exit 11); budgets are kind `too_large` (exit 2, docs/cli.md), whose fix is the
# sizes or the program's length.
INT_LIMIT = 2 ** 63  # every integer a program writes or computes is within ±(INT_LIMIT - 1)
MAX_DEPTH = 100  # levels statements and expressions nest (a chain of + - or of * is one level)
MAX_TERMS = 2_000  # leaves (numbers, element reads) of one statement's value, locals inlined
MAX_STEPS = 1_000_000  # statements, loop iterations and kernel statements model() runs
MAX_TRACE_NODES = 1_000_000  # ops, tensors and expression nodes of the recorded trace
# Validation (the interpreter evaluates every point of every nest's box, statement by statement).
MAX_VALIDATION_POINTS = 200_000_000
INTERPRETER_POINTS_PER_S = 1e7  # a round figure of its speed, for the estimate a refusal names
VALIDATION_SECONDS = 600.0  # the interpreter's wall-clock limit; SOLAR_LOOP_VALIDATION_SECONDS


def too_large(file: str, line: int, message: str):
    """The solar.UserError of a program past one of the budgets above: `file:line: message`,
    kind too_large (exit 2)."""
    where = f"{file}:{line}" if line else file
    return user_error(f"{where}: {message} (docs/loop-language.md, \"Limits\")", "too_large")
