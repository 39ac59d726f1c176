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

import ast
import json
import os
import subprocess
import sys
import tempfile
from typing import Any, Dict, Optional

import numpy as np

from ...errors import user_error
from .collectives import refused

# The most seconds the fresh process may take (capture of N ranks and JAX's run).
CHILD_TIMEOUT_S = int(os.environ.get("SOLAR_JAX_SHARDED_TIMEOUT", "600"))
# The ranks a sharded program may declare (host devices are threads of one process).
MAX_DEVICES = 64


def declared_devices(path: str, overrides: Optional[Dict[str, str]] = None) -> Optional[int]:
    """The program's `DEVICES` (a top-level assignment of an integer, or of + - * // over
    integer constants assigned before it, `DEVICES = DP * TP`; `--set NAME=M` of any of them
    wins), or None."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    ints: Dict[str, int] = {}
    ops = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
           ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b if b else None}

    def value(node) -> Optional[int]:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            return ints.get(node.id)
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            a, b = value(node.left), value(node.right)
            return None if a is None or b is None else ops[type(node.op)](a, b)
        return None

    def assign(name: str, node) -> None:
        v = value(node)
        if overrides and name in overrides:
            try:
                v = int(overrides[name])
            except ValueError:
                pass  # the override's own error comes from loading the program
        if v is not None:
            ints[name] = v
        else:
            ints.pop(name, None)

    declared = False
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        tgt = node.targets[0]
        if isinstance(tgt, ast.Name):
            assign(tgt.id, node.value)
            declared = declared or tgt.id == "DEVICES"
        elif (isinstance(tgt, ast.Tuple) and isinstance(node.value, ast.Tuple)
              and len(tgt.elts) == len(node.value.elts)):
            for t, v in zip(tgt.elts, node.value.elts):
                if isinstance(t, ast.Name):
                    assign(t.id, v)
    return ints.get("DEVICES") if declared else None


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
    result: `traces`, `notes`, `output_ids`, `strided`, `mesh`, and with validate `inputs`
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
