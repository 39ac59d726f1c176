"""A program file's source, read with `ast` and never run: which frontend reads it, its
module-level constants, the `--set NAME=VALUE` overrides that replace them, and the errors a
file that is not a program gives. One implementation for the PyTorch, JAX and loop-language
frontends, `solar suite` and `solar sweep` (docs/torch-frontend.md, "Overrides").
"""

from __future__ import annotations

import ast
from typing import Any, Dict, Iterable, List, Optional

from .errors import did_you_mean, user_error


class ProgramFormatError(ValueError):
    """A Python file that is not a program of its frontend's format (no Model or
    get_inputs, say)."""


class OverrideError(ValueError):
    """A --set NAME the program file does not assign at module level (a usage error)."""


def parse_literal(text: str) -> Any:
    """A --set value: a Python literal (2, 1e-5, True, "x"), else the text itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_overrides(items: Iterable[str], option: str = "--set") -> Dict[str, str]:
    """--set NAME=VALUE items as {NAME: VALUE text}; a malformed one is a usage error
    (solar.UserError, exit 2)."""
    out: Dict[str, str] = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name.isidentifier():
            raise user_error(f"{option} {item}: expected NAME=VALUE", "usage")
        out[name] = value
    return out


def assigned_names(stmt: Any) -> List[str]:
    """Names a top-level statement binds by assignment: `NAME = ...`, `NAME: T = ...`, and
    the names of tuple or list targets (`depth, height, width = 16, 32, 32`), in order.
    These are the names --set may replace (inject_overrides and
    module_constants apply this rule)."""

    def names(target: Any) -> List[str]:
        if isinstance(target, ast.Name):
            return [target.id]
        if isinstance(target, (ast.Tuple, ast.List)):
            return [n for e in target.elts for n in names(e)]
        if isinstance(target, ast.Starred):
            return names(target.value)
        return []  # attribute or subscript targets bind no module-level name

    if isinstance(stmt, ast.Assign):
        return [n for t in stmt.targets for n in names(t)]
    if isinstance(stmt, ast.AnnAssign):
        return names(stmt.target)
    return []



def module_constants(tree: ast.Module) -> set:
    """Names a `--set` may replace in this file: those a top-level assignment binds
    (assigned_names, the rule inject_overrides applies)."""
    names = set()
    for stmt in tree.body:
        names.update(assigned_names(stmt))
    return names


def inject_overrides(tree: ast.Module, path: str,
                     overrides: Optional[Dict[str, str]]) -> ast.Module:
    """`tree` with `NAME = VALUE` injected right after each top-level statement that assigns
    NAME (alone or in a tuple assignment, assigned_names), for each override (NAME -> VALUE
    text, a Python literal or else a string), so later constants and get_inputs() see the
    new value. A NAME the file never assigns at top level raises OverrideError."""
    values = {k: parse_literal(v) for k, v in (overrides or {}).items()}
    if not values:
        return tree
    assigned = set()
    constants = set()  # every module-level name: what a misspelt --set NAME is compared with
    body = []
    for stmt in tree.body:
        body.append(stmt)
        for name in assigned_names(stmt):
            constants.add(name)
            if name in values:
                assigned.add(name)
                fix = ast.parse(f"{name} = {values[name]!r}").body[0]
                body.append(ast.copy_location(fix, stmt))
    missing = sorted(set(values) - assigned)
    if missing:
        raise OverrideError(f"{path}: --set names {', '.join(missing)}, which the file does "
                            "not assign at module level" + did_you_mean(missing[0], constants))
    tree.body = body
    ast.fix_missing_locations(tree)
    return tree


# --------------------------------------------------------------------------- frontends


def _parse_file(path: str) -> Optional[ast.Module]:
    try:
        with open(path, encoding="utf-8") as f:
            return ast.parse(f.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return None


def imports_loopir(tree: ast.Module) -> bool:
    """Whether a module is a loop program (docs/loop-language.md): it imports solar.loopir."""
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "solar.loopir":
            return True
        if isinstance(node, ast.Import) and any(a.name == "solar.loopir" for a in node.names):
            return True
    return False


def is_loop_program(path: str) -> bool:
    """Whether a Python file is a loop program: it imports from solar.loopir. Read from the
    file's imports without running anything, so other programs pay nothing."""
    tree = _parse_file(path)
    return tree is not None and imports_loopir(tree)


def is_jax_program(path: str) -> bool:
    """Whether a Python file is a JAX program: it imports jax or flax and not torch. Read
    from the file's imports, without running it or importing jax."""
    tree = _parse_file(path)
    if tree is None:
        return False
    mods = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            mods.add(node.module.split(".")[0])
    return bool(mods & {"jax", "flax"}) and "torch" not in mods
