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
import re
from typing import Any, Dict, List, Optional, Tuple

from ..errors import user_error

BITS = {"f64": 64, "f32": 32, "tf32": 32, "bf16": 16, "f16": 16, "f8e4m3": 8, "f8e5m2": 8,
        "f6": 6, "f4": 4, "i64": 64, "i32": 32, "i16": 16, "i8": 8, "i4": 4, "u8": 8, "bool": 8}


@dataclasses.dataclass(frozen=True)
class Scheme:
    """One quantization scheme. Weights: `weight` dtype with one `weight_scale` value per
    `weight_group` (("channel",): per output channel; ("group", G): per G input elements of
    an output channel; ("block", B): per B x B block), a zero point per scale when
    `zero_point`; a second, per-tensor f32 scale with `tensor_scale`. Activations (None:
    weight-only): `act` dtype, `act_group` ("tensor",): one static scale; ("group", G): a
    dynamic scale per G elements of a token, computed from their absolute maximum (G = 0:
    per token), at `act_scale` dtype. `mma_scales`: the tensor core applies the block
    scales inside its block-scaled MMA (no vector work for them)."""

    name: str
    weight: str
    weight_group: Tuple[Any, ...]
    weight_scale: str
    zero_point: bool = False
    tensor_scale: bool = False
    act: Optional[str] = None
    act_group: Tuple[Any, ...] = ()
    act_scale: str = "f32"
    mma_scales: bool = False
    description: str = ""


SCHEMES: Dict[str, Scheme] = {s.name: s for s in (
    Scheme("fp8", "f8e4m3", ("channel",), "f32", act="f8e4m3", act_group=("tensor",),
           description="W8A8 FP8 (e4m3): per-output-channel weight scales, a static "
                       "per-tensor activation scale"),
    Scheme("fp8-block", "f8e4m3", ("block", 128), "f32", act="f8e4m3",
           act_group=("group", 128),
           description="W8A8 FP8 (e4m3) with 128x128 weight block scales and dynamic 1x128 "
                       "activation scales (DeepSeek-V3)"),
    Scheme("int8", "i8", ("channel",), "f32", act="i8", act_group=("group", 0),
           description="W8A8 INT8: per-output-channel weight scales, dynamic per-token "
                       "activation scales"),
    Scheme("w4a16", "i4", ("group", 128), "bf16", zero_point=True,
           description="weight-only INT4, group 128, a scale and a 4-bit zero point per "
                       "group (AWQ/GPTQ)"),
    Scheme("w8a16", "i8", ("group", 128), "bf16",
           description="weight-only INT8, group 128, symmetric (a scale per group)"),
    Scheme("nvfp4", "f4", ("group", 16), "f8e4m3", tensor_scale=True, act="f4",
           act_group=("group", 16), act_scale="f8e4m3", mma_scales=True,
           description="NVFP4: e2m1 values, an e4m3 scale per 16 elements and one f32 "
                       "tensor scale, weights and activations"),
    Scheme("mxfp4", "f4", ("group", 32), "u8", act="f4", act_group=("group", 32),
           act_scale="u8", mma_scales=True,
           description="MXFP4 (OCP MX): e2m1 values, an e8m0 scale per 32 elements, weights "
                       "and activations"),
)}
KV_DTYPES = {"fp8": "f8e4m3", "f8e4m3": "f8e4m3", "bf16": None, "f16": None, "auto": None}


def check_names(quant: Optional[str], kv_dtype: Optional[str]) -> None:
    """Refuses an unknown --quant or --kv-dtype (torch-free: ModelRun.check calls it)."""
    if quant is not None and quant not in SCHEMES:
        raise user_error(f"--quant {quant!r}: expected one of {', '.join(SCHEMES)}", "usage")
    if kv_dtype is not None and kv_dtype not in KV_DTYPES:
        raise user_error(f"--kv-dtype {kv_dtype!r}: expected fp8, bf16 or f16 (bf16 and f16: "
                         "the activations' dtype)", "usage")


RECURRENT = ("mamba", "mamba2", "rwkv", "falcon_mamba")  # state that is no attention cache


# --- the graph pass ------------------------------------------------------------------------

