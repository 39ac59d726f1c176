"""What a process that analyzes many programs needs (the workers of `solar suite` and
`solar sweep`, and `solar analyze --shrink`): the size ladder's retries, the cause and exit
code of a program's failure, a warm-up before the first program, and torch's process-wide
state reset between programs (docs/suite.md).
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from typing import Any, Dict, List, Optional, Tuple

from . import _core, programs
from .analysis import ProgramOptions, analyze_trace
from .program_source import OverrideError, ProgramFormatError

# Characters of a rejected size setting's error kept in the record of the ladder.
_ERROR_CHARS = 500


def error_cause(e: BaseException) -> Tuple[str, Optional[int]]:
    """(cause, exit code of `solar analyze` for it) of an exception out of analyze_file."""
    codes = _core.EXIT_CODES
    if isinstance(e, _core.Error):
        code = getattr(e, "exit_code", codes["internal"])
        if getattr(e, "kind", None) == "too_large":  # refused before allocating: memory_limit
            return "too_large", code
        for name, value in codes.items():
            if value == code:
                return name, code
        return "internal", code
    if isinstance(e, OverrideError):
        return "usage", codes["usage"]
    if isinstance(e, ProgramFormatError):
        return "not_a_program", codes["parse"]
    if isinstance(e, MemoryError) or any(
            m in str(e) for m in ("can't allocate memory", "not enough memory")):
        return "out_of_memory", codes["program_error"]
    return "program_error", codes["program_error"]


def _retry_larger(e: BaseException) -> bool:
    """Whether a shrunk program's failure may be the shrinking's doing, so the next, larger
    setting is tried: the program itself raised (its shape arithmetic broke). Solar's own
    errors, bad overrides and allocation failures are answers, not reasons to retry."""
    if not isinstance(e, Exception) or isinstance(
            e, (_core.Error, OverrideError, ProgramFormatError, MemoryError)):
        return False
    return error_cause(e)[0] == "program_error"


def analyze_with_ladder(path: str, options: Any,
                        ladder: List[Dict[str, Any]]) -> Tuple[Any, Dict[str, Any]]:
    """analyze_file under the first size setting of `ladder` (shrink_ladder) at which the
    program runs: (ProgramAnalysis, {"limit", "overrides", "rejected": [{"limit", "error"}]}).
    A setting is abandoned only when the program itself raises (_retry_larger); the last
    setting's error is raised as is, with the record of the rejected ones in its
    `solar_shrink` attribute."""
    rejected: List[Dict[str, Any]] = []
    for i, setting in enumerate(ladder):
        opts = dataclasses.replace(options, overrides=dict(setting["overrides"]))
        try:
            result = programs.analyze_file(path, opts)
        except Exception as e:
            if i + 1 < len(ladder) and _retry_larger(e):
                entry = {"limit": setting["limit"],
                         "error": f"{type(e).__name__}: {e}"[:_ERROR_CHARS]}
                if "scale" in setting:
                    entry["scale"] = setting["scale"]
                rejected.append(entry)
                continue
            e.solar_shrink = {"limit": setting["limit"],  # type: ignore[attr-defined]
                              "overrides": setting["overrides"], "rejected": rejected}
            raise
        used = {"limit": setting["limit"], "overrides": setting["overrides"],
                "rejected": rejected}
        if "scale" in setting:
            used["scale"] = setting["scale"]
        return result, used
    raise ValueError("analyze_with_ladder: an empty ladder")


def warm_up(torch) -> None:
    """Captures and analyzes a one-layer model, so that the one-time costs of the first
    capture (lazy imports, the device database) are paid before the worker says it is
    ready and not charged to the first program's --timeout."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            capture = programs.torch_capture().capture
            trace = capture(torch.nn.Linear(4, 4), torch.zeros(2, 4), name="warm_up")
            analyze_trace(trace, "<warm-up>", ProgramOptions())
    except Exception as e:  # noqa: BLE001 - the programs will meet it too and report it
        sys.stderr.write(f"solar suite: warm-up failed: {type(e).__name__}: {e}\n")


def reset_torch_state(torch, threads: int) -> None:
    """Undoes process-wide settings a program may have changed, before the next one."""
    torch.set_default_dtype(torch.float32)
    torch.set_grad_enabled(True)
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
