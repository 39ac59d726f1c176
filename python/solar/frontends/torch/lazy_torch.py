"""Keeping torch's compiler stack out of a capture: torch imports `torch._dynamo` (2-3 s)
lazily from places every fake-tensor capture reaches, and a capture uses none of it.
fake_mode() makes the capture's FakeTensorMode without importing it (see below).
"""

from __future__ import annotations

import gc
import importlib.machinery
import importlib.util
import sys
import types
from typing import Any, Callable

import torch
from torch._subclasses.fake_tensor import FakeTensorMode


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
    _DynamoConfigOnly until then."""
    _dispatch_without_dynamo()
    if "torch._dynamo" in sys.modules or "_dynamo" in torch.__dict__:
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
    return FakeTensorMode(allow_non_fake_inputs=True)


# torch._disable_dynamo (on every TorchDispatchMode subclass's __torch_dispatch__: the fake
# mode, the recorder, FlopCounterMode; on the type-promotion wrapper of every torch._refs
# decomposition...) wraps a function in `inner`, whose first call imports torch._dynamo to
# wrap it in torch._dynamo.disable, unless the function already carries that wrapped form
# as its `__dynamo_disable` attribute.
_LAZY_DISABLE_CODE = getattr(torch._disable_dynamo(lambda: None), "__code__", None)
_dispatch_scanned = False


def _dispatch_without_dynamo() -> None:
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