# A decoder layer's tensor: a module numbered in a list of layers (model.layers.3.mlp...).
_LAYER = re.compile(r"\.\d+\.")
_ABSORBED = re.compile(r"\.kv_b_proj\.weight$")
# Kept at the captured dtype: embeddings, the LM head, a mixture's router (its gate).
_NOT_LINEAR = re.compile(r"(embed|wte|wpe|lm_head|(^|\.)shared\.weight$|\.gate\.weight$|router)")


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def nbytes(shape, dtype: str) -> int:
    """Bytes of a dense tensor; sub-byte types packed (docs/cost.md, "Bytes")."""
    return -(-_numel(shape) * BITS[dtype] // 8)


@dataclasses.dataclass
class Groups:
    """What the pass changed, for the report's `model.quantization` (bytes and counts)."""

    weights: List[str] = dataclasses.field(default_factory=list)
    weight_elements: int = 0
    weight_bytes_before: int = 0  # the quantized weights at the captured dtype
    weight_bytes: int = 0
    scale_bytes: int = 0
    zero_bytes: int = 0
    act_inputs: int = 0  # distinct activation tensors quantized
    act_scale_bytes: int = 0  # their static scales
    kv_tensors: int = 0
    kv_scale_bytes: int = 0
    absorbed: set = dataclasses.field(default_factory=set)  # MLA kv_b_proj kept bf16


class _Graph:
    """The graph JSON with helpers to add tensors and ops (names made unique)."""

    def __init__(self, g: Dict[str, Any]):
        self.g = g
        self.tensors = {t["name"]: t for t in g["tensors"]}
        self.ops: List[Dict[str, Any]] = []

    def tensor(self, name: str, shape, dtype: str, role: str = "intermediate") -> str:
        base, i = name, 0
        while name in self.tensors:
            i += 1
            name = f"{base}.{i}"
        t = {"name": name, "shape": list(shape), "dtype": dtype, "role": role}
        self.g["tensors"].append(t)
        self.tensors[name] = t
        return name

    def op(self, origin, **fields) -> None:
        if origin:
            fields["origin"] = origin
        self.ops.append(fields)

    def view(self, src: str, shape, origin) -> str:
        t = self.tensors[src]
        if list(t["shape"]) == list(shape):
            return src
        out = self.tensor(f"{src}.v", shape, t["dtype"])
        self.op(origin, kind="move", move="view", inputs=[src], outputs=[out])
        return out

    def einsum(self, name: str, inputs, subs, out_sub, extents: Dict[str, int], combine: str,
               dtype: str, reduce: str = "none", origin=None) -> str:
        shape = [extents[i] for i in out_sub]
        out = self.tensor(name, shape, dtype)
        self.op(origin, kind="einsum", inputs=list(inputs), outputs=[out],
                indices=[{"name": i, "extent": e} for i, e in extents.items()],
                operands=[{"subscript": list(s)} for s in subs], output=list(out_sub),
                combine=combine, reduce=reduce)
        return out


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
    from .quantize_experts import expert_weight

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
    gr = _Graph(g)
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
            from .quantize_experts import expert_linear, gather_experts

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

def _split(extent: int, group: int, what: str) -> int:
    if extent % group:
        raise user_error(f"quantization: {what} has {extent} elements, not a multiple of the "
                         f"group of {group}", "unsupported")
    return extent // group


def _weight(gr: _Graph, name: str, scheme: Scheme, k_dim: int, groups: Groups,
            done: Dict[str, Dict[str, str]]) -> Dict[str, str]:
    """The weight stored at the scheme's dtype, its scale (zero point, tensor scale) tensors
    added: {"w", "scale", "zero"?, "tensor_scale"?}."""
    if name in done:
        return done[name]
    t = gr.tensors[name]
    shape = list(t["shape"])
    groups.weights.append(name)
    groups.weight_elements += _numel(shape)
    groups.weight_bytes_before += nbytes(shape, t["dtype"])
    t["dtype"] = scheme.weight
    groups.weight_bytes += nbytes(shape, scheme.weight)
    kind = scheme.weight_group[0]
    if kind == "channel":
        sshape = [shape[1 - k_dim]]
    elif kind == "group":
        sshape = list(shape)
        sshape[k_dim] = _split(shape[k_dim], scheme.weight_group[1], f"{name}'s input dim")
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


def _linear(gr: _Graph, op, pos: int, scheme: Scheme, weight_done, act_done, producer,
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
        _epilogue(gr, out, acc, [(factor, [])], op["output"], ext, origin)
        return
    kind = scheme.weight_group[0]
    if kind == "channel":
        # static per-tensor (fp8) or dynamic per-token (int8) activation scale, per-channel
        # weight scale: acc * x_scale * w_scale[n]
        a_sub = [] if scheme.act_group == ("tensor",) else rows
        if a_sub:
            xs = gr.view(xs, [idx[i] for i in rows], origin)
        _epilogue(gr, out, acc, [(xs, a_sub), (w["scale"], [n])], op["output"], ext, origin)
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
    m = _numel([idx[i] for i in rows])
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


def _epilogue(gr: _Graph, out: str, acc: str, scales, out_sub, ext, origin) -> None:
    """out[...] = acc[...] times each scale (a multiply per output element and scale)."""
    combine = "$0"
    for i in range(len(scales)):
        combine = f"mul({combine},${i + 1})"
    gr.op(origin, kind="einsum", inputs=[acc] + [s for s, _ in scales], outputs=[out],
          indices=[{"name": i, "extent": ext[i]} for i in out_sub],
          operands=[{"subscript": list(out_sub)}] + [{"subscript": list(sub)}
                                                     for _, sub in scales],
          output=list(out_sub), combine=combine, reduce="none")


def _dequantized(gr: _Graph, w, scheme: Scheme, k_dim: int, wshape, origin, done) -> str:
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


def _quantized_act(gr: _Graph, act: str, scheme: Scheme, k: int, done, producer, groups: Groups,
                   origin) -> Tuple[str, str]:
    """(the activation at the scheme's dtype, in the operand's shape; its scale tensor).
    Quantized once per tensor several linears read (q/k/v, gate/up)."""
    root = _root(act, producer, gr.tensors)
    key = (root, scheme.name)
    if key not in done:
        done[key] = _quantize_root(gr, root, scheme, k, groups, origin)
    xq_root, xs = done[key]
    return gr.view(xq_root, gr.tensors[act]["shape"], origin), xs


def _quantize_root(gr: _Graph, root: str, scheme: Scheme, k: int, groups: Groups, origin):
    groups.act_inputs += 1
    shape = list(gr.tensors[root]["shape"])
    names = [f"a{i}" for i in range(len(shape))]
    if scheme.act_group == ("tensor",):
        # a static scale calibrated offline: one multiply per element
        xs = gr.tensor(f"{root}.input_scale", [], "f32", "weight")
        groups.act_scale_bytes += 4
        xq = gr.einsum(f"{root}.quantized", [root, xs], [names, []], names,
                       dict(zip(names, shape)), "mul($0,$1)", scheme.act, origin=origin)
        return xq, xs
    # dynamic: a scale per group of G elements of a token from their absolute maximum (an
    # abs and a max per element), then a divide per element
    size = scheme.act_group[1] or k
    g = _split(shape[-1], size, f"the activation {root}")
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


def _kv_op(gr: _Graph, op, caches: Dict[str, str], f8: set, kv_dtype, groups: Groups,
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
    from .registry import resolve

    check_names(run.quant, run.kv_dtype)
    spec = resolve(run.ref, run.task)
    scheme, source = None, ""
    if run.quant is not None:
        scheme, source = SCHEMES[run.quant], "--quant"
    elif "quantization_config" in spec.config:
        from .quantize_config import scheme_of_config

        scheme, how = scheme_of_config(spec.config["quantization_config"],
                                       spec.file or spec.name)
        source = f"{spec.file or spec.name}: quantization_config, {how}"
    kv = run.kv_dtype if KV_DTYPES.get(run.kv_dtype or "") else None
    if run.kv_dtype in ("bf16", "f16") and _fmt(run.dtype) != run.kv_dtype:
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
    import json

    from ..analysis import ProgramAnalysis, analyze_graph, lower_trace
    from .shard import remove_dead_ops

    graph, notes, trace_ids = lower_trace(trace, spec.source, options.strict)
    g = remove_dead_ops(json.loads(graph.to_json()))
    g, groups = quantize_graph(g, request.scheme, request.kv_dtype)
    g = remove_dead_ops(g)  # the views that fed the linears their bf16 inputs
    from .. import _core

    quantized = _core.parse_graph_json(json.dumps(g, allow_nan=False))
    result = ProgramAnalysis(analyze_graph(quantized, options), notes, trace, quantized,
                             trace_ids)
    if trace.get("mode"):
        result.report.describe_program(mode=trace["mode"])
    result.quantization = Applied(request, groups, g)
    return result


class Applied:
    """A quantization applied to a model's graph: annotates the model section."""

    def __init__(self, request: Request, groups: Groups, g: Dict[str, Any]):
        self.request, self.groups = request, groups
        self.tensors = {t["name"]: t for t in g["tensors"]}

    def _bf16_group(self, pattern: str) -> Optional[Dict[str, Any]]:
        found = [t for n, t in self.tensors.items() if t["role"] == "weight"
                 and re.search(pattern, n) and len(t["shape"]) == 2]
        if not found:
            return None
        dtype = found[0]["dtype"]
        return {"format": dtype, "bits": BITS[dtype], "scales": None, "tensors": len(found),
                "bytes": sum(nbytes(t["shape"], t["dtype"]) for t in found)}

    def annotate(self, section: Dict[str, Any]) -> None:
        """weight_bytes and kv_cache_bytes at the stored formats; `quantization` listing each
        tensor group with its format, bits, scale granularity and bytes."""
        r, gs = self.request, self.groups
        s = r.scheme
        out: List[Dict[str, Any]] = []
        if s is not None:
            added = gs.weight_bytes + gs.scale_bytes + gs.zero_bytes + gs.act_scale_bytes - \
                gs.weight_bytes_before
            section["weight_bytes"] += added
            out.append({"group": "decoder linears weights", "format": s.weight,
                        "bits": BITS[s.weight], "scales": _granularity(s.weight_group,
                                                                       s.weight_scale),
                        "zero_points": s.zero_point, "tensor_scale": s.tensor_scale,
                        "tensors": len(gs.weights), "elements": gs.weight_elements,
                        "bytes": gs.weight_bytes, "scale_bytes": gs.scale_bytes,
                        "zero_point_bytes": gs.zero_bytes})
            act = section["dtype"] if s.act is None else s.act
            out.append({"group": "activations into decoder linears", "format": _fmt(act),
                        "bits": BITS[_fmt(act)],
                        "scales": None if s.act is None else
                        _granularity(s.act_group, s.act_scale, activations=True),
                        "tensors": gs.act_inputs, "bytes": None,
                        "scale_bytes": gs.act_scale_bytes})
        if r.kv_dtype is not None:
            before = section["kv_cache_bytes"]
            section["kv_cache_bytes"] = before * BITS[KV_DTYPES[r.kv_dtype]] // \
                BITS[_fmt(section["dtype"])]
            section["state_buffer_bytes"] = section["state_buffer_bytes"] * \
                BITS[KV_DTYPES[r.kv_dtype]] // BITS[_fmt(section["dtype"])]
            section["weight_bytes"] += gs.kv_scale_bytes
            out.append({"group": "kv cache", "format": KV_DTYPES[r.kv_dtype],
                        "bits": BITS[KV_DTYPES[r.kv_dtype]],
                        "scales": "f32 per tensor (static, one per cache tensor)",
                        "tensors": gs.kv_tensors, "bytes": section["kv_cache_bytes"],
                        "scale_bytes": gs.kv_scale_bytes})
        else:
            out.append({"group": "kv cache", "format": _fmt(section["dtype"]),
                        "bits": BITS[_fmt(section["dtype"])], "scales": None,
                        "bytes": section["kv_cache_bytes"]})
        if gs.absorbed:
            kept = [self.tensors[n] for n in sorted(gs.absorbed) if n in self.tensors]
            out.append({"group": "absorbed MLA projections (kv_b_proj, dequantized at load)",
                        "format": kept[0]["dtype"] if kept else None,
                        "bits": BITS[kept[0]["dtype"]] if kept else None, "scales": None,
                        "tensors": len(kept),
                        "bytes": sum(nbytes(t["shape"], t["dtype"]) for t in kept)})
        for group, pattern in (("embedding", r"(embed_tokens|wte|word_embeddings)\.weight$"),
                               ("lm_head", r"lm_head\.weight$")):
            row = self._bf16_group(pattern)
            if row is not None:
                out.append({"group": group, **row})
        section["quantization"] = {
            "scheme": s.name if s is not None else None,
            "description": s.description if s is not None else None,
            "source": r.source or None,
            "kv_dtype": KV_DTYPES[r.kv_dtype] if r.kv_dtype else None,
            "groups": out,
        }


def _fmt(dtype: str) -> str:
    return {"bfloat16": "bf16", "float16": "f16", "fp16": "f16", "float32": "f32"}.get(dtype,
                                                                                     dtype)


def _granularity(group, dtype: str, activations: bool = False) -> str:
    kind = group[0]
    if kind == "channel":
        return f"{dtype} per output channel"
    if kind == "tensor":
        return f"{dtype} per tensor (static)"
    if kind == "block":
        return f"{dtype} per {group[1]}x{group[1]} block"
    if activations:
        return f"{dtype} per token" + (f" per {group[1]} elements" if group[1] else "") + \
            " (dynamic)"
    return f"{dtype} per {group[1]} input elements"


def quantization_text(q: Optional[Dict[str, Any]]) -> str:
    """The text report's line naming the scheme ('' when none)."""
    if not q:
        return ""
    parts = []
    if q["scheme"]:
        parts.append(f"{q['scheme']} ({q['description']})")
    if q["kv_dtype"]:
        parts.append(f"KV cache {q['kv_dtype']}")
    where = f" [{q['source']}]" if q["source"] and q["source"] != "--quant" else ""
    return "  quantization: " + "; ".join(parts) + where
