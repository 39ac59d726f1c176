"""The `solar` console script: the C++ CLI (solar._core.cli_run) behind a Python entry.

Dispatch point: graphs are read by the C++ CLI. Python programs (`solar analyze model.py`,
`solar inverse model.py`, `solar export model.py`) and saved OpTraces (`solar analyze
trace.json` whose schema is solar.optrace.v1) go through a frontend first (solar.programs
picks it: capture -> OpTrace -> C++ lowering), then the same analysis and report as a graph
(docs/torch-frontend.md, docs/inverse-roofline.md, docs/export.md). Nothing imports this
module: it is the top of the package's layers.
"""

from __future__ import annotations

import argparse
import ast
import atexit
import importlib
import json
import os
import sys
import threading
from typing import List, NoReturn, Optional, Sequence

from . import _core, cli_usage, models, programs, progress
from .analysis import ProgramOptions
from .command_options import (DEFAULT_ARCH, MODEL_ONLY, MODEL_ONLY_VALUED, add_capture_options,
                              add_device_options, add_level_options, add_math_options,
                              add_options, add_system_options, arch_ids, first_given,
                              given_options, model_only_reason, model_only_refusals)
from . import atomic_write
from .atomic_write import write_atomically
from .errors import command, fail, failing_line, parse_args
from .frontends.loopir.provenance import translation_notes
from .html import cli as html_cli
from .program_source import (OverrideError, ProgramFormatError, is_jax_program, parse_literal,
                             parse_overrides)
from .program_worker import analyze_with_ladder
from .server import client as server_client
from .shrink import int_constants, shrink_ladder

# The commands implemented by a feature module, each imported only when it runs: together
# they are most of the package, and `solar --help` or a graph's analysis needs none of them
# (startup stays under 0.3 s). The literal names keep the imports visible to
# tests/python/test_architecture.py.
_COMMANDS = {
    "bench": lambda: importlib.import_module("solar.bench"),
    "suite": lambda: importlib.import_module("solar.suite.cli"),
    "sweep": lambda: importlib.import_module("solar.sweep.cli"),  # Dask: programs x grids
    "translate": lambda: importlib.import_module("solar.translate.cli"),  # a language model
    "models": lambda: importlib.import_module("solar.models.listing"),  # the registry
}
# Options of `solar analyze` that take a value (so that value is not the GRAPH argument).
_VALUED = {"--arch", "--json", "--policy", "--cache-state", "--top", "--by", "--depth", "--set",
           "--save-trace", "--shrink", "--mode", "--ski-slope", "--target-ms", "--rate-hz",
           "--bandwidth", "--optimizer", "--max-mappings", "--reference", "--format", "--out", "--html",
           "--phase", "--batch", "--seq", "--context", "--dtype", "--task", "--system",
           "--nodes", "--mesh-links", *MODEL_ONLY_VALUED}
# Commands whose GRAPH argument may be a program a frontend must read.
_PROGRAM_COMMANDS = ("analyze", "inverse", "export")


def _graph_arg(args: Sequence[str]) -> Optional[str]:
    """The GRAPH argument of `solar analyze|inverse ...` (args without the program name), or
    None."""
    if not args or args[0] not in _PROGRAM_COMMANDS:
        return None
    skip = False
    for arg in args[1:]:
        if skip:
            skip = False
            continue
        if arg in _VALUED:
            skip = True
            continue
        if not arg.startswith("-"):
            return arg
    return None


def _frontend_for(argv: Sequence[str]) -> Optional[str]:
    """The GRAPH argument of `solar analyze` when a frontend must read it, else None."""
    graph = _graph_arg(argv)
    if graph is None:
        return None
    if (graph.endswith(programs.PYTHON_SUFFIXES) or programs.is_optrace(graph)
            or models.is_model_ref(graph)):
        return graph
    return None


