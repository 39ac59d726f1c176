"""The command-line options several commands share, each declared once: the devices (--arch,
--system, --nodes),
the math (--policy, --cache-state), the cache-aware level (--mode, --no-cache-aware,
--max-mappings), how a program is captured (--set, --strict, --real, --eval, --train,
--optimizer, --unroll) and what runs beside the analysis (--validate, --no-crosscheck,
--shrink, --debug).

`solar analyze|validate|inverse|export PROGRAM`, `solar suite`, `solar sweep`, `solar bench`
and `solar translate` build their parsers from these, so an option has one name, one default
and one help text whichever command takes it (docs/cli.md). Each add_* function adds one
group; add_options adds single options for a command that takes part of a group.
"""

from __future__ import annotations

import argparse
from typing import Any, Dict, List, Sequence, Tuple

from . import _core

DEFAULT_ARCH = "H100_SXM"
OPTIMIZERS = ("sgd", "adam", "adamw")

# Every shared option but --arch (whose default each command states): name -> (flag, keyword
# arguments of add_argument). The name is the option's attribute in the parsed namespace.
_OPTIONS: Dict[str, Tuple[str, Dict[str, Any]]] = {
    "policy": ("--policy", {
        "default": "pytorch-default",
        "help": "math policy: pytorch-default (default), tf32 or strict-fp32"}),
    "cache_state": ("--cache-state", {"default": "cold", "help": "cold (default) or warm"}),
    "mode": ("--mode", {
        "default": "attainable", "choices": ["attainable", "provable"],
        "help": "the cache-aware level's traffic: attainable (default) or provable"}),
    "no_cache_aware": ("--no-cache-aware", {
        "action": "store_true", "help": "skip the cache-aware level (and so the ski-slope)"}),
    "max_mappings": ("--max-mappings", {
        "type": int, "default": None, "metavar": "N",
        "help": "mappings each einsum's tiling search evaluates before thinning"}),
    "set": ("--set", {
        "action": "append", "default": [], "metavar": "NAME=VALUE",
        "help": "set a module-level constant of the program to a Python literal; repeatable "
                "(a suite sets it in the programs that assign it)"}),
    "strict": ("--strict", {
        "action": "store_true",
        "help": "an op that cannot be lowered is an error (exit 7), not an unanalyzed op; in "
                "a suite or sweep, that program or point fails"}),
    "real": ("--real", {"action": "store_true",
                        "help": "capture on real tensors, not fake ones"}),
    "eval": ("--eval", {
        "action": "store_true",
        "help": "PyTorch: model.eval() first (default: the mode the program leaves its module "
                "in; a fresh module trains: batch statistics, active dropout)"}),
    "train": ("--train", {"action": "store_true",
                          "help": "forward + backward (autograd graph)"}),
    "optimizer": ("--optimizer", {
        "choices": list(OPTIMIZERS) + ["none"],
        "help": "with --train: add this optimizer's update step (none: no update; a model "
                "(hf:NAME) steps mixed-precision AdamW unless told: docs/models.md)"}),
    "unroll": ("--unroll", {
        "action": "store_true",
        "help": "capture loops step by step: PyTorch nn.LSTM/GRU/RNN one aten op per time "
                "step (torch's CPU kernel), JAX scan/fori_loop/while_loop one copy of the "
                "body per iteration, instead of one repeat op each"}),
    "validate": ("--validate", {
        "action": "store_true",
        "help": "also run the program and its graph and compare their outputs"}),
    "no_crosscheck": ("--no-crosscheck", {"action": "store_true",
                                          "help": "skip the FlopCounterMode cross-check"}),
    "shrink": ("--shrink", {
        "type": int, "metavar": "N",
        "help": "reduce the program's integer size constants to at most N, keeping their "
                "divisibility (groups, heads); a program that raises at that size is "
                "retried at 2N, 4N, ..., then at its own sizes"}),
    "quiet": ("--quiet", {
        "action": "store_true",
        "help": "no progress on stderr (shown only when stderr is a terminal)"}),
    "debug": ("--debug", {"action": "store_true",
                          "help": "on error, show the traceback of the program's failure"}),
    "system": ("--system", {
        "metavar": "ID|FILE.yaml|NxDEVICE",
        "help": "run the graph as one rank of a system: a built-in id (DGX_H100), a "
                "solar.system.v1 file or NxDEVICE (8xH100_SXM); its device is the analysis's "
                "(--arch adds single-device columns), its links price the collectives "
                "(docs/parallel.md)"}),
    "nodes": ("--nodes", {
        "type": int, "metavar": "K",
        "help": "with --system: K scale-up domains joined by its NICs"}),
    "mesh_links": ("--mesh-links", {
        "metavar": "AXIS=scale-up|scale-out,...",
        "help": "with --system, for a JAX program that declares its mesh: the link each mesh "
                "axis rides (default: inner axes on scale-up first; docs/distributed.md)"}),
}
# The groups, in the order their options are listed.
MATH_OPTIONS = ("policy", "cache_state")
LEVEL_OPTIONS = ("mode", "no_cache_aware")
CAPTURE_OPTIONS = ("set", "strict", "real", "eval", "train", "optimizer", "unroll")
SYSTEM_OPTIONS = ("system", "nodes", "mesh_links")


