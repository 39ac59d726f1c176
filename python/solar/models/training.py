"""A model's training step (`solar analyze hf:NAME --train`, docs/models.md "Training"): the
optimizer's update appended to the captured backward pass, activation recomputation, and the
report's `model.training` block with the model-FLOPs utilization a measured step implies.

The optimizer. Mixed-precision training keeps an fp32 master copy of every weight and the
optimizer's moments in fp32, computes in bf16 (or f16), and after the update writes the bf16
copy the next forward reads (Micikevicius et al., "Mixed Precision Training", ICLR 2018,
arXiv:1710.03740, section 3.1; ZeRO, Rajbhandari et al., SC 2020, arXiv:1910.02054,
section 3.1: "2Ψ + 2Ψ + 12Ψ" bytes of bf16 weights, bf16 gradients and fp32 master weights,
momentum and variance for Adam). The update runs as each parameter's gradient is complete
(a post-accumulate-grad hook, inside the capture): torch's single-tensor AdamW formula on
the master copy, its moments and the gradient cast to fp32, the master copy then cast into
the parameter. The master copy and the moments are inputs of the step, updated in place
(read once, written once: docs/cost.md, "State updated in place"), so the step is the
steady state, not a first step that creates its state.

Recomputation. `full`: each decoder layer (transformers' GradientCheckpointingLayer)
runs under torch.utils.checkpoint, so the backward pass runs its forward again;
`selective`: only the attention core (the scaled dot product: scores, softmax, the product
with V; Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models",
arXiv:2205.05198, section 4.2) is checkpointed. The recomputed ops are captured as run and
recorded under a `recompute` module of their layer (or attention), so the report's module
tree shows them and the model FLOPs leave them out exactly.

Torch-free at import: the CLI and the sweep read the options and the formulas without torch.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import _core
from ..errors import user_error
from ..html.fmt import si

OPTIMIZERS = ("adamw", "adam", "sgd", "none")
DEFAULT_OPTIMIZER = "adamw"
RECOMPUTE = ("none", "selective", "full")
RECOMPUTE_MODULE = "recompute"  # the child module recomputed ops are recorded under

# torch.optim's defaults (AdamW: weight decay 0.01; Adam: none; SGD: no momentum).
LR, BETA1, BETA2, EPS = 1e-3, 0.9, 0.999, 1e-8
WEIGHT_DECAY = {"adamw": 0.01, "adam": 0.0}
STEADY_STEP = 1000  # the step whose bias corrections the update uses (scalars: any step)

_BYTES = {"f32": 4, "fp32": 4, "bf16": 2, "f16": 2, "fp16": 2}
MASTER_BYTES = 4  # fp32 master weights and moments


def mixed(dtype: str) -> bool:
    """Whether a step computing in `dtype` keeps fp32 master weights (bf16, f16)."""
    return _BYTES[dtype] < MASTER_BYTES


def optimizer_bytes(optimizer: str, dtype: str) -> Tuple[int, int]:
    """(bytes read, bytes written) per parameter by the update of `optimizer` in a step that
    computes in `dtype`.

    Mixed precision (bf16/f16 compute), AdamW or Adam: reads the fp32 master weight, the two
    fp32 moments and the bf16 gradient, writes the master weight, the moments and the bf16
    weight: (4 + 4 + 4 + 2, 4 + 4 + 4 + 2) = (14, 14). SGD (torch's default: no momentum,
    so no state): (4 + 2, 4 + 2). In fp32 the weight is its own master: AdamW reads weight,
    moments and gradient (4 x 4) and writes weight and moments (3 x 4); SGD (4 + 4, 4)."""
    if optimizer == "none":
        return 0, 0
    grad = _BYTES[dtype]
    moments = 2 * MASTER_BYTES if optimizer in ("adam", "adamw") else 0
    if mixed(dtype):
        copy = _BYTES[dtype]  # the low-precision weight the next forward reads
        return MASTER_BYTES + moments + grad, MASTER_BYTES + moments + copy
    return MASTER_BYTES + moments + grad, MASTER_BYTES + moments


def precision(dtype: str, optimizer: str) -> str:
    """The step's precision in words."""
    if optimizer == "none":
        return f"{dtype} compute, no update"
    if mixed(dtype):
        state = " and moments" if optimizer in ("adam", "adamw") else ""
        return f"mixed: {dtype} compute, fp32 master weights{state}"
    return f"{dtype} throughout (the weights are their own master copy)"


