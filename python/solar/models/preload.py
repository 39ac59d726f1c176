"""What `solar server` imports once for the registry's models: each model type's
transformers configuration and modeling modules. The first `hf:` model of a process imports
them (1.5-2 s on a 2-core machine, most of it transformers' shared modules: activations,
kernels, masking); a served command's child would otherwise pay that again every time.
"""

from __future__ import annotations

import importlib
from typing import Dict

from . import registry


def registry_modules() -> Dict[str, str]:
    """Imports the configuration and modeling module of every model type in the registry
    (policies' component types included); per model type, "imported" or why not (a type
    this transformers lacks is imported, or refused, by its own command)."""
    from transformers.models.auto.configuration_auto import model_type_to_module_name

    types = set()
    for entry in registry.entries():
        _model_types(entry.get("config"), types)
    done = {}
    for model_type in sorted(types):
        module = model_type_to_module_name(model_type)
        try:
            for part in ("configuration", "modeling"):
                importlib.import_module(f"transformers.models.{module}.{part}_{module}")
            done[model_type] = "imported"
        except Exception as e:  # noqa: BLE001 - the command itself reports it
            done[model_type] = f"not imported: {type(e).__name__}"
    return done


def _model_types(config, types: set) -> None:
    """Every `model_type` in a config, its nested configs' (a policy's vision and text
    configurations) included."""
    if isinstance(config, dict):
        if isinstance(config.get("model_type"), str):
            types.add(config["model_type"])
        for value in config.values():
            _model_types(value, types)
