"""Errors and exit codes on the Python side: solar.UserError raised with the `kind` and
`exit_code` the C++ side gives its own errors, and the one mapping of a command's errors to
its exit code and one line on stderr (`command`, `fail`), so every `solar` command and the
C++ CLI end the same way (docs/cli.md, exit codes)."""

from __future__ import annotations

import argparse
import difflib
import functools
import json
import os
import re
import sys
import traceback
from typing import Callable, Dict, Iterable, List, NoReturn, Optional, Sequence

from . import _core

# kind -> the EXIT_CODES name of its exit code
_EXIT_NAME = {"io": "io", "parse": "parse", "usage": "usage", "bad_argument": "usage",
              "invalid_graph": "invalid_graph", "unknown_device": "unknown_device",
              "unsupported": "unsupported",
              # a real run that would not fit in memory (solar.memory_limit): the command
              # line's sizes are the fix (--shrink, --set), as for the executor's own limit
              "too_large": "usage"}
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


class CommandExit(Exception):
    """Ends a command with `code`; its message is already on stderr."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def fail(message: str, cause: str, prog: str = "solar") -> CommandExit:
    """Writes `PROG: error: message` and returns the CommandExit for `cause` (an EXIT_CODES
    key), ready to raise."""
    sys.stderr.write(f"{prog}: error: {message}\n")
    return CommandExit(_core.EXIT_CODES[cause])


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """"; did you mean 'batch_size'?" for the candidate closest to `word` (difflib), or ""
    when none is close."""
    close = difflib.get_close_matches(word, sorted(set(candidates)), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def _unquoted(text: str) -> str:
    return text[1:-1] if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"" else text


def one_line_usage_error(parser: argparse.ArgumentParser, message: str,
                         refusals: Optional[Dict[str, str]] = None) -> str:
    """argparse's error `message` as one line for `solar: error: ...`, without the usage block:
    an invalid choice with the closest valid value, an unknown option with the closest option
    of the command (or, for an option in `refusals`, the reason the command refuses it)."""
    m = re.match(r"argument (?P<opt>[^:]+): invalid choice: (?P<val>.+?) "
                 r"\(choose from (?P<choices>.*)\)$", message)
    if m:
        choices = [_unquoted(c.strip()) for c in m["choices"].split(",")]
        value = _unquoted(m["val"])
        return (f"{m['opt']}: invalid value '{value}'{did_you_mean(value, choices)} "
                f"(choices: {', '.join(choices)})")
    m = re.match(r"unrecognized arguments: (?P<args>.*)$", message)
    if m:
        options = [a.split("=", 1)[0] for a in m["args"].split() if a.startswith("-")]
        for opt in options:
            if refusals and opt in refusals:
                return f"{opt}: {refusals[opt]}"
        if options:
            known = [o for o in parser._option_string_actions if o.startswith("--")]
            return (f"unknown option {options[0]}{did_you_mean(options[0], known)} "
                    f"({parser.prog} --help lists the options)")
        return f"unexpected argument {m['args']} ({parser.prog} --help for usage)"
    return f"{message} ({parser.prog} --help for usage)"


def parse_args(parser: argparse.ArgumentParser, args: Sequence[str],
               refusals: Optional[Dict[str, str]] = None) -> argparse.Namespace:
    """parser.parse_args(args); a bad command line is one line on stderr
    (one_line_usage_error) and ends the command with the usage exit code, --help with 0
    (argparse has written its message). `refusals`: options the command does not take, with
    the reason it says for each (command_options.model_only_refusals)."""
    def error(message: str) -> NoReturn:
        raise fail(one_line_usage_error(parser, message, refusals), "usage")

    parser.error = error  # type: ignore[method-assign]  # argparse calls self.error
    try:
        return parser.parse_args(list(args))
    except SystemExit as e:
        raise CommandExit(_core.EXIT_CODES["usage"] if e.code else 0) from None


def command(prog: str = "solar") -> Callable[[Callable[..., int]], Callable[..., int]]:
    """Wraps a command's entry point: a CommandExit ends it with its code; a Solar error, a
    file that cannot be read or JSON that does not parse is one line on stderr,
    `PROG: error: ...`, and its exit code."""

    def wrap(run: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(run)
        def wrapped(*args, **kwargs) -> int:
            codes = _core.EXIT_CODES
            try:
                return run(*args, **kwargs)
            except CommandExit as e:
                return e.code
            except _core.Error as e:
                sys.stderr.write(f"{prog}: error: {e}\n")
                return getattr(e, "exit_code", codes["internal"])
            except (OSError, json.JSONDecodeError) as e:
                sys.stderr.write(f"{prog}: error: {e}\n")
                return codes["io"] if isinstance(e, OSError) else codes["parse"]

        return wrapped

    return wrap


def failing_line(e: BaseException, program: str) -> str:
    """PROGRAM:LINE of the program's own frame nearest the failure (PROGRAM alone when no
    frame of the traceback is in the file): where `the program failed` points."""
    path = os.path.abspath(program)
    lines: List[int] = [f.lineno for f in traceback.extract_tb(e.__traceback__)
                        if os.path.abspath(f.filename) == path]
    return f"{program}:{lines[-1]}" if lines else program
