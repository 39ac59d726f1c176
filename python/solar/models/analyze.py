"""`solar analyze hf:NAME|config.json`: one phase of a Hugging Face architecture, built from its
configuration on fake tensors, captured by the PyTorch frontend and analyzed like any program;
the report gains a `model` section (docs/models.md): the phase, tokens per step, parameters,
weight and cache bytes, and per device the time per step and tokens per second at SOL.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
from typing import Optional

from .. import programs
from . import estimate
from ..analysis import (ProgramAnalysis, ProgramOptions, analyze_graph, analyze_trace,
                        lower_trace)
from ..errors import user_error
from .build import (build_model, config_of, implementation_patches, parameter_count,
                    quiet_transformers)
from .registry import ModelSpec, resolve
from . import quantize
from . import mla
from . import data_parallel, experts, parallel, serving, stages
from .shard import ShardError
from .run import NO_DECODE, ModelRun
from .section import model_section
from . import training
from . import policy
from . import layers_once
from .. import progress


def _step(spec: ModelSpec, model, config, run: ModelRun, train: bool):
    phases = programs.model_phases()
    seq, context = run.seq, run.context
    if spec.task == policy.TASK:  # one control step (solar.models.policy)
        if train:
            raise user_error(f"{spec.name}: a robot policy's training step is not modelled "
                             "(its control step is)", "unsupported")
        return phases.policy_step(model, config, run.batch, seq)
    if train:
        if run.phase != "prefill" or spec.task not in ("causal-lm", "encoder"):
            raise user_error("--train: a training step over --seq tokens of a causal-lm or "
                             "encoder model (--phase prefill)", "usage")
        return phases.training_step(model, spec.task, run.batch, seq,
                                    run.optimizer or "none", run.dtype,
                                    run.recompute or "none", spec.name,
                                    training.updated_counter(model))
    if spec.task == "causal-lm" and run.phase == "decode" and run.new_tokens > 1:
        return phases.verify_step(model, config, run.batch, context, run.new_tokens)
    if spec.task == "causal-lm":
        if run.phase == "decode" and config.model_type in NO_DECODE:
            raise user_error(f"{spec.name}: {NO_DECODE[config.model_type]}", "unsupported")
        return phases.causal_lm_step(model, config, run.phase, run.batch, seq, context)
    if spec.task == "seq2seq-lm":
        return phases.seq2seq_step(model, config, run.phase, run.batch, seq, context)
    if run.phase == "decode":
        raise user_error(f"{spec.name} is an {spec.task} model: it runs once over its input "
                         "and has no decode phase (use --phase prefill)", "usage")
    if spec.task == "encoder":
        return phases.encoder_step(model, config, run.batch, seq)
    return phases.image_step(model, config, run.batch)


def tokens_per_step(spec: ModelSpec, run: ModelRun, config) -> int:
    """Tokens a step processes: batch x seq in a prefill (patches for an image model),
    batch in a decode step (one new token per sequence)."""
    if spec.task == "image-classification":
        return run.batch * (config.image_size // config.patch_size) ** 2
    if spec.task == policy.TASK:  # the actions a control step emits
        return run.batch * config.action_horizon
    if run.phase == "decode":
        return run.batch * run.new_tokens  # one token per sequence (a verify step: K + 1)
    return run.batch * run.seq


REAL_WEIGHTS_LIMIT = 4e9  # bytes of real weights a value-reading model may allocate


def _dtype_bytes(dtype: str) -> int:
    return 4 if dtype in ("f32", "fp32") else 2


@contextlib.contextmanager
def collector_paused():
    """Python's cyclic garbage collector off while a model is built, captured and analyzed:
    its full passes walk every object torch and transformers hold (millions), several times
    a capture (6-12% of an analysis, measured on pi0, DeepSeek-V3 and Llama-3.1-405B, the
    peak memory unchanged); what the analysis leaves in cycles is collected afterwards, as
    usual. Nested uses leave the collector to the outermost."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def analyze_model(run: ModelRun, options: Optional[ProgramOptions] = None) -> ProgramAnalysis:
    """Builds, captures and analyzes one phase of a model (see ModelRun)."""
    with collector_paused():
        return _analyze_model(run, options or ProgramOptions())


def _analyze_model(run: ModelRun, options: ProgramOptions) -> ProgramAnalysis:
    if serving.wanted(run):  # checked before anything is built
        run.check()
        target = resolve(run.ref, run.task)
        target_config = config_of(target, run.config)
        serving.check(run, target, target_config, options.train)
        if run.draft:
            serving.check_draft(run, target_config)
    quant = quantize.requested(run)  # --quant, --kv-dtype, a quantization_config: checked first
    spec, config, model, trace = capture_model(run, options)
    plan = run.plan
    if plan is not None and not plan.is_plain():
        result = _analyze_plan(trace, spec, config, run, options, plan)
    elif quant is not None:  # captured in bf16, the graph rewritten (quantize.py)
        result = quantize.analyze_quantized(trace, spec, options, quant)
    else:
        result = analyze_trace(trace, spec.source, options)
    section = model_section(spec, run, config, result, params=parameter_count(model),
                            tokens=tokens_per_step(spec, run, config))
    if options.train:
        section["training"] = training.section(run, result.report,
                                               training.updated_counter(model)[0], options)
    if serving.wanted(run):
        section["serving"] = serving.serving_section(run, options, result, section,
                                                     analyze_model)
    result.report.attach_section("model", section)
    if spec.task == policy.TASK:
        result.report.attach_section("policy", policy.section(config, run, result.report))
    return result


