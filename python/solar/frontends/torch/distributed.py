"""torch.distributed programs captured for one rank under PyTorch's fake process group
(docs/distributed.md, "PyTorch").

A program file declares its world size with a top-level `DEVICES = N` (as a sharded JAX
program does); Solar initializes the process group itself, `init_process_group("fake",
store=FakeStore(), rank=0, world_size=N)`, before the program is loaded, so its constructor
(`init_device_mesh`, `parallelize_module`, `fully_shard`) and its forward run as rank 0 of N,
on fake tensors. What the recorder (capture.py) takes from here:

- collective_args: the collectives' group (its size, its name: the device mesh dimension,
  `world` for the default group), kind and reduction, written as the op's arguments for the
  aten table (src/lower/aten_collective.cc);
- dtensor_types: an op on DTensors is not recorded; DTensor's dispatch then runs the rank's
  local ops (and the collectives of a redistribution), which are;
- foreign: DTensor's sharding propagation runs ops on fake tensors of its own FakeTensorMode
  to learn output shapes; they are not the program's and are not recorded.
"""

from __future__ import annotations

import contextlib
from typing import Any, Dict, Iterator, List, Optional

import torch

# Set while a program is captured under the fake process group (fake_process_group): the
# recorder consults this module only then.
ACTIVE = False
# c10d's RedOpType values (ReduceOp.op()) and the functional collectives' reduce_op strings,
# as the IR's reductions. PREMUL_SUM and the bitwise ones have none.
_C10D_REDUCTIONS = {0: "sum", 1: "avg", 2: "prod", 3: "min", 4: "max"}
_FUNCTIONAL_REDUCTIONS = {"sum": "sum", "avg": "avg", "product": "prod", "min": "min",
                          "max": "max"}

# op name -> (IR kind, the argument naming the group, the argument naming the reduction)
_OPS = {
    "_c10d_functional::all_reduce.default": ("all_reduce", "group_name", "reduce_op"),
    "_c10d_functional::all_reduce_.default": ("all_reduce", "group_name", "reduce_op"),
    "_c10d_functional::all_gather_into_tensor.default": ("all_gather", "group_name", None),
    "_c10d_functional::reduce_scatter_tensor.default": ("reduce_scatter", "group_name",
                                                        "reduce_op"),
    "_c10d_functional::all_to_all_single.default": ("all_to_all", "group_name", None),
    "_c10d_functional::broadcast.default": ("broadcast", "group_name", None),
    "_c10d_functional::broadcast_.default": ("broadcast", "group_name", None),
    "c10d::allreduce_.default": ("all_reduce", "process_group", "reduce_op"),
    "c10d::broadcast_.default": ("broadcast", "process_group", None),
    "c10d::_allgather_base_.default": ("all_gather", "process_group", None),
    "c10d::_reduce_scatter_base_.default": ("reduce_scatter", "process_group", "reduce_op"),
    "c10d::alltoall_base_.default": ("all_to_all", "process_group", None),
}


@contextlib.contextmanager
def fake_process_group(world_size: int, rank: int = 0) -> Iterator[None]:
    """torch.distributed initialized as `rank` of `world_size` under the fake backend
    (collectives do nothing and return at once), destroyed afterwards."""
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        dist.destroy_process_group()  # a previous program's, left by an error in it
    dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=world_size)
    global ACTIVE
    ACTIVE = True
    try:
        yield
    finally:
        ACTIVE = False
        if dist.is_initialized():
            dist.destroy_process_group()


def _process_group(v: Any):
    import torch.distributed as dist
    from torch.distributed.distributed_c10d import _resolve_process_group

    if isinstance(v, str):
        return _resolve_process_group(v)
    if isinstance(v, torch.ScriptObject):
        return dist.ProcessGroup.unbox(v)
    return v


def group_label(pg) -> str:
    """A group's name in reports: its device mesh dimension (`tp` for init_device_mesh's
    `mesh_tp` group), `world` for the default group, else its description or number."""
    import torch.distributed as dist

    if pg is dist.group.WORLD or getattr(pg, "group_desc", "") == "default_pg":
        return "world"
    desc = getattr(pg, "group_desc", "") or ""
    if desc.startswith("mesh_"):
        return desc[len("mesh_"):]
    return desc or str(pg.group_name)


def group_ranks(pg) -> list:
    """The global ranks of a group, in its order."""
    import torch.distributed as dist

    return list(dist.get_process_group_ranks(pg))


def _bind(func, args, kwargs) -> Dict[str, Any]:
    named: Dict[str, Any] = {}
    for i, a in enumerate(func._schema.arguments):
        if i < len(args) and not a.kwarg_only:
            named[a.name] = args[i]
        elif a.name in kwargs:
            named[a.name] = kwargs[a.name]
    return named


