"""Quantized weights, activations and caches: a pass over a model's captured graph
(solar.graph.v1 JSON, docs/models.md "Quantization").

Fake tensors cannot run an fp8 or int4 matmul on a CPU, so a model is captured in bf16 and
this pass rewrites the captured graph the way a quantized checkpoint runs it:
- the decoder layers' linear weights are stored at the scheme's format, with their scales
  (and zero points) as weight tensors of their own;
- a weight-only scheme (w4a16, w8a16) dequantizes each weight (a multiply per element, a
  subtract too with a zero point) and multiplies at the activations' dtype;
- a W8A8 or W4A4 scheme quantizes the activation entering the linear (once per tensor that
  several linears share: q/k/v and gate/up run on one quantized input, as serving engines
  fuse them), multiplies at the quantized dtype and applies the scales in an epilogue;
- an fp8 cache stores keys and values at 1 byte (the step's new tokens quantized as they are
  written) and attention reads it at 1 byte, computing in the activations' dtype.
The embedding, the LM head, norms and biases stay at the captured dtype, as common
checkpoints keep them. A layer's mixture-of-experts weights are quantize_experts.py's job; a
config.json's quantization_config is read by quantize_config.py.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, Dict, List, Optional, Tuple

from .. import _core
from ..analysis import ProgramAnalysis, analyze_graph, lower_trace
from ..errors import user_error
from .quant_formats import (KV_DTYPES, RECURRENT, SCHEMES, Scheme, check_names, fmt, nbytes,
                            numel, split_extent)
from .quant_graph import GraphEditor, Groups, static_quantized
from .quant_report import Applied
from .quantize_config import scheme_of_config
from .quantize_experts import expert_linear, expert_weight, gather_experts
from .registry import resolve
from .shard import remove_dead_ops

# --- the graph pass ------------------------------------------------------------------------

# A decoder layer's tensor: a module numbered in a list of layers (model.layers.3.mlp...).
_LAYER = re.compile(r"\.\d+\.")
_ABSORBED = re.compile(r"\.kv_b_proj\.weight$")
# Kept at the captured dtype: embeddings, the LM head, a mixture's router (its gate).
_NOT_LINEAR = re.compile(r"(embed|wte|wpe|lm_head|(^|\.)shared\.weight$|\.gate\.weight$|router)")


def _linear_weight(op: Dict[str, Any], tensors) -> Optional[int]:
    """The operand position of a decoder layer's linear weight in `op`, if it is one."""
    if op["kind"] != "einsum" or op.get("combine") != "mul($0,$1)" or op.get("reduce") != "sum" \
            or len(op["inputs"]) != 2:
        return None
    for pos, name in enumerate(op["inputs"]):
        t = tensors[name]
        if t["role"] == "weight" and len(t["shape"]) == 2 and _LAYER.search(name) \
                and not _NOT_LINEAR.search(name):
            return pos
    return None


