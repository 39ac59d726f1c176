"""Layers captured once (the default; SOLAR_LAYERS_ONCE=0 turns it off;
python/solar/models/layers_once.py, docs/layers-once.md): the trace rebuilt from a prefix of
the layers is the full capture, tensor for tensor and op for op, so every level's totals, the
module rows, op counts and coverage are the unrolled model's; compared here for a Llama, a
Gemma-2 whose local and global layers alternate, a DeepSeek-V3 whose leading dense layers
share a class with its MoE layers, every registry decoder at 5 layers and pi0's integration
steps."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from solar import models  # noqa: E402
from solar.models import layers_once  # noqa: E402
from solar.programs import ProgramOptions  # noqa: E402

SMALL = {"hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4,
         "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1000}
CASES = [
    # (model, config overrides, the prefix captured: every repeated layer structure twice)
    ("llama-3.2-1b", {**SMALL, "num_hidden_layers": 4}, 2),
    # local, global, local, global captured; layers 4 (local) and 5 (global) replicated
    ("gemma-2-9b", {**SMALL, "num_hidden_layers": 6, "sliding_window": 16}, 4),
    # dense, dense, MoE, MoE captured; layers 4 and 5 (MoE) replicated
    ("deepseek-v3", {"num_hidden_layers": 6, "first_k_dense_replace": 2}, 4),
]


@pytest.fixture
def expansions(monkeypatch):
    """The templates (per layer or step, the one it repeats) of the expansions that succeed:
    a NotSound falls back to the full capture silently, whose trace equals itself."""
    done = []
    real_expand = layers_once.expand

    def spy(*args):
        full = real_expand(*args)
        done.append(list(args[2]))
        return full

    monkeypatch.setattr(layers_once, "expand", spy)
    return done


def _analyze(monkeypatch, name, config, phase, once, **kw):
    monkeypatch.setenv(layers_once.ENV, "1" if once else "0")
    run = models.ModelRun(f"hf:{name}", phase=phase, batch=2, seq=16, context=32,
                          config=dict(config), **kw)
    return models.analyze_model(run, ProgramOptions(crosscheck=False))


@pytest.mark.parametrize("phase", ["prefill", "decode"])
@pytest.mark.parametrize("name,config,prefix", CASES)
def test_grouped_trace_and_report_are_the_unrolled_ones(monkeypatch, expansions, name, config,
                                                        prefix, phase):
    unrolled = _analyze(monkeypatch, name, config, phase, once=False)
    assert expansions == []  # SOLAR_LAYERS_ONCE=0: every layer captured
    grouped = _analyze(monkeypatch, name, config, phase, once=True)
    # replicated from the prefix, not captured whole
    assert len(expansions) == 1 and expansions[0][:prefix] == list(range(prefix))
    assert max(expansions[0]) == prefix - 1
    assert grouped.trace == unrolled.trace  # same tensors, storages, ops, module paths
    assert grouped.warnings == unrolled.warnings
    # Every level (unfused, framework, fused, cache-aware), module rows, counts, coverage.
    assert grouped.report.to_dict() == unrolled.report.to_dict()


@pytest.mark.parametrize("quant,kv_dtype", [("fp8", None), ("w4a16", "fp8"), (None, "fp8")])
def test_quantized_steps_are_the_unrolled_ones(monkeypatch, expansions, quant, kv_dtype):
    # A scheme rewrites the captured trace: the rebuilt one gives the same rewrite.
    name, config, _ = CASES[0]
    grouped, unrolled = (_analyze(monkeypatch, name, config, "decode", once, quant=quant,
                                  kv_dtype=kv_dtype) for once in (True, False))
    assert len(expansions) == 1
    assert grouped.trace == unrolled.trace
    assert grouped.report.to_dict() == unrolled.report.to_dict()


def test_a_parallel_plan_shards_the_unrolled_trace(monkeypatch, expansions):
    # tp 4 x pp 2 on a DGX H100, 2 microbatches: each stage's rank graph from the same trace
    from solar.models import parallel

    def analyze(once):
        monkeypatch.setenv(layers_once.ENV, "1" if once else "0")
        run = models.ModelRun("hf:llama-3.1-8b", phase="decode", batch=4, context=64,
                              config={"num_hidden_layers": 4},
                              plan=parallel.Plan(tp=4, pp=2, microbatches=2))
        return models.analyze_model(run, ProgramOptions(
            crosscheck=False, cache_aware=False, archs=(), system="DGX_H100"))

    grouped, unrolled = analyze(True), analyze(False)
    assert len(expansions) == 1
    assert grouped.trace == unrolled.trace
    assert grouped.report.to_dict() == unrolled.report.to_dict()


@pytest.mark.parametrize("sigs,prefix,templates", [
    ("aaaa", 2, [0, 1, 1, 1]),
    ("abababa", 4, [0, 1, 2, 3, 2, 3, 2]),  # Gemma-2: local/global alternate
    ("dddmmmm", 5, [0, 1, 2, 3, 4, 4, 4]),  # DeepSeek-V3: 3 dense, then MoE
    ("dmmmm", 3, [0, 1, 2, 2, 2]),  # DeepSeek-V2-Lite: one dense layer, captured as is
    ("aab", None, None),  # the prefix would be the whole model
    ("aa", None, None),  # the prefix would be the whole model
])
def test_prefix_holds_every_repeated_layer_structure_twice(sigs, prefix, templates):
    assert layers_once.prefix_length(list(sigs)) == prefix
    if prefix is not None:
        assert layers_once.templates(list(sigs), prefix) == templates


def test_a_trace_whose_layers_interleave_is_refused():
    trace = {"tensors": [{"id": 0, "role": "input", "shape": [1], "dtype": "f32",
                          "storage": 0}],
             "ops": [{"op": "aten::neg.default", "args": {"self": {"tensor": 0}},
                      "outputs": [None], "module": m}
                     for m in ("model.layers.1", "model.layers.0")]}
    with pytest.raises(layers_once.NotSound, match="out of order"):
        layers_once.expand(trace, "model.layers", [0, 1, 1], 2)


def _two_layers(scale_of_layer_1):
    """A prologue op (-x), then two layers of one op each (h * scale), each reading the
    result before it."""
    t = [{"id": i, "role": "input" if i == 0 else "intermediate", "shape": [4], "dtype": "f32",
          "storage": i} for i in range(4)]
    ops = [{"op": "aten::neg.default", "args": {"self": {"tensor": 0}}, "outputs": [1]},
           {"op": "aten::mul.Tensor", "args": {"self": {"tensor": 1}, "other": 0.5},
            "outputs": [2], "module": "model.layers.0"},
           {"op": "aten::mul.Tensor", "args": {"self": {"tensor": 2},
                                              "other": scale_of_layer_1},
            "outputs": [3], "module": "model.layers.1"}]
    return {"tensors": t, "ops": ops}


def test_a_layer_whose_ops_depend_on_its_index_is_not_replicated():
    # GPT-2's scale_attn_by_inverse_layer_idx: a constant that changes with the layer
    with pytest.raises(layers_once.NotSound, match="layers 0 and 1 differ"):
        layers_once.expand(_two_layers(0.25), "model.layers", [0, 1, 1], 2, None, {1: 0})


def test_replicated_layers_chain_their_results():
    full = layers_once.expand(_two_layers(0.5), "model.layers", [0, 1, 1, 1], 2, None, {1: 0})
    ops = full["ops"]
    assert [op.get("module") for op in ops] == [None] + [f"model.layers.{i}" for i in range(4)]
    assert [op["args"]["self"]["tensor"] for op in ops] == [0, 1, 2, 3, 4]
    assert [op["outputs"] for op in ops] == [[1], [2], [3], [4], [5]]
    assert [t["storage"] for t in full["tensors"]] == [0, 1, 2, 3, 4, 5]


def test_sweep_workers_warm_each_model_once_only_when_layers_once(monkeypatch):
    from solar.sweep import run

    tasks = [{"kind": "model", "path": "hf:llama-3.1-8b", "model_kwargs": {"batch": b}}
             for b in (1, 8)] + [{"kind": "program", "path": "mlp.py"}]
    monkeypatch.setenv(layers_once.ENV, "0")
    assert run.model_warm_ups(tasks) is True  # transformers imported, as before
    monkeypatch.delenv(layers_once.ENV)  # the default
    assert run.model_warm_ups(tasks) == [("hf:llama-3.1-8b", {"batch": 1})]
    assert run.model_warm_ups(tasks[2:]) is False


def test_a_model_built_for_one_point_serves_the_next(monkeypatch, expansions):
    # A sweep worker's next point (another batch and context) reuses the fake model.
    name, config, _ = CASES[1]  # Gemma-2: windows make the cache shapes depend on context

    def decode(batch, context, once):  # one call site: ops record the caller's line
        monkeypatch.setenv(layers_once.ENV, "1" if once else "0")
        run = models.ModelRun(f"hf:{name}", phase="decode", batch=batch, context=context,
                              config=dict(config))
        return models.analyze_model(run, ProgramOptions(crosscheck=False))

    first = decode(2, 32, once=True)
    model = layers_once._BUILT["model"]  # noqa: SLF001
    again = decode(3, 8, once=True)
    assert layers_once._BUILT["model"] is model  # noqa: SLF001
    unrolled = decode(3, 8, once=False)
    assert len(expansions) == 2
    assert again.trace == unrolled.trace != first.trace
    assert again.report.to_dict() == unrolled.report.to_dict()


# Every registry decoder at 5 layers: those whose layers are replicated (the prefix), and
# those layers_once leaves to the full capture (other layer lists: transformer.h,
# model.decoder.layers, backbone.layers), whose trace must not change either.
REGISTRY = [
    ("deepseek-v2-lite", 3), ("deepseek-v3", 4), ("gemma-2-9b", 4), ("llama-3.1-8b", 2),
    ("mistral-7b", 2), ("mixtral-8x7b", 2), ("qwen2.5-7b", 2),
    ("bigbird-roberta-base", None), ("electra-small-discriminator", None),
    ("mamba-130m", None), ("opt-1.3b", None),
]


@pytest.mark.parametrize("phase", ["prefill", "decode"])
@pytest.mark.parametrize("name,prefix", REGISTRY)
def test_registry_decoders_at_five_layers(monkeypatch, expansions, name, prefix, phase):
    config = {"num_hidden_layers": 5}
    if name.startswith("deepseek"):
        config["first_k_dense_replace"] = 2 if name == "deepseek-v3" else 1

    def analyze(once):  # one call site: ops record the caller's line
        monkeypatch.setenv(layers_once.ENV, "1" if once else "0")
        run = models.ModelRun(f"hf:{name}", phase=phase, batch=1, seq=16, context=32,
                              config=dict(config))
        return models.analyze_model(run, ProgramOptions(crosscheck=False, cache_aware=False))

    unrolled, grouped = analyze(False), analyze(True)
    assert [max(t) + 1 for t in expansions] == ([prefix] if prefix else [])
    assert grouped.trace == unrolled.trace
    assert grouped.report.to_dict() == unrolled.report.to_dict()


@pytest.mark.parametrize("steps", [4, 6])
def test_a_policy_captures_three_integration_steps(monkeypatch, expansions, steps):
    # pi0's control step: integration steps 0-2 captured, step 2 (checked against step 1)
    # replicated for the rest; trace and report equal the capture of every step.
    config = {"num_hidden_layers": 2, "vision_num_hidden_layers": 2, "num_steps": steps}

    def analyze(once):  # one call site: ops record the caller's line
        monkeypatch.setenv(layers_once.ENV, "1" if once else "0")
        run = models.ModelRun("hf:pi0-paligemma-3b", config=dict(config))
        return models.analyze_model(run, ProgramOptions(crosscheck=False))

    unrolled, grouped = analyze(False), analyze(True)
    assert expansions == [[0, 1, 2] + [2] * (steps - 3)]
    assert grouped.trace == unrolled.trace
    assert grouped.report.to_dict() == unrolled.report.to_dict()


def test_policy_steps_are_found_by_their_time_embedding():
    ops = [{"op": "a"}, {"op": "t", "module": "flow_time"}, {"op": "t", "module": "flow_time"},
           {"op": "x", "module": "model.action_expert.layers.0"}, {"op": "add"},
           {"op": "t", "module": "flow_time"}, {"op": "add"}]
    assert layers_once.flow_steps({"ops": ops}, 2) == [None, 0, 0, 0, 0, 1, 1]
    assert layers_once.flow_steps({"ops": ops}, 3) is None