def capture_model(run: ModelRun, options: ProgramOptions):
    """(spec, config, model, trace): one phase of a model built and captured, every check
    made before anything is built (the configuration, a plan, the work estimate)."""
    from torch._subclasses.fake_tensor import (DataDependentOutputException,
                                               DynamicOutputShapeException, FakeTensorMode)

    capture = programs.torch_capture().capture
    torch_logging_silenced = programs.torch_quiet().torch_logging_silenced
    policy.prepare(run, resolve(run.ref, run.task))  # a policy's prompt: --seq or its config
    run.check()
    run.optimizer, run.recompute = training.check(run.optimizer, run.recompute,
                                                  run.measured_ms, options.train, run.plan)
    if options.validate or options.real:
        raise user_error("a model from a configuration has no weights to run: --validate and "
                         "--real need a program file", "usage")
    spec = resolve(run.ref, run.task)
    config = config_of(spec, run.config)  # every size checked (validate.py)
    # Before anything is built: what building and capturing will cost (estimate.py).
    if run.plan is not None and not run.plan.is_plain():
        # The plan checked before anything is built: its rules, and that it fills the system.
        parallel.check_config(config, run.plan)
        if options.system is None:
            raise user_error("a parallel plan runs on a system (--system)", "usage")
        system_id, devices, _, _ = parallel.system_devices(options.system, options.nodes)
        parallel.check_system_plan(run.plan, devices, system_id)
        if run.batch % run.plan.microbatches:
            raise user_error(f"--microbatches {run.plan.microbatches} does not divide --batch "
                             f"{run.batch}", "usage")
    if run.mla_cache is not None and not mla.is_mla(config):
        raise user_error(f"--mla-cache: {spec.name} has no multi-head latent attention "
                         "(DeepSeek-V2/V3's kv_lora_rank)", "usage")
    estimate.check(estimate.estimate(config, spec.task, run.phase, run.batch, run.seq,
                                     run.context, options.train, run.recompute or "none",
                                     run.optimizer or "none"), run.ref, run.force)

    # Under a pipeline plan one microbatch is captured: each stage runs it m times a step.
    step_run = run if run.plan is None or run.plan.microbatches == 1 else \
        dataclasses.replace(run, batch=run.batch // run.plan.microbatches)

    def captured(real: bool):
        if not real and layers_once.enabled() and layers_once.applies(spec, run, options):
            # The fake model of the last (model, config, dtype) this process built: a sweep's
            # points differ in batch and context, which the model does not depend on.
            mode, model = layers_once.built_model(
                (spec.name, repr(spec.config), repr(sorted(run.config.items())), run.dtype),
                lambda m: build_model(spec, config, run.dtype, m),
                lambda: FakeTensorMode(allow_non_fake_inputs=True))
            trace = _captured_once(model, mode)
            if trace is not None:
                return model, trace
        else:
            mode = None if real else FakeTensorMode(allow_non_fake_inputs=True)
            model = build_model(spec, config, run.dtype, mode, real=real)
        return model, _capture(model, mode, real)[1]

    def _capture(model, mode, real: bool = False, prefix_layers=contextlib.nullcontext(),
                 steps: Optional[int] = None):
        with implementation_patches(config), mla.patches(config, run.phase, run.mla_cache), \
                quiet_transformers(), prefix_layers:
            with mode or contextlib.nullcontext(), torch_logging_silenced():
                step, inputs = _step(spec, model, config, step_run, options.train)
            if steps is not None:
                step.steps_run = steps
            trace = capture(step, *inputs, name=f"{spec.name} {run.phase}", source=spec.source,
                            train=options.train, fake=not real, _fake_mode=mode)
        return step, trace

    def _captured_once(model, mode):
        """The whole model's trace from a capture of a prefix of its layers, or of a policy's
        first integration steps (layers_once), or None where nothing repeats or the shorter
        trace is not as expected."""
        try:
            if spec.task == policy.TASK:
                n, k = config.num_steps, layers_once.STEPS_CAPTURED
                if n <= k:
                    return None
                _, short = _capture(model, mode, steps=k)
                labels = layers_once.flow_steps(short, k)
                if labels is None:
                    raise layers_once.NotSound("the integration steps are not where expected")
                return layers_once.expand(short, None, list(range(k)) + [k - 1] * (n - k), k,
                                          None, {k - 1: k - 2}, labels)
            found = layers_once.decoder_layers(model, config)
            sigs = layers_once.layer_signatures(model, config)
            k = layers_once.prefix_length(sigs) if sigs else None
            if found is None or k is None:
                return None
            step, short = _capture(model, mode,
                                   prefix_layers=layers_once.prefix_layers(model, config, k))
            modules = {name: type(m).__name__ for name, m in step.named_modules()}
            return layers_once.expand(short, "model." + found[0],
                                      layers_once.templates(sigs, k), k, modules,
                                      layers_once.twins(sigs, k))
        except layers_once.NotSound as e:
            progress.stage(f"layers captured once: not sound here ({e}); capturing every layer")
            return None

    try:
        model, trace = captured(real=False)
    except (DataDependentOutputException, DynamicOutputShapeException) as e:
        # The model reads a tensor's value (Reformer: position_ids.max().item()), which fake
        # tensors do not have: captured on real, randomly initialized weights when they fit.
        size = parameter_count(build_model(spec, config, run.dtype)) * _dtype_bytes(run.dtype)
        if size > REAL_WEIGHTS_LIMIT:
            raise user_error(f"{spec.name} reads tensor values ({type(e).__name__}: {e}), so "
                             f"it needs real weights, and {size / 1e9:.1f} GB of them exceed "
                             f"{REAL_WEIGHTS_LIMIT / 1e9:.0f} GB", "unsupported") from None
        try:
            model, trace = captured(real=True)
        except RuntimeError as e:
            if "mixed dtype (CPU)" not in str(e):
                raise
            # The model upcasts activations to f32 beside 16-bit weights, which only CUDA
            # kernels accept; counted at f32 the step would not be the one asked for.
            raise user_error(f"{spec.name} reads tensor values, so it runs on real tensors, "
                             f"and this machine's CPU kernels cannot run it at --dtype "
                             f"{run.dtype} ({' '.join(str(e).split())[:120]}); analyze it at "
                             "--dtype f32", "unsupported") from None
    return spec, config, model, trace


def _analyze_plan(trace, spec: ModelSpec, config, run: ModelRun, options: ProgramOptions,
                  plan) -> ProgramAnalysis:
    """The captured graph sharded by the plan (capture once, then shard): the report of the
    slowest stage's rank graph with the `system` section of the plan (plan_analysis)."""
    graph, notes, trace_ids = lower_trace(trace, spec.source, options.strict)
    report, rank_graph = plan_analysis(parallel.graph_json(graph), config, plan, options,
                                       tokens_per_step(spec, run, config))
    return ProgramAnalysis(report, notes, trace, rank_graph, trace_ids)


def plan_analysis(whole, config, plan, options: ProgramOptions, tokens: int):
    """(report, rank graph) of a captured graph (solar.graph.v1 JSON) under a plan: tp rank
    0's graph of each pipeline stage analyzed on the system, the report (the slowest
    stage's) given the `system` section with the plan, each stage rank's memory, the step
    with its bubble and the system's tokens per second (docs/parallel.md, "Parallel
    plans")."""
    _, state, replicated = parallel.sharding_rules(whole, config, plan.tp)
    sharded = parallel.shard_model(whole, config, plan)
    graphs = [sharded.graph]
    if plan.ep > 1:
        per_node = parallel.system_devices(options.system, options.nodes)[2]
        try:
            graphs = [experts.expert_parallel(sharded.graph, plan.ep, 0,
                                              parallel.ep_group(plan, per_node))[0]]
        except ShardError as e:
            raise user_error(f"--ep {plan.ep}: {e}", "unsupported") from None
        replicated = [r for r in replicated if not r["type"].endswith("Experts")]
    train_elements = 0
    if options.train:
        train_elements = sum(parallel.numel(whole_t["shape"]) for whole_t in
                             sharded.graph["tensors"] if whole_t["role"] == "output"
                             and whole_t["shape"])
    if options.train and plan.dp > 1:
        per_node = parallel.system_devices(options.system, options.nodes)[2]
        try:
            graphs = [data_parallel.data_parallel(graphs[0], plan.dp, plan.zero,
                                                  parallel.dp_group(plan, per_node))[0]]
        except ShardError as e:
            raise user_error(f"--dp {plan.dp}: {e}", "unsupported") from None
    if plan.pp > 1:
        per_node = parallel.system_devices(options.system, options.nodes)[2]
        try:
            graphs = stages.split_stages(graphs[0], plan.pp, plan.tp, 0, per_node)
        except ValueError as e:
            raise user_error(f"--pp {plan.pp}: {e}", "usage") from None
    results, reports = [], []
    for g in graphs:
        rank_graph = parallel.parse(g)
        report = analyze_graph(rank_graph, options)
        reports.append((report, rank_graph))
        results.append(parallel.StageResult(g, report["system"].to_dict(),
                                            parallel.collective_counts(g)))
    report, rank_graph = max(reports, key=lambda rg: float(rg[0]["system"]["seconds"]))
    capacity = report.devices[results[0].base["device"]].memory.capacity_bytes
    section = parallel.system_section(results, plan, list(state), capacity, tokens, replicated,
                                      train_elements)
    report.attach_section("system", section, replace=True)
    return report, rank_graph
