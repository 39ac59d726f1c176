"""solar.UserError raised from Python with the `kind` and `exit_code` the C++ side gives its
own errors, so the CLI maps both the same way (docs/cli.md, exit codes)."""

from __future__ import annotations

from . import _core

# kind -> the EXIT_CODES name of its exit code
_EXIT_NAME = {"io": "io", "parse": "parse", "usage": "usage", "bad_argument": "usage",
              "invalid_graph": "invalid_graph", "unknown_device": "unknown_device",
              "unsupported": "unsupported"}
# The loop language's refusals (docs/loop-language.md) have an exit code each, named as the kind.
LOOP_REFUSALS = ("outside_language", "not_affine", "data_dependent", "unknown_intrinsic",
                 "shape_mismatch", "undeclared", "non_constant_bound")
_EXIT_NAME.update({k: k for k in LOOP_REFUSALS})


def user_error(message: str, kind: str) -> "_core.UserError":
    """A solar.UserError of this kind ("io", "parse", "usage", ...), ready to raise."""
    e = _core.UserError(message)
    e.kind = kind
    e.exit_code = _core.EXIT_CODES[_EXIT_NAME[kind]]
    return e
