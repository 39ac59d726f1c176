"""The memory check before a JAX program runs on real arrays (`solar validate`,
`--validate`, `--real`): the program is traced on abstract values first (shapes, no data)
and its real run estimated and held to the memory available (solar.memory_limit)."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from ...memory_limit import Estimate, check_fits, jax_estimate


def check_real_run(path: str, options: Any,
                   abstract_trace: Callable[[Dict[str, str]], Dict[str, Any]]
                   ) -> Optional[Estimate]:
    """Refuses (solar.UserError, kind "too_large") a validation or `--real` run of the JAX
    program at `path` that would not fit in memory, before its inputs and parameters are
    made; does nothing for an abstract analysis. abstract_trace(overrides): the program's
    OpTrace at those `--set` overrides, captured on abstract values (program.py loads and
    captures it). Returns the estimate (None: none made)."""
    if not (options.validate or options.real):
        return None
    first = [True]

    def estimate_at(overrides: Dict[str, str]) -> Optional[Estimate]:
        try:
            trace = abstract_trace(overrides)
        except Exception:
            if not first[0]:
                raise  # a shrunk setting the program cannot run at (memory_limit bisects)
            return None  # the real run reports the program's own failure, if any
        finally:
            first[0] = False
        return jax_estimate(trace, options.validate)

    what = "validating it" if options.validate else "running it on real arrays (--real)"
    return check_fits(path, options.overrides, estimate_at, what)
