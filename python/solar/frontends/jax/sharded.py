"""Sharded JAX programs: a program file that declares `DEVICES = N` and is one shard_map
over a mesh of N devices, captured rank by rank (collectives.py) and validated by running
the ranks' graphs together (solar.run_ranks) against JAX's own sharded run
(docs/distributed.md).

JAX fixes its device count when it starts (`XLA_FLAGS=--xla_force_host_platform_device_count
=N`), and the process that analyzes (the CLI, the server that preloads JAX) may have started
it already with one device: the capture and JAX's run always happen in a fresh Python process
(`python -m solar.frontends.jax.sharded_child`), which writes the ranks' traces, their input
values and the outputs JAX computed for each rank into a folder; this process lowers,
analyzes and executes them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any, Dict, Optional

import numpy as np

from ...errors import user_error
from ...ranks import MAX_DEVICES, unsupported as refused

# The most seconds the fresh process may take (capture of N ranks and JAX's run).
CHILD_TIMEOUT_S = int(os.environ.get("SOLAR_JAX_SHARDED_TIMEOUT", "600"))
# The ranks a sharded program may declare (host devices are threads of one process).
def child_env(devices: int) -> Dict[str, str]:
    """The environment of the fresh process: N host (CPU) devices."""
    env = dict(os.environ)
    flags = [f for f in env.get("XLA_FLAGS", "").split()
             if not f.startswith("--xla_force_host_platform_device_count")]
    env["XLA_FLAGS"] = " ".join(flags + [f"--xla_force_host_platform_device_count={devices}"])
    env["JAX_PLATFORMS"] = "cpu"
    return env


def run_child(path: str, devices: int, validate: bool, overrides: Dict[str, str],
              unroll_cap: Optional[int] = None) -> Dict[str, Any]:
    """Captures the ranks (and with validate runs JAX) in a fresh process; returns its
    result: `traces`, `notes`, `output_ids`, `mesh`, and with validate `inputs`
    and `expected` (per rank, name or output index -> array)."""
    if not 1 <= devices <= MAX_DEVICES:
        raise user_error(f"{path}: DEVICES = {devices}: a sharded program declares 1 to "
                         f"{MAX_DEVICES} devices", "usage")
    with tempfile.TemporaryDirectory(prefix="solar-jax-ranks-") as out:
        cmd = [sys.executable, "-m", "solar.frontends.jax.sharded_child", os.path.abspath(path),
               str(devices), out, "1" if validate else "0", json.dumps(overrides or {}),
               str(unroll_cap or "")]
        try:
            p = subprocess.run(cmd, env=child_env(devices), stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise user_error(f"{path}: the sharded capture on {devices} host devices took "
                             f"over {CHILD_TIMEOUT_S} s (SOLAR_JAX_SHARDED_TIMEOUT)",
                             "usage") from None
        result_file = os.path.join(out, "result.json")
        if not os.path.exists(result_file):
            tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
            raise user_error(f"{path}: the sharded capture on {devices} host devices failed "
                             f"(exit {p.returncode}): {tail}", "usage")
        with open(result_file, encoding="utf-8") as f:
            result = json.load(f)
        if "error" in result:
            kind = result.get("kind", "usage")
            if kind == "unsupported":
                raise refused(result["error"])
            raise user_error(result["error"], kind)
        for key in ("inputs", "expected"):
            if key in result:
                with np.load(os.path.join(out, key + ".npz")) as z:
                    arrays = {k: z[k] for k in z.files}
                result[key] = [{k.split("/", 1)[1]: v for k, v in arrays.items()
                                if k.split("/", 1)[0] == str(r)} for r in range(devices)]
        return result
