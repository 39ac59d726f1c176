"""A sharded JAX program's mesh placed on a system (`--system`, `--mesh-links`): which scale-up
domain each rank sits in, and so how many ranks of each collective's group share the analyzed
rank's domain (its `ranks_per_domain`, parallel.md), and which link each mesh axis rides.

Default placement: the mesh's ranks in row-major order fill the system's scale-up domains in
turn (rank r in domain r // G, G devices per domain): the inner axes ride scale-up first, and
an axis that does not fit in what is left of a domain crosses scale-out. `--mesh-links
AXIS=scale-up|scale-out,...` places named axes: the scale-up axes (their extents' product at
most G) inside a domain, the scale-out axes across domains; an axis left out follows the
default rule among the rest.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Sequence

import numpy as np

from ...errors import user_error
from ...ranks import system_of

LINKS = ("scale-up", "scale-out")


def parse(text: str, axes: Sequence[str]) -> Dict[str, str]:
    """`AXIS=scale-up|scale-out,...` for a mesh with these axes."""
    out: Dict[str, str] = {}
    for part in [p.strip() for p in (text or "").split(",") if p.strip()]:
        name, _, link = part.partition("=")
        if name not in axes:
            raise user_error(f"--mesh-links {text}: '{name}' is not an axis of the mesh "
                             f"({', '.join(axes)})", "usage")
        if link not in LINKS:
            raise user_error(f"--mesh-links {text}: '{link}' for axis {name} is not "
                             "scale-up or scale-out", "usage")
        out[name] = link
    return out


def domains(axes: Sequence[str], sizes: Sequence[int], per_domain: int,
            links: Dict[str, str]) -> np.ndarray:
    """The scale-up domain of every rank (indexed by program rank)."""
    n = math.prod(sizes)
    if not links:
        return np.arange(n) // per_domain
    # Axes placed inside a domain: the named scale-up ones, then unnamed inner axes while
    # they fit; the rest index the domains.
    up = [a for a in axes if links.get(a) == "scale-up"]
    fit = math.prod(s for a, s in zip(axes, sizes) if a in up)
    if fit > per_domain:
        raise user_error(f"--mesh-links: the scale-up axes {', '.join(up)} span {fit} ranks, "
                         f"more than a scale-up domain's {per_domain}", "usage")
    for a, s in reversed(list(zip(axes, sizes))):
        if a not in links and fit * s <= per_domain:
            up.append(a)
            fit *= s
    coords = np.array(np.unravel_index(np.arange(n), sizes)).T  # rank -> coordinates
    outer = [k for k, a in enumerate(axes) if a not in up]
    dom = np.zeros(n, dtype=np.int64)
    for k in outer:
        dom = dom * sizes[k] + coords[:, k]
    return dom


def place(traces: List[Dict[str, Any]], mesh: Dict[str, int], system: str, nodes,
          text: str) -> Dict[str, Any]:
    """Writes `ranks_per_domain` into every collective of the ranks' traces and returns the
    placement for the report: the system, each axis' link(s), the domain size."""
    axes, sizes = list(mesh), [int(s) for s in mesh.values()]
    n = math.prod(sizes)
    _, devices, per_domain, _ = system_of(system, nodes)
    if n > devices:
        raise user_error(f"the mesh's {n} ranks do not fit in system {system}'s {devices} "
                         "devices (--nodes adds scale-up domains)", "usage")
    dom = domains(axes, sizes, per_domain, parse(text, axes))
    coords = np.array(np.unravel_index(np.arange(n), sizes)).T

    def members(rank: int, group_axes: Sequence[str]) -> List[int]:
        fixed = [k for k, a in enumerate(axes) if a not in group_axes]
        return [r for r in range(n) if all(coords[r, k] == coords[rank, k] for k in fixed)]

    for rank, trace in enumerate(traces):
        for op in trace["ops"]:
            args = op.get("args", {})
            if "collective" not in args:
                continue
            if args["collective"] in ("send", "recv"):
                args["ranks_per_domain"] = 2 if dom[int(args["peer"])] == dom[rank] else 1
                continue
            group = members(rank, args["axes"])
            shared = sum(1 for r in group if dom[r] == dom[rank])
            if len(group) % shared:
                raise user_error(f"the mesh's group over {args['group']} does not tile the "
                                 f"system's scale-up domains of {per_domain}", "usage")
            args["ranks_per_domain"] = shared
    links = {}
    for a in axes:
        group = members(0, [a])
        shared = sum(1 for r in group if dom[r] == dom[0])
        links[a] = ("scale-up" if shared == len(group) else
                    "scale-out" if shared == 1 else "scale-up+scale-out")
    return {"system": system, "devices_per_domain": per_domain, "mesh_links": links}
