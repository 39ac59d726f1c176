"""Which frontend reads a Python file: the loop one when the file imports solar.loopir. Read
from the file's imports (AST) without running anything, so other programs pay nothing."""

from __future__ import annotations

import ast


def is_loop_program(path: str) -> bool:
    """Whether a Python file is a loop program: it imports from solar.loopir."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return False
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "solar.loopir":
            return True
        if isinstance(node, ast.Import) and any(a.name == "solar.loopir" for a in node.names):
            return True
    return False
