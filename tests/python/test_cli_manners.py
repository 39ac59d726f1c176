"""Command-line manners (docs/cli.md, "Usage errors"): an option a command cannot use is
refused with the reason, never silently ignored; a bad value is one line naming the closest
valid one, not argparse's usage block; a misspelt --set name gets the closest name the
program or the model's config has."""

from __future__ import annotations

import pytest

from conftest import run_solar
from solar.command_options import MODEL_ONLY

PROGRAM = "examples/torch/activations.py"
GRAPH = "examples/gemm.solar"
USAGE = 2  # docs/cli.md, exit codes

# A value for each model-only option (the flags take none); --phase prefill is its default.
VALUES = {"--phase": "prefill", "--batch": "1", "--seq": "8", "--context": "8",
          "--dtype": "bf16", "--task": "causal-lm", "--tp": "1", "--pp": "1", "--ep": "1",
          "--dp": "1", "--zero": "0", "--microbatches": "1", "--quant": "fp8",
          "--kv-dtype": "fp8", "--draft": "hf:llama-3.2-1b",
          "--speculate": "2", "--recompute": "none", "--measured-ms": "1",
          "--mla-cache": "latent"}


def _args(flag: str) -> list:
    return [flag] + ([VALUES[flag]] if flag in VALUES else [])


def _one_error_line(r) -> str:
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("solar: error: ")
    return lines[0]


@pytest.mark.parametrize("flag", list(MODEL_ONLY))
def test_every_model_only_option_is_refused_for_a_program_even_at_its_default(flag):
    r = run_solar("analyze", PROGRAM, *_args(flag))
    assert r.returncode == USAGE, r.stderr
    line = _one_error_line(r)
    assert f"{flag}: for models only" in line and PROGRAM in line and r.stdout == ""


@pytest.mark.parametrize("command", [["analyze", GRAPH], ["inverse", GRAPH, "--target-ms", "1"],
                                     ["validate", PROGRAM],
                                     ["inverse", PROGRAM, "--target-ms", "1"],
                                     ["export", PROGRAM, "--format", "timeloop", "--out",
                                      "/nonexistent/out"]])
def test_model_only_options_are_refused_by_every_command_and_for_a_graph(command):
    r = run_solar(*command, "--phase", "decode")
    assert r.returncode == USAGE, r.stderr
    assert "--phase: for models only (hf:NAME or config.json" in _one_error_line(r)


@pytest.mark.parametrize("args,expected", [
    ([PROGRAM, "--by", "modul"], "--by: invalid value 'modul'; did you mean 'module'?"),
    ([PROGRAM, "--mode", "attainble"], "did you mean 'attainable'?"),
    ([PROGRAM, "--phse", "decode"], "unknown option --phse; did you mean '--phase'?"),
    # the C++ CLI reads a graph
    ([GRAPH, "--policy", "tf3"], "unknown --policy 'tf3'; did you mean 'tf32'?"),
    ([GRAPH, "--cache-state", "wram"], "unknown --cache-state 'wram'; did you mean 'warm'?"),
    ([GRAPH, "--by", "lines"], "unknown --by 'lines'; did you mean 'line'?"),
])
def test_a_bad_value_is_one_line_with_the_closest_valid_one(args, expected):
    r = run_solar("analyze", *args)
    assert r.returncode == USAGE, r.stderr
    assert expected in _one_error_line(r)
    assert "usage:" not in r.stderr


def test_a_misspelt_set_name_gets_the_programs_closest_constant():
    r = run_solar("analyze", PROGRAM, "--set", "batchsize=2")
    assert r.returncode == USAGE, r.stderr
    assert "did you mean 'batch_size'?" in _one_error_line(r)


def test_a_misspelt_set_name_gets_the_configs_closest_field():
    pytest.importorskip("transformers")
    r = run_solar("analyze", "hf:llama-3.1-8b", "--set", "num_hiden_layers=2")
    assert r.returncode == USAGE, r.stderr
    assert "did you mean 'num_hidden_layers'?" in _one_error_line(r)
