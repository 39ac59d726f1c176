"""The progress of a run of many programs on stderr (`solar suite`, `solar sweep`)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from typing import Sequence


class Progress:
    """Progress on stderr: one updating line on a terminal, periodic plain lines otherwise.
    `solar sweep` shares it (label: the command's name on the plain lines)."""

    def __init__(self, total: int, enabled: bool, stream=None, label: str = "solar suite"):
        self.stream = stream or sys.stderr
        self.label = label
        self.total = total
        self.enabled = enabled and total > 0
        self.tty = self.enabled and self.stream.isatty()
        self.start = time.monotonic()
        self.last = 0.0
        self.last_done = -1
        self.interval = 0.1 if self.tty else 10.0

    def update(self, done: int, failed: int, running: Sequence[str], force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self.last < self.interval:
            return
        if not self.tty and done == self.last_done:
            return  # a plain line only says something new
        self.last, self.last_done = now, done
        elapsed = now - self.start
        line = f"{self.label}: {done}/{self.total} done, {failed} failed, {elapsed:.0f} s"
        if self.tty:
            width = shutil.get_terminal_size((100, 20)).columns
            bar_w = 24
            filled = bar_w * done // self.total
            bar = "[" + "#" * filled + "." * (bar_w - filled) + "]"
            line = f"{bar} {done}/{self.total}  failed {failed}  {elapsed:.0f} s"
            if running:
                line += "  " + os.path.basename(running[0])
            elif done < self.total:
                line += "  (starting workers: importing torch)"
            line = line[: max(10, width - 1)]
            self.stream.write("\r" + line + "\x1b[K")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
