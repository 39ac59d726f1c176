"""The best parallel plan of Llama-3.1-405B's decode step on 16 H100s (two DGX H100 nodes):
every (tp, pp, dp) of 16 GPUs, the model captured once and its graph sharded per plan, the
plans analyzed on a local Dask cluster of --jobs workers as `solar sweep plans` runs them
(solar.models.plans; docs/parallel.md, docs/sweep.md "Plans"). Prints the ranking, the
best plan and the wall time, the cluster's start included; --max-seconds S exits 1 when the
sweep takes longer.

    PYTHONPATH=python .venv/bin/python bench/parallel_plans.py [--max-seconds 60]
"""

from __future__ import annotations

import argparse
import sys
import time

from solar.analysis import ProgramOptions
from solar.models import ModelRun
from solar.models.plans import plans_text, sweep_plans
from solar.sweep import run as sweep_run


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="hf:llama-3.1-405b")
    p.add_argument("--system", default="DGX_H100")
    p.add_argument("--nodes", type=int, default=2)
    p.add_argument("--context", type=int, default=4096)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--max-seconds", type=float, default=None)
    ns = p.parse_args()
    start = time.perf_counter()
    sweep_run.log_silently()
    with sweep_run.client_for(None, ns.jobs) as client:
        result = sweep_plans(ModelRun(ns.model, phase="decode", batch=ns.batch,
                                      context=ns.context),
                             ProgramOptions(archs=(), crosscheck=False, cache_aware=False,
                                            system=ns.system, nodes=ns.nodes), client=client)
    wall = time.perf_counter() - start
    sys.stdout.write(plans_text(result))
    analyzed = sum(1 for r in result["rows"] if r["status"] in ("ok", "does_not_fit"))
    print(f"wall {wall:.1f} s: capture {result['capture_seconds']:.1f} s (once), "
          f"{analyzed} plans sharded and analyzed, {len(result['rows']) - analyzed} "
          "dropped before analysis")
    if ns.max_seconds is not None and wall > ns.max_seconds:
        print(f"over the target of {ns.max_seconds:.0f} s", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