def _program_parser(command: str) -> argparse.ArgumentParser:
    """Options shared by `solar analyze PROGRAM` and `solar validate PROGRAM`."""
    what = "Analyze" if command == "analyze" else "Validate by execution"
    p = argparse.ArgumentParser(prog=f"solar {command}",
                                description=f"{what} a PyTorch, JAX or loop-language program")
    p.add_argument("program", metavar="PROGRAM",
                   help="a PyTorch, JAX or loop-language program (.py), a saved OpTrace "
                        "(trace.json)" + (", or a model: hf:NAME or config.json "
                                          "(docs/models.md)" if command == "analyze" else ""))
    add_device_options(p)
    add_system_options(p)
    p.add_argument("--json", dest="json_path", metavar="PATH",
                   help="write the JSON report to PATH; - writes it to stdout instead")
    add_math_options(p)
    p.add_argument("--top", type=int, default=10, metavar="N",
                   help="rows of the top-ops table (default 10; 0 hides it)")
    p.add_argument("--by", choices=["module", "line", "op"], default="module",
                   help="text breakdown: the module tree (default), source lines, or top ops")
    p.add_argument("--depth", type=int, default=3,
                   help="module-tree rows down to this depth (default 3; 1: top level)")
    add_capture_options(p)
    add_options(p, ("shrink",))
    p.add_argument("--save-trace", metavar="PATH", help="write the captured OpTrace")
    add_options(p, ("no_crosscheck", "validate") if command == "analyze" else ("no_crosscheck",))
    p.add_argument("--reference", metavar="REF.py",
                   help="loop programs: also compare with this PyTorch, JAX or NumPy program "
                        "run on the same inputs (implies validation)")
    add_level_options(p)
    p.add_argument("--ski-slope", metavar="PATH", help="write the ski-slope chart (SVG)")
    if command == "analyze":
        m = p.add_argument_group("models (hf:NAME or config.json; docs/models.md)")
        m.add_argument("--phase", default="prefill", choices=["prefill", "decode"],
                       help="prefill of --seq tokens, or one decode step after --context")
        m.add_argument("--batch", type=int, default=1, help="sequences per step (default 1)")
        m.add_argument("--seq", type=int, help="prefill tokens per sequence (default 1024)")
        m.add_argument("--context", type=int,
                       help="decode: tokens already in the KV cache (default 4096)")
        m.add_argument("--dtype", default="bf16", help="weights and activations: bf16, f16, f32")
        m.add_argument("--task", help="config.json: causal-lm, seq2seq-lm, encoder or "
                                      "image-classification (default: from its architectures)")
        m.add_argument("--force", action="store_true",
                       help="build a model past the work estimate's limits (docs/models.md)")
        m.add_argument("--recompute", choices=["none", "selective", "full"],
                       help="with --train: recompute each decoder layer's forward (full) or "
                            "the attention core (selective) in the backward (default none)")
        m.add_argument("--measured-ms", type=float, metavar="T",
                       help="with --train: a measured step time (ms), for the model-FLOPs "
                            "utilization it implies (docs/models.md, \"Training\")")
        m.add_argument("--serving", action="store_true",
                       help="also the serving figures: TTFT (prefill of --seq), TPOT (decode "
                            "at --context), tokens/s per GPU, the largest batch that fits "
                            "(analyzes both phases; docs/models.md, Serving)")
        m.add_argument("--draft", metavar="MODEL",
                       help="speculative decoding with this draft model (hf:NAME or "
                            "config.json), with --speculate; implies --serving")
        m.add_argument("--speculate", type=int, metavar="K",
                       help="draft tokens per speculative step (with --draft)")
        m.add_argument("--quant", metavar="SCHEME",
                       help="quantize the decoder linears: fp8, fp8-block, int8, w4a16, "
                            "w8a16, nvfp4, mxfp4 (default: the config's quantization_config, "
                            "else none; docs/models.md)")
        m.add_argument("--mla-cache", choices=["latent", "expanded"],
                       help="DeepSeek-V2/V3 attention's cache: the compressed latent and rotary "
                            "key with absorbed projections at decode (latent, the default), or "
                            "each head's keys and values (expanded)")
        m.add_argument("--kv-dtype", metavar="DTYPE",
                       help="the KV cache's dtype: fp8, or bf16/f16 (default: the "
                            "activations')")
        pl = p.add_argument_group("parallel plans for models, with --system "
                                  "(docs/parallel.md)")
        for flag, what in (("--tp", "tensor-parallel degree"), ("--pp", "pipeline stages"),
                           ("--ep", "expert-parallel degree"), ("--dp", "data-parallel replicas"),
                           ("--microbatches", "microbatches per pipeline step"),
                           ("--zero", "ZeRO stage with --train: 1, 2 or 3 (3 = FSDP)")):
            pl.add_argument(flag, type=int, default=0 if flag == "--zero" else 1, help=what)
        pl.add_argument("--sp", action="store_true",
                        help="sequence parallelism over the tp group")
        p.add_argument("--html", metavar="PATH",
                       help="write the HTML report (one self-contained file: docs/html-report.md)")
    add_options(p, ("max_mappings", "quiet", "debug"))
    return p


