"""Progress of a long command on stderr (docs/cli.md, "Progress"): one line naming the stage
(capture, lowering, analysis, with a count where there is one, and the time so far), rewritten
in place and cleared before the command's output. Only when stderr is a terminal and --quiet
is not given: a pipe or a file gets nothing, so captured output stays exactly the report.

A command turns it on for its run (`with progress.reporting(quiet):`); the stages call
`progress.stage(...)`, which does nothing otherwise (a library call, a test, a suite worker).
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import IO, Iterator, Optional


class Progress:
    """Writes stage lines to `stream` when `enabled`."""

    def __init__(self, stream: Optional[IO[str]] = None, enabled: bool = False):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.start = time.monotonic()
        self.shown = False

    def stage(self, what: str) -> None:
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.start
        # "\r" and erase-to-end-of-line: each stage replaces the last on one terminal line.
        self.stream.write(f"\rsolar: {what} ({elapsed:.1f} s)\x1b[K")
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        """Erases the stage line, so that what the command prints next starts clean."""
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


_current = Progress()  # off: stages outside a command's run print nothing


def stage(what: str) -> None:
    """Names the stage the running command has reached (nothing unless it reports)."""
    _current.stage(what)


def clear() -> None:
    """Erases the stage line before the command writes its output."""
    _current.clear()


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


@contextlib.contextmanager
def reporting(quiet: bool, stream: Optional[IO[str]] = None) -> Iterator[Progress]:
    """Reports the stages of the enclosed run on `stream` (stderr) when it is a terminal
    and not `quiet`; the line is cleared on the way out, error or not."""
    global _current
    out = stream if stream is not None else sys.stderr
    previous = _current
    _current = Progress(out, enabled=not quiet and _is_terminal(out))
    try:
        yield _current
    finally:
        _current.clear()
        _current = previous
