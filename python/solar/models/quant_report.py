"""A quantization applied to a model: the model section's `quantization` groups and the
text report's line naming the scheme (docs/models.md "Quantization")."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from .quant_formats import BITS, KV_DTYPES, fmt, granularity, nbytes
from .quant_graph import Groups


class Applied:
    """A quantization applied to a model's graph: annotates the model section."""

    def __init__(self, request, groups: Groups, g: Dict[str, Any]):
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
                        "bits": BITS[s.weight], "scales": granularity(s.weight_group,
                                                                       s.weight_scale),
                        "zero_points": s.zero_point, "tensor_scale": s.tensor_scale,
                        "tensors": len(gs.weights), "elements": gs.weight_elements,
                        "bytes": gs.weight_bytes, "scale_bytes": gs.scale_bytes,
                        "zero_point_bytes": gs.zero_bytes})
            act = section["dtype"] if s.act is None else s.act
            out.append({"group": "activations into decoder linears", "format": fmt(act),
                        "bits": BITS[fmt(act)],
                        "scales": None if s.act is None else
                        granularity(s.act_group, s.act_scale, activations=True),
                        "tensors": gs.act_inputs, "bytes": None,
                        "scale_bytes": gs.act_scale_bytes})
        if r.kv_dtype is not None:
            before = section["kv_cache_bytes"]
            section["kv_cache_bytes"] = before * BITS[KV_DTYPES[r.kv_dtype]] // \
                BITS[fmt(section["dtype"])]
            section["state_buffer_bytes"] = section["state_buffer_bytes"] * \
                BITS[KV_DTYPES[r.kv_dtype]] // BITS[fmt(section["dtype"])]
            section["weight_bytes"] += gs.kv_scale_bytes
            out.append({"group": "kv cache", "format": KV_DTYPES[r.kv_dtype],
                        "bits": BITS[KV_DTYPES[r.kv_dtype]],
                        "scales": "f32 per tensor (static, one per cache tensor)",
                        "tensors": gs.kv_tensors, "bytes": section["kv_cache_bytes"],
                        "scale_bytes": gs.kv_scale_bytes})
        else:
            out.append({"group": "kv cache", "format": fmt(section["dtype"]),
                        "bits": BITS[fmt(section["dtype"])], "scales": None,
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
