"""torch's own logging silenced while Solar captures a program.

A forward that fails under fake tensors makes torch log the whole meta-kernel traceback
(`failed while attempting to run meta for aten.mm.default`, ~180 lines) before the
exception reaches Solar, which reports it in one line with the program's file:line. The
exception carries everything the log says, so the torch.* loggers are disabled while a
capture runs and restored afterwards; the program's own loggers are left alone.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Iterator, List, Tuple


def _torch_loggers() -> List[logging.Logger]:
    names = [n for n in logging.root.manager.loggerDict
             if n == "torch" or n.startswith("torch.")]
    loggers = [logging.getLogger(n) for n in names]
    return loggers or [logging.getLogger("torch")]


@contextlib.contextmanager
def torch_logging_silenced() -> Iterator[None]:
    """Disables every torch.* logger for the block, then restores each one's own state."""
    saved: List[Tuple[logging.Logger, bool]] = [(lg, lg.disabled) for lg in _torch_loggers()]
    for lg, _ in saved:
        lg.disabled = True
    try:
        yield
    finally:
        for lg, disabled in saved:
            lg.disabled = disabled
