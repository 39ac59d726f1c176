"""The `solar` console script: the C++ CLI (solar._core.cli_run) behind a Python entry.

Dispatch point: graphs are read by the C++ CLI. Python programs (`solar analyze model.py`)
and saved OpTraces (`solar analyze trace.json` whose schema is solar.optrace.v1) go through
the PyTorch frontend first (capture -> OpTrace -> C++ lowering), then the same analysis
and report as a graph (docs/torch-frontend.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from typing import List, Optional, Sequence

from . import _core

_PYTHON_SUFFIXES = (".py",)
# Options of `solar analyze` that take a value (so that value is not the GRAPH argument).
_VALUED = {"--arch", "--json", "--policy", "--cache-state", "--top", "--set", "--save-trace"}


def _graph_arg(args: Sequence[str]) -> Optional[str]:
    """The GRAPH argument of `solar analyze ...` (args without the program name), or None."""
    if not args or args[0] != "analyze":
        return None
    skip = False
    for arg in args[1:]:
        if skip:
            skip = False
            continue
        if arg in _VALUED:
            skip = True
            continue
        if not arg.startswith("-"):
            return arg
    return None


def _is_optrace(path: str) -> bool:
    if not path.endswith(".json") or not os.path.isfile(path):
        return False
    try:
        with open(path, encoding="utf-8") as f:
            head = f.read(4096)
    except OSError:
        return False
    return '"solar.optrace.v1"' in head and head.lstrip().startswith("{")


def _frontend_for(argv: Sequence[str]) -> Optional[str]:
    """The GRAPH argument of `solar analyze` when a frontend must read it, else None."""
    graph = _graph_arg(argv)
    if graph is None:
        return None
    if graph.endswith(_PYTHON_SUFFIXES) or _is_optrace(graph):
        return graph
    return None


def _write_atomically(path: str, text: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _analyze_program(args: List[str]) -> int:
    """`solar analyze model.py|trace.json ...`: capture or read the trace, lower, analyze."""
    p = argparse.ArgumentParser(prog="solar analyze", description="Analyze a PyTorch program")
    p.add_argument("program")
    p.add_argument("--arch", action="append", default=[])
    p.add_argument("--json", dest="json_path")
    p.add_argument("--policy", default="pytorch-default")
    p.add_argument("--cache-state", default="cold")
    p.add_argument("--top", type=int, default=10)
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--save-trace", metavar="PATH")
    p.add_argument("--strict", action="store_true")
    p.add_argument("--real", action="store_true", help="capture on real tensors, not fake ones")
    p.add_argument("--debug", action="store_true")
    try:
        ns = p.parse_args(args)
    except SystemExit as e:
        return _core.EXIT_CODES["usage"] if e.code else 0
    codes = _core.EXIT_CODES
    overrides = {}
    for item in ns.set:
        name, eq, value = item.partition("=")
        if not eq or not name.isidentifier():
            sys.stderr.write(f"solar: error: --set {item}: expected NAME=VALUE\n")
            return codes["usage"]
        overrides[name] = value
    archs: List[str] = []
    for a in ns.arch or ["H100_SXM"]:
        archs.extend(x for x in a.split(",") if x)
    try:
        if not os.path.isfile(ns.program):
            sys.stderr.write(f"solar: error: {ns.program}: no such file\n")
            return codes["io"]
        if ns.program.endswith(_PYTHON_SUFFIXES):
            from .frontends.torch.capture import capture_program

            try:
                trace = capture_program(ns.program, overrides, fake=not ns.real)
            except Exception as e:  # the program itself failed: not a Solar bug
                if ns.debug:
                    raise
                sys.stderr.write(f"solar: error: {ns.program}: capture failed: "
                                 f"{type(e).__name__}: {e}\n")
                return codes["unsupported"]
            text = json.dumps(trace, allow_nan=False)
        else:
            if overrides:
                sys.stderr.write("solar: error: --set applies to Python programs only\n")
                return codes["usage"]
            with open(ns.program, encoding="utf-8") as f:
                text = f.read()
        if ns.save_trace:
            _write_atomically(ns.save_trace, text if text.endswith("\n") else text + "\n")
        graph, notes = _core.lower_optrace(text, ns.program, ns.strict)
        for n in notes:
            sys.stderr.write(f"solar: warning: unanalyzed op {n}\n")
        analysis = _core.analyze(graph, archs, ns.policy, ns.cache_state)
        if ns.json_path == "-":
            sys.stdout.write(analysis.to_json(2) + "\n")
            return codes["ok"]
        if ns.json_path:
            _write_atomically(ns.json_path, analysis.to_json(2) + "\n")
        sys.stdout.write(analysis.table(ns.top))
        return codes["ok"]
    except _core.Error as e:
        sys.stderr.write(f"solar: error: {e}\n")
        return getattr(e, "exit_code", codes["internal"])
    except OSError as e:
        sys.stderr.write(f"solar: error: {e}\n")
        return codes["io"]


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs `solar` with argv (sys.argv by default); returns the exit code."""
    args = list(sys.argv if argv is None else argv)
    if not args:
        args = ["solar"]
    if _frontend_for(args[1:]) is not None:
        return _analyze_program(args[2:])
    # The C++ side writes to the process's stdout: flush ours first to keep the order.
    sys.stdout.flush()
    sys.stderr.flush()
    return _core.cli_run(args)


if __name__ == "__main__":
    sys.exit(main())
