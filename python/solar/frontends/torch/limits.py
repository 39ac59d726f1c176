"""The memory check before a PyTorch program runs on real tensors (`solar validate`,
`--validate`, `--real`): the program is captured on fake tensors first (sizes, no data) and
its real run estimated and held to the memory available (solar.memory_limit)."""

from __future__ import annotations

from typing import Any, Dict, Optional

from ...memory_limit import Estimate, check_fits, torch_estimate
from .capture import CaptureRecord, capture_loaded, check_program, load_program


def check_real_run(path: str, options: Any) -> Optional[Estimate]:
    """Refuses (solar.UserError, kind "too_large") a validation or `--real` capture of the
    program at `path` that would not fit in memory, before anything real is allocated; does
    nothing for a fake-tensor analysis. Returns the estimate (None: none was made)."""
    if not (options.validate or options.real):
        return None
    first = [True]

    def estimate_at(overrides: Dict[str, str]) -> Optional[Estimate]:
        record = CaptureRecord()  # random_ops: validation keeps their outputs
        try:
            mod = load_program(path, overrides)
            check_program(mod, path)
            trace = capture_loaded(mod, path, fake=True, train=options.train,
                                   optimizer=options.optimizer, record=record,
                                   eval_mode=options.eval_mode, unroll=options.unroll)
        except Exception:
            if not first[0]:
                raise  # a shrunk setting the program cannot run at (memory_limit bisects)
            # Not capturable on fake tensors (it reads tensor values, or a fake kernel is
            # missing): no estimate, and the real run reports its own failure, if any.
            return None
        finally:
            first[0] = False
        return torch_estimate(trace, options.validate, record.random_ops)

    what = "validating it" if options.validate else "capturing it on real tensors (--real)"
    return check_fits(path, options.overrides, estimate_at, what)
