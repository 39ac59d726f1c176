"""The PyTorch frontend: aten-level capture on fake tensors (docs/torch-frontend.md)."""

from .capture import OPTRACE_SCHEMA, capture, capture_program, load_program

__all__ = ["OPTRACE_SCHEMA", "capture", "capture_program", "load_program"]