def _with_progress(ns, first_stage: str, run):
    """run() with its stages on stderr (solar.progress: a terminal only, not with --quiet),
    starting at `first_stage`; the line is cleared before the command prints."""
    with progress.reporting(ns.quiet):
        progress.stage(first_stage)
        return run()


def _load_program(ns, options, shrink: Optional[int] = None):
    """Captures the Python program ns.program (its sizes shrunk to `shrink`), or reads it as
    a saved OpTrace, and analyzes it with `options`. The program's own failures and bad
    program files end the command (CommandExit) with their exit codes; Solar's errors
    propagate."""
    if not os.path.isfile(ns.program):
        raise fail(f"{ns.program}: no such file", "io")
    if not ns.program.endswith(programs.PYTHON_SUFFIXES):
        return programs.analyze_trace_file(ns.program, options)
    try:
        if shrink is not None:
            return _analyze_shrunk(ns.program, options, shrink)
        return programs.analyze_file(ns.program, options)
    except _core.Error:
        raise
    except (OverrideError, ProgramFormatError) as e:
        raise fail(str(e), "usage" if isinstance(e, OverrideError) else "parse") from None
    except (Exception, SystemExit) as e:  # the program itself failed: not a Solar bug
        # (a program's own exit() too: its code must not pass for one of Solar's)
        if ns.debug:
            raise
        raise fail(f"{failing_line(e, ns.program)}: the program failed: "
                   f"{type(e).__name__}: {e}", "program_error") from None


