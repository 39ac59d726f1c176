"""One JAX program from file (or function) to report: load, capture the jaxpr, lower with the
C++ jax table, analyze; on request validate by execution (report section `validation`) and
show XLA's own cost analysis beside Solar's counts (report section `xla`).

`solar analyze prog.py` and `solar validate prog.py` reach analyze_file through the dispatch
(solar.programs), which hands over files that import jax or flax and not torch
(solar.program_source.is_jax_program); every frontend returns a solar.analysis.ProgramAnalysis.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import os
import random
import sys
import types
import warnings
from typing import Any, Dict, List, Optional

import numpy as np

from ... import _core, executor
from ...analysis import ProgramAnalysis, ProgramOptions, analyze_graph, lower_trace
from ...errors import user_error
from ...program_source import OverrideError, ProgramFormatError, inject_overrides
from ...report import Report
from ...validation import check_entry, validation_trace
from . import capture as cap
from . import mesh_links, sharded
from ...ranks import declared_devices, validate_ranks
from .encoding import concrete
from .recorder import REPEAT_OP
from .limits import check_real_run

TOOL = "solar executor"
# Validation's seed: Python's and numpy's global generators (a get_inputs() that draws from
# them) and a Flax Model's init key, PRNGKey(SEED); keys a program makes itself are its own.
SEED = 0
XLA_TOOL = "XLA HloCostAnalysis: jax.jit(f).lower(*args).compile().cost_analysis()"


def _analyze_capture(c: "cap.Capture", file: str, options: ProgramOptions) -> ProgramAnalysis:
    graph, notes, trace_ids = lower_trace(c.trace, file, options.strict)
    return ProgramAnalysis(analyze_graph(graph, options), notes, c.trace, graph, trace_ids)


def preload() -> None:
    """Imports jax now (solar.server, before it forks): a capture imports it on first use."""
    import jax  # noqa: F401  pylint: disable=import-outside-toplevel
    import jax.numpy  # noqa: F401  pylint: disable=import-outside-toplevel


def analyze_file(path: str, options: Optional[ProgramOptions] = None) -> ProgramAnalysis:
    """Captures the JAX program at `path` (forward/get_inputs or a Flax Model) and analyzes
    it. options.validate: captured on the real inputs, run, and its graph executed and
    compared (section `validation`); options.crosscheck: XLA's cost analysis beside
    Solar's counts (section `xla`)."""
    options = options or ProgramOptions()
    if options.train or options.optimizer:
        raise user_error("--train/--optimizer are not supported for JAX programs yet", "usage")
    devices = declared_devices(path, options.overrides or {})
    if devices is not None:  # a program that shards itself: one graph per rank
        return sharded_analysis(path, devices, options)
    if options.mesh_links:
        raise user_error("--mesh-links: for a program that declares its mesh (DEVICES = N, "
                         "docs/distributed.md)", "usage")
    # A real run that would not fit in memory: refused first.
    check_real_run(path, options, lambda overrides: _abstract_trace(path, overrides))
    try:
        real = options.validate or options.real
        with _seeded_generators():
            mod = load_program(path, options.overrides)
            prog = program_from_module(mod, path, abstract=not real)
    except OverrideError as e:
        raise user_error(str(e), "usage") from None
    except ProgramFormatError as e:
        raise user_error(str(e), "parse") from None
    unroll = bool(getattr(options, "unroll", False))  # --unroll: every loop unrolled
    c = _capture(prog, path, values=None, unroll=unroll)
    if not real and _data_dependent(c):
        # A loop or branch that depends on data: the real inputs decide it (as --real would).
        warnings.warn(f"solar: {path}: data-dependent control flow: captured again on the "
                      "real inputs", RuntimeWarning, stacklevel=2)
        with _seeded_generators():
            prog = program_from_module(mod, path, abstract=False)
        c = _capture(prog, path, values=None, unroll=unroll)
    if options.validate and _missing_given(c):
        c = _capture(prog, path, values=True, unroll=unroll)
    for n in c.notes:
        warnings.warn(f"solar: {n}", RuntimeWarning, stacklevel=2)
    result = _analyze_capture(c, path, options)
    if options.validate:
        result.report.attach_section("validation", validate_capture(c, prog, path))
    if options.crosscheck:
        result.report.attach_section("xla", xla_crosscheck(result.report, prog, c))
    return result


