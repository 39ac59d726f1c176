"""`--html PATH` on the command line (docs/html-report.md).

Programs, suites and the inverse roofline of a program are handled by the console script's
own commands, which call `check_folder` before any capture and `write` at the end. A graph
file goes to the C++ CLI as always; `run_graph` checks every output first (the page's
among them: solar.atomic_write.check), takes `--html PATH` out of the arguments, lets the
C++ CLI write the JSON report to a temporary file (or to the user's `--json PATH`), renders
the page from it, and only then prints what the C++ CLI printed: on an error stdout stays
empty. The C++ CLI keeps every other option, check, message and exit code.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import List, Optional, Sequence, Tuple

from .. import _core
from ..atomic_write import check as check_outputs
from ..errors import command, fail, user_error
from ..html import write as write_html


def check_folder(path: Optional[str]) -> None:
    """An output path whose folder is missing is an I/O error (exit 3) now, before any work."""
    if path and path != "-" and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise user_error(f"{path}: the output folder does not exist", "io")


def write(doc, path: str) -> None:
    """Writes the page for a Report or report dict atomically (solar.html.write)."""
    write_html(doc, path)


def html_option(args: Sequence[str]) -> Tuple[Optional[str], List[str]]:
    """(the value of --html, args without it). --html with no value: ("", args)."""
    rest: List[str] = []
    value: Optional[str] = None
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--html":
            value = args[i + 1] if i + 1 < len(args) else ""
            i += 2
            continue
        if a.startswith("--html="):
            value = a[len("--html="):]
        else:
            rest.append(a)
        i += 1
    return value, rest


# The options of the C++ CLI's analyze and inverse that take a value (src/cli/cli.cc).
_CXX_VALUED = {"--arch", "--json", "--policy", "--cache-state", "--top", "--by", "--depth",
               "--mode", "--ski-slope", "--max-mappings", "--target-ms", "--rate-hz",
               "--bandwidth", "--format", "--out", "--system", "--nodes"}


def _graph_argument(args: Sequence[str]) -> Optional[str]:
    """The GRAPH of `solar CMD GRAPH ...` (args with the program name), or None."""
    skip = False
    for arg in args[2:]:
        if skip:
            skip = False
        elif arg in _CXX_VALUED:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


def _option_value(args: Sequence[str], name: str) -> Optional[str]:
    """The last value of option `name` in args (`--name V` or `--name=V`), or None."""
    value = None
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(name + "="):
            value = arg[len(name) + 1:]
    return value


def _json_option(args: List[str]) -> Tuple[Optional[str], int]:
    """(the value of --json, its index in args; -1 when absent)."""
    for i, a in enumerate(args):
        if a == "--json" and i + 1 < len(args):
            return args[i + 1], i
        if a.startswith("--json="):
            return a[len("--json="):], i
    return None, -1


def _run_cxx(args: List[str]) -> Tuple[int, str]:
    """The C++ CLI on args: (its exit code, what it printed on stdout), held back so that
    nothing is printed before the page is written."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile() as held:
        try:
            os.dup2(held.fileno(), 1)
            rc = _core.cli_run(args)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        held.seek(0)
        return rc, held.read().decode("utf-8", "replace")


def _asks_help(args: Sequence[str]) -> bool:
    return any(a in ("-h", "--help") for a in args)


@command()
def run_graph(argv: Sequence[str]) -> int:
    """`solar analyze|inverse GRAPH ... --html PATH` (argv with the program name)."""
    codes = _core.EXIT_CODES
    html_path, args = html_option(list(argv))
    if not html_path:
        raise fail("--html needs a PATH", "usage")
    check_folder(html_path)
    user_json, at = _json_option(args)
    if not _asks_help(args):
        ski_slope = _option_value(args, "--ski-slope")
        check_outputs([("GRAPH", _graph_argument(args))],
                      [("--json", user_json), ("--ski-slope", ski_slope), ("--html", html_path)])
    with tempfile.TemporaryDirectory(prefix="solar-html-") as tmp:
        json_path = user_json
        to_stdout = user_json == "-"
        if user_json is None or to_stdout:
            json_path = os.path.join(tmp, "report.json")
            if to_stdout:
                args = args[:at] + ["--json", json_path] + args[at + (1 if "=" in args[at] else 2):]
            else:
                args = args + ["--json", json_path]
        rc, printed = _run_cxx(args)
        if rc != codes["ok"] or not os.path.exists(json_path):
            sys.stdout.write(printed)  # `--help`; after an error the C++ CLI printed nothing
            return rc
        with open(json_path, encoding="utf-8") as f:
            text = f.read()
        write(json.loads(text), html_path)
        # The page is written: now the table (or, for `--json -`, the JSON instead of it).
        sys.stdout.write(text if to_stdout else printed)
        sys.stdout.flush()
    return codes["ok"]
