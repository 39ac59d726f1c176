"""A model configuration's values checked before transformers builds anything: every size-like
field an integer in range, the attention heads dividing the hidden size, the key/value heads
dividing the heads. A bad value is one line naming the field and where it came from (the
config.json, or `--set NAME`), exit 2, instead of a ZeroDivisionError deep in a model's
constructor or a model with -3 layers (docs/models.md, "Checked before building").

The rule is generic, not a table per architecture: the fields are found in the config class
transformers declares for the model type (its typed fields, and its attribute map, which
gives GPT-2's n_embd, n_layer, n_head the canonical names hidden_size, num_hidden_layers,
num_attention_heads), by name:
- a *width* (`*_size`, `*_dim`, d_model, d_kv, d_ff, n_embd, n_inner, n_positions, n_ctx,
  max_*_positions, `*position_embeddings`) and the main counts (layers, attention heads,
  key/value heads, and their encoder/decoder forms) must be an integer >= 1;
- any other *count* (`num_*`, `n_*`, `*_layers`, `*_heads`, `*_experts`) an integer >= 0: a
  model may have no shared experts or no dense layers, never -1 of them;
- where the config class itself defaults a field below that floor (DeBERTa's
  type_vocab_size 0, a -1 "unset" sentinel), the floor is the default.
A bool is not an integer. `None` passes where the class declares the field optional
(head_dim: None derives it from the hidden size). The rule accepts the defaults of every
config class transformers has (829) but three, whose heads do not divide their hidden size
and that declare no head size (GLM-4 MoE's, Qwen3-Omni's text model: their published
configs give head_dim), tests/python/test_models.py.

Torch-free at import; the config classes come from transformers when a model is analyzed.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple

from ..errors import user_error

# The canonical names of a configuration's sizes (transformers' PretrainedConfig spelling);
# a config class's attribute_map maps them to its own fields (GPT-2: hidden_size -> n_embd).
CANONICAL = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
             "intermediate_size", "vocab_size", "head_dim", "max_position_embeddings")

_WIDTH = re.compile(r"\w*_size|\w*_dim|d_model|d_kv|d_ff|n_embd|n_inner|n_positions|n_ctx|"
                    r"max_\w*positions|\w*position_embeddings")
_COUNT = re.compile(r"(num|n)_\w+|\w*_layers|\w*_heads|\w*_experts")
# Counts that are a model's main stacks: >= 1 like the widths.
_MAIN_COUNT = re.compile(r"(num_|n_)(hidden_|encoder_|decoder_)?layers?|"
                         r"(hidden_|encoder_|decoder_)?layers|"
                         r"(num_|n_)(encoder_|decoder_)?(attention_)?heads?|"
                         r"(encoder_|decoder_)?attention_heads|num_key_value_heads")
# The attention heads that split a model's hidden size (a sub-module's own heads, such as a
# predictor's pred_num_attention_heads over its pred_hidden_size, do not).
_SPLITTING_HEADS = re.compile(r"(encoder_|decoder_)(num_)?attention_heads|"
                              r"num_(encoder_|decoder_)attention_heads")
# A head size given outright (head_dim, T5's d_kv, Reformer's attention_head_size): the heads
# need not split the hidden size.
_HEAD_SIZE = re.compile(r"\w*head_(dim|size)|d_kv|kv_channels")
# Ids, indices and token ids are values, not sizes.
_NOT_A_SIZE = re.compile(r"\w*(_id|_ids|_idx|_index|_token|_tokens|_token_ids?)")


@dataclasses.dataclass(frozen=True)
class SizeField:
    """A size-like field of a config class: the least value it takes and which other
    values its declared type admits (None, a string such as Mamba's time_step_rank "auto",
    a list of per-layer values, a float)."""

    floor: int
    none: bool = False
    text: bool = False
    seq: bool = False
    real: bool = False


def config_class(model_type: Any, origin: str):
    """transformers' config class for `model_type`; a usage error naming `origin` when it
    is not a model type transformers knows."""
    from transformers import CONFIG_MAPPING

    if not isinstance(model_type, str):
        raise user_error(f"{origin}: model_type must be a string (a transformers model type "
                         f"such as \"llama\"), not {model_type!r}", "usage")
    if model_type not in CONFIG_MAPPING:
        known = sorted(CONFIG_MAPPING.keys())
        raise user_error(f"{origin}: model_type {model_type!r} is not a model type this "
                         f"transformers knows ({len(known)} types, e.g. llama, gpt2, t5, "
                         "mixtral)", "usage")
    return CONFIG_MAPPING[model_type]


def _type_words(annotation: Any) -> set:
    return set(re.findall(r"\w+", str(annotation)))


def size_fields(cls) -> Dict[str, SizeField]:
    """The size-like fields of a config class, by their own (not canonical) names."""
    out: Dict[str, SizeField] = {}
    try:
        fields = dataclasses.fields(cls)
    except TypeError:  # not a dataclass: the canonical names only
        fields = ()
    for f in fields:
        words = _type_words(f.type)
        if "int" not in words or _NOT_A_SIZE.fullmatch(f.name):
            continue
        if _WIDTH.fullmatch(f.name) or _MAIN_COUNT.fullmatch(f.name):
            floor = 1
        elif _COUNT.fullmatch(f.name):
            floor = 0
        else:
            continue
        default = f.default
        if isinstance(default, int) and not isinstance(default, bool):
            floor = min(floor, default)
        out[f.name] = SizeField(floor, none="None" in words, text="str" in words,
                                seq=bool(words & {"list", "tuple"}),
                                real="float" in words)
    attribute_map = getattr(cls, "attribute_map", {}) or {}
    if fields:  # a dataclass: its declared types say it all (LXMERT's layers are a mapping)
        return out
    for name in CANONICAL:
        out.setdefault(attribute_map.get(name, name),
                       SizeField(1, none=name in ("num_key_value_heads", "head_dim",
                                                  "intermediate_size")))
    return out


def own_name(cls, name: str) -> str:
    """The config class's own field for `name` (a canonical name through its attribute map)."""
    return (getattr(cls, "attribute_map", {}) or {}).get(name, name)


