"""The programs of a `solar suite` folder: every `*.py` below it, sorted by path, that is a
KernelBench-format program (`class Model` or a module-level `forward()`, and `get_inputs`)
or a loop program; the other files are skipped with the reason."""

from __future__ import annotations

import ast
import os
from typing import Any, Dict, List, Tuple

from ..program_source import imports_loopir, module_constants
from ..shrink import int_constants


def _defines(tree: ast.Module, name: str) -> bool:
    """Whether the module binds `name` at top level (class, def, assignment or import)."""
    for stmt in tree.body:
        if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if stmt.name == name:
                return True
        elif isinstance(stmt, ast.Assign):
            if any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
                return True
        elif isinstance(stmt, ast.AnnAssign):
            if isinstance(stmt.target, ast.Name) and stmt.target.id == name:
                return True
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name.split(".")[0]) == name for a in stmt.names):
                return True
    return False


def _sort_key(rel: str) -> Tuple[str, ...]:
    return tuple(rel.split(os.sep))


def discover(folder: str) -> Tuple[List[Dict[str, Any]], List[Dict[str, str]]]:
    """(programs, skipped) under `folder`, recursively, sorted by path. A program is
    {"source": path, "constants": set of module-level names}; a skipped file is
    {"source": path, "reason": ...}. Hidden folders and __pycache__ are not entered."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                found.append(os.path.relpath(os.path.join(root, name), folder))
    found.sort(key=_sort_key)
    programs, skipped = [], []
    for rel in found:
        path = os.path.join(folder, rel)
        if os.path.basename(rel) == "__init__.py":
            skipped.append({"source": path, "reason": "package __init__.py"})
            continue
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            skipped.append({"source": path, "reason": f"unreadable: {e}"})
            continue
        try:
            tree = ast.parse(text, filename=path)
        except SyntaxError as e:
            # A file that names both parts of the format but does not parse is a broken
            # program (a failure); anything else is simply not one of ours.
            if "class Model" in text and "def get_inputs" in text:
                programs.append({"source": path, "constants": set(),
                                 "syntax_error": f"line {e.lineno}: {e.msg}"})
            else:
                skipped.append({"source": path, "reason": f"not Python 3 ({e.msg})"})
            continue
        # class Model (KernelBench), or a module-level forward() (JAX-style, torch too)
        missing = [n for n in ("Model", "get_inputs") if not _defines(tree, n)
                   and not (n == "Model" and _defines(tree, "forward"))]
        if missing and not imports_loopir(tree):
            skipped.append({"source": path, "reason": "not a KernelBench-format program "
                                                      f"(no top-level {', '.join(missing)})"})
            continue
        programs.append({"source": path, "constants": module_constants(tree),
                         "int_constants": int_constants(tree)})
    return programs, skipped