@command()
def _run_program(command: str, args: List[str]) -> int:
    """`solar analyze|validate model.py|trace.json ...`: capture (or read the trace), lower,
    analyze; validate runs the program and the lowered graph and compares their outputs."""
    codes = _core.EXIT_CODES
    parser = _program_parser(command)
    ns = parse_args(parser, args, model_only_refusals("a program or saved trace"))
    overrides = parse_overrides(ns.set)
    # --system sets the device of the analysis; --arch beside it adds single-device columns.
    archs = arch_ids(ns.arch) or ([] if ns.system else [DEFAULT_ARCH])
    if ns.nodes is not None and not ns.system:
        raise fail("--nodes needs --system (the scale-up domain it multiplies)", "usage")
    validate = command == "validate" or getattr(ns, "validate", False) or bool(ns.reference)
    options = ProgramOptions(
        archs=archs, policy=ns.policy, cache_state=ns.cache_state, overrides=overrides,
        strict=ns.strict, real=ns.real, train=ns.train,
        optimizer=None if ns.optimizer == "none" else ns.optimizer,  # a model reads ns's
        eval_mode=ns.eval, unroll=ns.unroll,
        validate=validate, crosscheck=not ns.no_crosscheck, mode=ns.mode,
        cache_aware=not ns.no_cache_aware, max_mappings=ns.max_mappings, reference=ns.reference,
        system=ns.system, nodes=ns.nodes, mesh_links=ns.mesh_links)
    if ns.mesh_links and not ns.system:
        raise fail("--mesh-links needs --system (the links the mesh axes ride)", "usage")
    if ns.mesh_links and not (ns.program.endswith(".py") and os.path.isfile(ns.program)
                              and is_jax_program(ns.program)):
        raise fail(f"--mesh-links: for a JAX program that declares its mesh, not {ns.program}",
                   "usage")
    if ns.optimizer and not ns.train:
        raise fail("--optimizer needs --train", "usage")
    if ns.shrink is not None and ns.shrink < 1:
        raise fail("--shrink must be at least 1", "usage")
    if not ns.program.endswith(programs.PYTHON_SUFFIXES) and not models.is_model_ref(ns.program):
        if command == "validate":
            raise fail(f"{ns.program}: solar validate runs a Python program (PROGRAM.py) and "
                        "its lowered graph; a graph or saved trace has no program to run "
                        "(solar analyze reads it)", "usage")
        given = [name for name, on in (("--set", overrides), ("--train", ns.train),
                                       ("--eval", ns.eval),
                                       ("--validate", validate), ("--reference", ns.reference),
                                       ("--shrink", ns.shrink is not None)) if on]
        if given:
            raise fail(f"{', '.join(given)}: for Python programs only, not {ns.program}",
                        "usage")
    html_cli.check_folder(getattr(ns, "html", None))  # before the capture, not after it
    if ns.system:
        _core.system_device(ns.system, ns.nodes)  # an unknown system exits 6 before capture
    _check_before_capture(archs, [("PROGRAM", ns.program), ("--reference", ns.reference)],
                          [("--json", ns.json_path), ("--save-trace", ns.save_trace),
                           ("--ski-slope", ns.ski_slope), ("--html", getattr(ns, "html", None))])
    model = command == "analyze" and models.is_model_ref(ns.program)
    if model:
        if ns.shrink is not None:
            raise fail("--shrink: a model's sizes are --batch, --seq, --context and --set "
                        "config fields", "usage")
        result = _with_progress(ns, f"building and capturing {ns.program}",
                                lambda: _analyze_model(ns, options, overrides))
    else:
        _refuse_model_options(parser, args, ns.program)
        result = _with_progress(ns, f"capturing {ns.program}",
                                lambda: _load_program(ns, options, ns.shrink))
    for n in result.warnings:
        sys.stderr.write(f"solar: warning: unanalyzed op {n}\n")
    _note_translation(ns.program, result.report)
    if ns.save_trace:
        write_atomically(ns.save_trace, json.dumps(result.trace, allow_nan=False) + "\n")
    report = result.report
    if ns.ski_slope:
        write_atomically(ns.ski_slope, report.ski_slope_svg())
    if getattr(ns, "html", None):
        html_cli.write(report, ns.html)
    if ns.json_path == "-":
        sys.stdout.write(report.to_json(2) + "\n")
    else:
        if ns.json_path:
            write_atomically(ns.json_path, report.to_json(2) + "\n")
        sys.stdout.write(report.table(ns.top, by=ns.by, depth=ns.depth))
        if model:
            sys.stdout.write(models.model_text(report.get_section("model")))
            sys.stdout.write(models.plan_text(report.get_section("system")))
            sys.stdout.write(models.policy_text(report.get_section("policy")))
    validation = result.validation
    if validation is not None and validation.get("status") != "passed":
        sys.stderr.write(f"solar: error: {ns.program}: validation failed\n")
        return codes["validation_failed"]
    return codes["ok"]


def _refuse_model_options(parser, args: Sequence[str], program: str) -> None:
    """The model-only options (command_options.MODEL_ONLY) given to a program or trace, at
    any value (an explicit default too), end the command with the reason: they would be
    silently ignored."""
    given = given_options(parser, args, MODEL_ONLY)
    if given:
        raise fail(f"{', '.join(given)}: {model_only_reason(program)}", "usage")


def _analyze_model(ns, options, overrides):
    """`solar analyze hf:NAME|config.json`: the configuration is checked before anything is
    built (docs/models.md); transformers failing on one that passed is the model's failure,
    one line (exit program_error), as a program's is."""
    plan = models.Plan(tp=ns.tp, pp=ns.pp, ep=ns.ep, dp=ns.dp, sp=ns.sp, zero=ns.zero,
                       microbatches=ns.microbatches)
    if not plan.is_plain():
        plan.check(ns.train)
        if not ns.system:
            raise fail("--tp, --pp, --ep, --dp, --sp, --zero and --microbatches: a parallel "
                       "plan runs on a system (--system)", "usage")
    run = models.ModelRun(ns.program, phase=ns.phase, batch=ns.batch, seq=ns.seq,
                          context=ns.context, dtype=ns.dtype, task=ns.task, force=ns.force,
                          optimizer=ns.optimizer, recompute=ns.recompute,
                          measured_ms=ns.measured_ms,
                          quant=ns.quant, kv_dtype=ns.kv_dtype, mla_cache=ns.mla_cache,
                          config={k: parse_literal(v) for k, v in overrides.items()},
                          plan=plan, serving=ns.serving, draft=ns.draft,
                          speculate=ns.speculate)
    return _run_model(ns, run, options)


