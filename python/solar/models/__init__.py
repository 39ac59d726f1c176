"""Hugging Face architectures from their configurations, offline: the registry of shipped
configurations, building a model on fake tensors, and the prefill and decode phases
(docs/models.md). Importing this package imports neither torch nor transformers: `solar`
starts without them, and analyze_model imports them (through solar.programs) when a model is
analyzed."""

from .analyze import analyze_model
from .parallel import Plan, plan_text
from .policy import policy_text
from .registry import ModelSpec, entries, is_model_ref, lookup, names, resolve
from .run import ModelRun
from .section import model_text


__all__ = ["ModelRun", "ModelSpec", "Plan", "analyze_model", "entries", "is_model_ref", "lookup",
           "model_text", "names", "plan_text", "policy_text", "resolve"]
