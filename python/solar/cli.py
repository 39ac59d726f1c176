"""The `solar` console script: the C++ CLI (solar._core.cli_run) behind a Python entry.

Dispatch point: graphs are read by the C++ CLI. Python programs (`solar analyze model.py`)
need a Python frontend to trace them into a graph first (frontends/torch, jax, loopir, a
later issue); `_frontend_for` is where such files are routed.
"""

from __future__ import annotations

import sys
from typing import Optional, Sequence

from . import _core

_PYTHON_SUFFIXES = (".py",)


def _frontend_for(argv: Sequence[str]) -> Optional[str]:
    """The GRAPH argument of `solar analyze` when it is a Python program, else None."""
    if "analyze" not in argv:
        return None
    for arg in argv[argv.index("analyze") + 1 :]:
        if not arg.startswith("-") and arg.endswith(_PYTHON_SUFFIXES):
            return arg
    return None


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs `solar` with argv (sys.argv by default); returns the exit code."""
    args = list(sys.argv if argv is None else argv)
    if not args:
        args = ["solar"]
    program = _frontend_for(args[1:])
    if program is not None:
        # Frontends land in a later issue: until then a Python program is refused clearly.
        sys.stderr.write(
            f"solar: error: {program}: analyzing Python programs needs a frontend, which this "
            "build does not have yet; pass a graph file (text form or JSON)\n"
        )
        return _core.EXIT_CODES["unsupported"]
    # The C++ side writes to the process's stdout: flush ours first to keep the order.
    sys.stdout.flush()
    sys.stderr.flush()
    return _core.cli_run(args)


if __name__ == "__main__":
    sys.exit(main())
