"""The Python package's architecture: imports between solar modules go one way, down a fixed
order of layers, and only heavy optional dependencies are imported inside functions.

    0  leaves over the C++ core: _core, errors, atomic_write, report, executor, builder,
       progress (a command's stages on stderr), and the HTML rendering of report dicts
       (solar.html; report.Report renders with it)
    1  shared analysis types and program-source helpers: analysis, validation, program_source,
       shrink, memory_limit, command_options
    2  frontends: frontends.torch, frontends.jax, frontends.loopir (never each other)
    3  programs: the dispatch (programs.py, the one place that loads frontends lazily), the
       package facade (solar), the loop language (solar.loopir) and Hugging Face models
    4  features: suite, bench, headroom, sweep, translate, html.cli, insight, program_worker,
       server (the command line's forwarding to a server, and the server itself)
    5  the command line: cli, cli_usage, __main__ (cli imports the feature behind a command
       when that command runs, so that `solar --help` starts fast)

Read with `ast` from the source files, nothing imported: every `import` and `from` (at top
level and inside functions, absolute and relative) and every importlib.import_module("solar.…")
with a literal name is an edge.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[2] / "python"

# Module (or package prefix) -> layer; the longest matching prefix wins.
LAYERS = {
    "solar._core": 0, "solar.errors": 0, "solar.atomic_write": 0, "solar.report": 0,
    "solar.report_distributed": 0,
    "solar.executor": 0, "solar.builder": 0, "solar.html": 0, "solar.progress": 0,
    "solar.analysis": 1, "solar.validation": 1, "solar.program_source": 1, "solar.shrink": 1,
    "solar.memory_limit": 1, "solar.command_options": 1, "solar.ranks": 1,
    "solar.frontends": 2,
    "solar.programs": 3, "solar": 3, "solar.loopir": 3, "solar.models": 3,
    "solar.suite": 4, "solar.bench": 4, "solar.headroom": 4, "solar.sweep": 4,
    "solar.translate": 4, "solar.html.cli": 4, "solar.insight": 4, "solar.program_worker": 4,
    "solar.server": 4,
    "solar.cli": 5, "solar.cli_usage": 5, "solar.__main__": 5,
}
FRONTENDS = ("solar.frontends.torch", "solar.frontends.jax", "solar.frontends.loopir")
# Third-party packages that are optional and heavy: imported where they are needed, inside
# functions, so that `solar --help` and a graph's analysis never pay for them.
HEAVY = {"torch", "jax", "jaxlib", "flax", "transformers", "dask", "distributed", "plotly",
         "matplotlib", "openai", "pyarrow", "ml_dtypes", "numpy", "scipy", "yaml"}
# The modules that load solar modules lazily, with importlib and literal names: the dispatch
# (the frontends, which import torch, jax or NumPy) and the command line (its commands).
LAZY_LOADERS = ("solar.programs", "solar.cli")


def _modules() -> Dict[str, Path]:
    mods = {}
    for p in sorted(ROOT.joinpath("solar").rglob("*.py")):
        name = ".".join(p.relative_to(ROOT).with_suffix("").parts)
        mods[name[: -len(".__init__")] if name.endswith(".__init__") else name] = p
    mods["solar._core"] = ROOT / "solar" / "_core"  # the extension module
    return mods


MODULES = _modules()


def _target(name: str) -> Optional[str]:
    """The solar module an imported name is (a module, or the package that holds it)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> List[Tuple[str, bool, int, bool]]:
    """(imported solar module, inside a function?, line, via importlib?) for each edge."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    top = {id(n) for n in tree.body}
    # Top-level try/if blocks are still top level.
    for n in tree.body:
        if isinstance(n, (ast.Try, ast.If)):
            top.update(id(c) for c in ast.walk(n))
    out = []
    for node in ast.walk(tree):
        names: List[str] = []
        via_importlib = False
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            subs = [f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in MODULES]
            # `from . import x` names module x; `from .m import f` names module m.
            names = subs if len(subs) == len(node.names) else [mod] + subs
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            names, via_importlib = [node.args[0].value], True
        for name in names:
            if name == "solar" or name.startswith("solar."):
                target = _target(name)
                if target and target != module:
                    out.append((target, id(node) not in top, node.lineno, via_importlib))
    return out


EDGES = {m: _imports(m, p) for m, p in MODULES.items() if p.suffix == ".py"}


def layer(module: str) -> int:
    name = module
    while name not in LAYERS:
        name = name.rpartition(".")[0]
        assert name, f"{module} has no layer: add it to LAYERS"
    return LAYERS[name]


def _frontend(module: str) -> Optional[str]:
    return next((f for f in FRONTENDS if module == f or module.startswith(f + ".")), None)


def test_every_module_has_a_layer():
    missing = []
    for m in MODULES:
        try:
            layer(m)
        except AssertionError:
            missing.append(m)
    assert not missing, f"modules without a layer in LAYERS: {missing}"


def test_no_import_cycle():
    graph = {m: sorted({t for t, *_ in edges}) for m, edges in EDGES.items()}
    state: Dict[str, int] = {}  # 1: on the path, 2: done
    cycles = []

    def visit(m: str, path: List[str]) -> None:
        state[m] = 1
        for t in graph.get(m, []):
            if state.get(t) == 1:
                cycles.append(path[path.index(t):] + [t] if t in path else path + [t])
            elif t not in state:
                visit(t, path + [t])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def function_level_imports() -> List[str]:
    """Every import of a solar module inside a function, outside the lazy loader."""
    return [f"{m}:{line} imports {t}" for m, edges in EDGES.items()
            for t, inside, line, via_importlib in edges
            if (inside or via_importlib) and not (via_importlib and m in LAZY_LOADERS)]


def test_only_heavy_optional_packages_are_imported_in_functions():
    bad = list(function_level_imports())
    for m, p in MODULES.items():
        if p.suffix != ".py":
            continue
        tree = ast.parse(p.read_text(encoding="utf-8"))
        top = {id(n) for n in tree.body}
        for n in tree.body:
            if isinstance(n, (ast.Try, ast.If)):
                top.update(id(c) for c in ast.walk(n))
        for node in ast.walk(tree):
            if id(node) in top:
                continue
            if isinstance(node, ast.Import):
                roots = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                roots = [(node.module or "").split(".")[0]]
            else:
                continue  # relative imports are solar's: function_level_imports has them
            bad += [f"{m}:{node.lineno} imports {r}" for r in roots
                    if r not in HEAVY and r != "solar"]
    assert not bad, ("imports inside functions (only heavy optional packages, and the "
                     f"lazy loading of {', '.join(LAZY_LOADERS)}, belong there):\n"
                     + "\n".join(bad))


def test_imports_go_down_the_layers():
    bad = [f"{m} (layer {layer(m)}) imports {t} (layer {layer(t)}) at line {line}"
           for m, edges in EDGES.items() for t, _, line, _ in edges if layer(t) > layer(m)]
    assert not bad, "imports from a lower layer into a higher one:\n" + "\n".join(bad)


def test_frontends_do_not_import_each_other():
    bad = [f"{m} imports {t} at line {line}" for m, edges in EDGES.items()
           for t, _, line, _ in edges
           if _frontend(m) and _frontend(t) and _frontend(m) != _frontend(t)]
    assert not bad, "frontends importing each other:\n" + "\n".join(bad)


def test_the_command_line_starts_without_heavy_packages():
    """`solar --help` and a graph's analysis import no frontend: torch, jax, NumPy and
    transformers are imported when a program needs them (the lazy loaders above)."""
    code = ("import sys, solar.cli; print(sorted(m for m in sys.modules "
            "if m.split('.')[0] in ('torch', 'jax', 'numpy', 'transformers', 'openai')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
