"""Hugging Face model configurations (`solar analyze hf:NAME | config.json`) and `solar sweep`:
sizes that are not sizes, heads that do not divide, models and grids too large to build or
run without --force (kind too_large: the usage exit code), and the sweep's bad grids and
folders (docs/models.md, docs/sweep.md)."""

from __future__ import annotations

import json

from . import Case

ANALYZE = ("analyze", "--no-crosscheck", "--no-cache-aware")


def _gpt2(**values) -> str:
    """A GPT-2 config.json (one layer) with `values` replacing its fields."""
    config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 50257,
              "n_positions": 1024, "n_embd": 768, "n_layer": 1, "n_head": 12}
    config.update(values)
    return json.dumps(config)


def _llama(**values) -> str:
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
              "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 1,
              "num_key_value_heads": 8, "vocab_size": 128256}
    config.update(values)
    return json.dumps(config)


def _config(text: str, **extra) -> dict:
    return {"m/config.json": text, **extra}


# A program the sweep reads (its constants, with ast) but never runs in these cases.
PROGRAM = "batch_size = 2\nhidden = 4\n"
MANY = ",".join(str(i) for i in range(1, 1001))  # 1000 values

CASES = [
    # ---------------------------------------------------------------- sizes, before building
    Case("models-zero-width", [*ANALYZE, "m/config.json"], "usage", "m/config.json: n_embd",
         files=_config(_gpt2(n_embd=0))),
    Case("models-negative-layers-set", [*ANALYZE, "hf:gpt2", "--set", "n_layer=-3"], "usage",
         "--set n_layer: must be an integer >= 1, not -3"),
    Case("models-layers-not-a-number-set", [*ANALYZE, "hf:gpt2", "--set", "n_layer=abc"],
         "usage", "--set n_layer: must be an integer >= 1, not 'abc'"),
    Case("models-canonical-name-set", [*ANALYZE, "hf:gpt2", "--set", "num_hidden_layers=0"],
         "usage", "--set num_hidden_layers"),
    Case("models-heads-do-not-divide", [*ANALYZE, "m/config.json"], "usage",
         "n_head=7 does not divide n_embd=768", files=_config(_gpt2(n_head=7))),
    Case("models-kv-heads-do-not-divide", [*ANALYZE, "m/config.json"], "usage",
         "num_key_value_heads=5 does not divide num_attention_heads=32",
         files=_config(_llama(num_key_value_heads=5))),
    Case("models-size-as-text", [*ANALYZE, "m/config.json"], "usage",
         "hidden_size: must be an integer >= 1, not '4096'",
         files=_config(_llama(hidden_size="4096"))),
    Case("models-size-as-bool", [*ANALYZE, "m/config.json"], "usage",
         "n_layer: must be an integer >= 1, not True", files=_config(_gpt2(n_layer=True))),
    Case("models-size-with-fraction", [*ANALYZE, "m/config.json"], "usage", "vocab_size",
         files=_config(_gpt2(vocab_size=50257.5))),
    Case("models-negative-vocab", [*ANALYZE, "m/config.json"], "usage", "vocab_size",
         files=_config(_llama(vocab_size=-1))),
    Case("models-architectures-number", [*ANALYZE, "m/config.json"], "usage", "architectures",
         files=_config(_gpt2(architectures=[5]))),
    Case("models-architectures-string", [*ANALYZE, "m/config.json"], "usage", "architectures",
         files=_config(_gpt2(architectures="GPT2LMHeadModel"))),
    Case("models-unknown-model-type", [*ANALYZE, "m/config.json"], "usage",
         "model_type 'not-a-model'", files=_config(_gpt2(model_type="not-a-model"))),
    Case("models-model-type-number", [*ANALYZE, "m/config.json"], "usage",
         "model_type must be a string", files=_config(_gpt2(model_type=5))),
    Case("models-other-field-wrong-type", [*ANALYZE, "hf:gpt2", "--set",
                                           "layer_norm_epsilon='tiny'"], "usage",
         "--set layer_norm_epsilon: transformers refuses"),
    Case("models-unknown-set-field", [*ANALYZE, "hf:gpt2", "--set", "n_layers_typo=2"],
         "usage", "has no field 'n_layers_typo'"),
    Case("models-batch-zero", [*ANALYZE, "hf:gpt2", "--batch", "0"], "usage",
         "--batch must be a positive integer"),
    Case("models-negative-context", [*ANALYZE, "hf:gpt2", "--phase", "decode", "--context",
                                     "-4"], "usage", "--context must be a positive integer"),
    Case("models-batch-for-a-program", [*ANALYZE, "p.py", "--batch", "-3"], "usage",
         "--batch: for models only", files={"p.py": PROGRAM}),
    Case("models-dtype-for-a-program", [*ANALYZE, "p.py", "--dtype", "f32", "--force"], "usage",
         "--dtype, --force: for models only", files={"p.py": PROGRAM}),
    Case("models-config-not-json", [*ANALYZE, "m/config.json"], "parse", "malformed JSON",
         files=_config('{"model_type": "gpt2",')),
    Case("models-config-integer-of-5000-digits", [*ANALYZE, "m/config.json"], "parse",
         "malformed JSON", files=_config('{"model_type": "gpt2", "n_layer": 1' + "0" * 5000
                                         + "}")),
    Case("models-config-a-list", [*ANALYZE, "m/config.json"], "parse", "model_type",
         files=_config("[]")),
    Case("models-config-missing", [*ANALYZE, "nowhere/config.json"], "io", "nowhere/config.json"),
    # ---------------------------------------------------------------- the work estimate
    Case("models-a-billion-layers", [*ANALYZE, "m/config.json"], "usage",
         "past the limit of 500,000 ops", files=_config(_gpt2(n_layer=1_000_000_000)),
         limit_s=40),
    Case("models-a-billion-layers-set", [*ANALYZE, "hf:llama-3.1-8b", "--set",
                                         "num_hidden_layers=1000000000"], "usage",
         "--force runs it anyway", limit_s=40),
    Case("models-layers-past-every-float", [*ANALYZE, "hf:gpt2", "--set",
                                            "n_layer=" + "9" * 400], "usage",
         "past the limit", limit_s=40),
    Case("models-width-past-the-parameter-limit", [*ANALYZE, "m/config.json"], "usage",
         "parameters, past the limit", files=_config(_gpt2(n_embd=2 ** 40, n_head=1)),
         limit_s=40),
    Case("models-batch-past-the-activation-limit",
         [*ANALYZE, "hf:gpt2", "--set", "n_layer=1", "--batch", "4000000000000", "--seq",
          "1000000000"], "usage", "largest activation", limit_s=40),
    # A training step runs Mamba's scan token by token (a prefill records it as one op).
    Case("models-mamba-training-past-the-limit",
         [*ANALYZE, "hf:mamba-130m", "--train", "--seq", "4096"], "usage", "recorded ops",
         limit_s=40),
    # ---------------------------------------------------------------- solar sweep
    Case("sweep-a-million-points", ["sweep", "p.py", "--grid", f"batch_size={MANY}", "--grid",
                                    f"hidden={MANY}", "--out", "out"], "usage",
         "the sweep has 1,000,000 points", files={"p.py": PROGRAM}, limit_s=30),
    Case("sweep-a-million-points-spec", ["sweep", "s.json"], "usage",
         "past the limit of 10,000",
         files={"p.py": PROGRAM, "s.json": json.dumps(
             {"programs": ["p.py"], "grid": {"batch_size": list(range(1, 1001)),
                                             "hidden": list(range(1, 1001))}, "out": "out"})},
         limit_s=30),
    Case("sweep-empty-grid", ["sweep", "p.py", "--grid", "batch_size=", "--out", "out"], "usage",
         "grid batch_size: no values", files={"p.py": PROGRAM}),
    Case("sweep-empty-grid-spec", ["sweep", "s.json"], "usage", "grid batch_size: no values",
         files={"p.py": PROGRAM, "s.json": json.dumps(
             {"programs": ["p.py"], "grid": {"batch_size": []}, "out": "out"})}),
    Case("sweep-grid-value-not-a-literal", ["sweep", "p.py", "--grid", "batch_size=[1,2",
                                            "--out", "out"], "usage",
         "is neither a Python literal", files={"p.py": PROGRAM}),
    Case("sweep-grid-value-an-expression", ["sweep", "p.py", "--grid", "batch_size=2**70",
                                            "--out", "out"], "usage",
         "'2**70' is neither a Python literal", files={"p.py": PROGRAM}),
    Case("sweep-model-negative-batch", ["sweep", "hf:gpt2", "--grid", "batch=1,-8", "--out",
                                        "out"], "usage",
         "hf:gpt2: grid batch=-8: --batch must be a positive integer"),
    Case("sweep-model-zero-seq-spec", ["sweep", "s.yaml"], "usage",
         "--seq must be a positive integer",
         files={"s.yaml": "programs: [hf:gpt2]\nmodel: {seq: 0}\nout: out\n"}),
    Case("sweep-model-bool-batch", ["sweep", "hf:gpt2", "--grid", "batch_size=True", "--out",
                                    "out"], "usage", "not True"),
    Case("sweep-model-bad-phase", ["sweep", "hf:gpt2", "--phase", "sideways", "--out", "out"],
         "usage", "--phase 'sideways'"),
    Case("sweep-model-bad-dtype", ["sweep", "hf:gpt2", "--grid", "dtype=bf16,q4", "--out",
                                   "out"], "usage", "--dtype 'q4'"),
    Case("sweep-model-not-in-the-registry", ["sweep", "hf:not-a-model", "--out", "out"], "usage",
         "is not in Solar's model registry"),
    Case("sweep-model-config-bad-architectures", ["sweep", "m/config.json", "--out", "out"],
         "usage", "architectures", files=_config(_gpt2(architectures=[5]))),
    Case("sweep-out-is-a-file", ["sweep", "p.py", "--out", "out"], "io", "not a folder",
         files={"p.py": PROGRAM, "out": "a file\n"}),
    Case("sweep-out-under-a-file", ["sweep", "p.py", "--out", "f/out"], "io", "does not exist",
         files={"p.py": PROGRAM, "f": "a file\n"}),
    Case("sweep-a-million-jobs", ["sweep", "p.py", "--jobs", "1000000", "--out", "out"],
         "usage", "local worker processes", files={"p.py": PROGRAM}),
    Case("sweep-spec-not-utf8", ["sweep", "s.yaml"], "parse", "not UTF-8",
         files={"s.yaml": b"programs: [p.py]\n\xff\xfe\n"}),
    Case("sweep-spec-integer-of-5000-digits", ["sweep", "s.json"], "parse", "malformed JSON",
         files={"s.json": '{"programs": ["p.py"], "jobs": 1' + "0" * 5000 + "}"}),
    Case("sweep-spec-nested-too-deep", ["sweep", "s.yaml"], "parse", "s.yaml",
         files={"s.yaml": "programs: " + "[" * 100000 + "]" * 100000 + "\n"}),
]
