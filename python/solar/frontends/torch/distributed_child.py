"""One rank of a torch.distributed program run for real over gloo (distributed_gloo.py
starts DEVICES of these): `python -m solar.frontends.torch.distributed_child PROGRAM RANK
WORLD PORT OUT OVERRIDES_JSON`. The rank joins the process group on 127.0.0.1:PORT, loads
and builds the program as the capture does (torch seeded with 0 first), runs it on its
inputs without autograd (as the capture records an inference), and writes OUT/rank{R}.npz:
`in/K` (its K-th input), `param/NAME` (each parameter's local shard) and `out/K` (its K-th
output, a DTensor's local shard), or OUT/rank{R}.error with one line.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import torch
import torch.distributed as dist

from .capture import _flatten, build_program, check_program, load_program


def main(argv) -> int:
    path, rank, world, port, out, overrides = argv[1], int(argv[2]), int(argv[3]), argv[4], \
        argv[5], json.loads(argv[6])
    try:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        dist.init_process_group("gloo", rank=rank, world_size=world)
        try:
            torch.manual_seed(0)
            mod = load_program(path, overrides)
            check_program(mod, path)
            init = list(mod.get_init_inputs()) if hasattr(mod, "get_init_inputs") else []
            model = build_program(mod, path, init)
            inputs = list(mod.get_inputs())

            def local(t):
                return t.to_local() if hasattr(t, "to_local") else t

            arrays = {f"in/{k}": local(t).detach().numpy()
                      for k, t in enumerate(_flatten(inputs))}
            if isinstance(model, torch.nn.Module):
                for name, p in model.named_parameters():
                    arrays[f"param/{name}"] = local(p).detach().numpy()
                for name, b in model.named_buffers():
                    arrays[f"param/{name}"] = local(b).detach().numpy()
            with torch.no_grad():
                result = model(*inputs)
            for k, t in enumerate(_flatten(result)):
                arrays[f"out/{k}"] = local(t).detach().numpy()
            np.savez(os.path.join(out, f"rank{rank}.npz"), **arrays)
            dist.barrier()
        finally:
            dist.destroy_process_group()
    except BaseException as e:  # noqa: BLE001  one line for the parent, never a traceback
        with open(os.path.join(out, f"rank{rank}.error"), "w", encoding="utf-8") as f:
            f.write(f"{type(e).__name__}: {e}".splitlines()[0] if str(e) else type(e).__name__)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
