"""From a program's path to its ProgramAnalysis: the dispatch that picks the frontend (the
loop language, JAX, PyTorch) or reads a saved OpTrace, and the one place that imports the
frontends and the Hugging Face model phases. They import torch, jax, NumPy or transformers,
heavy optional dependencies, so they are imported on first use only: `solar --help` and a
graph's analysis import none of them (the accessors below, with literal module names, are
the whole list).
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
from types import ModuleType
from typing import Dict, Optional

from .analysis import ProgramAnalysis, ProgramOptions, analyze_trace
from .errors import user_error
from .program_source import is_jax_program

__all__ = ["ProgramAnalysis", "ProgramOptions", "analyze_file", "analyze_trace_file",
           "is_optrace"]

PYTHON_SUFFIXES = (".py",)


def torch_capture() -> ModuleType:
    """solar.frontends.torch.capture (torch), with programs that load Hugging Face models
    by name answered offline from Solar's model registry (solar.models.hub)."""
    capture = importlib.import_module("solar.frontends.torch.capture")
    if capture.hub_offline is None:
        capture.hub_offline = importlib.import_module("solar.models.hub").offline
    return capture


def torch_program() -> ModuleType:
    """solar.frontends.torch.program: a PyTorch program file to its analysis."""
    torch_capture()
    return importlib.import_module("solar.frontends.torch.program")


def torch_lowering() -> ModuleType:
    """solar.frontends.torch.lowering: solar.analyze of an nn.Module or function."""
    torch_capture()
    return importlib.import_module("solar.frontends.torch.lowering")


def torch_quiet() -> ModuleType:
    """solar.frontends.torch.quiet: torch's logging silenced around a capture."""
    return importlib.import_module("solar.frontends.torch.quiet")


def jax_capture() -> ModuleType:
    """solar.frontends.jax.capture (NumPy; jax itself when a program is captured)."""
    return importlib.import_module("solar.frontends.jax.capture")


def jax_program() -> ModuleType:
    """solar.frontends.jax.program: a JAX program file or function to its analysis."""
    return importlib.import_module("solar.frontends.jax.program")


def loop_program() -> ModuleType:
    """solar.frontends.loopir.program: parse, record and lift a loop program."""
    return importlib.import_module("solar.frontends.loopir.program")


def loop_validation() -> ModuleType:
    """solar.frontends.loopir.validation (NumPy): run a loop program and its graph."""
    return importlib.import_module("solar.frontends.loopir.validation")


def loop_interpret() -> ModuleType:
    """solar.frontends.loopir.interpret (NumPy): the loop program's interpreter."""
    return importlib.import_module("solar.frontends.loopir.interpret")


def model_phases() -> ModuleType:
    """solar.models.phases (torch, transformers): a model's prefill, decode and training
    steps."""
    return importlib.import_module("solar.models.phases")


def preload() -> Dict[str, str]:
    """Imports the PyTorch and JAX frontends with their frameworks, and the Hugging Face
    model phases with transformers, as `solar server` does once before it forks a child per
    command (solar.server). Returns, per framework, "imported" or why it could not be (not
    installed: its programs import it themselves)."""
    done = {}
    loads = (("torch", lambda: torch_program().preload()),
             ("jax", lambda: jax_program().preload()),
             ("transformers", model_phases),
             # the registry's model types (their modules are 1.5-2 s of a model's command)
             ("transformers models",
              lambda: importlib.import_module("solar.models.preload").registry_modules()))
    for name, load in loads:
        try:
            load()
            done[name] = "imported"
        except ImportError as e:
            done[name] = f"not imported: {e}"
    return done


# An import of solar.loopir on a line of its own, for a file Python cannot parse.
_LOOPIR_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+solar\.loopir[ \t]+import\b|"
                            r"import[ \t]+(?:[\w.]+[ \t]*(?:as[ \t]+\w+[ \t]*)?,[ \t]*)*"
                            r"solar\.loopir\b)", re.MULTILINE)


def is_loop_file(path: str) -> bool:
    """Whether the file at `path` is a loop program: it imports solar.loopir (anywhere in
    it). Such a file is one whatever else is wrong with it: one Python cannot parse (a
    syntax error, nesting its parser gives up on) is a loop program when a line of it
    imports solar.loopir, and the loop frontend refuses it with file:line; it is never
    handed to the PyTorch frontend, which would run it."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return False
    if "solar.loopir" not in text:
        return False
    try:
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _LOOPIR_IMPORT.search(text) is not None
    return any(
        (isinstance(n, ast.ImportFrom) and n.module == "solar.loopir" and not n.level) or
        (isinstance(n, ast.Import) and any(a.name == "solar.loopir" for a in n.names))
        for n in ast.walk(tree))


def analyze_file(path: str, options: Optional[ProgramOptions] = None) -> ProgramAnalysis:
    """Analyzes the Python program at `path` with the frontend that reads it: the loop one
    when it imports solar.loopir (is_loop_file), the JAX one when it imports jax or flax and
    not torch, the PyTorch one otherwise (each decided from the file's imports, nothing
    run)."""
    options = options or ProgramOptions()
    if is_loop_file(path):  # imports solar.loopir: the loop language, never executed
        return analyze_loop_file(path, options)
    if options.reference:
        raise user_error("--reference applies to loop programs (docs/loop-language.md)", "usage")
    if is_jax_program(path):
        return jax_program().analyze_file(path, options)
    return torch_program().analyze_file(path, options)


def analyze_loop_file(path: str, options: ProgramOptions) -> ProgramAnalysis:
    """A loop program's analysis; its validation (options.validate) runs it with NumPy."""
    validate = loop_validation().validate if options.validate else None
    return loop_program().analyze_file(path, options, validate)


def is_optrace(path: str) -> bool:
    """Whether `path` is a saved OpTrace (JSON whose schema is solar.optrace.v1)."""
    if not path.endswith(".json") or not os.path.isfile(path):
        return False
    try:
        with open(path, encoding="utf-8") as f:
            head = f.read(4096)
    except OSError:
        return False
    return '"solar.optrace.v1"' in head and head.lstrip().startswith("{")


def analyze_trace_file(path: str, options: ProgramOptions) -> ProgramAnalysis:
    """Lowers and analyzes a saved OpTrace; malformed JSON is a parse error naming the
    line and column."""
    with open(path, encoding="utf-8") as f:
        try:
            trace = json.load(f)
        except json.JSONDecodeError as e:  # a truncated trace, say
            raise user_error(f"{path}:{e.lineno}:{e.colno}: malformed OpTrace JSON: {e.msg}",
                             "parse") from None
    return analyze_trace(trace, path, options)
