"""Hugging Face architectures from their configurations, offline: the registry of shipped
configurations, building a model on fake tensors, and the prefill and decode phases
(docs/models.md). Importing this package imports neither torch nor transformers: `solar`
starts without them, and analyze_model imports them when a model is analyzed."""

from .registry import ModelSpec, entries, is_model_ref, lookup, names, resolve
from .run import ModelRun
from .section import model_text


def analyze_model(run, options=None):
    """One phase of a model, captured and analyzed (solar.models.analyze.analyze_model)."""
    from .analyze import analyze_model as _analyze

    return _analyze(run, options)


__all__ = ["ModelRun", "ModelSpec", "analyze_model", "entries", "is_model_ref", "lookup",
           "model_text", "names", "resolve"]
