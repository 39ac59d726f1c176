"""The shipped model configurations (registry/*.json, schema solar.model.v1) and a user's own
config.json: what `solar analyze hf:NAME` and `solar analyze path/config.json` build.

A registry entry carries the Hugging Face config.json values that define the architecture
(`config`, with its `source`), the task that picks the model class, the names programs pass
to `from_pretrained` (`hub_names`), and the parameter count the model's card publishes
(`published`), which tests compare with the count of the model built from the config.
Torch-free and transformers-free: listing and resolving names costs no import.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Dict, List, Optional

from ..errors import user_error

REGISTRY = os.path.join(os.path.dirname(__file__), "registry")

# task -> what the model computes per phase (docs/models.md "Tasks")
TASKS = ("causal-lm", "seq2seq-lm", "encoder", "image-classification", "vla")

# A user's config.json names its class in "architectures"; the suffix gives the task.
_TASK_BY_SUFFIX = (("ForCausalLM", "causal-lm"), ("LMHeadModel", "causal-lm"),
                   ("ForConditionalGeneration", "seq2seq-lm"),
                   ("ForImageClassification", "image-classification"),
                   ("Model", "encoder"))


@dataclasses.dataclass
class ModelSpec:
    """One model to build: its name, task, config.json values and where they come from."""

    name: str
    task: str
    config: Dict[str, Any]  # config.json, model_type included
    source: str  # the registry file or the user's config.json, and the values' origin
    published: Optional[Dict[str, Any]] = None  # {"params", "exact", "rounded_to", "source"}
    hf_id: Optional[str] = None
    file: str = ""  # the file the values were read from (messages name it)

    @property
    def model_type(self) -> str:
        return self.config["model_type"]


def _read(path: str) -> Dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise user_error(f"{path}: {e.strerror}", "io") from None
    except json.JSONDecodeError as e:
        raise user_error(f"{path}:{e.lineno}:{e.colno}: malformed JSON: {e.msg}", "parse") from None
    except (ValueError, RecursionError) as e:  # an integer of over 4300 digits, deep nesting
        raise user_error(f"{path}: malformed JSON: {' '.join(str(e).split())[:200]}",
                         "parse") from None


def entries() -> List[Dict[str, Any]]:
    """Every registry entry, by name."""
    files = sorted(f for f in os.listdir(REGISTRY) if f.endswith(".json"))
    return [_read(os.path.join(REGISTRY, f)) for f in files]


def names() -> List[str]:
    return [e["name"] for e in entries()]


def _spec(entry: Dict[str, Any], where: str) -> ModelSpec:
    return ModelSpec(name=entry["name"], task=entry["task"], config=dict(entry["config"]),
                     source=f"{where} (values from {entry['source']})",
                     published=entry.get("published"), hf_id=entry.get("hf_id"), file=where)


def _unknown(what: str) -> Exception:
    return user_error(
        f"{what} is not in Solar's model registry ({', '.join(names())}); pass the model's "
        "own config.json instead (solar analyze path/to/config.json, docs/models.md)", "usage")


def lookup(name: str) -> ModelSpec:
    """The registry entry `name` (case-insensitive), or one whose hub_names holds it (the
    name a program passes to from_pretrained, e.g. "meta-llama/Llama-3.1-8B")."""
    key = name.lower()
    for e in entries():
        known = [e["name"], e.get("hf_id", "")] + list(e.get("hub_names", []))
        if key in (k.lower() for k in known if k):
            return _spec(e, os.path.join(REGISTRY, e["name"] + ".json"))
    raise _unknown(f"model {name!r}")


def from_config_file(path: str, task: Optional[str] = None) -> ModelSpec:
    """A user's config.json; the task from --task, else from its "architectures" entry."""
    config = _read(path)
    if not isinstance(config, dict) or "model_type" not in config:
        raise user_error(f"{path}: a Hugging Face config.json has a \"model_type\" field", "parse")
    architectures = config.get("architectures")
    if architectures is not None and (not isinstance(architectures, list) or not all(
            isinstance(a, str) for a in architectures)):
        raise user_error(f"{path}: architectures must be a list of model class names "
                         f"([\"LlamaForCausalLM\"]), not {architectures!r}"[:300], "usage")
    if task is None:
        arch = (architectures or [""])[0]
        task = next((t for suffix, t in _TASK_BY_SUFFIX if arch.endswith(suffix)), None)
        if task is None:
            raise user_error(f"{path}: cannot tell the task from architectures={arch!r}; "
                             f"pass --task ({', '.join(TASKS)})", "usage")
    name = os.path.basename(os.path.dirname(os.path.abspath(path))) or "model"
    return ModelSpec(name=name, task=task, config=config, source=path, file=path)


def is_model_ref(program: str) -> bool:
    """Whether `solar analyze PROGRAM` names a model rather than a program file."""
    return program.startswith("hf:") or os.path.basename(program) == "config.json" or (
        program.endswith(".json") and os.path.dirname(os.path.abspath(program)) == REGISTRY)


def resolve(ref: str, task: Optional[str] = None) -> ModelSpec:
    """hf:NAME (the registry) or a config.json path; --task overrides the entry's task."""
    if ref.startswith("hf:"):
        spec = lookup(ref[3:])
    elif os.path.isfile(ref):
        spec = from_config_file(ref, task)
    else:
        raise user_error(f"{ref}: no such file", "io")
    if task is not None:
        if task not in TASKS:
            raise user_error(f"--task {task!r}: expected one of {', '.join(TASKS)}", "usage")
        spec.task = task
    return spec
