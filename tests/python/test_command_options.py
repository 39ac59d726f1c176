"""solar.command_options: an option several commands take is declared once, so it has one
name, one help text, one set of choices and one default in every command (a sweep's options
excepted: they default to None, since a spec file says them); --arch is read the same way
everywhere."""

from __future__ import annotations

import argparse

import pytest

from solar import bench, cli
from solar.command_options import _OPTIONS, add_options, arch_ids, canonical_archs
from solar.suite import cli as suite_cli
from solar.sweep import cli as sweep_cli
from solar.translate import cli as translate_cli

PARSERS = {
    "analyze": lambda: cli._program_parser("analyze"),
    "validate": lambda: cli._program_parser("validate"),
    "inverse": cli._inverse_parser,
    "export": cli._export_parser,
    "suite": suite_cli._parser,
    "sweep": sweep_cli.parser,
    "bench": bench.parser,
    "translate": translate_cli.parser,
}

# Options of the same name that mean something else in one command, declared there.
OWN = {("translate", "--shrink"),  # the sizes a translation is tested at (default 16)
       ("translate", "--debug"),  # translate's own flag (the capture's traceback is not its)
       # The counters of points and programs, shown on a pipe too (not the stage line of
       # one analysis, which only a terminal gets).
       ("sweep", "--quiet"), ("suite", "--quiet")}


def _actions(parser: argparse.ArgumentParser):
    return {o: a for a in parser._actions for o in a.option_strings}  # noqa: SLF001


def _declaration(action: argparse.Action):
    return (action.dest, action.help, tuple(action.choices or ()), action.metavar, action.type,
            action.nargs, type(action).__name__)


def _default(name: str, unset: bool):
    """The default of shared option `name` as add_options declares it."""
    p = argparse.ArgumentParser()
    add_options(p, [name], unset)
    return p._actions[-1].default  # noqa: SLF001


@pytest.mark.parametrize("name", sorted(_OPTIONS))
def test_a_shared_option_reads_the_same_in_every_command(name):
    flag = _OPTIONS[name][0]
    seen = {}
    for command, make in PARSERS.items():
        action = _actions(make()).get(flag)
        if action is None or (command, flag) in OWN:
            continue
        seen[command] = _declaration(action)
        assert action.default == _default(name, command == "sweep"), (command, flag)
    assert len(seen) >= 2 and len(set(seen.values())) == 1, seen


def test_arch_reads_the_same_in_every_command_that_takes_it():
    decls = {}
    for command, make in PARSERS.items():
        action = _actions(make()).get("--arch")
        if action is not None:  # the help differs in its default only
            decls[command] = _declaration(action)[:1] + (
                action.metavar, tuple(action.default), action.help.split(" (default")[0])
    assert set(decls) == {"analyze", "validate", "inverse", "suite", "sweep", "translate"}
    assert len(set(decls.values())) == 1, decls


@pytest.mark.parametrize("command, options", [
    # every command that captures a program takes every capture option
    ("analyze", ["--set", "--strict", "--real", "--eval", "--train", "--optimizer", "--unroll"]),
    ("validate", ["--set", "--strict", "--real", "--eval", "--train", "--optimizer", "--unroll"]),
    ("inverse", ["--set", "--strict", "--real", "--eval", "--train", "--optimizer", "--unroll"]),
    ("export", ["--set", "--strict", "--real", "--eval", "--train", "--optimizer", "--unroll"]),
    ("suite", ["--set", "--strict", "--real", "--eval", "--train", "--optimizer", "--unroll"]),
    ("sweep", ["--set", "--strict", "--train", "--optimizer"]),
    ("bench", ["--set", "--eval", "--policy"]),
])
def test_the_commands_take_their_groups(command, options):
    actions = _actions(PARSERS[command]())
    assert [o for o in options if o not in actions] == []


def test_a_sweep_tells_an_option_given_from_one_left_out():
    ns = sweep_cli.parser().parse_args(["spec.yaml"])
    assert all(getattr(ns, d) is None for d in ("policy", "cache_state", "mode",
                                                "no_cache_aware", "train", "optimizer",
                                                "strict"))
    assert ns.set == [] and ns.arch == []


@pytest.mark.parametrize("values, ids", [
    ([], []),
    (["H100_SXM"], ["H100_SXM"]),
    (["H100_SXM,B200", "A6000"], ["H100_SXM", "B200", "A6000"]),
    (["H100_SXM, B200", ","], ["H100_SXM", "B200"]),  # spaces and empty items dropped
])
def test_arch_ids_split_commas_in_order(values, ids):
    assert arch_ids(values) == ids


def test_canonical_archs_spell_ids_as_the_database_each_once():
    assert canonical_archs(["h100_sxm", "H100_SXM", "b200"]) == ["H100_SXM", "B200"]
