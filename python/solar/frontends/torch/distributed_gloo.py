"""Validation of a torch.distributed program: the program run for real on DEVICES ranks over
gloo on 127.0.0.1 (each rank a process Solar starts, distributed_child.py, bounded in time,
on a port picked free), and the executor's run of the ranks' graphs together
(solar.run_ranks) on the same inputs and parameter shards, every rank's outputs compared
(docs/distributed.md, "PyTorch", "Validation").
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

import numpy as np

from ...analysis import lower_trace
from ...errors import user_error
from ...ranks import validate_ranks as compare_ranks

# The most seconds the ranks' run may take, all together.
TIMEOUT_S = int(os.environ.get("SOLAR_TORCH_GLOO_TIMEOUT", "300"))
REFERENCE = "the program on {n} ranks over gloo (127.0.0.1)"


def free_port() -> int:
    """A TCP port nothing listens on now (the rendezvous of the ranks' process group)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_gloo(path: str, devices: int, overrides: Dict[str, str]) -> List[Dict[str, np.ndarray]]:
    """Every rank's inputs (`in/K`), parameter shards (`param/NAME`) and outputs (`out/K`)
    from the program's own run on `devices` gloo ranks."""
    with tempfile.TemporaryDirectory(prefix="solar-torch-ranks-") as out:
        port = str(free_port())
        env = dict(os.environ, OMP_NUM_THREADS="1")
        procs = [subprocess.Popen(
            [sys.executable, "-m", "solar.frontends.torch.distributed_child",
             os.path.abspath(path), str(r), str(devices), port, out, json.dumps(overrides)],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True) for r in range(devices)]
        deadline = time.monotonic() + TIMEOUT_S
        try:
            for p in procs:
                p.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise user_error(f"{path}: the run on {devices} gloo ranks took over {TIMEOUT_S} s "
                             "(SOLAR_TORCH_GLOO_TIMEOUT)", "usage") from None
        finally:
            for p in procs:  # the ranks this call started, and only those
                if p.poll() is None:
                    p.kill()
                    p.wait()
                if p.stderr is not None:
                    p.stderr.close()
        # Every rank's error (a rank that fails makes its peers fail in the next collective:
        # the first error in rank order may be a peer's).
        errors = []
        for r in range(devices):
            err = os.path.join(out, f"rank{r}.error")
            if os.path.exists(err):
                with open(err, encoding="utf-8") as f:
                    errors.append(f"rank {r}: {f.read().strip()[:200]}")
        if errors:
            raise user_error(f"{path}: the gloo run failed: " + "; ".join(errors), "usage")
        results = []
        for r in range(devices):
            npz = os.path.join(out, f"rank{r}.npz")
            if not os.path.exists(npz):
                raise user_error(f"{path}: rank {r} of the gloo run failed (exit "
                                 f"{procs[r].returncode})", "usage")
            with np.load(npz) as z:
                results.append({k: z[k] for k in z.files})
        return results


def validate_ranks(path: str, devices: int, traces: List[Dict[str, Any]],
                   returned: List[List[int]], options: Any) -> Dict[str, Any]:
    """The `validation` section: each rank's graph fed its inputs and parameter shards from
    the gloo run, the ranks executed together, their outputs compared with the run's."""
    runs = run_gloo(path, devices, options.overrides or {})
    res: Dict[str, Any] = {"inputs": [], "expected": [],
                           "output_ids": returned}
    for trace, run in zip(traces, runs):
        values: Dict[str, np.ndarray] = {}
        inputs = [t for t in trace["tensors"] if t["role"] == "input"]
        for k, t in enumerate(inputs):
            if f"in/{k}" in run:
                values[str(t["id"])] = run[f"in/{k}"]
        for t in trace["tensors"]:
            if t["role"] in ("parameter", "buffer") and f"param/{t.get('name')}" in run:
                values[str(t["id"])] = run[f"param/{t['name']}"]
        res["inputs"].append(values)
        res["expected"].append({k.split("/", 1)[1]: v for k, v in run.items()
                                if k.startswith("out/")})
    lowered = [lower_trace(t, path, options.strict) for t in traces]
    section = compare_ranks(res, lowered)
    section["against"] = REFERENCE.format(n=devices)
    return section