def _inverse_model(ns, options, overrides):
    """`solar inverse hf:NAME|config.json`: the model's default step (a prefill at batch 1; a
    policy's control step) with --set config fields, built and captured as `solar analyze`
    does (docs/inverse-roofline.md, "Models")."""
    run = models.ModelRun(ns.program, config={k: parse_literal(v) for k, v in overrides.items()})
    return _run_model(ns, run, options)


def _run_model(ns, run, options):
    """The model run analyzed; what transformers or torch raise is the program's error (one
    line, the model named), a traceback only under --debug."""
    try:
        return models.analyze_model(run, options)
    except _core.Error:
        raise
    except Exception as e:  # noqa: BLE001 - transformers or torch refused the model
        if ns.debug:
            raise
        text = " ".join(str(e).split())[:300]
        raise fail(f"{ns.program}: transformers could not build or run the model: "
                   f"{type(e).__name__}: {text}", "program_error") from None


def _check_before_capture(archs: Sequence[str], inputs, outputs) -> None:
    """The devices and the output paths, checked before a program is captured (minutes, for
    a large one), as the C++ CLI checks a graph's: exit 6 for an unknown device, 3 for an
    output that cannot be written or that names an input (the program, its --reference) or
    another output (atomic_write.check)."""
    for a in archs:
        _core.device(a)  # an unknown id raises with the known ids (exit 6)
    atomic_write.check(inputs, outputs)


def _note_translation(path: str, report) -> None:
    """A program `solar translate --unvalidated` wrote, or one whose capture check warned,
    says so on stderr too (its report carries the `translation` section, docs/translate.md)."""
    for note in translation_notes(path):
        sys.stderr.write(f"solar: warning: {note}\n")


def _analyze_shrunk(path: str, options, limit: int):
    """analyze_file with the program's integer size constants shrunk to `limit` (the rule
    of `solar suite --shrink`: solar.shrink); the setting used goes to stderr."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    ladder = shrink_ladder(int_constants(tree), limit, dict(options.overrides))
    result, used = analyze_with_ladder(path, options, ladder)
    sizes = " ".join(f"{k}={v}" for k, v in used["overrides"].items()) or "its own sizes"
    for r in used["rejected"]:
        sys.stderr.write(f"solar: note: --shrink {r['limit']}: the program raised "
                         f"({r['error']})\n")
    sys.stderr.write(f"solar: note: ran at {sizes}\n")
    return result


def _inverse_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="solar inverse",
                                description="Inverse roofline of a PyTorch or JAX program")
    p.add_argument("program")
    p.add_argument("--target-ms", type=float, help="target time per run, milliseconds")
    p.add_argument("--rate-hz", type=float, help="target rate, runs per second")
    add_device_options(p, "every device of the database but host")
    p.add_argument("--bandwidth", type=float, metavar="GBps",
                   help="DRAM bandwidth in GB/s: also the least on-chip capacity at it")
    p.add_argument("--json", dest="json_path")
    p.add_argument("--html", metavar="PATH", help="write the HTML page (docs/html-report.md)")
    add_options(p, ("policy", "mode", "max_mappings"))
    add_capture_options(p)
    add_options(p, ("quiet", "debug"))
    return p


def _target_seconds(ns) -> float:
    """T from exactly one of --target-ms and --rate-hz; ValueError with the C++ CLI's words."""
    if ns.target_ms is not None and ns.rate_hz is not None:
        raise ValueError("give one target: --target-ms T or --rate-hz F, not both")
    if ns.target_ms is None and ns.rate_hz is None:
        raise ValueError("missing target: give --target-ms T (milliseconds per run) or "
                         "--rate-hz F (runs per second)")
    name, v = ("--target-ms", ns.target_ms) if ns.target_ms is not None else ("--rate-hz", ns.rate_hz)
    if not (v > 0) or v == float("inf"):
        raise ValueError(f"{name} must be a positive number, got {v:g}")
    return v * 1e-3 if name == "--target-ms" else 1.0 / v


