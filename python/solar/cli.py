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

from . import _core, suite

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


def _program_parser(command: str) -> argparse.ArgumentParser:
    """Options shared by `solar analyze PROGRAM` and `solar validate PROGRAM`."""
    what = "Analyze" if command == "analyze" else "Validate by execution"
    p = argparse.ArgumentParser(prog=f"solar {command}", description=f"{what} a PyTorch program")
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
    p.add_argument("--train", action="store_true", help="forward + backward (autograd graph)")
    p.add_argument("--optimizer", choices=["sgd", "adam", "adamw"],
                   help="with --train: add this optimizer's update step")
    p.add_argument("--no-crosscheck", action="store_true",
                   help="skip the FlopCounterMode cross-check")
    if command == "analyze":
        p.add_argument("--validate", action="store_true",
                       help="also run the program and the graph and compare outputs")
    p.add_argument("--debug", action="store_true")
    return p


def _run_program(command: str, args: List[str]) -> int:
    """`solar analyze|validate model.py|trace.json ...`: capture (or read the trace), lower,
    analyze; validate runs the program and the lowered graph and compares their outputs."""
    from .frontends.torch import program as prog
    from .frontends.torch.capture import OverrideError, ProgramFormatError

    codes = _core.EXIT_CODES
    try:
        ns = _program_parser(command).parse_args(args)
    except SystemExit as e:
        return codes["usage"] if e.code else 0
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
    validate = command == "validate" or getattr(ns, "validate", False)
    options = prog.ProgramOptions(
        archs=archs, policy=ns.policy, cache_state=ns.cache_state, overrides=overrides,
        strict=ns.strict, real=ns.real, train=ns.train, optimizer=ns.optimizer,
        validate=validate, crosscheck=not ns.no_crosscheck)
    if ns.optimizer and not ns.train:
        sys.stderr.write("solar: error: --optimizer needs --train\n")
        return codes["usage"]
    try:
        if not os.path.isfile(ns.program):
            sys.stderr.write(f"solar: error: {ns.program}: no such file\n")
            return codes["io"]
        if ns.program.endswith(_PYTHON_SUFFIXES):
            try:
                result = prog.analyze_file(ns.program, options)
            except _core.Error:
                raise
            except (OverrideError, ProgramFormatError) as e:
                sys.stderr.write(f"solar: error: {e}\n")
                return codes["usage" if isinstance(e, OverrideError) else "parse"]
            except Exception as e:  # the program itself failed: not a Solar bug
                if ns.debug:
                    raise
                sys.stderr.write(f"solar: error: {ns.program}: the program failed: "
                                 f"{type(e).__name__}: {e}\n")
                return codes["program_error"]
        else:
            if overrides or ns.train or validate:
                sys.stderr.write("solar: error: --set, --train and validation apply to Python "
                                 "programs only\n")
                return codes["usage"]
            with open(ns.program, encoding="utf-8") as f:
                trace = json.load(f)
            result = prog.analyze_trace(trace, ns.program, options)
        for n in result.warnings:
            sys.stderr.write(f"solar: warning: unanalyzed op {n}\n")
        if ns.save_trace:
            _write_atomically(ns.save_trace, json.dumps(result.trace, allow_nan=False) + "\n")
        report = result.report
        if ns.json_path == "-":
            sys.stdout.write(report.to_json(2) + "\n")
        else:
            if ns.json_path:
                _write_atomically(ns.json_path, report.to_json(2) + "\n")
            sys.stdout.write(report.table(ns.top))
        validation = result.validation
        if validation is not None and validation.get("status") != "passed":
            sys.stderr.write(f"solar: error: {ns.program}: validation failed\n")
            return codes["validation_failed"]
        return codes["ok"]
    except _core.Error as e:
        sys.stderr.write(f"solar: error: {e}\n")
        return getattr(e, "exit_code", codes["internal"])
    except (OSError, json.JSONDecodeError) as e:
        sys.stderr.write(f"solar: error: {e}\n")
        return codes["io"] if isinstance(e, OSError) else codes["parse"]


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs `solar` with argv (sys.argv by default); returns the exit code."""
    args = list(sys.argv if argv is None else argv)
    if not args:
        args = ["solar"]
    if _frontend_for(args[1:]) is not None:
        return _run_program("analyze", args[2:])
    if args[1:2] == ["validate"]:
        return _run_program("validate", args[2:])
    if args[1:2] == ["bench"]:
        from . import bench

        return bench.main(args[2:])
    if args[1:2] == ["suite"]:
        return suite.main(args[2:])
    # The C++ side writes to the process's stdout: flush ours first to keep the order.
    sys.stdout.flush()
    sys.stderr.flush()
    return _core.cli_run(args)


if __name__ == "__main__":
    sys.exit(main())