def _describe(value: Any) -> str:
    kind = {str: "a string", float: "a number with a fraction", bool: "a boolean",
            list: "a list", dict: "a mapping", type(None): "null"}.get(type(value))
    return f"{value!r}" + (f" ({kind})" if kind and not isinstance(value, (bool, type(None)))
                           else "")


def check_sizes(cls, values: Mapping[str, Any], origins: Mapping[str, str]) -> None:
    """Every size-like field in `values` (a config.json's values with the --set overrides,
    keyed by the config class's own names) in range, and the heads dividing what they
    split. `origins[name]` says where each value came from. Raises a usage error naming the
    first bad field and its origin."""
    fields = size_fields(cls)
    for name, value in values.items():
        rule = fields.get(name)
        if rule is None:
            continue
        _check_value(name, value, rule, origins.get(name, "config"))
    _check_divisibility(cls, values, origins)


def _check_value(name: str, value: Any, rule: SizeField, origin: str) -> None:
    want = "an integer >= 1" if rule.floor >= 1 else f"an integer >= {rule.floor}"
    if value is None and rule.none:
        return
    if isinstance(value, str) and rule.text:
        return  # a word the field takes ("auto"): transformers checks which
    if isinstance(value, float) and rule.real and not isinstance(value, bool):
        return
    if isinstance(value, (list, tuple)) and rule.seq:  # per layer, or nested (kernel sizes)
        for v in value:
            _check_value(name, v, dataclasses.replace(rule, none=False), origin)
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise user_error(f"{_where(origin, name)}: must be {want}, not {_describe(value)}",
                         "usage")
    if value < rule.floor:
        raise user_error(f"{_where(origin, name)}: must be {want}, not {value}", "usage")


def _where(origin: str, name: str) -> str:
    """`--set n_layer` for an override, `path/config.json: n_layer` for a file's field."""
    return origin if origin.startswith("--set ") else f"{origin}: {name}"


def _default(cls, name: str) -> Any:
    try:
        for f in dataclasses.fields(cls):
            if f.name == name:
                return None if f.default is dataclasses.MISSING else f.default
    except TypeError:
        pass
    return getattr(cls, name, None)


def _divides(cls, values: Mapping[str, Any], origins: Mapping[str, str],
             part: str, whole: str, what: str) -> None:
    """`whole` (a field or its class default) is a multiple of `part`, when both are
    positive integers; an error names both fields and where the one set last came from."""
    p = values.get(part, _default(cls, part))
    w = values.get(whole, _default(cls, whole))
    ints = all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (p, w))
    if not ints or w % p == 0:
        return
    given = [n for n in (part, whole) if n in values]
    origin = next((origins[n] for n in given if origins.get(n, "").startswith("--set ")),
                  origins.get(given[0], "config") if given else "config")
    raise user_error(f"{origin}: {part}={p} does not divide {whole}={w} ({what})", "usage")


def _check_divisibility(cls, values: Mapping[str, Any], origins: Mapping[str, str]) -> None:
    hidden = own_name(cls, "hidden_size")
    heads = own_name(cls, "num_attention_heads")
    head_dim = own_name(cls, "head_dim")
    kv = own_name(cls, "num_key_value_heads")
    sized = [n for n, v in values.items() if v is not None and _HEAD_SIZE.fullmatch(n)]
    if not sized:  # no head size given: the heads split the hidden size
        head_fields = [heads] + sorted(n for n in size_fields(cls)
                                       if _SPLITTING_HEADS.fullmatch(n) and n != heads)
        for h in head_fields:
            _divides(cls, values, origins, h, hidden,
                     "each attention head takes an equal share of the hidden size; set "
                     f"{head_dim} to size the heads otherwise")
    _divides(cls, values, origins, kv, heads,
             "grouped-query attention shares each key/value head among an equal number of "
             "query heads")


def merged_values(spec_config: Mapping[str, Any], file: str, overrides: Mapping[str, Any],
                  cls) -> Tuple[Dict[str, Any], Dict[str, str]]:
    """The config.json's values (model_type left out) with the --set overrides applied, keyed
    by the class's own field names (`--set num_hidden_layers=2` on GPT-2 replaces n_layer),
    and where each came from."""
    values: Dict[str, Any] = {}
    origins: Dict[str, str] = {}
    for source, items in ((None, spec_config.items()), ("--set", overrides.items())):
        for key, value in items:
            if key == "model_type":
                continue
            own = own_name(cls, key)
            values[own] = value
            origins[own] = file if source is None else f"--set {key}"
    return values, origins


def known_fields(cls, file_keys: Iterable[str]) -> set:
    """The names a --set may give a config of `cls`: its fields, their aliases and the keys of
    its file."""
    try:
        fields = {f.name for f in dataclasses.fields(cls)}
    except TypeError:
        fields = {n for n in dir(cls) if not n.startswith("_")}
    return fields | set(getattr(cls, "attribute_map", {}) or {}) | set(file_keys)


def unknown_overrides(cls, file_keys: Iterable[str], overrides: Iterable[str]) -> Optional[str]:
    """The first --set name the config has no field for, else None."""
    known = known_fields(cls, file_keys)
    return next((k for k in overrides if k not in known), None)