@command()
def _run_inverse(args: List[str]) -> int:
    """`solar inverse model.py|trace.json ...`: capture (or read the trace), lower, then the
    C++ inverse roofline (docs/inverse-roofline.md)."""
    codes = _core.EXIT_CODES
    ns = parse_args(_inverse_parser(), args, model_only_refusals("solar inverse's PROGRAM"))
    try:
        target = _target_seconds(ns)
        if ns.bandwidth is not None and not ns.bandwidth > 0:
            raise ValueError(f"--bandwidth must be a positive number of GB/s, got {ns.bandwidth:g}")
    except ValueError as e:
        sys.stderr.write(f"solar: error: {e}\n")
        return codes["usage"]
    overrides = parse_overrides(ns.set)
    archs = arch_ids(ns.arch) or [i for i in _core.device_ids() if i.lower() != "host"]
    html_cli.check_folder(ns.html)
    _check_before_capture(archs, [("PROGRAM", ns.program)],  # before the program runs
                          [("--json", ns.json_path), ("--html", ns.html)])
    # The capture's own analysis needs one device; the comparison is the inverse's.
    options = ProgramOptions(
        archs=archs[:1], policy=ns.policy, overrides=overrides, strict=ns.strict,
        real=ns.real, train=ns.train,
        optimizer=None if ns.optimizer == "none" else ns.optimizer, eval_mode=ns.eval,
        unroll=ns.unroll, validate=False, crosscheck=False,
        cache_aware=False)  # the inverse builds its own traffic model
    load = (lambda: _inverse_model(ns, options, overrides)) if models.is_model_ref(ns.program) \
        else (lambda: _load_program(ns, options))
    result = _with_progress(ns, f"capturing {ns.program}", load)
    for n in result.warnings:
        sys.stderr.write(f"solar: warning: unanalyzed op {n}\n")
    bandwidth = None if ns.bandwidth is None else ns.bandwidth * 1e9  # decimal GB/s
    extra = {} if ns.max_mappings is None else {"max_mappings": ns.max_mappings}
    json_text, table = _core.inverse(result.graph, archs, target, bandwidth, ns.mode,
                                     ns.policy, **extra)
    if ns.html:
        html_cli.write(json.loads(json_text), ns.html)
    if ns.json_path == "-":
        sys.stdout.write(json_text + "\n")
    else:
        if ns.json_path:
            write_atomically(ns.json_path, json_text + "\n")
        sys.stdout.write(table)
    return codes["ok"]


def _export_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="solar export",
        description="Write a PyTorch, JAX or loop-language program's einsums as an AccelForge "
                    "or Timeloop workload (docs/export.md)")
    p.add_argument("program")
    p.add_argument("--format", required=True, choices=["accelforge", "timeloop"])
    p.add_argument("--out", required=True, metavar="DIR",
                   help="output folder: new, empty or an earlier export's")
    add_capture_options(p)
    add_options(p, ("quiet", "debug"))
    return p