@contextlib.contextmanager
def _seeded_generators():
    """Python's and numpy's global generators seeded with SEED while the program is loaded
    and its inputs made, then restored: the inputs a validation reports are reproducible."""
    py_state, np_state = random.getstate(), np.random.get_state()
    random.seed(SEED)
    np.random.seed(SEED)
    try:
        yield
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)


def _data_dependent(c: "cap.Capture") -> bool:
    """Whether the capture left a loop or branch unresolved for want of real values."""
    return any("run time" in str(o["args"].get("reason", "")) for o in c.trace["ops"])


def _missing_given(c: "cap.Capture") -> bool:
    """Whether an op whose values validation is given (random bits) has none recorded."""
    return any(t not in c.values for i in c.given_ops for t in c.trace["ops"][i]["outputs"])


def _capture(prog: "Program", source: str, values, unroll_cap: Optional[int] = None,
             unroll: bool = False, mesh_rank=None) -> "cap.Capture":
    n = len(prog.inputs)
    cap_ops = cap.UNROLL_CAP if unroll_cap is None else int(unroll_cap)
    if prog.params is None:
        return cap.capture(prog.fn, *prog.inputs, values=values, name=prog.name, source=source,
                           arg_names=[f"x{k}" for k in range(n)], unroll_cap=cap_ops,
                           unroll=unroll, mesh_rank=mesh_rank)
    return cap.capture(prog.fn, prog.params, *prog.inputs, values=values, name=prog.name,
                       source=source, param_argnums=(0,), unroll_cap=cap_ops, unroll=unroll,
                       arg_names=["params"] + [f"x{k}" for k in range(n)], mesh_rank=mesh_rank)


def _args(prog: "Program") -> List[Any]:
    return ([] if prog.params is None else [prog.params]) + list(prog.inputs)


# ---------------------------------------------------------------- program files


def load_program(path: str, overrides: Optional[Dict[str, str]] = None):
    """Executes the program file as a module. `overrides` (NAME -> VALUE text, a Python
    literal or else a string) inject `NAME = VALUE` right after each top-level assignment of
    NAME, as the PyTorch frontend does; a NAME the file never assigns raises OverrideError."""
    path = os.path.abspath(path)
    with open(path, encoding="utf-8") as f:
        tree = inject_overrides(ast.parse(f.read(), filename=path), path, overrides)
    # Registered under a private name: dataclasses (Flax modules) look their module up.
    name = "_solar_jax_program_" + "".join(
        ch if ch.isalnum() else "_" for ch in os.path.splitext(os.path.basename(path))[0])
    mod = types.ModuleType(name)
    mod.__file__ = path
    sys.modules[name] = mod
    exec(compile(tree, path, "exec"), mod.__dict__)
    return mod


@dataclasses.dataclass
class Program:
    """A loaded JAX program as a pure function of (parameters, inputs)."""

    fn: Any  # fn(params, *inputs) or fn(*inputs)
    params: Any  # a pytree, or None
    inputs: List[Any]
    name: str


def program_from_module(mod, path: str, abstract: bool) -> Program:
    """The program a file defines: `forward(*inputs)` with `get_inputs()`, or a Flax
    `Model` with `get_init_inputs()` and `get_inputs()` (initialized with PRNGKey(0)).
    abstract: inputs and parameters as shapes only (jax.eval_shape), no data made."""
    import jax

    name = os.path.splitext(os.path.basename(path))[0]
    if not hasattr(mod, "get_inputs"):
        raise ProgramFormatError(f"{path}: a JAX program defines get_inputs() and forward() "
                                 "or a Flax Model")

    def inputs():
        if abstract:
            try:
                return list(jax.eval_shape(lambda: list(mod.get_inputs())))
            except Exception:
                pass
        return list(mod.get_inputs())

    if hasattr(mod, "forward"):
        return Program(mod.forward, None, inputs(), name)
    if hasattr(mod, "Model"):
        init_args = list(mod.get_init_inputs()) if hasattr(mod, "get_init_inputs") else []
        model = mod.Model(*init_args)
        xs = inputs()
        key = jax.random.PRNGKey(0)
        if abstract:
            variables = jax.eval_shape(lambda k, *a: model.init(k, *a), key, *xs)
        else:
            variables = jax.jit(model.init)(key, *xs)  # one compilation, not one per op

        def apply(variables, *a):
            return model.apply(variables, *a)

        apply.solar_root_module = type(model).__name__  # the name stacks' first component

        return Program(apply, variables, xs, name)
    raise ProgramFormatError(f"{path}: a JAX program defines forward(*inputs) or a Flax Model "
                             "class next to get_inputs()")


