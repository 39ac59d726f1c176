"""Quantized mixture-of-experts weights (docs/models.md, "Quantization"): the experts of a
layer are one weight [experts, out, in] (or [experts, in, out]) that each routed (token,
expert) pair gathers by index and multiplies by its token (transformers' "batched_mm"
experts, solar.models.build). Under a W8A8 or W4A4 scheme the experts are stored at the
scheme's format with per-expert scales, gathered with them (a step reads the experts its
tokens are routed to, scales included), and each pair's product runs at the quantized dtype
with the scales applied in an epilogue, as quantize.py does for a plain linear.

Under a weight-only scheme the routed copies are dequantized before their product at the
activations' dtype, the work counted once per expert the pairs reach (min(pairs, experts),
as the gather's bytes are), not once per copy: a grouped kernel dequantizes each expert it
loads for a block of tokens.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .quant_formats import Scheme, nbytes, numel, split_extent
from .quant_graph import GraphEditor, Groups, static_quantized


def expert_weight(t: Dict[str, Any], uses: List[Dict[str, Any]], users) -> bool:
    """Whether weight `t` (3-D) is a layer's experts: every read is a gather along the
    experts' axis whose copies feed only contractions, each reducing the weight's last or
    second-to-last dimension."""
    if len(t["shape"]) != 3 or not uses:
        return False
    for op in uses:
        if op["kind"] != "move" or op.get("move") != "gather" or op["inputs"][0] != t["name"] \
                or (op.get("attrs") or {}).get("axis", 0) != 0 \
                or (op.get("attrs") or {}).get("mode", "take") != "take":
            return False
        for mm in users.get(op["outputs"][0], []):
            if _k_dim(mm, op["outputs"][0]) is None:
                return False
    return True


def _k_dim(op, gathered: str) -> Optional[int]:
    """The dimension (1 or 2) of the gathered experts [pairs, a, b] that `op` reduces, if
    `op` is a plain batched contraction of them (one reduced index, the pairs kept)."""
    if op["kind"] != "einsum" or op.get("combine") != "mul($0,$1)" or \
            op.get("reduce") != "sum" or len(op["inputs"]) != 2 or \
            op["inputs"].count(gathered) != 1:
        return None
    idx = {i["name"] for i in op["indices"]}
    sub = op["operands"][op["inputs"].index(gathered)]["subscript"]
    other = op["operands"][1 - op["inputs"].index(gathered)]["subscript"]
    reduced = [i for i in idx if i not in op["output"]]
    if len(sub) != 3 or any(s not in idx for s in sub + other) or len(set(sub)) != 3 \
            or len(reduced) != 1 or sub[0] not in op["output"] or sub[0] not in other \
            or reduced[0] not in sub[1:] or len(set(other)) != len(other):
        return None
    return sub.index(reduced[0])


def gather_experts(gr: GraphEditor, op, scheme: Scheme, groups: Groups, done: Dict[str, Any]
                   ) -> None:
    """The experts' gather: the weight and its copies at the scheme's dtype, the per-expert
    scales added and gathered by the same index (appended after `op`)."""
    w, index = op["inputs"][0], op["inputs"][1]
    t = gr.tensors[w]
    shape = list(t["shape"])
    if w not in done:
        groups.weights.append(w)
        groups.weight_elements += numel(shape)
        groups.weight_bytes_before += nbytes(shape, t["dtype"])
        t["dtype"] = scheme.weight
        groups.weight_bytes += nbytes(shape, scheme.weight)
        done[w] = {}
    gathered = op["outputs"][0]
    gr.tensors[gathered]["dtype"] = scheme.weight
    gr.ops.append(op)
    done.setdefault("copies", {})[gathered] = (w, index, op)


def _scales(gr: GraphEditor, w: str, index: str, gather_op, scheme: Scheme, k_dim: int,
            groups: Groups, done) -> Dict[str, str]:
    """Per-expert scale tensors of `w` (made once) and their gathered copies."""
    shape = gr.tensors[w]["shape"]
    e, n_dim = shape[0], 3 - k_dim
    entry = done[w]
    if "scale" not in entry:
        kind = scheme.weight_group[0]
        if kind == "channel":
            sshape = [e, shape[n_dim]]
        elif kind == "group":
            sshape = list(shape)
            sshape[k_dim] = split_extent(shape[k_dim], scheme.weight_group[1], f"{w}'s input dim")
        else:
            b = scheme.weight_group[1]
            sshape = [e] + [-(-s // b) for s in shape[1:]]
        entry["scale"] = gr.tensor(f"{w}.scale", sshape, scheme.weight_scale, "weight")
        groups.scale_bytes += nbytes(sshape, scheme.weight_scale)
        if scheme.mma_scales:
            entry["alpha"] = gr.tensor(f"{w}.alpha", [e], "f32", "weight")
            groups.scale_bytes += 4 * e
        if scheme.zero_point:
            entry["zero"] = gr.tensor(f"{w}.zero", sshape, scheme.weight, "weight")
            groups.zero_bytes += nbytes(sshape, scheme.weight)
    out = {}
    for key in ("scale", "zero", "alpha"):
        if key not in entry:
            continue
        src = gr.tensors[entry[key]]
        pairs = gr.tensors[index]["shape"]
        copy = gr.tensor(f"{entry[key]}.routed", list(pairs) + list(src["shape"][1:]),
                         src["dtype"])
        gr.op(gather_op.get("origin"), kind="move", move="gather",
              inputs=[entry[key], index], outputs=[copy], attrs=dict(gather_op.get("attrs")
                                                                     or {"axis": 0}))
        out[key] = copy
    return out


def expert_linear(gr: GraphEditor, op, scheme: Scheme, groups: Groups, done) -> bool:
    """A pair's product with its gathered expert, quantized; False when `op` reads no
    gathered experts."""
    copies = done.get("copies", {})
    gathered = next((i for i in op["inputs"] if i in copies), None)
    if gathered is None:
        return False
    w, index, gather_op = copies[gathered]
    k_dim = _k_dim(op, gathered)
    pos = op["inputs"].index(gathered)
    wsub = op["operands"][pos]["subscript"]
    xsub = op["operands"][1 - pos]["subscript"]
    idx = {i["name"]: i["extent"] for i in op["indices"]}
    k, n = wsub[k_dim], wsub[3 - k_dim]
    s = _scales(gr, w, index, gather_op, scheme, k_dim, groups, done)
    if scheme.act is None:
        experts = gr.tensors[w]["shape"][0]
        op["inputs"][pos] = _dequantized_experts(gr, gathered, s, scheme, experts,
                                                 op.get("origin"))
        gr.ops.append(op)
        return True
    x = op["inputs"][1 - pos]
    xq, xs, xs_sub = _quantized_operand(gr, x, xsub, k, idx, scheme, groups, op.get("origin"))
    op["inputs"][1 - pos] = xq
    out = op["outputs"][0]
    acc = gr.tensor(f"{out}.acc", gr.tensors[out]["shape"], gr.tensors[out]["dtype"])
    op["outputs"], op["name"] = [acc], acc
    gr.ops.append(op)
    origin = op.get("origin")
    osub = op["output"]
    ext = {i: idx[i] for i in osub}
    if scheme.mma_scales:
        read = [s["scale"], xs, s["alpha"]]
        factor = gr.tensor(f"{out}.mma_scales", [], "f32")
        gr.op(origin, kind="opaque", function="block_scaled_mma_scales", inputs=read,
              outputs=[factor], vector_flops=0, special_ops=0,
              bytes=sum(nbytes(gr.tensors[r]["shape"], gr.tensors[r]["dtype"]) for r in read)
              + 4, assumption="the tensor core's block-scaled MMA reads both operands' "
                              "block scales and applies them inside the MMA: no vector work")
        gr.scaled(out, acc, [(factor, [])], osub, ext, origin)
        return True
    kind = scheme.weight_group[0]
    if kind == "channel":
        gr.scaled(out, acc, [(xs, xs_sub), (s["scale"], [wsub[0], n])], osub, ext, origin)
        return True
    # 128 x 128 expert blocks, 1 x 128 activation groups: each 128-long slice of the sum
    # scaled by its two scales and accumulated
    b = scheme.weight_group[1]
    nb = split_extent(idx[n], b, f"{op['name']}'s output dim")
    shape4, sub4, ext4 = [], [], {}
    for i in osub:
        if i == n:
            shape4 += [nb, b]
            sub4 += ["nb", "nr"]
            ext4.update(nb=nb, nr=b)
        else:
            shape4.append(idx[i])
            sub4.append(i)
            ext4[i] = idx[i]
    acc4 = gr.view(acc, shape4, origin)
    ext4["g"] = idx[k] // b
    ssub = [wsub[0], "nb", "g"] if k_dim == 2 else [wsub[0], "g", "nb"]
    xsub_g = ["g" if i == k else i for i in xs_sub]
    y = gr.einsum(f"{out}.scaled", [acc4, xs, s["scale"]], [sub4, xsub_g, ssub], sub4, ext4,
                  "mul(mul($0,$1),$2)", gr.tensors[out]["dtype"], reduce="sum",
                  origin=origin)
    gr.op(origin, kind="move", move="view", inputs=[y], outputs=[out])
    return True


def _dequantized_experts(gr: GraphEditor, gathered: str, s: Dict[str, str], scheme: Scheme,
                         experts: int, origin) -> str:
    """The routed copies of the experts at the activations' dtype. A grouped kernel
    dequantizes each expert it loads, not each routed copy: the work is that of the distinct
    experts the pairs can reach, min(pairs, experts), as the gather's bytes are (a multiply
    per element, and a subtract with zero points), stated in an opaque op."""
    t = gr.tensors[gathered]
    pairs = t["shape"][0]
    dtype = gr.tensors[s["scale"]]["dtype"]
    reached = min(pairs, experts)
    per_copy = numel(t["shape"][1:])
    inputs = [gathered, s["scale"]] + ([s["zero"]] if "zero" in s else [])
    read = sum(nbytes(gr.tensors[i]["shape"], gr.tensors[i]["dtype"]) for i in inputs)
    out = gr.tensor(f"{gathered}.dequantized", t["shape"], dtype)
    ops = 2 if "zero" in s else 1
    gr.op(origin, kind="opaque", function="dequantize_experts", inputs=inputs, outputs=[out],
          vector_flops=ops * reached * per_copy, special_ops=0,
          bytes=read * reached // pairs + nbytes(t["shape"], dtype),
          assumption=f"each of the min(pairs, experts) = {reached} experts the routed pairs "
                     f"reach dequantized once ({ops} op(s) per element), as a grouped kernel "
                     "does per expert it loads")
    return out


def _quantized_operand(gr: GraphEditor, x: str, xsub, k: str, idx, scheme: Scheme,
                       groups: Groups, origin) -> Tuple[str, str, List[str]]:
    """(x at the scheme's dtype, its scale, the scale's subscript in the contraction's
    indices): each routed copy of a token quantized (k copies per token: a vector term far
    below the product's)."""
    groups.act_inputs += 1
    shape = list(gr.tensors[x]["shape"])
    names = [f"a{i}" for i in range(len(shape))]
    if scheme.act_group == ("tensor",):
        return (*static_quantized(gr, groups, x, scheme.act, origin), [])
    kd = xsub.index(k)
    size = scheme.act_group[1] or shape[kd]
    g = split_extent(shape[kd], size, f"the activation {x}")
    shape5 = shape[:kd] + [g, size] + shape[kd + 1:]
    names5 = names[:kd] + ["g", "r"] + names[kd + 1:]
    ext = dict(zip(names5, shape5))
    x5 = gr.view(x, shape5, origin)
    kept = [nm for nm in names5 if nm != "r"]
    xs = gr.einsum(f"{x}.scale", [x5], [names5], kept, ext, "abs($0)", scheme.act_scale,
                   reduce="max", origin=origin)
    xq5 = gr.einsum(f"{x}.quantized", [x5, xs], [names5, kept], names5, ext, "div($0,$1)",
                    scheme.act, origin=origin)
    # the scale's dims in the contraction's indices: x's, with k's group count in its place
    if g == 1:
        xs = gr.view(xs, [s for i, s in enumerate(shape) if i != kd], origin)
        sub = [i for i in xsub if i != k]
    else:
        sub = list(xsub)
    return gr.view(xq5, shape, origin), xs, sub
