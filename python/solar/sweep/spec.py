"""The sweep spec (docs/sweep.md): which programs, on which devices, over which grid of
`--set` values, with which fixed settings, written where. Read from a YAML or JSON file
(load_spec) or built from the command line (cli.py); both give the same Spec, checked
(check) before anything runs, then expanded into points (expand), one per (program, grid
point), each with a stable key.

Torch-free and quick: the parent process reads and checks the spec.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import itertools
import json
import math
import os
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import models
from ..errors import user_error
from ..models import estimate as model_estimate
from ..models.run import DEFAULT_SEQ
from ..program_source import module_constants
from ..command_options import canonical_archs

SPEC_SCHEMA = "solar.sweep-spec.v1"

# The keyword arguments of solar.models.analyze_model a grid key or `model:` may set, and
# the other names accepted for them (so that one grid, batch_size/seq_len, sweeps a
# KernelBench program and a Hugging Face model alike).
MODEL_ARGS = ("phase", "batch", "seq", "context", "dtype")
MODEL_ALIASES = {"batch_size": "batch", "seq_len": "seq", "context_len": "context"}
# `model:` may also fix these (not swept): the task of a config.json, config field overrides.
MODEL_FIXED = ("task", "config")

# The most points a sweep runs without --force (docs/sweep.md, "Limits"), and the rough
# seconds of one program's point (capture + analysis of a small program on one worker:
# 0.8-2.4 s measured by bench/sweep_throughput.py); a model's from its work estimate.
LIMIT_POINTS = 10_000
PROGRAM_POINT_SECONDS = 2.0

_POLICIES = ("pytorch-default", "tf32", "strict-fp32")
_CACHE_STATES = ("cold", "warm")
_MODES = ("attainable", "provable")
_OPTIMIZERS = ("sgd", "adam", "adamw")

# Spec fields: name -> (python types accepted, what the message says it must be).
_FIELDS: Dict[str, Tuple[tuple, str]] = {
    "schema": ((str,), "a string"),
    "programs": ((list, str), "a list of programs"),
    "archs": ((list, str), "a list of device ids"),
    "grid": ((dict,), "a mapping NAME: [VALUES]"),
    "set": ((dict,), "a mapping NAME: VALUE"),
    "model": ((dict,), "a mapping of model settings (phase, batch, seq, context, dtype)"),
    "policy": ((str,), "one of " + ", ".join(_POLICIES)),
    "cache_state": ((str,), "cold or warm"),
    "mode": ((str,), "attainable or provable"),
    "cache_aware": ((bool,), "true or false"),
    "crosscheck": ((bool,), "true or false"),
    "train": ((bool,), "true or false"),
    "optimizer": ((str, type(None)), "sgd, adam, adamw or null"),
    "strict": ((bool,), "true or false"),
    "out": ((str, type(None)), "a folder path"),
    "jobs": ((int, type(None)), "a whole number of worker processes, or null"),
    "address": ((str, type(None)), "a scheduler address (tcp://HOST:PORT) or null"),
    "memory_limit_gb": ((int, float, type(None)), "GB per local worker, or null"),
    "plots": ((bool,), "true or false"),
}


def max_jobs() -> int:
    """The most local worker processes a sweep starts: 4 per core, at least 8."""
    return max(8, 4 * (os.cpu_count() or 1))


def _usage(message: str):
    return user_error(message, "usage")


@dataclasses.dataclass
class Spec:
    """One sweep. `grid` keeps its keys in the order given (the points' order)."""

    programs: List[str]
    archs: List[str] = dataclasses.field(default_factory=lambda: ["H100_SXM"])
    grid: Dict[str, List[Any]] = dataclasses.field(default_factory=dict)
    set: Dict[str, Any] = dataclasses.field(default_factory=dict)  # fixed --set, .py programs
    model: Dict[str, Any] = dataclasses.field(default_factory=dict)  # fixed, hf: models
    policy: str = "pytorch-default"
    cache_state: str = "cold"
    mode: str = "attainable"
    cache_aware: bool = True
    crosscheck: bool = False
    train: bool = False
    optimizer: Optional[str] = None
    strict: bool = False
    out: Optional[str] = None
    jobs: Optional[int] = None
    address: Optional[str] = None
    memory_limit_gb: Optional[float] = None
    plots: bool = True
    base: str = "."  # the spec file's folder: relative programs are looked up there too

    def analysis_options(self) -> Dict[str, Any]:
        """The settings that change a point's numbers: part of every point's key (the
        devices are not: adding one computes only its rows)."""
        return {"policy": self.policy, "cache_state": self.cache_state, "mode": self.mode,
                "cache_aware": self.cache_aware, "train": self.train,
                "optimizer": self.optimizer, "strict": self.strict, "set": dict(self.set),
                "model": dict(self.model)}

    def to_dict(self) -> Dict[str, Any]:
        """The spec as written to OUT/spec.json (a spec `solar sweep` reads back)."""
        d = {"schema": SPEC_SCHEMA}
        for f in dataclasses.fields(self):
            if f.name not in ("base",):
                d[f.name] = getattr(self, f.name)
        return d


# --------------------------------------------------------------------------- reading


def parse_value(text: str) -> Any:
    """A command-line value as `--set` reads it: a Python literal, else the text itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


# A --grid value that is not a Python literal is taken as text only when it is a plain word
# (bf16, gelu, H100_SXM, prefill): `[1`, `2x`, `1e` are typos, not strings.
_WORD = re.compile(r"[A-Za-z_][\w.+-]*")


def split_values(text: str) -> List[str]:
    """`--grid NAME=V1,V2,...` values: split at the commas outside brackets and quotes, so
    `(1,2),(3,4)` is two tuples; each stripped, empty ones dropped."""
    parts, depth, quote, current = [], 0, None, []
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(depth - 1, 0)
        elif ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def parse_grid_values(name: str, text: str) -> List[Any]:
    """The values of `--grid NAME=TEXT`: each a Python literal, or a plain word as text; any
    other text is a usage error (a literal mistyped)."""
    values = []
    for part in split_values(text):
        try:
            values.append(ast.literal_eval(part))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            if not _WORD.fullmatch(part):
                raise _usage(f"--grid {name}: {part!r} is neither a Python literal (1, 2.5, "
                             "'text', (1, 2)) nor a plain word (bf16)") from None
            values.append(part)
    return values


def override_text(value: Any) -> str:
    """The `--set` text that gives the program exactly `value` (capture.load_program
    literal-evaluates it)."""
    return repr(value)


def load_spec(path: str) -> Spec:
    """Reads a spec file: JSON when it ends in .json, else YAML (PyYAML). A missing file is
    an io error, text that does not parse a parse error, a bad field a usage error."""
    if not os.path.isfile(path):
        raise user_error(f"{path}: no such spec file" if not os.path.exists(path)
                         else f"{path}: not a file", "io")
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise user_error(f"{path}: not a spec: byte {e.start} is not UTF-8 text", "parse") from None
    if path.endswith(".json"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise user_error(f"{path}:{e.lineno}:{e.colno}: malformed JSON: {e.msg}",
                             "parse") from None
        except (ValueError, RecursionError) as e:  # an integer of 4300+ digits, deep nesting
            raise user_error(f"{path}: malformed JSON: {' '.join(str(e).split())[:200]}",
                             "parse") from None
    else:
        try:
            import yaml
        except ImportError:
            raise user_error(f"{path}: reading a YAML spec needs PyYAML (pip install pyyaml); "
                             "or write the spec as JSON (SPEC.json)", "usage") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
            problem = getattr(e, "problem", None) or str(e).splitlines()[0]
            raise user_error(f"{where}: malformed YAML: {problem}", "parse") from None
        except (ValueError, RecursionError) as e:  # deep nesting, an integer too long
            raise user_error(f"{path}: malformed YAML: {' '.join(str(e).split())[:200]}",
                             "parse") from None
    if not isinstance(data, dict):
        raise user_error(f"{path}: a spec is a mapping (programs:, archs:, grid:, ...), not "
                         f"{type(data).__name__}", "parse")
    return from_mapping(data, path, os.path.dirname(os.path.abspath(path)))


def _as_list(value: Any) -> List[Any]:
    return list(value) if isinstance(value, list) else [value]


def from_mapping(data: Dict[str, Any], source: str, base: str = ".") -> Spec:
    """A Spec from a parsed spec document (`source` names it in messages)."""
    unknown = [k for k in data if k not in _FIELDS]
    if unknown:
        raise _usage(f"{source}: unknown field{'s' if len(unknown) > 1 else ''} "
                     f"{', '.join(map(str, unknown))} (fields: {', '.join(_FIELDS)})")
    for name, value in data.items():
        types, what = _FIELDS[name]
        if isinstance(value, bool) and bool not in types:
            ok = False
        else:
            ok = isinstance(value, types)
        if not ok:
            raise _usage(f"{source}: {name} must be {what}, not {value!r}")
    if data.get("schema", SPEC_SCHEMA) != SPEC_SCHEMA:
        raise _usage(f"{source}: schema {data['schema']!r}: this solar reads {SPEC_SCHEMA}")
    if "programs" not in data:
        raise _usage(f"{source}: no programs (programs: [PROGRAM.py, hf:NAME, ...])")
    fields = {k: v for k, v in data.items() if k != "schema"}
    fields["programs"] = _as_list(fields["programs"])
    if "archs" in fields:
        fields["archs"] = [x.strip() for a in _as_list(fields["archs"])
                           for x in str(a).split(",") if x.strip()]
    grid: Dict[str, List[Any]] = {}
    for name, values in fields.get("grid", {}).items():
        grid[str(name)] = _as_list(values)
    fields["grid"] = grid
    spec = Spec(**fields, base=base)
    check_fields(spec, source)
    return spec


def check_fields(spec: Spec, source: str = "spec") -> None:
    """The spec's own consistency (no files or devices looked at): usage errors."""
    for p in spec.programs:
        if not isinstance(p, str) or not p.strip():
            raise _usage(f"{source}: programs: {p!r} is not a program path or hf:NAME")
    if not spec.programs:
        raise _usage(f"{source}: no programs")
    if len(set(spec.programs)) != len(spec.programs):
        twice = sorted({p for p in spec.programs if spec.programs.count(p) > 1})
        raise _usage(f"{source}: programs: {', '.join(twice)} given twice")
    if not spec.archs:
        raise _usage(f"{source}: no devices (archs: [H100_SXM, ...])")
    for name, values in spec.grid.items():
        if not name.isidentifier():
            raise _usage(f"{source}: grid key {name!r} is not a name (a module-level "
                         "constant of the programs, or a model setting)")
        if not values:
            raise _usage(f"{source}: grid {name}: no values")
        seen: List[Any] = []
        for v in values:
            if isinstance(v, dict) or v is None:
                raise _usage(f"{source}: grid {name}: {v!r} is not a value (a number, a "
                             "string, a list)")
            if any(v == s and type(v) is type(s) for s in seen):
                raise _usage(f"{source}: grid {name}: value {v!r} given twice")
            seen.append(v)
    for name in spec.set:
        if not str(name).isidentifier():
            raise _usage(f"{source}: set: {name!r} is not a name")
        if name in spec.grid:
            raise _usage(f"{source}: {name} is both swept (grid) and fixed (set)")
    for name in spec.model:
        if name in MODEL_FIXED:
            if name == "config" and not isinstance(spec.model[name], dict):
                raise _usage(f"{source}: model: config must be a mapping FIELD: VALUE")
            continue
        if _model_arg(name) is None:
            raise _usage(f"{source}: model: {name!r} is not a model setting "
                         f"({', '.join(MODEL_ARGS + MODEL_FIXED)})")
        if any(_model_arg(g) == _model_arg(name) for g in spec.grid):
            raise _usage(f"{source}: model setting {name} is also swept (grid)")
    if spec.policy not in _POLICIES:
        raise _usage(f"{source}: policy {spec.policy!r}: one of {', '.join(_POLICIES)}")
    if spec.cache_state not in _CACHE_STATES:
        raise _usage(f"{source}: cache_state {spec.cache_state!r}: cold or warm")
    if spec.mode not in _MODES:
        raise _usage(f"{source}: mode {spec.mode!r}: attainable or provable")
    if spec.optimizer is not None:
        if spec.optimizer not in _OPTIMIZERS:
            raise _usage(f"{source}: optimizer {spec.optimizer!r}: {', '.join(_OPTIMIZERS)}")
        if not spec.train:
            raise _usage(f"{source}: optimizer needs train: true (--train)")
    if spec.jobs is not None and spec.jobs < 1:
        raise _usage(f"{source}: jobs must be at least 1")
    if spec.jobs is not None and spec.jobs > max_jobs():
        raise _usage(f"{source}: jobs {spec.jobs}: at most {max_jobs()} local worker processes "
                     f"on this machine (4 per core); a larger sweep runs on a cluster "
                     "(--address)")
    if spec.memory_limit_gb is not None and not spec.memory_limit_gb > 0:
        raise _usage(f"{source}: memory_limit_gb must be positive")
    if spec.address is not None and spec.memory_limit_gb is not None:
        raise _usage(f"{source}: memory_limit_gb sets the local workers' limit; a cluster "
                     "at --address has its own (dask worker --memory-limit)")


# --------------------------------------------------------------------------- programs


def is_model(ref: str) -> bool:
    """A Hugging Face model (solar.models.analyze_model), not a program file."""
    return ref.startswith("hf:") or ref.endswith("config.json")


def _model_arg(name: str) -> Optional[str]:
    name = MODEL_ALIASES.get(name, name)
    return name if name in MODEL_ARGS else None


@dataclasses.dataclass(frozen=True)
class Program:
    """A spec's program, found and read: `ref` as written, `path` where it was found (the
    ref itself for hf:NAME), `digest` of its contents (part of its points' keys)."""

    ref: str
    path: str
    kind: str  # "program" (a .py file analyze_file reads) or "model"
    digest: str
    data: bytes = dataclasses.field(default=b"", repr=False, compare=False)  # the file's


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def resolve_program(ref: str, base: str) -> Program:
    """Finds `ref` (in the current folder, else the spec file's folder) and checks its
    kind; io error when it is missing."""
    if ref.startswith("hf:"):
        if not ref[3:].strip():
            raise _usage(f"{ref}: hf: needs a model name (hf:gpt2, hf:llama-3.1-8b)")
        return Program(ref, ref, "model", _digest(ref.encode()))
    path = ref
    if not os.path.exists(path) and not os.path.isabs(ref):
        alt = os.path.join(base, ref)
        if os.path.exists(alt):
            path = alt
    if not os.path.isfile(path):
        raise user_error(f"{ref}: no such file", "io")
    if not (ref.endswith(".py") or is_model(ref)):
        raise _usage(f"{ref}: a sweep's program is a Python program (.py), hf:NAME or a "
                     "model's config.json")
    with open(path, "rb") as f:
        data = f.read()
    return Program(ref, path, "model" if is_model(ref) else "program", _digest(data), data)


def program_constants(program: Program) -> List[str]:
    """Names `--set` may replace in a .py program (program_source.module_constants); parse error
    when it is not Python."""
    with open(program.path, encoding="utf-8") as f:
        text = f.read()
    try:
        tree = ast.parse(text, filename=program.path)
    except SyntaxError as e:
        raise user_error(f"{program.ref}:{e.lineno}: not a Python program: {e.msg}",
                         "parse") from None
    return sorted(module_constants(tree))


def check_keys(spec: Spec, program: Program) -> None:
    """Every grid and set key must be something the program takes: a module-level constant
    of a .py program, a model setting of a model. A usage error names both."""
    if program.kind == "model":
        for name in spec.grid:
            if _model_arg(name) is None:
                raise _usage(
                    f"{program.ref}: grid key '{name}' is not a model setting "
                    f"({', '.join(MODEL_ARGS)}; {', '.join(MODEL_ALIASES)} name them too)")
        return
    constants = program_constants(program)
    for where, names in (("grid", spec.grid), ("set", spec.set)):
        for name in names:
            if name not in constants:
                shown = ", ".join(constants[:40]) + (", ..." if len(constants) > 40 else "")
                raise _usage(f"{program.ref}: {where} key '{name}' is not a module-level "
                             f"constant of the program (its constants: {shown or 'none'})")


def check(spec: Spec) -> List[Program]:
    """Everything checkable before a worker starts: the programs (io), their keys (usage),
    the devices (unknown_device; spec.archs become the database's spelling). Returns the
    programs, found and read."""
    programs = [resolve_program(p, spec.base) for p in spec.programs]
    for program in programs:
        check_keys(spec, program)
        if program.kind == "model":
            check_model_settings(spec, program)
    spec.archs = canonical_archs(spec.archs)
    return programs


def _fixed_model_kwargs(spec: Spec) -> Dict[str, Any]:
    return {(k if k in MODEL_FIXED else _model_arg(k)): v for k, v in spec.model.items()}


def check_model_settings(spec: Spec, program: Program) -> None:
    """A model's settings, fixed (`model:`) and swept (each grid value), as `solar analyze`
    checks them (solar.models.ModelRun.check: a positive batch, seq and context, a known
    phase, dtype and task), and the model itself found (the registry, a config.json): usage
    errors before any point runs, not a failed row per point."""
    fixed = _fixed_model_kwargs(spec)
    fixed.pop("config", None)
    try:
        models.ModelRun(program.path, **fixed).check()
    except Exception as e:
        raise _usage(f"{program.ref}: model: {e}") from None
    for name, values in spec.grid.items():
        arg = _model_arg(name)
        for v in values:
            try:
                models.ModelRun(program.path, **{**fixed, arg: v}).check()
            except Exception as e:
                raise _usage(f"{program.ref}: grid {name}={v!r}: {e}") from None
    models.resolve(program.path, fixed.get("task"))


def count_points(spec: Spec, programs: Sequence[Program]) -> int:
    """The sweep's points, counted from the grid without listing them."""
    return len(programs) * math.prod(len(v) for v in spec.grid.values())


def model_values(program: Program, spec: Spec) -> Dict[str, Any]:
    """A model program's config.json values with the spec's `config:` overrides (torch-free:
    for the estimate of its points)."""
    try:
        values = dict(models.resolve(program.path).config)
    except Exception:  # noqa: BLE001 - checked already; an estimate only
        values = {}
    values.update(spec.model.get("config") or {})
    return values


def point_seconds(spec: Spec, point: "Point", values: Optional[Dict[str, Any]]) -> float:
    """About how long one point takes on one worker (a rough figure: docs/sweep.md): a
    program's PROGRAM_POINT_SECONDS; a model's from its work estimate (layers x ops per
    layer, solar.models.estimate)."""
    if point.program.kind != "model" or values is None:
        return PROGRAM_POINT_SECONDS
    kwargs = _fixed_model_kwargs(spec)
    kwargs.update({_model_arg(k): v for k, v in point.settings})
    phase = kwargs.get("phase", "prefill")
    seq = kwargs.get("seq") or DEFAULT_SEQ
    est = model_estimate
    per = est.ops_per_layer(str(values.get("model_type")), phase, seq, spec.train)
    return 1.0 + min(est.trace_ops(est.layer_count(values), per), 10 ** 12) * est.SECONDS_PER_OP


# --------------------------------------------------------------------------- points


@dataclasses.dataclass(frozen=True)
class Point:
    """One capture: a program at one grid point. `key` is stable across runs (program as
    written, its contents' digest, the grid values, the analysis options); the rows are
    keyed by (key, device)."""

    program: Program
    settings: Tuple[Tuple[str, Any], ...]  # (grid key, value) in grid order
    key: str

    def label(self) -> str:
        return " ".join([self.program.ref] + [f"{k}={v}" for k, v in self.settings])


def point_key(program: Program, settings: Sequence[Tuple[str, Any]],
              options: Dict[str, Any]) -> str:
    doc = {"program": program.ref, "digest": program.digest,
           "settings": {k: v for k, v in settings}, "options": options}
    text = json.dumps(doc, sort_keys=True, default=repr, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def expand(spec: Spec, programs: Sequence[Program]) -> List[Point]:
    """The points: each program, then the grid's product (first key slowest)."""
    names = list(spec.grid)
    options = spec.analysis_options()
    points = []
    for program in programs:
        for values in itertools.product(*(spec.grid[n] for n in names)):
            settings = tuple(zip(names, values))
            points.append(Point(program, settings, point_key(program, settings, options)))
    return points


def task(spec: Spec, point: Point, archs: Sequence[str], force: bool = False) -> Dict[str, Any]:
    """What a worker needs for one point (plain data: it is pickled to the worker); `force`
    lets a model past the work estimate's limits be built (solar.models.estimate)."""
    t: Dict[str, Any] = {
        "key": point.key, "program": point.program.ref,
        "path": point.program.path if point.program.path.startswith("hf:")
        else os.path.abspath(point.program.path), "digest": point.program.digest,
        "source": point.program.data,
        "kind": point.program.kind, "settings": [list(s) for s in point.settings],
        "archs": list(archs),
        "options": {"policy": spec.policy, "cache_state": spec.cache_state,
                    "mode": spec.mode, "cache_aware": spec.cache_aware,
                    "crosscheck": spec.crosscheck, "train": spec.train,
                    "optimizer": spec.optimizer, "strict": spec.strict}}
    if point.program.kind == "model":
        kwargs = {(k if k in MODEL_FIXED else _model_arg(k)): v for k, v in spec.model.items()}
        kwargs.update({_model_arg(k): v for k, v in point.settings})
        t["model_kwargs"] = {**kwargs, "force": force}
    else:
        overrides = {k: override_text(v) for k, v in spec.set.items()}
        overrides.update({k: override_text(v) for k, v in point.settings})
        t["overrides"] = overrides
    return t