def _check_coverage(g: Dict[str, Any], linears: Dict[str, List[Dict[str, Any]]],
                    scheme: Scheme) -> Tuple[set, set]:
    """A decoder-layer weight of 2 or more dimensions is a linear's matmul operand (then
    quantized), or stays at the captured dtype as checkpoints keep it: a 2-D table a lookup
    reads (T5's relative attention bias), a parameter cast or used elementwise (Mamba's
    A_log), a convolution's kernel. A read that makes it some other linear's weight (experts
    gathered by index, a 2-D weight reshaped or sliced for a contraction, a contraction that
    is not a plain linear) is refused, never left at bf16 under a quantized scheme's name."""
    weights = [t for t in g["tensors"] if t["role"] == "weight" and len(t["shape"]) >= 2
               and _LAYER.search(t["name"]) and not _NOT_LINEAR.search(t["name"])]
    users: Dict[str, List[Dict[str, Any]]] = {}
    for op in g["ops"]:
        for name in op["inputs"]:
            users.setdefault(name, []).append(op)

    experts, absorbed = set(), set()
    for t in weights:
        if expert_weight(t, users.get(t["name"], []), users):
            experts.add(t["name"])
            continue
        for op in users.get(t["name"], []):
            if op in linears.get(t["name"], []):
                continue
            move = op.get("move") if op["kind"] == "move" else None
            contraction = op["kind"] == "einsum" and op.get("reduce") == "sum" and \
                op.get("combine") == "mul($0,$1)"
            if len(t["shape"]) == 2 and _ABSORBED.search(t["name"]) and move == "view":
                # MLA's absorbed decode reads kv_b_proj per head: serving engines dequantize
                # it to the activations' dtype when the checkpoint loads (vLLM's MLA
                # W_UK/W_UV), so it stays bf16
                absorbed.add(t["name"])
                continue
            if len(t["shape"]) == 2:
                refused = contraction or move in ("view", "permute", "slice")
            else:  # experts gathered by the tokens routed to them
                refused = move == "gather"
            if not refused:  # a table looked up, a cast, elementwise work, a convolution
                continue
            what = op.get("origin", {}).get("op") or op.get("move") or op["kind"]
            raise user_error(f"quantization: {t['name']} ({len(t['shape'])} dims) is read "
                             f"by {what}, not by a linear layer's matmul: quantizing it is "
                             "not modelled", "unsupported")
    return experts, absorbed


def quantize_graph(g: Dict[str, Any], scheme: Optional[Scheme], kv_dtype: Optional[str]
                   ) -> Tuple[Dict[str, Any], Groups]:
    """The graph (dead ops already removed) with `scheme` applied to its decoder linears and
    its attention caches stored at `kv_dtype` (None: unchanged). Returns (graph, groups)."""
    gr = GraphEditor(g)
    groups = Groups()
    tensors = gr.tensors
    producer = {o: op for op in g["ops"] for o in op["outputs"]}
    linears: Dict[str, List[Dict[str, Any]]] = {}
    for op in g["ops"]:
        pos = _linear_weight(op, tensors)
        if pos is not None and scheme is not None:
            linears.setdefault(op["inputs"][pos], []).append(op)
    experts, groups.absorbed = _check_coverage(g, linears, scheme) if scheme is not None \
        else (set(), set())
    expert_done: Dict[str, Any] = {}
    weight_done: Dict[str, Dict[str, str]] = {}
    act_done: Dict[Tuple[str, str], str] = {}
    kv_inputs = _kv_inputs(g, kv_dtype)
    kv_f8 = set()
    for op in g["ops"]:
        origin = op.get("origin")
        pos = _linear_weight(op, tensors) if scheme is not None else None
        if pos is not None:
            _linear(gr, op, pos, scheme, weight_done, act_done, producer, groups, origin)
            continue
        if experts:

            if op["kind"] == "move" and op.get("move") == "gather" and \
                    op["inputs"][0] in experts:
                gather_experts(gr, op, scheme, groups, expert_done)
                continue
            if op["kind"] == "einsum" and expert_linear(gr, op, scheme, groups, expert_done):
                continue
        if kv_inputs:
            _kv_op(gr, op, kv_inputs, kv_f8, kv_dtype, groups, origin)
        gr.ops.append(op)
    g["ops"] = gr.ops
    return g, groups


# --- decoder linears -------------------------------------------------------------------------

