"""`solar models list [--json]`: the shipped model registry (registry/*.json) as a plain table,
one row per model, or as one JSON document (schema solar.models.v1): name, task, model type,
published parameter count, layers, hub id and the URL its configuration comes from.

Torch-free and transformers-free: it reads the registry files only (docs/models.md, "The
registry").
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List, Sequence

from .. import _core
from ..errors import command, parse_args
from . import estimate, registry

SCHEMA = "solar.models.v1"
_UNITS = ((10 ** 12, "T"), (10 ** 9, "B"), (10 ** 6, "M"), (10 ** 3, "k"))


def layers(config: Dict[str, Any]) -> int:
    """The layers a configuration declares: its own stacks (estimate.layer_count) plus those of
    the sub-configurations it nests (a policy's vision tower, backbone and action expert)."""
    return estimate.layer_count(config) + sum(
        layers(v) for v in config.values() if isinstance(v, dict))


def published_text(published: Dict[str, Any]) -> str:
    """The published count as the source states it: every digit where it gives the integer,
    else to its rounding (671B, 15.7B, 129M)."""
    n = published["params"]
    if published.get("exact"):
        return f"{int(n):,}"
    for scale, unit in _UNITS:
        if n >= scale:
            return f"{n / scale:g}{unit}"
    return f"{n:g}"


def _integer(n: Any) -> Any:
    """A count written as a float in the file (6.71e11) as the integer it is."""
    return int(n) if isinstance(n, float) and n.is_integer() else n


def rows() -> List[Dict[str, Any]]:
    """One row per registry entry, by name."""
    out = []
    for e in registry.entries():
        published = e.get("published") or {}
        out.append({"name": e["name"], "task": e["task"],
                    "model_type": e["config"]["model_type"],
                    "params_published": _integer(published.get("params")),
                    "params_exact": bool(published.get("exact")),
                    "params_text": published_text(published) if published else "-",
                    "layers": layers(e["config"]), "hub_id": e.get("hf_id"),
                    "source": e["source"]})
    return out


def table(items: List[Dict[str, Any]]) -> str:
    """Left-aligned columns separated by two spaces, a header row first."""
    head = ("name", "task", "model_type", "params", "layers", "hub id", "source")
    body = [(r["name"], r["task"], r["model_type"], r["params_text"], str(r["layers"]),
             r["hub_id"] or "-", r["source"]) for r in items]
    widths = [max(len(row[i]) for row in [head] + body) for i in range(len(head) - 1)]
    lines = []
    for row in [head] + body:
        cells = [c.rjust(w) if i in (3, 4) else c.ljust(w)
                 for i, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells + [row[-1]]))
    return "\n".join(lines) + "\n"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="solar models",
                                description="The model registry (docs/models.md)")
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = sub.add_parser("list", help="every registry model: name, task, model type, published "
                                     "parameters, layers, hub id, source")
    ls.add_argument("--json", action="store_true",
                    help="print one solar.models.v1 JSON document instead of the table")
    return p


@command()
def main(args: Sequence[str]) -> int:
    """`solar models list [--json]`; returns the exit code."""
    ns = parse_args(parser(), args)
    items = rows()
    if ns.json:
        doc = {"schema": SCHEMA, "models": [{k: v for k, v in r.items() if k != "params_text"}
                                            for r in items]}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        sys.stdout.write(table(items))
    return _core.EXIT_CODES["ok"]
