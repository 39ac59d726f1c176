"""Command-line checks and help pages of the `solar` console script that apply before any
work, whichever side (the C++ CLI for graphs, the Python frontends for programs) then runs
the command: a mistyped command gets the close match, a negative --top a usage error, and
`solar CMD --help` one page with the graph options and the program options. Output paths
are checked by solar.atomic_write.check.

Imports nothing heavy (no torch, no jax): `solar --help` stays fast.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
import tempfile
from typing import Callable, Dict, List, Optional, Sequence

from . import _core

# The C++ CLI's subcommands (src/cli/cli.cc) and the console script's own.
CXX_COMMANDS = ("analyze", "inverse", "export", "arch")
PY_COMMANDS = ("validate", "bench", "suite", "sweep", "translate", "server", "models")
COMMANDS = CXX_COMMANDS + PY_COMMANDS
# The block the C++ CLI's footer adds to every help page: kept on `solar --help` only.
_FOOTER_START = "Python programs (the `solar` console script"
_FOOTER_END = "See docs/cli.md.\n"


def _error(message: str, cause: str) -> int:
    sys.stderr.write(f"solar: error: {message}\n")
    return _core.EXIT_CODES[cause]


def unknown_command(args: Sequence[str]) -> Optional[int]:
    """Exit code for `solar CMD ...` when CMD is no command (with the close match when there
    is one), else None."""
    if len(args) < 2 or args[1].startswith("-") or args[1] in COMMANDS:
        return None
    close = difflib.get_close_matches(args[1], COMMANDS, n=1, cutoff=0.6)
    hint = f"; did you mean `solar {close[0]}`?" if close else ""
    if not close and os.path.isfile(args[1]):  # `solar model.py`: the command was left out
        hint = f"; did you mean `solar analyze {args[1]}`?"
    return _error(f"unknown command '{args[1]}'{hint} (commands: {', '.join(COMMANDS)}; "
                  "`solar --help` for usage)", "usage")


def negative_top(args: Sequence[str]) -> Optional[int]:
    """Exit code for a --top below 0 (rows of a table), else None. The C++ parser's own
    message prints its range as a 300-digit double."""
    for i, arg in enumerate(args):
        value = None
        if arg == "--top" and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--top="):
            value = arg.partition("=")[2]
        if value is not None and value.lstrip().startswith("-"):
            return _error(f"--top {value}: expected 0 or more rows (0 hides the top-ops "
                          "table)", "usage")
    return None


def _cxx_help(args: List[str]) -> str:
    """The C++ CLI's help page for `args` (it writes to the process's stdout: fd 1)."""
    sys.stdout.flush()
    with tempfile.TemporaryFile() as tmp:
        saved = os.dup(1)
        os.dup2(tmp.fileno(), 1)
        try:
            _core.cli_run(args)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        tmp.seek(0)
        return tmp.read().decode("utf-8", "replace")


def _without_footer(text: str) -> str:
    start = text.find(_FOOTER_START)
    if start < 0:
        return text
    end = text.find(_FOOTER_END, start)
    end = len(text) if end < 0 else end + len(_FOOTER_END)
    return text[:start].rstrip("\n") + "\n" + text[end:]


def _program_section(command: str, parser: argparse.ArgumentParser, graph_page: str) -> str:
    """The program-only options of `parser` (those the graph page does not list), with their
    help, as one section of the page."""
    shown = [a for a in parser._actions  # noqa: SLF001 (argparse has no public list)
             if a.option_strings and not any(f"  {o} " in graph_page or f"{o}," in graph_page
                                              for o in a.option_strings)]
    fmt = argparse.HelpFormatter(f"solar {command}", max_help_position=30, width=100)
    fmt.start_section(f"Program options (solar {command} PROGRAM.py | trace.json: a PyTorch, "
                      "JAX or loop-language program, or a saved OpTrace; the options above "
                      "apply too)")
    fmt.add_arguments(shown)
    fmt.end_section()
    return fmt.format_help()


def help_page(args: Sequence[str],
              program_parsers: Dict[str, Callable[[], argparse.ArgumentParser]]) -> Optional[int]:
    """Writes `solar CMD --help` (CMD a C++ command, with or without a GRAPH or PROGRAM) as
    one page: the C++ CLI's options for graphs and, for commands that read programs too, the
    program options; the footer block stays on `solar --help` alone. None when no
    subcommand help was asked for."""
    if len(args) < 3 or args[1] not in CXX_COMMANDS:
        return None
    if not any(a in ("-h", "--help") for a in args[2:]):
        return None
    words = [a for a in args[2:] if not a.startswith("-")]
    sub = [args[1]] + (words[:1] if args[1] == "arch" and words[:1] in (["list"], ["show"])
                       else [])
    page = _without_footer(_cxx_help(["solar", *sub, "--help"]))
    if args[1] in program_parsers:
        page += "\n" + _program_section(args[1], program_parsers[args[1]](), page)
    sys.stdout.write(page)
    return _core.EXIT_CODES["ok"]
