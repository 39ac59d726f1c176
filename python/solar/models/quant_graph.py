"""The quantization pass's view of a graph: the solar.graph.v1 JSON with helpers that add
tensors and ops, and the tally of what the pass changed (the report's model.quantization)."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List

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


class GraphEditor:
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

    def scaled(self, out: str, acc: str, scales, out_sub, ext: Dict[str, int], origin) -> None:
        """out[...] = acc[...] times each (scale, its subscript): a quantized contraction's
        epilogue, a multiply per output element and scale."""
        combine = "$0"
        for i in range(len(scales)):
            combine = f"mul({combine},${i + 1})"
        self.op(origin, kind="einsum", inputs=[acc] + [s for s, _ in scales], outputs=[out],
                indices=[{"name": i, "extent": ext[i]} for i in out_sub],
                operands=[{"subscript": list(out_sub)}] + [{"subscript": list(sub)}
                                                           for _, sub in scales],
                output=list(out_sub), combine=combine, reduce="none")


def static_quantized(gr: GraphEditor, groups: Groups, x: str, dtype: str, origin):
    """(x at `dtype`, its scale): a static per-tensor scale calibrated offline, one multiply
    per element."""
    shape = list(gr.tensors[x]["shape"])
    names = [f"a{i}" for i in range(len(shape))]
    xs = gr.tensor(f"{x}.input_scale", [], "f32", "weight")
    groups.act_scale_bytes += 4
    xq = gr.einsum(f"{x}.quantized", [x, xs], [names, []], names, dict(zip(names, shape)),
                   "mul($0,$1)", dtype, origin=origin)
    return xq, xs
