"""Keeping torch's compiler stack out of a capture: stand-ins for the modules torch imports
lazily from places every fake-tensor capture reaches, though a capture without a ShapeEnv
uses none of them. Each is exact, and each gives way to the real module as soon as anything
needs more than it answers.

- `torch._dynamo` (2-3 s): its config module alone is loaded, torch._disable_dynamo's
  wrappers call their function directly while the package is not imported, and
  `torch._dynamo.source` answers the two names torch reads when it makes a real tensor fake.
- `torch.fx.experimental.symbolic_shapes` and `sympy` (0.7 s): the helpers torch imports on
  every op answer plain (non-symbolic) values themselves.

fake_mode() puts them in place and makes the capture's FakeTensorMode.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import importlib.abc
import importlib.machinery
import importlib.util
import operator
import sys
import types
import warnings
from typing import Any, Callable, Dict, Iterator, List, Optional

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._ordered_set import OrderedSet


# Capturing without torch._dynamo. Importing it (the compiler stack: sympy, inductor,
# torch.distributed) costs 2-3 s, most of a small program's analysis, and a capture uses
# none of it; torch imports it from places every fake-tensor capture reaches (below). While
# it is not imported, nothing can be compiling, so not importing it changes no result; as
# soon as anything imports it (torch.compile in a program, a custom op's fake kernel),
# everything is torch's own again.


def _dynamo_loaded() -> bool:
    return hasattr(sys.modules.get("torch._dynamo"), "disable")


class _DynamoConfigOnly(types.ModuleType):
    """`torch._dynamo` (torch's attribute only, never in sys.modules) until something
    imports the package: its `config` is torch._dynamo.config itself, and any other
    attribute imports the real package (which then replaces this as torch's attribute) and
    is read from it."""

    def __getattr__(self, name: str) -> Any:
        return getattr(importlib.import_module("torch._dynamo"), name)


def fake_mode() -> FakeTensorMode:
    """A FakeTensorMode(allow_non_fake_inputs=True) for a capture, made and run without
    importing torch._dynamo when nothing has imported it yet.

    FakeTensorMode reads flags of torch._dynamo.config when it is made and on every op it
    runs (`torch._dynamo.config._custom_ops_profile`), and torch's lazy `torch._dynamo`
    imports the whole package for that. So the config module alone is loaded, under its own
    name (the very module torch._dynamo's __init__ finds in sys.modules and keeps when
    something imports the package later), and torch's `_dynamo` attribute is a
    _DynamoConfigOnly until then, and torch._dynamo.source a _DynamoSourceOnDemand. The
    mode has no ShapeEnv, so torch's symbolic shapes and sympy stand in too
    (_symbolic_shapes_on_demand)."""
    dispatch_without_dynamo()
    _symbolic_shapes_on_demand()
    if "torch._dynamo" in sys.modules or "_dynamo" in torch.__dict__:
        _dynamo_source_on_demand()
        return FakeTensorMode(allow_non_fake_inputs=True)
    package = importlib.util.find_spec("torch._dynamo")  # finds it; runs nothing
    config = sys.modules.get("torch._dynamo.config")
    if config is None:
        spec = importlib.machinery.PathFinder.find_spec(
            "torch._dynamo.config", package.submodule_search_locations)
        config = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = config
        try:
            spec.loader.exec_module(config)
        except BaseException:
            del sys.modules[spec.name]
            raise
    stand_in = _DynamoConfigOnly("torch._dynamo")
    stand_in.__file__ = package.origin
    stand_in.__path__ = list(package.submodule_search_locations)
    stand_in.__spec__ = package
    stand_in.config = config
    torch._dynamo = stand_in
    _dynamo_source_on_demand()
    return FakeTensorMode(allow_non_fake_inputs=True)


# torch._dynamo.source: every real tensor a capture makes fake goes through
# FakeTensorConverter.from_real_tensor, which imports RandomValueSource from it (for an
# isinstance test of the tensor's source) and, without a source, MetaConverter.meta_tensor,
# which imports ConstantSource (to name the tensor). Importing that module imports all of
# torch._dynamo, so a model built on real tensors, or one `torch.tensor(...)` under the fake
# mode (BatchNorm's num_batches_tracked), costs 2-3 s and slows every later dispatch.
# While torch._dynamo is not imported, the stand-in answers those two functions: no object
# is a RandomValueSource (only torch._dynamo makes them), and a real tensor's name is a
# source of its own (_RealTensorSource, what ConstantSource is to it). Anything else, and
# any import of the torch._dynamo package, puts the real module in its place.
_DYNAMO_SOURCE = "torch._dynamo.source"


class _NoRandomValueSource:
    """torch._dynamo.source.RandomValueSource before torch._dynamo exists: no instances."""


@dataclasses.dataclass(frozen=True)
class _RealTensorSource(torch._guards.Source):
    """torch._dynamo.source.ConstantSource as meta_tensor uses it: a name (no ShapeEnv
    reads it), `__meta_utils_unknown_tensor<n>`."""

    source_name: str

    @property
    def guard_source(self) -> torch._guards.GuardSource:
        return torch._guards.GuardSource.CONSTANT

    @property
    def _name_template(self) -> str:
        return self.source_name


def _dynamo_source_readers() -> Dict[str, frozenset]:
    """name -> the code of the functions given the stand-in's class for it."""
    from torch._subclasses.fake_tensor import FakeTensorConverter
    from torch._subclasses.meta_utils import MetaConverter

    def code(fn: Any) -> frozenset:
        return frozenset((fn.__code__,)) if isinstance(fn, types.FunctionType) else frozenset()

    return {"RandomValueSource": code(FakeTensorConverter.from_real_tensor),
            "ConstantSource": code(MetaConverter.meta_tensor)}


class _DynamoSourceOnDemand(types.ModuleType):
    """torch._dynamo.source (in sys.modules only) until torch._dynamo is imported."""

    _answers = {"RandomValueSource": _NoRandomValueSource, "ConstantSource": _RealTensorSource}
    _readers: Dict[str, frozenset] = {}

    def __getattr__(self, name: str) -> Any:
        if name == "__path__":  # the import system's probe: a module, not a package
            raise AttributeError(name)
        if sys.modules.get(_DYNAMO_SOURCE) is self and \
                sys._getframe(1).f_code in type(self)._readers.get(name, ()):
            return type(self)._answers[name]
        _dynamo_source_given_way()
        return getattr(importlib.import_module(_DYNAMO_SOURCE), name)


class _DynamoImported(importlib.abc.MetaPathFinder):
    """Takes the stand-in out of sys.modules when the torch._dynamo package is imported, so
    that its own modules import the real torch._dynamo.source; finds nothing itself."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname == "torch._dynamo":
            _dynamo_source_given_way()
        return None


_DYNAMO_IMPORTED = _DynamoImported()


def _dynamo_source_given_way() -> None:
    if isinstance(sys.modules.get(_DYNAMO_SOURCE), _DynamoSourceOnDemand):
        del sys.modules[_DYNAMO_SOURCE]
    if _DYNAMO_IMPORTED in sys.meta_path:
        sys.meta_path.remove(_DYNAMO_IMPORTED)


def _dynamo_source_on_demand() -> None:
    if "torch._dynamo" in sys.modules or _DYNAMO_SOURCE in sys.modules:
        return
    package = importlib.util.find_spec("torch._dynamo")  # finds it; runs nothing
    spec = importlib.machinery.PathFinder.find_spec(  # not importing the package, as
        _DYNAMO_SOURCE, package.submodule_search_locations)  # importlib.util's would
    if spec is None:
        return
    stand_in = _DynamoSourceOnDemand(_DYNAMO_SOURCE)
    stand_in.__spec__ = spec
    stand_in.__file__ = spec.origin
    stand_in.__loader__ = spec.loader
    _DynamoSourceOnDemand._readers = _dynamo_source_readers()
    sys.meta_path.insert(0, _DYNAMO_IMPORTED)
    sys.modules[_DYNAMO_SOURCE] = stand_in


# torch._disable_dynamo (on every TorchDispatchMode subclass's __torch_dispatch__: the fake
# mode, the recorder, FlopCounterMode; on the type-promotion wrapper of every torch._refs
# decomposition...) wraps a function in `inner`, whose first call imports torch._dynamo to
# wrap it in torch._dynamo.disable, unless the function already carries that wrapped form
# as its `__dynamo_disable` attribute.
_LAZY_DISABLE_CODE = getattr(torch._disable_dynamo(lambda: None), "__code__", None)
_dispatch_scanned = False


def dispatch_without_dynamo() -> None:
    """Gives each function torch._disable_dynamo has wrapped so far a `__dynamo_disable`
    that calls it directly while torch._dynamo is not imported (no frame can be compiling
    then, so the disable would do nothing) and, on its first call after torch._dynamo is
    imported, becomes torch._dynamo.disable's wrapper, as torch makes it. A torch whose
    wrapper differs from the one this expects keeps its own behavior. Once per process
    (~40 ms): what is wrapped later (a program's own dispatch mode) imports torch._dynamo
    as torch has it do."""
    global _dispatch_scanned
    code = _LAZY_DISABLE_CODE
    if _dispatch_scanned or _dynamo_loaded() or code is None \
            or code.co_freevars != ("fn", "recursive"):
        return
    _dispatch_scanned = True
    for inner in gc.get_referrers(code):
        if not isinstance(inner, types.FunctionType) or inner.__code__ is not code:
            continue
        try:
            fn, recursive = (cell.cell_contents for cell in inner.__closure__)
            if getattr(fn, "__dynamo_disable", None) is None:
                setattr(fn, "__dynamo_disable", _disabled_once_loaded(fn, recursive))
        except (AttributeError, TypeError, ValueError):  # torch's own first call decides
            continue


def _disabled_once_loaded(fn: Callable, recursive: bool) -> Callable:
    def call(*args, **kwargs):
        if not _dynamo_loaded():
            return fn(*args, **kwargs)
        disabled = sys.modules["torch._dynamo"].disable(fn, recursive, wrapping=False)
        setattr(fn, "__dynamo_disable", disabled)  # torch's own, from now on
        return disabled(*args, **kwargs)

    return call


# Capturing without sympy (0.5 s) and torch.fx.experimental.symbolic_shapes (0.2 s more).
# FakeTensorMode (on every op it runs and caches), torch._refs and torch._prims_common (in
# every decomposition), torch._check, and torch.distributed.tensor (at import: torch's C++
# side imports it on the first __torch_dispatch__ that reaches a tensor subclass instead of a
# mode, as a decomposition on FakeTensors does) import helpers of symbolic_shapes, which
# imports sympy. On plain values (Python bools and ints, tensors whose sizes, strides and
# offset are ints, which is all a capture without a ShapeEnv has) each of those helpers is a
# type test and a return, the same code path as in the real module; a symbolic value (a
# SymInt, SymBool, SymFloat: only a ShapeEnv, which lives in the real module, makes ones
# with symbols) goes to the real function. Any other name, and any attribute a program sets,
# imports the real module, which from then on is torch's own.
_SYMBOLIC_SHAPES = "torch.fx.experimental.symbolic_shapes"
_PLAIN_SCALARS = (int, float, bool, str, type(None))


def _symbolic_shapes() -> types.ModuleType:
    """The real torch.fx.experimental.symbolic_shapes, imported if only the stand-in is."""
    module = sys.modules.get(_SYMBOLIC_SHAPES)
    if module is None or isinstance(module, _SymbolicShapesOnDemand):
        sys.modules.pop(_SYMBOLIC_SHAPES, None)
        module = importlib.import_module(_SYMBOLIC_SHAPES)
        torch.fx.experimental.symbolic_shapes = module
        real_class = module.GuardOnDataDependentSymNode
        for held in _guard_error_holders:
            for name, value in list(held.items()):
                if value is _GuardOnDataDependentSymNode:
                    held[name] = real_class
        _guard_error_holders.clear()
    return module


# The real helpers, each read from the real module the first time a stand-in helper needs it
# (not on every call: a program that patches one of them and restores it puts the stand-in's
# helper, the value it read, back on the real module).
_real_helpers: Dict[str, Callable[..., Any]] = {}


def _real(name: str) -> Callable[..., Any]:
    helper = _real_helpers.get(name)
    if helper is None:
        module = _symbolic_shapes()
        helper = getattr(module, name)
        if not getattr(module.__spec__, "_initializing", False):
            _real_helpers[name] = helper
    return helper


def _has_no_symbols(val: Any) -> bool:
    """Whether symbolic_shapes._iterate_exprs and _iterate_nodes of `val` yield nothing,
    told without sympy; False when it cannot tell (the real module decides then)."""
    if type(val) in _PLAIN_SCALARS:
        return True
    if isinstance(val, (tuple, list)):
        return all(_has_no_symbols(v) for v in val)
    if type(val) is dict:
        return all(_has_no_symbols(k) and _has_no_symbols(v) for k, v in val.items())
    if isinstance(val, torch.Tensor):  # a sparse or nested one is the real module's
        return val.layout == torch.strided and _has_no_symbols(val.size()) \
            and _has_no_symbols(val.stride()) and type(val.storage_offset()) is int
    return False


def _plain_or_real(name: str, is_plain: Callable[..., bool],
                   plain: Callable[..., Any]) -> Callable[..., Any]:
    """symbolic_shapes.<name>: `plain(*args)` when `is_plain(*args)`, else the real one."""

    def helper(*args, **kwargs):
        try:
            if not kwargs and is_plain(*args):
                return plain(*args)
        except TypeError:  # a call the real helper's signature rejects: it says how
            pass
        return _real(name)(*args, **kwargs)

    helper.__name__ = helper.__qualname__ = name
    return helper


def _all_bools(*values: Any) -> bool:
    return all(type(v) is bool for v in values)


def _first(value: Any, *_: Any) -> Any:
    return value


def _int_trees_equal(x: Any, y: Any) -> Optional[bool]:
    """sym_eq(x, y) for ints and (nested) tuples or lists of ints; None for anything else."""
    if isinstance(x, (tuple, list)) and isinstance(y, (tuple, list)):
        if len(x) != len(y):
            return False
        equal = True
        for a, b in zip(x, y):
            e = _int_trees_equal(a, b)
            if e is None:
                return None
            equal = equal & e
        return equal
    if type(x) is int and type(y) is int:
        return x == y
    return None


def expect_true(a: Any, skip: int = 0) -> bool:
    if type(a) is bool:
        return a
    # The real one names the frame `skip + 1` levels up in the guard it records.
    return _real("expect_true")(a, skip + 1)


def sym_eq(x: Any, y: Any) -> Any:
    equal = _int_trees_equal(x, y)
    return equal if equal is not None else _real("sym_eq")(x, y)


def guard_size_oblivious(expr: Any) -> bool:
    # Deprecated in torch: its wrapper warns at the caller's line, as this does.
    real = _real("guard_size_oblivious")
    message = getattr(real, "__deprecated__", None)
    if message is None or not hasattr(real, "__wrapped__"):
        return real(expr)
    warnings.warn(message, FutureWarning, stacklevel=2)
    return real.__wrapped__(expr)


def compute_unbacked_bindings(shape_env: Any, *args: Any, **kwargs: Any) -> Any:
    if shape_env is None:
        return None
    return _real("compute_unbacked_bindings")(shape_env, *args, **kwargs)


def _no_exprs(val: Any) -> Iterator[Any]:
    return iter(())


# name -> (are the arguments plain?, the real function's result on them)
_PLAIN_HELPERS: Dict[str, tuple] = {
    "guard_or_false": (_all_bools, _first),
    "guard_or_true": (_all_bools, _first),
    "statically_known_true": (_all_bools, _first),
    "guard_bool": (_all_bools, _first),
    "guard_int": (lambda a: type(a) is int, _first),
    "guard_float": (lambda a: type(a) is float, _first),
    "sym_and": (_all_bools, lambda x, *others: functools.reduce(operator.and_, others, x)),
    "sym_or": (_all_bools, lambda x, *others: functools.reduce(operator.or_, others, x)),
    "is_nested_int": (lambda s: not isinstance(s, torch.SymInt), lambda s: False),
    "is_symbolic": (lambda v: isinstance(v, (int, float, bool)), lambda v: False),
    "has_guarding_hint": (lambda a: type(a) in (int, float, bool), lambda a: True),
    "guarding_hint_or_throw": (lambda a: type(a) in (int, bool), _first),
    "free_symbols": (_has_no_symbols, lambda val: OrderedSet()),
    "free_unbacked_symbols": (_has_no_symbols, lambda x: OrderedSet()),
    "has_free_symbols": (_has_no_symbols, lambda val: False),
    "has_free_unbacked_symbols": (_has_no_symbols, lambda x: False),
    "_iterate_exprs": (_has_no_symbols, _no_exprs),
    "_iterate_nodes": (_has_no_symbols, _no_exprs),
}
_EXACT_HELPERS = (expect_true, sym_eq, guard_size_oblivious, compute_unbacked_bindings)


def _importers_of_guard_error() -> frozenset:
    """The code of the one function given the stand-in's GuardOnDataDependentSymNode to
    keep in a local: FakeTensorMode's cache-entry check imports the class on every cache
    miss, to catch it around rebuilding an output from the entry. The class is raised only
    by a ShapeEnv, on symbols a ShapeEnv made, so never while the stand-in is in place (the
    real module, where ShapeEnv lives, replaces it as soon as anything uses one) and never
    while that function's local copy of the name lives. A module that imports the class at
    its top (torch.distributed.tensor._decompositions) gets the stand-in's too, and the real
    class in its place when the real module is imported (_guard_error_holders); any other
    function gets the real class."""
    check = getattr(FakeTensorMode, "_get_output_info_for_cache_entry", None)
    return frozenset((check.__code__,)) if isinstance(check, types.FunctionType) \
        else frozenset()


class _GuardOnDataDependentSymNode(RuntimeError):
    pass


# The globals of the modules given _GuardOnDataDependentSymNode at their top level.
_guard_error_holders: List[Dict[str, Any]] = []


class _SymbolicShapesOnDemand(types.ModuleType):
    """torch.fx.experimental.symbolic_shapes (in sys.modules and as torch.fx.experimental's
    attribute) until something needs the real module: the helpers above, and for any other
    name the real module's attribute, which imports it in the stand-in's place."""

    _guard_error_importers = frozenset()

    def __getattr__(self, name: str) -> Any:
        if name == "__path__":  # the import system's probe: a module, not a package
            raise AttributeError(name)
        if name == "GuardOnDataDependentSymNode" and sys._getframe(1).f_code in \
                type(self)._guard_error_importers:
            return _GuardOnDataDependentSymNode
        if name == "GuardOnDataDependentSymNode" \
                and sys._getframe(1).f_code.co_name == "<module>":
            _guard_error_holders.append(sys._getframe(1).f_globals)
            return _GuardOnDataDependentSymNode
        return getattr(_symbolic_shapes(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("__"):
            super().__setattr__(name, value)
        else:  # a program patching torch patches the real module
            setattr(_symbolic_shapes(), name, value)


def _symbolic_shapes_on_demand() -> None:
    """Puts the stand-ins in place of torch.fx.experimental.symbolic_shapes and sympy while
    nothing has imported the real modules (a ShapeEnv, torch._dynamo, a program)."""
    experimental = sys.modules.get("torch.fx.experimental")
    if _SYMBOLIC_SHAPES in sys.modules or experimental is None:
        return
    spec = importlib.util.find_spec(_SYMBOLIC_SHAPES)  # finds it; runs nothing
    if spec is None:
        return
    _sympy_on_demand()
    stand_in = _SymbolicShapesOnDemand(_SYMBOLIC_SHAPES)
    stand_in.__spec__ = spec
    stand_in.__file__ = spec.origin
    stand_in.__loader__ = spec.loader
    helpers = dict(stand_in.__dict__)
    for name, (is_plain, plain) in _PLAIN_HELPERS.items():
        helpers[name] = _plain_or_real(name, is_plain, plain)
    for helper in _EXACT_HELPERS:
        helpers[helper.__name__] = helper
    stand_in.__dict__.update(helpers)
    _SymbolicShapesOnDemand._guard_error_importers = _importers_of_guard_error()
    sys.modules[_SYMBOLIC_SHAPES] = stand_in
    experimental.symbolic_shapes = stand_in


# sympy itself: torch imports it inside functions every capture runs, FakeTensorMode's
# maybe_propagate_real_tensors (on every op's result; it uses sympy only on symbolic values)
# and torch._prims_common.elementwise_dtypes (in every elementwise decomposition:
# `isinstance(x, sympy.Basic)`). While sympy is not imported no object is a sympy.Basic,
# so elementwise_dtypes is given a class no object is an instance of until sympy is
# imported; every other attribute, from anyone, imports the real package in the stand-in's
# place, and so does importing one of its submodules (_SympySubmodules).
class _NoInstancesBeforeSympy(type):
    """sympy.<name> for isinstance tests: False while sympy is not imported, then sympy's."""

    def __instancecheck__(cls, obj: Any) -> bool:
        real = sys.modules.get("sympy")
        if real is None or isinstance(real, _SympyOnDemand):
            return False
        return isinstance(obj, getattr(real, cls.__name__))


_SYMPY_CLASSES = {"Basic": _NoInstancesBeforeSympy("Basic", (), {})}


class _SympyOnDemand(types.ModuleType):
    """sympy (in sys.modules only) until something needs more than _SYMPY_CLASSES."""

    _class_readers = frozenset()

    def __getattr__(self, name: str) -> Any:
        if name in _SYMPY_CLASSES and sys.modules.get("sympy") is self \
                and sys._getframe(1).f_code in type(self)._class_readers:
            return _SYMPY_CLASSES[name]
        return getattr(_sympy(), name)


class _AlreadyLoaded(importlib.abc.Loader):
    """Gives the import system a module that importing sympy has already loaded."""

    def __init__(self, module: types.ModuleType):
        self.module = module
        self.spec = module.__spec__

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return self.module

    def exec_module(self, module: types.ModuleType) -> None:
        module.__spec__ = self.spec  # the import system set ours


class _SympySubmodules(importlib.abc.MetaPathFinder):
    """`import sympy.core...` while the stand-in is sys.modules["sympy"]: the import system
    has read the stand-in (as the parent package) before asking the finders, so this
    imports sympy, which loads its submodules, and answers with the one asked for."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if not fullname.startswith("sympy.") \
                or not isinstance(sys.modules.get("sympy"), _SympyOnDemand):
            return None
        _sympy()
        module = sys.modules.get(fullname)
        if module is None:
            return None  # not one sympy's __init__ imports: found as usual
        # The import system answers a module that appeared while it was finding it with the
        # module's __spec__, and loads that: so it is ours until _AlreadyLoaded puts it back.
        spec = importlib.machinery.ModuleSpec(fullname, _AlreadyLoaded(module))
        module.__spec__ = spec
        return spec


_SYMPY_SUBMODULES = _SympySubmodules()


def _sympy() -> types.ModuleType:
    """The real sympy, imported if only the stand-in is."""
    module = sys.modules.get("sympy")
    if module is None or isinstance(module, _SympyOnDemand):
        sys.modules.pop("sympy", None)
        if _SYMPY_SUBMODULES in sys.meta_path:
            sys.meta_path.remove(_SYMPY_SUBMODULES)
        module = importlib.import_module("sympy")
    return module


def _sympy_on_demand() -> None:
    if "sympy" in sys.modules:
        return
    spec = importlib.util.find_spec("sympy")  # finds it; runs nothing
    elementwise_dtypes = getattr(sys.modules.get("torch._prims_common"), "elementwise_dtypes",
                                 None)
    if spec is None or spec.submodule_search_locations is None \
            or not isinstance(elementwise_dtypes, types.FunctionType):
        return
    stand_in = _SympyOnDemand("sympy")
    stand_in.__spec__ = spec
    stand_in.__file__ = spec.origin
    stand_in.__loader__ = spec.loader
    stand_in.__path__ = list(spec.submodule_search_locations)
    stand_in.__package__ = "sympy"
    _SympyOnDemand._class_readers = frozenset((elementwise_dtypes.__code__,))
    sys.meta_path.insert(0, _SYMPY_SUBMODULES)
    sys.modules["sympy"] = stand_in
