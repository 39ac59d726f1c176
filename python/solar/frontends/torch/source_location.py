"""Where a traced call came from: the program's own line, the innermost Python frame outside
torch and Solar (every op, collective and recurrent call the capture records carries it)."""

from __future__ import annotations

import os
import sys
from typing import Tuple

import torch

# Solar's package folder and torch's: frames in them are not the program's.
_THIS_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


def source_location() -> Tuple[str, int]:
    """The innermost Python frame outside torch and this package: the program's line."""
    f = sys._getframe(2)
    while f is not None:
        name = f.f_code.co_filename
        path = os.path.abspath(name)
        # "<frozen runpy>", "<string>": no file of the program's
        if not (name.startswith("<") or path.startswith(_TORCH_DIR)
                or path.startswith(_THIS_DIR)):
            return path, f.f_lineno
        f = f.f_back
    return "", 0
