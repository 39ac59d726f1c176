"""The fresh process of a sharded JAX capture (sharded.py): started with N host devices,
it captures each rank of the program, and with validation runs the program in JAX, then
writes the ranks' traces, inputs and expected outputs into a folder for the process that
started it (result.json, inputs.npz, expected.npz; an error as {"error", "kind"})."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List, Optional

import numpy as np

from ...program_source import OverrideError, ProgramFormatError
from . import partitioned
from . import program as pg
from .collectives import MeshRank, block


def _child(path: str, devices: int, out: str, validate: bool, overrides: Dict[str, str],
           unroll_cap: Optional[int]) -> None:
    """The fresh process: captures each rank, and with validate runs the program in JAX
    and keeps each rank's inputs and expected outputs."""
    import jax

    if jax.device_count() < devices:
        raise RuntimeError(f"JAX started with {jax.device_count()} devices, not {devices}")
    try:
        with pg._seeded_generators():
            mod = pg.load_program(path, overrides)
            prog = pg.program_from_module(mod, path, abstract=not validate)
    except OverrideError as e:
        _write_error(out, str(e), "usage")
        return
    except ProgramFormatError as e:
        _write_error(out, str(e), "parse")
        return
    if not _has_shard_map(prog):
        _partitioned(prog, path, devices, out, validate, unroll_cap)
        return
    caps = []
    for r in range(devices):
        caps.append(pg._capture(prog, path, values=None, unroll_cap=unroll_cap,
                                mesh_rank=MeshRank(r, devices)))
    if not caps[0].mesh_rank.done:
        _write_error(out, f"{path}: DEVICES = {devices} but the program has no jax::shard_map "
                     "over a mesh of several devices (a jit with shardings is not read yet: "
                     "docs/distributed.md)", "unsupported")
        return
    mr = caps[0].mesh_rank
    result: Dict[str, Any] = {
        "traces": [c.trace for c in caps], "notes": caps[0].notes,
        "output_ids": [c.output_ids for c in caps],
        "mesh": dict(zip(mr.axis_names, mr.axis_sizes))}
    if validate:
        inputs, expected = {}, {}
        for r, c in enumerate(caps):
            for t in c.trace["tensors"]:
                if t["role"] in ("input", "parameter", "constant") and t["id"] in c.values:
                    inputs[f"{r}/{t['id']}"] = pg._executor_array(c.values[t["id"]])
        flat = jax.tree_util.tree_leaves(jax.jit(prog.fn)(*pg._args(prog)))
        specs = list(mr.out_specs)
        for r, c in enumerate(caps):
            rank = c.mesh_rank
            for k, (tid, value) in enumerate(zip(c.output_ids, flat)):
                if tid is None:
                    continue
                local = c.trace["tensors"][tid]["shape"]
                expected[f"{r}/{k}"] = pg._executor_array(
                    block(rank, specs[k] if k < len(specs) else None, np.asarray(value), local))
        np.savez(os.path.join(out, "inputs.npz"), **inputs)
        np.savez(os.path.join(out, "expected.npz"), **expected)
        result["inputs"] = True
        result["expected"] = True
    with open(os.path.join(out, "result.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, allow_nan=False)


def _partitioned(prog, path: str, devices: int, out: str, validate: bool,
                 unroll_cap: Optional[int]) -> None:
    """The jit route (partitioned.py): XLA compiles the program for its shardings; each rank
    is the program traced at its local input shapes with the partitioner's collectives."""
    import jax

    args = pg._args(prog)
    leaves, tree = jax.tree_util.tree_flatten(args)
    jitted = prog.fn if hasattr(prog.fn, "lower") else jax.jit(prog.fn)
    compiled = jitted.lower(*args).compile()
    in_sh = jax.tree_util.tree_leaves(compiled.input_shardings[0])
    out_sh = jax.tree_util.tree_leaves(compiled.output_shardings)
    meshes = [s.mesh for s in list(in_sh) + list(out_sh) if hasattr(s, "mesh")]
    if not meshes or int(meshes[0].size) != devices:
        _write_error(out, f"{path}: DEVICES = {devices} but the program has neither a "
                     f"jax::shard_map nor jit shardings over a {devices}-device mesh "
                     "(docs/distributed.md)", "unsupported")
        return
    mesh = meshes[0]
    order = list(mesh.devices.flat)  # rank r is mesh.devices.flat[r]
    colls = partitioned.read_collectives(compiled.as_text(), devices)
    fn = getattr(prog.fn, "__wrapped__", prog.fn)
    whole_prog = pg.Program(fn, prog.params, list(prog.inputs), prog.name)
    whole = pg._capture(whole_prog, path, values=False, unroll_cap=unroll_cap,
                        unroll=True).trace
    caps, inputs, expected = [], {}, {}
    flat_out = (jax.tree_util.tree_leaves(jitted(*args)) if validate else [])
    out_global = [tuple(o.shape) for o in jax.tree_util.tree_leaves(jax.eval_shape(jitted, *args))]
    out_shapes = [list(s.shard_shape(g)) if hasattr(s, "shard_shape") else None
                  for s, g in zip(out_sh, out_global)]
    for r in range(devices):
        local = []
        for x, s in zip(leaves, in_sh):
            idx = s.devices_indices_map(tuple(np.shape(x)))[order[r]]
            local.append(np.asarray(x)[idx] if validate else
                         jax.ShapeDtypeStruct(s.shard_shape(tuple(np.shape(x))), x.dtype))
        local_args = jax.tree_util.tree_unflatten(tree, local)
        rank_prog = pg.Program(fn, local_args[0] if prog.params is not None else None,
                               list(local_args[1:] if prog.params is not None else local_args),
                               prog.name)
        c = pg._capture(rank_prog, path, values=None, unroll_cap=unroll_cap, unroll=True)
        mr = MeshRank(r, devices, tuple(str(a) for a in mesh.axis_names),
                      tuple(int(n) for n in mesh.devices.shape))
        blocks = []  # this rank's (start, stop) per dimension of each output
        for s, g in zip(out_sh, out_global):
            idx = s.devices_indices_map(g)[order[r]]
            blocks.append([sl.indices(n)[:2] for sl, n in zip(idx, g)])
        c.output_ids = partitioned.attach(c.trace, c.output_ids, colls, mr, path, whole,
                                          out_shapes, blocks)
        c.mesh_rank = mr
        caps.append(c)
        if validate:
            for t in c.trace["tensors"]:
                if t["role"] in ("input", "parameter", "constant") and t["id"] in c.values:
                    inputs[f"{r}/{t['id']}"] = pg._executor_array(c.values[t["id"]])
            for k, (tid, value, s) in enumerate(zip(c.output_ids, flat_out, out_sh)):
                if tid is not None:
                    idx = s.devices_indices_map(tuple(np.shape(value)))[order[r]]
                    expected[f"{r}/{k}"] = pg._executor_array(np.asarray(value)[idx])
    result: Dict[str, Any] = {
        "route": "hlo", "traces": [c.trace for c in caps], "notes": caps[0].notes,
        "output_ids": [c.output_ids for c in caps],
        "mesh": dict(zip(caps[0].mesh_rank.axis_names, caps[0].mesh_rank.axis_sizes)),
        "hlo_collectives": [{k: v for k, v in c.items() if k not in ("groups", "instruction")} | {
            "group_size": len(c["groups"][0])} for c in colls]}
    if validate:
        np.savez(os.path.join(out, "inputs.npz"), **inputs)
        np.savez(os.path.join(out, "expected.npz"), **expected)
        result["inputs"] = result["expected"] = True
    with open(os.path.join(out, "result.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, allow_nan=False)


def _has_shard_map(prog) -> bool:
    """Whether the program's jaxpr (nested jaxprs included) has a multi-device shard_map."""
    import jax

    args = [a if isinstance(a, jax.ShapeDtypeStruct) else jax.ShapeDtypeStruct(np.shape(a),
                                                                                a.dtype)
            for a in jax.tree_util.tree_leaves(pg._args(prog))]
    flat_tree = jax.tree_util.tree_structure(pg._args(prog))

    def flat_fn(*flat):
        return prog.fn(*jax.tree_util.tree_unflatten(flat_tree, flat))

    def walk(jaxpr) -> bool:
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "shard_map" and getattr(eqn.params.get("mesh"), "size",
                                                             1) > 1:
                return True
            for v in eqn.params.values():
                sub = getattr(v, "jaxpr", v)
                if hasattr(sub, "eqns") and walk(sub):
                    return True
        return False

    return walk(jax.make_jaxpr(flat_fn)(*args).jaxpr)


def _write_error(out: str, message: str, kind: str) -> None:
    with open(os.path.join(out, "result.json"), "w", encoding="utf-8") as f:
        json.dump({"error": message, "kind": kind}, f)


def main(argv: List[str]) -> int:
    path, devices, out, validate, overrides, cap = argv
    try:
        _child(path, int(devices), out, validate == "1", json.loads(overrides),
               int(cap) if cap else None)
    except Exception as e:  # the parent reports it as this command's error
        kind = getattr(e, "kind", None) or (
            "unsupported" if type(e).__name__ == "UnsupportedError" else "usage")
        _write_error(out, str(e), kind)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
