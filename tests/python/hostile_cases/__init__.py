"""Hostile and careless inputs, by area (one module each), for test_hostile_inputs.py.

Each module defines CASES, a list of Case. A case is a command line run in a fresh folder
holding `files`; what it must do is in test_hostile_inputs.py: end with the exit code of
`code` (a name of solar._core.EXIT_CODES, the table of docs/cli.md), print exactly one line
on stderr holding `message` and no traceback, leave every file of the folder as it was
(nothing created, changed or removed; `creates` names files a case may add), and end
within `limit_s` seconds.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Union


@dataclasses.dataclass
class Case:
    id: str
    args: Sequence[str]                      # after `solar`
    code: str                                # an EXIT_CODES name: "usage", "io", ...
    message: str                             # a substring of the one stderr line
    files: Dict[str, Union[str, bytes]] = dataclasses.field(default_factory=dict)
    setup: Optional[Callable[[Path], None]] = None  # after the files are written
    stdin: Optional[str] = None
    env: Dict[str, str] = dataclasses.field(default_factory=dict)
    limit_s: float = 60.0
    creates: Sequence[str] = ()              # files the command may leave behind


def all_cases() -> List[Case]:
    """Every area's CASES, in module order."""
    cases: List[Case] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        cases += importlib.import_module(f"{__name__}.{info.name}").CASES
    return cases