def _abstract_trace(path: str, overrides: Dict[str, str]) -> Dict[str, Any]:
    """The OpTrace of the program at `path` (with `overrides`) captured on abstract values:
    what the memory check before a real run estimates (limits.check_real_run)."""
    prog = program_from_module(load_program(path, overrides), path, abstract=True)
    return _capture(prog, path, values=False).trace


# ---------------------------------------------------------------- validation


def _executor_array(value: Any) -> np.ndarray:
    """A numpy array the executor reads: bf16/fp8 (ml_dtypes) as float32 (exact values)."""
    import jax

    if jax.dtypes.issubdtype(getattr(value, "dtype", np.float32), jax.dtypes.prng_key):
        value = jax.random.key_data(value)  # keys are held as their uint32 data
    arr = np.asarray(value)
    if arr.dtype.kind == "V" or arr.dtype.name in ("bfloat16",) or "float8" in arr.dtype.name:
        arr = arr.astype(np.float32)
    elif arr.dtype in (np.uint16, np.uint32, np.uint64):
        # The graph holds uint16/32/64 as i16/32/64 (the IR has no wider unsigned types):
        # the same bits, so bit operations (threefry) and bit-exact comparisons agree.
        arr = arr.view(arr.dtype.name[1:])
    if arr.ndim == 0:
        # solar.executor passes numpy arrays through np.ascontiguousarray, which makes a 0-d
        # array 1-d; a jax array goes through DLPack with its shape intact.
        import jax.numpy as jnp

        return jnp.asarray(arr)
    return np.ascontiguousarray(arr)


def validate_capture(c: "cap.Capture", prog: "Program", file: str) -> Dict[str, Any]:
    """The `validation` section: the program run by JAX (jax.jit) on the real inputs, the
    lowered graph run by Solar's executor on the same inputs, parameters and constants, and
    every program output compared under the tolerance of its dtype."""
    import jax

    section: Dict[str, Any] = {"status": "failed", "tool": TOOL, "seed": SEED,
                               "outputs": [], "excluded": [],
                               "given": [{"op": c.trace["ops"][i]["op"],
                                          "outputs": c.trace["ops"][i]["outputs"],
                                          "reason": "no executor kernel (the RBG generators' "
                                                    "random bits): JAX's values are given"}
                                         for i in c.given_ops]}
    vtrace = validation_trace(c.trace, c.given_ops)
    graph, _, trace_ids = lower_trace(vtrace, file, False)
    unanalyzed = [op for op in graph.ops if op.kind == _core.OpKind.unanalyzed]
    if unanalyzed:
        names = ", ".join(f"{op.framework_op} ({op.origin})" for op in unanalyzed)
        section["reason"] = (f"the graph is not executable: {len(unanalyzed)} unanalyzed "
                             f"op(s): {names}")
        return section
    flat = jax.tree_util.tree_leaves(jax.jit(prog.fn)(*_args(prog)))
    by_id: Dict[int, Any] = {}
    for k, tid in enumerate(c.output_ids):
        if tid is not None and k < len(flat):
            by_id.setdefault(tid, flat[k])
    inputs, refs = {}, {}
    for t in graph.tensors:
        role = str(t.role).rsplit(".", 1)[-1]
        tid = trace_ids.get(t.name)
        if role == "output":
            if tid in by_id:
                refs[t.name] = _executor_array(by_id[tid])
        elif role != "intermediate":
            if tid is None or tid not in c.values:
                section["reason"] = f"no value for graph source {t.name}"
                return section
            inputs[t.name] = _executor_array(c.values[tid])
    computed = {trace_ids.get(t.name) for t in graph.tensors
                if str(t.role).rsplit(".", 1)[-1] == "output"}
    for k, tid in enumerate(c.output_ids):
        if tid is None:
            section["excluded"].append({"output": k, "reason": "a literal"})
        elif tid not in computed:
            section["excluded"].append({"output": k, "trace_id": tid,
                                        "reason": "returned unchanged (a graph source)"})
    if not refs:
        section["status"] = "inconclusive"
        section["reason"] = "every program output is excluded, nothing was compared"
        return section
    try:
        result = executor.validate(graph, inputs, refs)
    except (_core.UnsupportedError, _core.UserError) as e:
        section["reason"] = f"the graph could not be executed: {e}"
        return section
    section["outputs"] = [check_entry(ch, graph, trace_ids.get(ch.name))
                          for ch in result.outputs]
    if result.passed:
        section["status"] = "passed"
    else:
        section["reason"] = "outputs outside tolerance: " + ", ".join(
            ch.name for ch in result.outputs if not ch.passed)
    return section