@command()
def _run_export(args: List[str]) -> int:
    """`solar export model.py|trace.json --format F --out DIR`: capture (or read the trace),
    lower, then the C++ export of `solar export GRAPH`."""
    codes = _core.EXIT_CODES
    ns = parse_args(_export_parser(), args, model_only_refusals("solar export's PROGRAM"))
    if ns.optimizer and not ns.train:
        raise fail("--optimizer needs --train", "usage")
    # --out is new, empty or an earlier export's (docs/export.md), checked before the capture.
    inputs = [("PROGRAM", ns.program)]
    _core.check_export_folder(ns.out, inputs)
    # The capture's own analysis is the cheapest one; the export needs only the graph.
    options = ProgramOptions(
        overrides=parse_overrides(ns.set), strict=ns.strict, real=ns.real, eval_mode=ns.eval,
        train=ns.train, optimizer=None if ns.optimizer == "none" else ns.optimizer,
        unroll=ns.unroll, validate=False, crosscheck=False, cache_aware=False)
    result = _with_progress(ns, f"capturing {ns.program}", lambda: _load_program(ns, options))
    for n in result.warnings:
        sys.stderr.write(f"solar: warning: unanalyzed op {n}\n")
    sys.stdout.write(_core.export_graph(result.graph, ns.format, ns.out, inputs))
    return codes["ok"]


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs `solar` with argv (sys.argv by default); returns the exit code."""
    args = list(sys.argv if argv is None else argv)
    if not args:
        args = ["solar"]
    code = cli_usage.unknown_command(args)
    if code is None:
        code = cli_usage.negative_top(args)
    if code is None:
        code = cli_usage.help_page(args, {"analyze": lambda: _program_parser("analyze"),
                                          "inverse": _inverse_parser,
                                          "export": _export_parser})
    if code is None and (_reads_a_program(args) or args[1:2] in (["suite"], ["sweep"],
                                                                  ["translate"])):
        code = _working_folder_exists()
    if code is not None:
        return code
    if _frontend_for(args[1:]) is not None:
        if args[1] == "inverse":
            return _run_inverse(args[2:])
        if args[1] == "export":
            return _run_export(args[2:])
        return _run_program("analyze", args[2:])
    graph = _graph_arg(args[1:])
    given = first_given(args[2:], list(MODEL_ONLY)) if graph is not None else []
    if given:  # a graph file: the C++ CLI would only say the options were not expected
        return _refuse_graph_options(graph, given)
    if args[1:2] in (["analyze"], ["inverse"]) and any(
            a == "--html" or a.startswith("--html=") for a in args[2:]):
        return html_cli.run_graph(args)  # a graph: the C++ CLI, then the page from its JSON
    if args[1:2] == ["validate"]:
        return _run_program("validate", args[2:])
    if len(args) > 1 and args[1] in _COMMANDS:
        return _COMMANDS[args[1]]().main(args[2:])
    if len(args) > 1 and args[1] == "server":  # its children run this main
        return importlib.import_module("solar.server.cli").main(args[2:], main,
                                                                programs.preload)
    # The C++ side writes to the process's stdout: flush ours first to keep the order.
    sys.stdout.flush()
    sys.stderr.flush()
    return _core.cli_run(args)


@command()
def _refuse_graph_options(graph: str, given: List[str]) -> int:
    """Model-only options given with a graph file: refused with the reason (exit 2)."""
    raise fail(f"{', '.join(given)}: {model_only_reason(graph)}", "usage")


def run(argv: Optional[Sequence[str]] = None) -> NoReturn:
    """The console script and `python -m solar`: main(argv), in the Solar server of this
    installation and environment when the command reads a program and such a server runs
    (solar.server), else here; then the process ends without the interpreter's teardown
    (exit_without_teardown)."""
    args = list(sys.argv if argv is None else argv)
    code = server_client.forward(args) if _reads_a_program(args) else None
    exit_without_teardown(main(args) if code is None else code)


def _working_folder_exists() -> Optional[int]:
    """None when the working folder exists; else the io exit code after one line saying so. A
    program run from a removed folder fails in ways of its own (relative paths, and libraries
    that resolve theirs from it: oneMKL ends the process while torch loads)."""
    try:
        os.getcwd()
    except FileNotFoundError:
        sys.stderr.write("solar: error: the working folder has been removed; run solar from a "
                         "folder that exists\n")
        return _core.EXIT_CODES["io"]
    return None


def _reads_a_program(args: Sequence[str]) -> bool:
    """Whether the command imports a framework to read a program, the commands a server
    saves time on (the rest start in 0.2 s: a fork would cost them more than it saves)."""
    return _frontend_for(args[1:]) is not None or args[1:2] in (["validate"], ["bench"])


def exit_without_teardown(code: int) -> NoReturn:
    """Ends the process with `code` as the interpreter's exit would, minus its finalization.

    After a PyTorch program's analysis that finalization (module teardown, collections over
    torch's objects, libtorch's static destructors) takes 0.8-1.5 s, a third of a small
    program's whole run (bench/startup.py). What an exit must still do is done here: the
    atexit handlers run (torch's, logging's, multiprocessing's, Dask's), then stdout and
    stderr are flushed. When another non-daemon thread is still alive, or a flush fails
    (a closed pipe), the normal exit takes over, which waits for the thread and reports
    the broken pipe as usual."""
    others = [t for t in threading.enumerate()
              if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if others:
        sys.exit(code)
    atexit._run_exitfuncs()  # pylint: disable=protected-access
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(code)
    os._exit(code)


if __name__ == "__main__":
    run()
