"""The memory check before a JAX program runs on real arrays (`solar validate`,
`--validate`, `--real`): the program is traced on abstract values first (shapes, no data)
and its real run estimated and held to the memory available (solar.memory_limit)."""

from __future__ import annotations

from typing import Any, Dict, Optional

from ...memory_limit import Estimate, check_fits, jax_estimate
from . import capture as cap


def check_real_run(path: str, options: Any) -> Optional[Estimate]:
    """Refuses (solar.UserError, kind "too_large") a validation or `--real` run of the JAX
    program at `path` that would not fit in memory, before its inputs and parameters are
    made; does nothing for an abstract analysis. Returns the estimate (None: none made)."""
    if not (options.validate or options.real):
        return None
    first = [True]

    def estimate_at(overrides: Dict[str, str]) -> Optional[Estimate]:
        try:
            mod = cap.load_program(path, overrides)
            prog = cap.program_from_module(mod, path, abstract=True)
            args = ([] if prog.params is None else [prog.params]) + list(prog.inputs)
            names = [f"x{k}" for k in range(len(prog.inputs))]
            if prog.params is None:
                c = cap.capture(prog.fn, *args, values=False, name=prog.name, source=path,
                                arg_names=names)
            else:
                c = cap.capture(prog.fn, *args, values=False, name=prog.name, source=path,
                                param_argnums=(0,), arg_names=["params"] + names)
        except Exception:
            if not first[0]:
                raise  # a shrunk setting the program cannot run at (memory_limit bisects)
            return None  # the real run reports the program's own failure, if any
        finally:
            first[0] = False
        return jax_estimate(c.trace, options.validate)

    what = "validating it" if options.validate else "running it on real arrays (--real)"
    return check_fits(path, options.overrides, estimate_at, what)