# ---------------------------------------------------------------- sharded programs


def sharded_analysis(path: str, devices: int, options: ProgramOptions) -> ProgramAnalysis:
    """A program that declares DEVICES = N and is one shard_map over N devices: every
    rank captured in a fresh process (sharded.py), rank 0's graph analyzed (the ranks' graphs
    differ only by axis_index constants and ppermute peers, not by their counts), and with
    validate all ranks run together by the executor and compared with JAX's sharded run
    (section `validation`). The report's `distributed` section says the route and the mesh."""
    if options.train or options.optimizer:
        raise user_error("--train/--optimizer are not supported for JAX programs yet", "usage")
    res = sharded.run_child(path, devices, bool(options.validate), options.overrides or {})
    for n in res["notes"]:
        warnings.warn(f"solar: {n}", RuntimeWarning, stacklevel=2)
    placement: Dict[str, Any] = {}
    if options.system:  # each collective's ranks per scale-up domain, before lowering
        placement = mesh_links.place(res["traces"], res["mesh"], options.system, options.nodes,
                                     options.mesh_links or "")
    elif options.mesh_links:
        raise user_error("--mesh-links needs --system (the links the mesh axes ride)", "usage")
    lowered = [lower_trace(t, path, options.strict) for t in res["traces"]]
    graph, notes, trace_ids = lowered[0]
    result = ProgramAnalysis(analyze_graph(graph, options), notes, res["traces"][0], graph,
                             trace_ids)
    route = res.get("route", "shard_map")
    section = {"route": route, "ranks": devices, "mesh": res["mesh"], "analyzed_rank": 0,
               **placement}
    if route == "hlo":
        section["note"] = ("each rank's graph is the program traced at its local input shapes "
                           "(jit shardings), with the collectives XLA's SPMD partitioner "
                           "inserted, read from the compiled HLO (this backend's choice: CPU "
                           "here; a GPU backend may choose differently)")
        section["hlo_collectives"] = res["hlo_collectives"]
    else:
        section["note"] = ("each rank's graph is the shard_map body at its local shapes; "
                           "axis_index is folded into the rank's coordinate and ppermute is a "
                           "send and a recv to the rank's partners, so the ranks' graphs have "
                           "equal counts")
    result.report.attach_section("distributed", section)
    if options.validate:
        result.report.attach_section("validation", validate_ranks(res, lowered))
    return result


# ---------------------------------------------------------------- XLA cross-check


def _count(x) -> int:
    return int(x) if not isinstance(x, str) else int(x)


