"""Which frontend reads a Python program file: the JAX one when the file imports jax or flax
and not torch. Read from the file's imports (AST), without running it or importing jax, so
the PyTorch path pays nothing for the check."""

from __future__ import annotations

import ast


def is_jax_program(path: str) -> bool:
    """Whether a Python file is a JAX program: it imports jax or flax and not torch."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return False
    mods = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            mods.add(node.module.split(".")[0])
    return bool(mods & {"jax", "flax"}) and "torch" not in mods