def _weight(gr: GraphEditor, name: str, scheme: Scheme, k_dim: int, groups: Groups,
            done: Dict[str, Dict[str, str]]) -> Dict[str, str]:
    """The weight stored at the scheme's dtype, its scale (zero point, tensor scale) tensors
    added: {"w", "scale", "zero"?, "tensor_scale"?}."""
    if name in done:
        return done[name]
    t = gr.tensors[name]
    shape = list(t["shape"])
    groups.weights.append(name)
    groups.weight_elements += numel(shape)
    groups.weight_bytes_before += nbytes(shape, t["dtype"])
    t["dtype"] = scheme.weight
    groups.weight_bytes += nbytes(shape, scheme.weight)
    kind = scheme.weight_group[0]
    if kind == "channel":
        sshape = [shape[1 - k_dim]]
    elif kind == "group":
        sshape = list(shape)
        sshape[k_dim] = split_extent(shape[k_dim], scheme.weight_group[1], f"{name}'s input dim")
    else:  # block B x B, partial blocks at the edges have their own scale
        b = scheme.weight_group[1]
        sshape = [-(-s // b) for s in shape]
    out = {"w": name, "scale": gr.tensor(f"{name}.scale", sshape, scheme.weight_scale, "weight")}
    groups.scale_bytes += nbytes(sshape, scheme.weight_scale)
    if scheme.zero_point:
        out["zero"] = gr.tensor(f"{name}.zero", sshape, scheme.weight, "weight")
        groups.zero_bytes += nbytes(sshape, scheme.weight)
    if scheme.tensor_scale:
        out["tensor_scale"] = gr.tensor(f"{name}.tensor_scale", [], "f32", "weight")
        groups.scale_bytes += 4
    done[name] = out
    return out


def _root(name: str, producer, tensors) -> str:
    """The tensor `name` is a view of (through views that keep the last dimension)."""
    last = tensors[name]["shape"][-1] if tensors[name]["shape"] else None
    while True:
        op = producer.get(name)
        if op is None or op["kind"] != "move" or op.get("move") != "view" \
                or len(op["inputs"]) != 1:
            return name
        src = op["inputs"][0]
        shape = tensors[src]["shape"]
        if not shape or shape[-1] != last or tensors[src]["dtype"] != tensors[name]["dtype"]:
            return name
        name = src


def _linear(gr: GraphEditor, op, pos: int, scheme: Scheme, weight_done, act_done, producer,
            groups: Groups, origin) -> None:
    idx = {i["name"]: i["extent"] for i in op["indices"]}
    wsub = op["operands"][pos]["subscript"]
    asub = op["operands"][1 - pos]["subscript"]
    reduced = [i for i in idx if i not in op["output"]]
    if len(reduced) != 1 or any(s not in idx for s in wsub + asub) or wsub[0] == wsub[1] \
            or asub[-1] != reduced[0] or reduced[0] not in wsub:
        raise user_error(f"quantization: the linear {op['name']} is not a plain "
                         "[tokens, in] x weight contraction: not modelled", "unsupported")
    k = reduced[0]
    k_dim = wsub.index(k)
    n = wsub[1 - k_dim]
    w = _weight(gr, op["inputs"][pos], scheme, k_dim, groups, weight_done)
    wshape = gr.tensors[w["w"]]["shape"]
    base = op["outputs"][0]
    if scheme.act is None:
        op["inputs"][pos] = _dequantized(gr, w, scheme, k_dim, wshape, origin, weight_done)
        gr.ops.append(op)
        return
    act = op["inputs"][1 - pos]
    xq, xs = _quantized_act(gr, act, scheme, idx[k], act_done, producer, groups, origin)
    op["inputs"][1 - pos] = xq
    out = op["outputs"][0]
    acc = gr.tensor(f"{base}.acc", gr.tensors[out]["shape"], gr.tensors[out]["dtype"])
    op["outputs"] = [acc]
    op["name"] = acc
    gr.ops.append(op)
    rows = [i for i in op["output"] if i != n]
    ext = {i: idx[i] for i in op["output"]}
    if scheme.mma_scales:
        # the block-scaled MMA reads both operands' block scales and applies them itself
        # one f32 factor per linear (NVFP4: the product of the weight's and the activation's
        # tensor scales, computed once when the checkpoint is loaded; MXFP4: none, read as 1)
        alpha = w.get("tensor_scale") or gr.tensor(f"{base}.alpha", [], "f32", "weight")
        if "tensor_scale" not in w:
            groups.scale_bytes += 4
        scales = [w["scale"], xs, alpha]
        read = sum(nbytes(gr.tensors[s]["shape"], gr.tensors[s]["dtype"]) for s in scales) + 4
        factor = gr.tensor(f"{base}.mma_scales", [], "f32")
        gr.op(origin, kind="opaque", function="block_scaled_mma_scales", inputs=scales,
              outputs=[factor], vector_flops=0, special_ops=0, bytes=read,
              assumption="the tensor core's block-scaled MMA reads both operands' block "
                         "scales and applies them inside the MMA: no vector work")
        gr.scaled(out, acc, [(factor, [])], op["output"], ext, origin)
        return
    kind = scheme.weight_group[0]
    if kind == "channel":
        # static per-tensor (fp8) or dynamic per-token (int8) activation scale, per-channel
        # weight scale: acc * x_scale * w_scale[n]
        a_sub = [] if scheme.act_group == ("tensor",) else rows
        if a_sub:
            xs = gr.view(xs, [idx[i] for i in rows], origin)
        gr.scaled(out, acc, [(xs, a_sub), (w["scale"], [n])], op["output"], ext, origin)
        return
    # 128 x 128 weight blocks, 1 x 128 activation groups: each 128-long slice of the sum is
    # scaled by its two scales and accumulated (DeepGEMM's promotion on the CUDA cores): a
    # multiply by each scale and an add per (output element, slice)
    b = scheme.weight_group[1]
    if op["output"][-1] != n:
        raise user_error(f"quantization: the linear {op['name']} writes its output channels "
                         "first: block scales not modelled", "unsupported")
    nb = -(-idx[n] // b)  # a partial last block has a scale of its own
    g = idx[k] // b
    m = numel([idx[i] for i in rows])
    xs2 = gr.view(xs, [m, g], origin)
    out_idx = {"m": m, "nb": nb, "nr": b, "g": g}
    ssub = ["nb", "g"] if k_dim == 1 else ["g", "nb"]
    dtype = gr.tensors[out]["dtype"]
    if idx[n] % b == 0:
        acc3 = gr.view(acc, [m, nb, b], origin)
        y = gr.einsum(f"{base}.scaled", [acc3, xs2, w["scale"]],
                      [["m", "nb", "nr"], ["m", "g"], ssub], ["m", "nb", "nr"], out_idx,
                      "mul(mul($0,$1),$2)", dtype, reduce="sum", origin=origin)
        gr.op(origin, kind="move", move="view", inputs=[y], outputs=[out])
        return
    # N not a multiple of the block (DeepSeek's kv_a_proj_with_mqa: 576 = 4.5 x 128): the
    # output channels past N are masked out (no work), then sliced off
    acc2 = gr.view(acc, [m, idx[n]], origin)
    y = gr.tensor(f"{base}.scaled", [m, nb, b], dtype)
    gr.op(origin, kind="einsum", inputs=[acc2, xs2, w["scale"]], outputs=[y],
          indices=[{"name": i, "extent": e} for i, e in out_idx.items()],
          operands=[{"subscript": ["m", f"nb*{b}+nr"], "pad": 0}, {"subscript": ["m", "g"]},
                    {"subscript": ssub}],
          output=["m", "nb", "nr"], combine="mul(mul($0,$1),$2)", reduce="sum",
          mask=[f"-nb*{b}-nr+{idx[n] - 1} >= 0"])
    flat = gr.view(y, [m, nb * b], origin)
    cut = gr.tensor(f"{base}.cut", [m, idx[n]], dtype)
    gr.op(origin, kind="move", move="slice", inputs=[flat], outputs=[cut],
          attrs={"starts": [0, 0], "ends": [m, idx[n]], "steps": [1, 1]})
    gr.op(origin, kind="move", move="view", inputs=[cut], outputs=[out])


def _dequantized(gr: GraphEditor, w, scheme: Scheme, k_dim: int, wshape, origin, done) -> str:
    """The weight at the activations' dtype: (w - zero) * scale per group, one multiply
    (and a subtract with a zero point) per element, computed once per weight."""
    if "dequantized" in w:
        return w["dequantized"]
    name = w["w"]
    dtype = gr.tensors[w["scale"]]["dtype"]
    if scheme.weight_group[0] == "channel":
        shape3, gdim = list(wshape), None
    else:
        gsize = scheme.weight_group[1]
        shape3 = list(wshape[:k_dim]) + [wshape[k_dim] // gsize, gsize] + list(wshape[k_dim + 1:])
        gdim = k_dim
    src = gr.view(name, shape3, origin)
    names = [f"d{i}" for i in range(len(shape3))]
    ext = dict(zip(names, shape3))
    if gdim is None:
        ssub = [names[1 - k_dim]]
    else:
        ssub = [nm for i, nm in enumerate(names) if i != gdim + 1]
    inputs, subs = [src, w["scale"]], [names, ssub]
    combine = "mul($0,$1)"
    if "zero" in w:
        inputs.append(w["zero"])
        subs.append(ssub)
        combine = "mul(sub($0,$2),$1)"
    d3 = gr.einsum(f"{name}.dequantized", inputs, subs, names, ext, combine, dtype,
                   origin=origin)
    w["dequantized"] = gr.view(d3, wshape, origin)
    return w["dequantized"]


def _quantized_act(gr: GraphEditor, act: str, scheme: Scheme, k: int, done, producer,
                   groups: Groups, origin) -> Tuple[str, str]:
    """(the activation at the scheme's dtype, in the operand's shape; its scale tensor).
    Quantized once per tensor several linears read (q/k/v, gate/up)."""
    root = _root(act, producer, gr.tensors)
    key = (root, scheme.name)
    if key not in done:
        done[key] = _quantize_root(gr, root, scheme, k, groups, origin)
    xq_root, xs = done[key]
    return gr.view(xq_root, gr.tensors[act]["shape"], origin), xs


def _quantize_root(gr: GraphEditor, root: str, scheme: Scheme, k: int, groups: Groups, origin):
    groups.act_inputs += 1
    shape = list(gr.tensors[root]["shape"])
    names = [f"a{i}" for i in range(len(shape))]
    if scheme.act_group == ("tensor",):
        return static_quantized(gr, groups, root, scheme.act, origin)
    # dynamic: a scale per group of G elements of a token from their absolute maximum (an
    # abs and a max per element), then a divide per element
    size = scheme.act_group[1] or k
    g = split_extent(shape[-1], size, f"the activation {root}")
    shape3 = shape[:-1] + [g, size]
    names3 = names[:-1] + ["g", "r"]
    ext = dict(zip(names3, shape3))
    x3 = gr.view(root, shape3, origin)
    xs = gr.einsum(f"{root}.scale", [x3], [names3], names3[:-1], ext, "abs($0)",
                   scheme.act_scale, reduce="max", origin=origin)
    xq3 = gr.einsum(f"{root}.quantized", [x3, xs], [names3, names3[:-1]], names3, ext,
                    "div($0,$1)", scheme.act, origin=origin)
    return gr.view(xq3, shape, origin), xs


# --- the KV cache ---------------------------------------------------------------------------

def _kv_inputs(g: Dict[str, Any], kv_dtype: Optional[str]) -> Dict[str, str]:
    """The attention caches among the graph's inputs (floating, 4 dimensions: [batch, heads,
    slots, head_dim]) -> their new dtype, for an fp8 cache."""
    target = KV_DTYPES.get(kv_dtype) if kv_dtype else None
    if target is None:
        return {}
    inputs = [t for t in g["tensors"] if t["role"] == "input"]
    # the first input is the step's tokens (or pixels); the state after it is the cache
    caches = {t["name"]: target for t in inputs[1:]
              if t["dtype"] in ("bf16", "f16", "f32") and len(t["shape"]) == 4}
    if not caches:
        raise user_error("--kv-dtype fp8: this model keeps no key/value cache (its state is "
                         "not an attention cache)", "unsupported")
    return caches


# Moves that keep their first input's dtype: the cache's dtype flows through them.
_KEEP = ("view", "slice", "copy", "permute", "gather", "scatter", "concat", "pad")


def _kv_op(gr: GraphEditor, op, caches: Dict[str, str], f8: set, kv_dtype, groups: Groups,
           origin) -> None:
    """Carries the cache's dtype through the moves that view, slice and update it in place;
    the values a step writes into it (a scatter's or concat's other inputs) are quantized as
    they are written: a multiply by the cache's per-tensor scale per element."""
    for name in op["inputs"]:
        if name in caches and name not in f8:
            t = gr.tensors[name]
            t["dtype"] = caches[name]
            f8.add(name)
            groups.kv_tensors += 1
    if op["kind"] != "move" or op.get("move") not in _KEEP or not op["inputs"] \
            or op["inputs"][0] not in f8:
        return
    target = gr.tensors[op["inputs"][0]]["dtype"]
    written = {"scatter": [2], "concat": list(range(1, len(op["inputs"])))}.get(op["move"], [])
    for i in written:
        src = op["inputs"][i]
        if src in f8:
            continue
        scale = gr.tensor(f"{op['inputs'][0]}.kv_scale", [], "f32", "weight")
        groups.kv_scale_bytes += 4
        shape = gr.tensors[src]["shape"]
        names = [f"c{j}" for j in range(len(shape))]
        q = gr.einsum(f"{src}.kv_quantized", [src, scale], [names, []], names,
                      dict(zip(names, shape)), "mul($0,$1)", target, origin=origin)
        op["inputs"][i] = q
        f8.add(q)
    for o in op["outputs"]:
        gr.tensors[o]["dtype"] = target
        f8.add(o)


# --- the model run ---------------------------------------------------------------------------

@dataclasses.dataclass
class Request:
    """What a model run quantizes: the scheme (None: weights and activations as captured),
    where it was chosen, and the cache's dtype (None: the activations')."""

    scheme: Optional[Scheme]
    source: str
    kv_dtype: Optional[str]


def requested(run) -> Optional[Request]:
    """The quantization a model run asks for (--quant overrides the config.json's
    quantization_config), None when none; checked before anything is built."""
    check_names(run.quant, run.kv_dtype)
    spec = resolve(run.ref, run.task)
    scheme, source = None, ""
    if run.quant is not None:
        scheme, source = SCHEMES[run.quant], "--quant"
    elif "quantization_config" in spec.config:
        scheme, how = scheme_of_config(spec.config["quantization_config"],
                                       spec.file or spec.name)
        source = f"{spec.file or spec.name}: quantization_config, {how}"
    kv = run.kv_dtype if KV_DTYPES.get(run.kv_dtype or "") else None
    if run.kv_dtype in ("bf16", "f16") and fmt(run.dtype) != run.kv_dtype:
        raise user_error(f"--kv-dtype {run.kv_dtype}: a cache at a 16-bit dtype is the "
                         f"activations' (--dtype {run.dtype}); fp8 is the other choice",
                         "usage")
    if kv is not None and spec.config.get("model_type") in RECURRENT:
        raise user_error(f"--kv-dtype {kv}: {spec.name} keeps recurrent state, not a "
                         "key/value cache", "unsupported")
    if scheme is None and kv is None:
        return None
    if run.dtype not in ("bf16", "f16", "fp16"):
        raise user_error(f"quantization runs with bf16 or f16 activations, not --dtype "
                         f"{run.dtype}", "usage")
    if run.plan is not None and not run.plan.is_plain():
        raise user_error("quantization (--quant, --kv-dtype, a quantization_config) with a "
                         "parallel plan is not modelled", "unsupported")
    return Request(scheme, source, kv)


def analyze_quantized(trace, spec, options, request: Request):
    """The captured (bf16) trace lowered, quantized and analyzed: a ProgramAnalysis whose
    `quantization` (Applied) the model section reads."""
    graph, notes, trace_ids = lower_trace(trace, spec.source, options.strict)
    g = remove_dead_ops(json.loads(graph.to_json()))
    g, groups = quantize_graph(g, request.scheme, request.kv_dtype)
    g = remove_dead_ops(g)  # the views that fed the linears their bf16 inputs
    quantized = _core.parse_graph_json(json.dumps(g, allow_nan=False))
    result = ProgramAnalysis(analyze_graph(quantized, options), notes, trace, quantized,
                             trace_ids)
    if trace.get("mode"):
        result.report.describe_program(mode=trace["mode"])
    result.quantization = Applied(request, groups, g)
    return result