def xla_crosscheck(report: Report, prog: "Program", c: "cap.Capture") -> Dict[str, Any]:
    """Solar's FLOPs and bytes beside XLA's HloCostAnalysis of the compiled program, with
    the known differences stated. Never fails the analysis: a program XLA cannot compile
    here gets a section saying why."""
    import jax

    try:
        args = [jax.tree_util.tree_map(
            lambda x: jax.ShapeDtypeStruct(np.shape(x), x.dtype), a) for a in _args(prog)]
        ca = jax.jit(prog.fn).lower(*args).compile().cost_analysis()
        if isinstance(ca, (list, tuple)):
            ca = ca[0] if ca else {}
        ca = dict(ca or {})
    except Exception as e:  # XLA's own failure must not fail the analysis
        return {"tool": XLA_TOOL, "status": "skipped", "reason": f"{type(e).__name__}: {e}"}
    totals = report.to_dict()["totals"]
    solar = {k: _count(totals[k]) for k in ("flops", "macs", "vector_flops", "special_ops",
                                            "bytes_unfused", "bytes_fused")}
    xla = {"flops": ca.get("flops"), "transcendentals": ca.get("transcendentals"),
           "bytes_accessed": ca.get("bytes accessed")}
    loops = [o for o in c.trace["ops"] if o["args"].get("synthetic")
             or o["op"] == f"jax::{REPEAT_OP}"]
    notes = [
        "1 MAC = 2 FLOP in both; XLA counts one FLOP per elementwise op and reduction step as "
        "Solar's vector_flops do, and its transcendentals are Solar's special_ops.",
        "XLA's bytes accessed are counted after XLA's own fusion on this host's backend: "
        "expect them between Solar's bytes_fused (compulsory traffic) and bytes_unfused "
        "(every op through memory).",
    ]
    if any(o["op"] == "jax::conv_general_dilated" for o in c.trace["ops"]):
        notes.append("XLA's convolution FLOPs leave out the taps that fall in the padding; "
                     "Solar counts every tap of the iteration space (padding reads 0), as "
                     "PyTorch's counter and implicit-GEMM kernels do.")
    if any(o["args"].get("expanded_from") for o in c.trace["ops"]):
        notes.append("The program draws random numbers: on the CPU backend XLA lowers "
                     "threefry2x32 to a loop over its 5 groups of 4 rounds and counts one "
                     "group; Solar counts all 20 rounds (the unrolled lowering).")
    if loops or any("while" in n for n in c.notes):
        notes.append("The program has loops: XLA counts the body of a while loop (scan and "
                     "fori_loop lower to one) once; Solar counts every iteration.")
    ratios = {}
    if xla["flops"]:
        ratios["flops_solar_over_xla"] = solar["flops"] / float(xla["flops"])
    if xla["transcendentals"]:
        ratios["special_solar_over_xla_transcendentals"] = (
            solar["special_ops"] / float(xla["transcendentals"]))
    if xla["bytes_accessed"]:
        ratios["bytes_fused_over_xla"] = solar["bytes_fused"] / float(xla["bytes_accessed"])
        ratios["bytes_unfused_over_xla"] = solar["bytes_unfused"] / float(xla["bytes_accessed"])
    return {"tool": XLA_TOOL, "status": "compared", "backend": jax.default_backend(),
            "solar": solar, "xla": xla, "ratios": ratios, "notes": notes}


# ---------------------------------------------------------------- the Python API


def analyze_jax(fn, *args, arch="H100_SXM", policy: str = "pytorch-default",
                cache_state: str = "cold", strict: bool = False, params=None,
                validate: bool = False, crosscheck: bool = False,
                unroll_cap: Optional[int] = None, unroll: bool = False) -> Report:
    """solar.analyze_jax: capture `fn(*args)` (or `fn(params, *args)`, whose leaves are
    parameters), lower, analyze. args: arrays or jax.ShapeDtypeStruct (abstract: any size,
    no data). validate: run `fn` and the graph on the (concrete) args and compare (section
    `validation`); crosscheck: XLA's cost analysis beside Solar's (section `xla`);
    unroll_cap: the most ops loop unrolling may emit (default cap.UNROLL_CAP, 200,000, or
    SOLAR_JAX_UNROLL_CAP): a loop past it is refused (solar.UnsupportedError); unroll: every
    loop unrolled (`--unroll`) instead of a scan or static-trip while_loop as one repeat op."""
    archs = [arch] if isinstance(arch, str) else list(arch)
    options = ProgramOptions(archs=archs, policy=policy, cache_state=cache_state, strict=strict)
    name = getattr(fn, "__name__", "program")
    prog = Program(fn, params, list(args), name)
    if validate and not all(concrete(x) for x in jax_leaves(_args(prog))):
        raise user_error("analyze_jax(validate=True) runs the program: give arrays, not "
                         "jax.ShapeDtypeStruct", "usage")
    c = _capture(prog, "", values=None, unroll_cap=unroll_cap, unroll=unroll)
    if validate and _missing_given(c):
        c = _capture(prog, "", values=True, unroll_cap=unroll_cap, unroll=unroll)
    for n in c.notes:
        warnings.warn(f"solar: {n}", RuntimeWarning, stacklevel=2)
    result = _analyze_capture(c, "<jax>", options)
    for n in result.warnings:
        warnings.warn(f"solar: unanalyzed op {n}", RuntimeWarning, stacklevel=2)
    if validate:
        result.report.attach_section("validation", validate_capture(c, prog, "<jax>"))
    if crosscheck:
        result.report.attach_section("xla", xla_crosscheck(result.report, prog, c))
    return result.report


def jax_leaves(tree) -> List[Any]:
    import jax

    return jax.tree_util.tree_leaves(tree)

