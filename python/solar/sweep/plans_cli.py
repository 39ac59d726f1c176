"""`solar sweep plans MODEL --system S`: every parallel plan of a model on a system, ranked
(docs/sweep.md, "Plans"; solar.models.plans). The model is captured in this process (once
per per-replica batch) and the plans' analyses run on the Dask cluster of `solar sweep`: a
local one of --jobs workers, or the scheduler at --address."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import List

from .. import _core, models
from ..analysis import ProgramOptions
from ..atomic_write import write_atomically
from ..command_options import add_system_options
from ..errors import parse_args, user_error
from ..models import plans
from ..program_source import parse_literal, parse_overrides
from . import run as sweep_run
from . import spec as spec_mod


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="solar sweep plans",
        description="Every parallel plan (tp, pp, ep, dp) of a model on a system, ranked by "
                    "tokens/s per GPU (serving) or step time (--train); the plans analyzed "
                    "on a Dask cluster (docs/sweep.md, \"Plans\")")
    p.add_argument("model", metavar="MODEL", help="hf:NAME or a config.json")
    add_system_options(p)
    p.add_argument("--phase", default="decode", choices=["prefill", "decode"])
    p.add_argument("--batch", type=int, default=1,
                   help="sequences per replica (default 1); with --train, per step, split "
                        "over the replicas")
    p.add_argument("--seq", type=int, help="prefill tokens per sequence (default 1024)")
    p.add_argument("--context", type=int, help="decode: cached tokens (default 4096)")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="a config field")
    p.add_argument("--train", action="store_true",
                   help="a training step of --seq tokens per sequence (pp 1)")
    p.add_argument("--zero", type=int, default=0, choices=[0, 1, 2, 3],
                   help="with --train: the ZeRO stage of the plans with dp > 1")
    p.add_argument("--cache-aware", action="store_true",
                   help="also the cache-aware level (slower; the ranking uses the fused one "
                        "otherwise)")
    p.add_argument("--jobs", type=int, metavar="N",
                   help="local Dask worker processes (default min(2, cores))")
    p.add_argument("--address", metavar="tcp://HOST:PORT",
                   help="run the plans on the Dask scheduler at this address instead of a "
                        "local cluster")
    p.add_argument("--json", dest="json_path", metavar="PATH", help="write the ranking as JSON")
    return p


def main(args: List[str]) -> int:
    ns = parse_args(parser(), args)
    if not models.is_model_ref(ns.model):
        raise user_error(f"{ns.model}: solar sweep plans takes a model (hf:NAME or "
                         "config.json)", "usage")
    if not ns.system:
        raise user_error("solar sweep plans needs --system", "usage")
    if ns.nodes is not None and ns.nodes < 1:
        raise user_error("--nodes must be at least 1", "usage")
    config = {k: parse_literal(v) for k, v in parse_overrides(ns.set).items()}
    if ns.zero and not ns.train:
        raise user_error("--zero needs --train", "usage")
    phase = "prefill" if ns.train else ns.phase
    run = models.ModelRun(ns.model, phase=phase, batch=ns.batch, seq=ns.seq,
                          context=ns.context, dtype=ns.dtype, config=config)
    options = ProgramOptions(archs=(), crosscheck=False, cache_aware=ns.cache_aware,
                             system=ns.system, nodes=ns.nodes, train=ns.train)
    if ns.jobs is not None and not 1 <= ns.jobs <= spec_mod.max_jobs():
        raise user_error(f"--jobs {ns.jobs}: from 1 to {spec_mod.max_jobs()} local worker "
                         "processes", "usage")
    jobs = ns.jobs or min(2, os.cpu_count() or 1)
    sweep_run.log_silently()
    with sweep_run.client_for(ns.address, jobs) as client:
        result = plans.sweep_plans(run, options, zero=ns.zero, client=client)
    if ns.json_path:
        write_atomically(ns.json_path, json.dumps(result, indent=2, allow_nan=False) + "\n")
    sys.stdout.write(plans.plans_text(result))
    return _core.EXIT_CODES["ok"]