def check(optimizer: Optional[str], recompute: Optional[str], measured_ms: Optional[float],
          train: bool, plan=None) -> Tuple[str, str]:
    """Refuses bad training options (usage, exit 2); returns (optimizer, recompute) with their
    defaults (AdamW, none; without --train: none, none). Torch-free."""
    if not train:
        # ("none" is what a run checked before holds: a run copied for another phase)
        given = [f for f, v in (("--optimizer", optimizer), ("--measured-ms", measured_ms),
                                ("--recompute", recompute)) if v not in (None, "none")]
        if given:
            raise user_error(f"{', '.join(given)}: for a training step (--train)", "usage")
        return "none", "none"
    if optimizer is not None and optimizer not in OPTIMIZERS:
        raise user_error(f"--optimizer {optimizer!r}: expected one of {', '.join(OPTIMIZERS)}",
                         "usage")
    if recompute is not None and recompute not in RECOMPUTE:
        raise user_error(f"--recompute {recompute!r}: expected one of {', '.join(RECOMPUTE)}",
                         "usage")
    if measured_ms is not None and (isinstance(measured_ms, bool) or
                                    not isinstance(measured_ms, (int, float)) or
                                    not measured_ms > 0 or measured_ms == float("inf")):
        raise user_error(f"--measured-ms must be a positive number of milliseconds, not "
                         f"{measured_ms!r}", "usage")
    if plan is not None and not plan.is_plain():
        # The plans shard the parameters and their gradients (docs/parallel.md); the master
        # copy and the moments as step inputs, and recomputed layers, are not sharded yet.
        given = [f for f, v in (("--optimizer", optimizer), ("--measured-ms", measured_ms),
                                ("--recompute", recompute if recompute != "none" else None))
                 if v is not None]
        if given:
            raise user_error(f"{', '.join(given)}: not yet with a parallel plan (a plan's "
                             "training step is forward + backward, its optimizer state "
                             "counted in memory: docs/parallel.md)", "unsupported")
        return "none", "none"
    return optimizer or DEFAULT_OPTIMIZER, recompute or "none"


# ---------------------------------------------------------------- the step (torch)


def updated_counter(model) -> List[int]:
    """[elements]: the parameter elements of `model` whose gradient completed in its captured
    training step (install_updates counts them), kept on the model."""
    counter = model.__dict__.get("_solar_updated_elements")
    if counter is None:
        counter = model.__dict__["_solar_updated_elements"] = [0]
    return counter


def optimizer_state(model, optimizer: str, dtype: str) -> List[Any]:
    """The step's optimizer state inputs, per parameter in model.parameters() order: the
    fp32 master copy (mixed precision), then the moments (Adam, AdamW). Made in the current
    (fake) mode."""
    import torch

    per = (1 if mixed(dtype) and optimizer != "none" else 0) + \
        (2 if optimizer in ("adam", "adamw") else 0)
    state = []
    for p in model.parameters():
        if p.requires_grad:
            state += [torch.zeros(p.shape, dtype=torch.float32) for _ in range(per)]
    return state