def add_options(parser: argparse.ArgumentParser, names: Sequence[str],
                unset: bool = False) -> None:
    """Adds the shared options `names` (keys of _OPTIONS). unset: every option defaults to
    None (a flag too, and --set to []), so that a command can tell an option given from
    one left out (`solar sweep`: a spec file says the rest)."""
    for name in names:
        flag, kwargs = _OPTIONS[name]
        kwargs = dict(kwargs)
        if unset and kwargs.get("action") != "append":
            kwargs["default"] = None
        parser.add_argument(flag, **kwargs)


def add_device_options(parser: argparse.ArgumentParser, default: str = DEFAULT_ARCH) -> None:
    """--arch ID, repeatable or comma-separated (arch_ids reads it); `default` says what the
    command takes without it."""
    parser.add_argument("--arch", action="append", default=[], metavar="ID",
                        help=f"device id, repeatable or comma-separated (default {default})")


def add_system_options(parser: argparse.ArgumentParser) -> None:
    """--system, --nodes and --mesh-links: the system the graph runs on as one rank."""
    add_options(parser, SYSTEM_OPTIONS)


def add_math_options(parser: argparse.ArgumentParser, unset: bool = False) -> None:
    """--policy and --cache-state."""
    add_options(parser, MATH_OPTIONS, unset)


def add_level_options(parser: argparse.ArgumentParser, unset: bool = False) -> None:
    """--mode and --no-cache-aware: the cache-aware level's traffic, or no such level."""
    add_options(parser, LEVEL_OPTIONS, unset)


def add_capture_options(parser: argparse.ArgumentParser) -> None:
    """How a program is captured: --set, --strict, --real, --eval, --train, --optimizer,
    --unroll."""
    add_options(parser, CAPTURE_OPTIONS)


def arch_ids(values: Sequence[str]) -> List[str]:
    """The device ids of --arch values, each repeatable or comma-separated, in order (no
    default: an empty list when none was given)."""
    return [x.strip() for a in values for x in a.split(",") if x.strip()]


def canonical_archs(requested: Sequence[str]) -> List[str]:
    """Device ids as the database spells them, each once; UserError for an unknown one.
    The database is consulted without resolving `host` (which would probe this machine)."""
    known = {d.lower(): d for d in _core.device_ids()}
    out: List[str] = []
    for a in requested:
        d = known.get(a.lower())
        if d is None:
            _core.device(a)  # raises the UserError that lists the known devices
            d = a
        if d not in out:
            out.append(d)
    return out


# The options only a model (hf:NAME or config.json, docs/models.md) takes, flag -> the
# attribute of the parsed namespace. Given to a program, a saved trace or a graph file they
# are refused with the reason (exit 2), never silently ignored, whichever command or value
# (an explicit default too): `solar analyze` through given_options, the commands that do not
# declare them (validate, inverse, export) through errors.parse_args' refusals, and a graph
# file before the C++ CLI sees it. A new model-only option joins by being listed here: the
# parallel plan's --tp ... --zero are, and so must be the quantization options (--quant,
# --kv-dtype, --mla-cache) when they come.
MODEL_ONLY = {"--phase": "phase", "--batch": "batch", "--seq": "seq", "--context": "context",
              "--dtype": "dtype", "--task": "task", "--force": "force", "--tp": "tp",
              "--pp": "pp", "--ep": "ep", "--dp": "dp", "--sp": "sp", "--zero": "zero",
              "--microbatches": "microbatches", "--quant": "quant",
              "--kv-dtype": "kv_dtype", "--recompute": "recompute",
              "--measured-ms": "measured_ms", "--serving": "serving", "--draft": "draft",
              "--speculate": "speculate", "--mla-cache": "mla_cache"}
# Those of them that take a value (for telling a value from a GRAPH argument).
MODEL_ONLY_VALUED = tuple(f for f in MODEL_ONLY if f not in ("--force", "--sp", "--serving"))


def model_only_reason(target: str) -> str:
    """Why a model-only option is refused for `target` (a program, trace or graph file)."""
    return (f"for models only (hf:NAME or config.json, docs/models.md), not {target}; a "
            "program's sizes are --set NAME=VALUE")


def model_only_refusals(target: str) -> Dict[str, str]:
    """flag -> the reason it is refused for `target`: errors.parse_args' refusals for a
    command that does not declare the model-only options."""
    return {flag: model_only_reason(target) for flag in MODEL_ONLY}


_UNSET = object()


def given_options(parser: argparse.ArgumentParser, args: Sequence[str],
                  flags: Dict[str, str]) -> List[str]:
    """The options of `flags` (flag -> attribute) that `args` gives, at any value, a default
    included: `args` parsed again with those attributes defaulting to a marker (argparse
    resolves abbreviations and --flag=value itself). `args` must already parse."""
    dests = {d: f for f, d in flags.items()
             if any(a.dest == d for a in parser._actions)}
    if not dests:
        return []
    saved = {d: parser.get_default(d) for d in dests}
    parser.set_defaults(**{d: _UNSET for d in dests})
    try:
        ns, _ = parser.parse_known_args(list(args))
    finally:
        parser.set_defaults(**saved)
    return [f for d, f in dests.items() if getattr(ns, d, _UNSET) is not _UNSET]


def first_given(args: Sequence[str], flags: Sequence[str]) -> List[str]:
    """The flags of `flags` that `args` names (--flag or --flag=value), in their order: for a
    command line no Python parser reads (a graph file goes to the C++ CLI)."""
    out: List[str] = []
    for a in args:
        flag = a.split("=", 1)[0]
        if flag in flags and flag not in out:
            out.append(flag)
    return out