class Refused(Exception):
    """A collective the capture cannot record: refused as a whole, since the tensors it
    writes would otherwise be read stale (capture.py raises it as a solar.UnsupportedError,
    exit 7, at the program's line)."""


_refused = Refused


def collective_args(func, args, kwargs) -> Optional[Dict[str, Any]]:
    """The arguments the aten table lowers a collective with (`collective`, `group`, `size`,
    `reduction`, `axis`, `concat_axis`, `root`, and `ranks`: the group's global ranks); None
    for an op that is no collective. Raises solar.UnsupportedError for a collective it cannot
    record (a list or object collective, another reduction, unequal all-to-all splits)."""
    name = f"{func._schema.name}.{func._overloadname}"
    spec = _OPS.get(name)
    if spec is None:
        if func._schema.name.startswith(("c10d::", "_c10d_functional::")) and \
                not name.startswith("_c10d_functional::wait_tensor"):
            raise _refused(f"the collective {name} is not supported (all_reduce, "
                           "all_gather_into_tensor, reduce_scatter_tensor, all_to_all_single "
                           "and broadcast are; list and object collectives are not)")
        return None
    kind, group_arg, reduce_arg = spec
    named = _bind(func, args, kwargs)
    pg = _process_group(named.get(group_arg))
    # eager: the program issues it whether or not anything reads its result (FSDP2's backward
    # re-gather of a weight only an input gradient would read): never dead (cost.md).
    out: Dict[str, Any] = {"collective": kind, "group": group_label(pg), "size": int(pg.size()),
                           "ranks": group_ranks(pg), "eager": 1}
    n, ranks = len(out["ranks"]), out["ranks"]
    if ranks and (ranks != list(range(ranks[0], ranks[0] + n)) or ranks[0] % n):
        # Not a block of consecutive ranks (an outer mesh dimension): the executor runs the
        # group's own ranks, in group order (the IR's replica_groups, this rank's group).
        out["replica_groups"] = list(ranks)
    if reduce_arg is not None:
        r = named.get(reduce_arg)
        if isinstance(r, torch.ScriptObject):
            red = _C10D_REDUCTIONS.get(int(r.op()))
        else:
            red = _FUNCTIONAL_REDUCTIONS.get(str(r).lower())
        if red is None:
            raise _refused(f"{name}: the reduction {r} is not supported (sum, avg, product, "
                           "min, max are)")
        out["reduction"] = red
    if kind in ("all_gather", "reduce_scatter"):
        out["axis"] = 0  # torch's tensor forms gather and scatter along the first dimension
    if kind == "all_to_all":
        splits = [s for k in ("output_split_sizes", "input_split_sizes")
                  for s in (named.get(k) or [])]
        if len(set(int(s) for s in splits)) > 1:
            raise _refused(f"{name}: unequal splits {splits} (data-dependent or uneven "
                           "exchanges) are not supported")
        out["axis"] = out["concat_axis"] = 0
    if kind == "broadcast":
        src = named.get("src", named.get("root_rank", 0))
        ranks = out["ranks"]
        out["root"] = ranks.index(int(src)) if name.startswith("_c10d_functional") and \
            int(src) in ranks else int(src)
    return out


# Collectives that write an argument their schema neither marks written nor returns (they
# return only the Work handle): the argument, by name.
_UNDECLARED_OUTPUTS = {"c10d::alltoall_base_.default": "output"}


def undeclared_writes(func, args, kwargs) -> List[torch.Tensor]:
    """The tensors a collective writes without its schema saying so (a new version each)."""
    name = _UNDECLARED_OUTPUTS.get(f"{func._schema.name}.{func._overloadname}")
    if name is None:
        return []
    t = _bind(func, args, kwargs).get(name)
    return [t] if isinstance(t, torch.Tensor) else []


def dtensor_types(types) -> bool:
    """Whether an op reads a DTensor (`types`: the tensor subclasses of its arguments, as
    __torch_dispatch__ gets them): its local ops are what the rank runs."""
    from torch.distributed.tensor import DTensor

    return any(issubclass(t, DTensor) for t in types)


def is_dtensor(t: Any) -> bool:
    from torch.distributed.tensor import DTensor

    return isinstance(t, DTensor)


def local(t: Any) -> torch.Tensor:
    """A DTensor's local shard (the object its local ops read)."""
    return t._local_tensor


def foreign(out: Any, mode: Any) -> bool:
    """Whether an op's results are fake tensors of another FakeTensorMode than the capture's
    (`mode`, None on real tensors): DTensor's sharding propagation, not the program."""
    from torch._subclasses.fake_tensor import FakeTensor

    leaves = [out] if isinstance(out, torch.Tensor) else [
        o for o in torch.utils._pytree.tree_leaves(out) if isinstance(o, torch.Tensor)]
    return bool(leaves) and all(isinstance(o, FakeTensor) and o.fake_mode is not mode
                                for o in leaves)