def install_updates(model, optimizer: str, dtype: str, state: Sequence[Any],
                    updated: List[int]) -> None:
    """Registers on each trainable parameter of `model` (as the forward sees it: under
    functional_call, the capture's leaf) the update that runs once its gradient is complete,
    reading and writing `state` (optimizer_state's order); each update adds its parameter's
    elements to updated[0] (a parameter that gets no gradient is not updated, as in
    torch.optim)."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    per = len(state) // len(params) if params else 0
    low = mixed(dtype)
    for i, p in enumerate(params):
        own = list(state[per * i: per * (i + 1)])
        master, moments = (own[0], own[1:]) if low and optimizer != "none" else (p, own)

        def update(p, master=master, moments=moments):
            updated[0] += p.numel()
            if optimizer == "none":
                return
            with torch.no_grad():
                g = p.grad.to(torch.float32) if low else p.grad
                if optimizer == "sgd":
                    master.add_(g, alpha=-LR)
                else:
                    # torch.optim.AdamW's single-tensor update (foreach=False, not capturable)
                    m, v = moments
                    if WEIGHT_DECAY[optimizer]:
                        master.mul_(1 - LR * WEIGHT_DECAY[optimizer])
                    bc1 = 1 - BETA1 ** STEADY_STEP
                    bc2 = 1 - BETA2 ** STEADY_STEP
                    m.lerp_(g, 1 - BETA1)
                    v.mul_(BETA2).addcmul_(g, g, value=1 - BETA2)
                    denom = (v.sqrt() / bc2 ** 0.5).add_(EPS)
                    master.addcdiv_(m, denom, value=-LR / bc1)
                if low:
                    p.copy_(master)  # the low-precision weight the next forward reads

        p.register_post_accumulate_grad_hook(update)


def _recompute_module():
    import torch

    class Recompute(torch.nn.Module):
        """Where recomputed ops are recorded: forward(fn, *args) runs fn under this module's
        path, the hooks of the modules fn calls silenced (a decoder layer's attention and
        MLP would otherwise record the recomputed ops as their own forward)."""

        def forward(self, fn, silenced, *args, **kwargs):
            saved = [(m, m._forward_pre_hooks, m._forward_hooks) for m in silenced]
            try:
                for m in silenced:
                    m._forward_pre_hooks, m._forward_hooks = type(m._forward_pre_hooks)(), \
                        type(m._forward_hooks)()
                return fn(*args, **kwargs)
            finally:
                for m, pre, post in saved:
                    m._forward_pre_hooks, m._forward_hooks = pre, post

    return Recompute()


def _checkpointed(fn, marker, silenced):
    """fn under torch.utils.checkpoint (non-reentrant): its second run, in the backward pass,
    goes through `marker`."""
    import torch.utils.checkpoint as cp

    runs = [0]

    def body(*args, **kwargs):
        runs[0] += 1
        if runs[0] % 2 == 0:  # the backward pass's recomputation
            return marker(fn, silenced, *args, **kwargs)
        return fn(*args, **kwargs)

    def call(*args, **kwargs):
        # torch's default early stop: the recomputation ends once every tensor the backward
        # saved is back, so a layer's last ops (Llama's down projection and residual add),
        # whose outputs no backward op reads, are not run again. (Run without early stop,
        # they would be dead code, which the analysis drops: work nothing reads is not
        # counted.)
        return cp.checkpoint(body, *args, use_reentrant=False, preserve_rng_state=False,
                             **kwargs)

    return call


def one_sequence_per_row() -> contextlib.AbstractContextManager:
    """The context a training step's forward runs in: transformers' check for packed
    sequences (masking_utils.find_packed_sequence_indices) answers "none".

    Without a cache or an attention mask (a training step), transformers reads the position
    ids for several sequences packed in one row, and on finding one sequence per row leaves
    the mask to SDPA's is_causal, as the inference steps do. On fake tensors it cannot read
    them, so it materializes causal & same-sequence as a boolean mask, which Solar's lowering
    counts over the full square of query-key pairs. The step's rows are one sequence each (it
    passes no position ids: the model numbers them 0..S-1), where transformers, run eagerly,
    answers "none": the patch gives the fake capture the route the real step takes."""
    stack = contextlib.ExitStack()
    try:
        from transformers import masking_utils
    except ImportError:
        return stack
    original = getattr(masking_utils, "find_packed_sequence_indices", None)
    if original is None:
        return stack
    masking_utils.find_packed_sequence_indices = lambda position_ids: None
    stack.callback(setattr, masking_utils, "find_packed_sequence_indices", original)
    return stack


def install_recompute(model, recompute: str, name: str) -> contextlib.AbstractContextManager:
    """Prepares `model` for `recompute` (before the capture registers its module hooks: the
    markers are modules of the model). Returns the context the model's forward runs in
    (selective: transformers' sdpa attention checkpointed). Refuses a model that has no decoder layers
    (full) or whose attention does not run through transformers' sdpa interface (selective)."""
    if recompute == "full":
        from transformers.modeling_layers import GradientCheckpointingLayer

        layers = [m for m in model.modules() if isinstance(m, GradientCheckpointingLayer)]
        if not layers:
            raise user_error(f"{name}: --recompute full checkpoints transformers' decoder "
                             "layers (GradientCheckpointingLayer), and this model has none",
                             "unsupported")
        for layer in layers:
            inner = [m for m in layer.modules() if m is not layer]
            layer.add_module(RECOMPUTE_MODULE, _recompute_module())
            layer.forward = _checkpointed(layer.forward, getattr(layer, RECOMPUTE_MODULE),
                                          inner)
        return contextlib.nullcontext()
    if recompute == "selective":
        impl = getattr(model.config, "_attn_implementation", None)
        # transformers names its attention modules *Attention (LlamaAttention,
        # BertSelfAttention); one the interface is called from without a marker is refused.
        attentions = [m for m in model.modules() if type(m).__name__.endswith("Attention")]
        targets = _core_functions(impl, attentions)
        if not targets:
            raise user_error(f"{name}: --recompute selective checkpoints the attention core "
                             "(transformers' sdpa or eager attention function); this model's "
                             f"attention implementation is {impl!r}"
                             + ("" if attentions else ", and it has no attention module"),
                             "unsupported")
        for m in attentions:
            m.add_module(RECOMPUTE_MODULE, _recompute_module())
        return _cores_checkpointed(name, targets)
    return contextlib.nullcontext()


def _core_functions(impl: Optional[str], attentions) -> List[Tuple[Dict[str, Any], str]]:
    """Where the attention core function is looked up when a layer runs, as (namespace, key):
    sdpa in transformers' attention interface; eager in each modeling module's globals
    (its `eager_attention_forward`, the default the interface falls back to)."""
    if not attentions:
        return []
    if impl == "sdpa":
        from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

        return [(ALL_ATTENTION_FUNCTIONS._global_mapping, "sdpa")]
    if impl != "eager":
        return []
    spaces = {type(m).__module__ for m in attentions}
    found = [(vars(sys.modules[s]), "eager_attention_forward") for s in sorted(spaces)]
    return found if all(callable(d.get(k)) for d, k in found) else []


@contextlib.contextmanager
def _cores_checkpointed(name: str, targets: List[Tuple[Dict[str, Any], str]]):
    """The attention core functions replaced, while the forward runs, by themselves under
    checkpoint, their recomputation recorded under the attention module's marker."""
    calls = [0]
    wrapped: Dict[Tuple[int, int], Any] = {}

    def wrap(core):
        def attention(module, *args, **kwargs):
            marker = getattr(module, RECOMPUTE_MODULE, None)
            if marker is None:
                raise user_error(f"{name}: --recompute selective: {type(module).__name__} "
                                 "calls the attention function and is not an *Attention "
                                 "module", "unsupported")
            calls[0] += 1
            fn = wrapped.setdefault((id(core), id(module)), _checkpointed(core, marker, []))
            return fn(module, *args, **kwargs)

        return attention

    saved = [(space, key, space[key]) for space, key in targets]
    try:
        for space, key, core in saved:
            space[key] = wrap(core)
        yield
    finally:
        for space, key, core in saved:
            space[key] = core
    if not calls[0]:
        raise user_error(f"{name}: --recompute selective: no attention of this model ran "
                         "through transformers' attention function", "unsupported")


# ---------------------------------------------------------------- the report's block


def recompute_macs(modules: Optional[Dict[str, Any]]) -> int:
    """MACs of the module tree's `recompute` rows (the ops recomputation added)."""
    if not modules:
        return 0
    if modules.get("path", "").rsplit(".", 1)[-1] == RECOMPUTE_MODULE:
        return int(modules["macs"])
    return sum(recompute_macs(c) for c in modules.get("children", []))


def dense_peak(arch: str, dtype: str, policy: str) -> Optional[float]:
    """The device's dense peak FLOP/s for matmuls in the compute dtype (tensor cores; fp32:
    TF32 under --policy tf32, else the fastest unit that runs fp32), or None if it publishes
    none."""
    d = _core.device(arch)
    if mixed(dtype):
        return d.peak(_core.UnitKind.tensor, getattr(_core.DType, "bf16" if dtype == "bf16"
                                                     else "f16"))
    if policy == "tf32":
        return d.peak(_core.UnitKind.tensor, _core.DType.tf32)
    return d.peak(_core.UnitKind.tensor, _core.DType.f32) or \
        d.peak(_core.UnitKind.vector, _core.DType.f32)


def utilization(model_flops: int, hardware_flops: int, measured_ms: float, peak: float,
                gpus: int = 1) -> Tuple[float, float]:
    """(MFU, HFU) of a step measured at `measured_ms`: model FLOPs (no recomputation) and
    hardware FLOPs (with it) over measured seconds x dense peak FLOP/s x GPUs."""
    denom = measured_ms * 1e-3 * peak * gpus
    return model_flops / denom, hardware_flops / denom


def section(run, report, params: int, options) -> Dict[str, Any]:
    """The `model.training` block of a training step's report."""
    modules = report.get("modules")
    modules = modules.to_dict() if hasattr(modules, "to_dict") else modules
    macs = int(report.totals.macs)
    extra = recompute_macs(modules)
    read, written = optimizer_bytes(run.optimizer, run.dtype)
    out: Dict[str, Any] = {
        "optimizer": run.optimizer,
        "precision": precision(run.dtype, run.optimizer),
        "recompute": run.recompute,
        "trainable_parameters": params,
        "optimizer_bytes_read": params * read,
        "optimizer_bytes_written": params * written,
        "recompute_macs": extra,
        "model_flops": 2 * (macs - extra),  # 1 MAC = 2 FLOP
        "hardware_flops": 2 * macs,
        # Under a parallel plan the report is one rank's graph (plan_analysis).
        "flops_of": "rank" if run.plan is not None and not run.plan.is_plain() else "step",
        "measured_ms": run.measured_ms,
        "devices": {},
    }
    if run.measured_ms is not None:
        for arch in report.devices.keys():
            peak = dense_peak(arch, run.dtype, options.policy)
            row: Dict[str, Any] = {"dense_peak_flops": peak, "gpus": 1, "mfu": None,
                                   "hfu": None}
            if peak:
                row["mfu"], row["hfu"] = utilization(out["model_flops"], out["hardware_flops"],
                                                     run.measured_ms, peak)
            out["devices"][arch] = row
    return out


def text(t: Dict[str, Any]) -> List[str]:
    """The training block's lines in the text report."""
    lines = [f"  training step: optimizer {t['optimizer']} ({t['precision']}), recompute "
             f"{t['recompute']}; the update reads {si(t['optimizer_bytes_read'], 'B')} and "
             f"writes {si(t['optimizer_bytes_written'], 'B')}; model "
             f"{si(t['model_flops'], 'FLOP')}, hardware (with recomputation) "
             f"{si(t['hardware_flops'], 'FLOP')}"
             + (" (one rank's graph)" if t.get("flops_of") == "rank" else "")]
    for arch, d in t["devices"].items():
        if d["mfu"] is None:
            lines.append(f"  {arch}: no dense peak published for the compute dtype: no MFU")
            continue
        lines.append(f"  {arch}: measured {t['measured_ms']:g} ms: MFU {100 * d['mfu']:.1f}% "
                     f"(model FLOP / (measured s x {d['dense_peak_flops'] / 1e12:.1f} TFLOP/s x "
                     f"{d['gpus']} GPU)), HFU {100 * d['hfu']:.1f}%")
    return lines
