"""From a model's answer to a candidate loop program, without running any of it: the program
is found in the answer's text, then read with Python's `ast` (parsing, never compiling to
bytecode) and refused when it reaches outside the loop language: imports, attribute access,
Python builtins, dunder names. Solar's loop-language parser (frontends/loopir/syntax.py)
checks the rest; nothing the model writes is ever executed."""

from __future__ import annotations

import ast
import re
import warnings
from typing import Optional, Tuple

from ..frontends.loopir import language as lang

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_MARK = "solar.loopir"

# Python builtins that reach outside a computation (files, processes, the interpreter's own
# objects): calling one is refused as unsafe. Other builtins (`len`, `sum`) are merely not
# part of the language, which the loop parser reports ("unknown intrinsic").
_EFFECTS = frozenset({
    "open", "exec", "eval", "compile", "getattr", "setattr", "delattr", "hasattr", "globals",
    "locals", "vars", "input", "print", "breakpoint", "exit", "quit", "help", "memoryview",
    "type", "object", "super", "dir", "id", "classmethod", "staticmethod", "property"})
_BUILTINS = _EFFECTS - lang.ALL_NAMES


class Rejected(Exception):
    """An answer that holds no acceptable program: `kind` (no_program, unsafe) and why."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


def program_text(answer: Optional[str]) -> str:
    """The loop program in a model's answer: the fenced code block that imports solar.loopir
    (the last such block when there are several), else the only code block, else the whole
    answer when it is the program itself. Reasoning in <think> tags is ignored."""
    text = _THINK.sub("", answer or "").strip()
    if not text:
        raise Rejected("no_program", "the answer is empty: answer with the program in one "
                                     "```python block")
    blocks = [body for _tag, body in _FENCE.findall(text)]
    marked = [b for b in blocks if _MARK in b]
    if marked:
        return marked[-1].strip() + "\n"
    if len(blocks) == 1 and blocks[0].strip():
        return blocks[0].strip() + "\n"
    if not blocks and _MARK in text and _parses(text):
        return text + "\n"
    found = f"{len(blocks)} code blocks, none importing solar.loopir" if blocks else \
        "no code block"
    raise Rejected("no_program", f"the answer holds {found}; answer with exactly one ```python "
                                 "block holding the complete loop program, starting with "
                                 "`from solar.loopir import ...`")


def _parses(text: str) -> bool:
    try:
        _parse(text, "<answer>")
        return True
    except SyntaxError:
        return False


def _parse(text: str, path: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text, filename=path)  # an AST only: no bytecode, nothing runs


def check_safe(text: str, path: str) -> None:
    """Rejected("unsafe") when the program reaches outside the loop language: an import of
    anything but solar.loopir, attribute access (`os.system`), a Python builtin (`open`,
    `eval`, `__import__`, `getattr`, `print`, ...) or a dunder name. A syntax error is left to
    the loop parser, which reports it with its line."""
    try:
        tree = _parse(text, path)
    except SyntaxError:
        return
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        where = f"{path}:{line}"
        if isinstance(node, ast.Import):
            bad = [a.name for a in node.names if a.name != _MARK]
            if bad:
                raise Rejected("unsafe", f"{where}: `import {', '.join(bad)}`: a loop program "
                                         "imports only from solar.loopir")
        elif isinstance(node, ast.ImportFrom):
            if node.module != _MARK or node.level:
                raise Rejected("unsafe", f"{where}: `from {'.' * node.level}{node.module or ''} "
                                         "import ...`: a loop program imports only from "
                                         "solar.loopir")
        elif isinstance(node, ast.Attribute):
            raise Rejected("unsafe", f"{where}: attribute access (`.{node.attr}`) is not part of "
                                     "the loop language")
        elif isinstance(node, ast.Name) and node.id.startswith("__"):
            raise Rejected("unsafe", f"{where}: `{node.id}`: dunder names are not part of the "
                                     "loop language")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in _BUILTINS:
            raise Rejected("unsafe", f"{where}: `{node.func.id}(...)` is a Python builtin, not "
                                     "a loop-language intrinsic (Solar interprets the program; "
                                     "it has no file, process or network access)")


def candidate(answer: Optional[str], path: str) -> Tuple[str, str]:
    """(program text, path) of the answer's program, checked by check_safe."""
    text = program_text(answer)
    check_safe(text, path)
    return text, path
