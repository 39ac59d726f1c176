"""Parallel plans for models (python/solar/models/parallel.py, shard.py; docs/parallel.md,
"Parallel plans"): the captured graph sharded by a tensor-parallel plan, checked three ways:

- the work of a sharded MLP is the unsharded work divided as the plan says, plus its
  all-reduce;
- the rank graphs of a small Llama, run together by the multi-rank executor on host data
  (its collectives executed), give the unsharded model's outputs: the plan is validated, not
  assumed (decode, prefill, prefill with sequence parallelism);
- Llama-3.1-70B's decode step at tp 8 on a DGX H100 reads, per GPU, the sharded linears and
  head over 8, one embedding row, the replicated norms and an eighth of the KV cache, and
  takes that over the H100's DRAM bandwidth;

and the command line: the plan options take values (so `--tp 8 hf:x` does not read 8 as
the graph), are refused on a plain program and without a system.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import solar
from solar.models.shard import WeightRule, shard_graph

M, D, H = 4, 8, 16  # tokens, model width, hidden width

MLP = f"""graph mlp
x = f32[{M},{D}] input
w1 = f32[{D},{H}] weight
w2 = f32[{H},{D}] weight
a = f32[{M},{H}] einsum "mk,kn->mn" (x, w1)
r = f32[{M},{H}] einsum [m={M},n={H}] none relu($0) (a[m,n]) -> [m,n]
y = f32[{M},{D}]{{output}} einsum "mk,kn->mn" (r, w2)
"""
MLP_RULES = {"w1": WeightRule("column", 1), "w2": WeightRule("row", 0)}


def mlp_ranks(tp: int):
    g = json.loads(solar.parse_graph(MLP).to_json())
    return g, [shard_graph(g, tp, r, MLP_RULES) for r in range(tp)]


def test_tp2_mlp_rank_is_the_work_divided_plus_its_all_reduce():
    tp = 2
    whole, ranks = mlp_ranks(tp)
    full = solar.analyze(solar.parse_graph(MLP), ["H100_SXM"])
    rank = solar.analyze(solar.parse_graph_json(json.dumps(ranks[0].graph)), ["H100_SXM"])
    # Both matmuls split along the hidden index: 2 M H D MACs over tp ranks.
    assert int(full.totals.macs) == 2 * M * H * D
    assert int(rank.totals.macs) == 2 * M * H * D // tp
    # One all-reduce of the [M, D] partial sums, f32 (its payload: the buffer).
    assert [c[0] for c in ranks[0].collectives] == ["all_reduce"]
    assert int(rank.totals.comm_bytes_by_kind["all_reduce"]) == M * D * 4
    # The rank's weights are halves: w1 [D, H/tp], w2 [H/tp, D].
    shapes = {t["name"]: t["shape"] for t in ranks[0].graph["tensors"]}
    assert shapes["w1"] == [D, H // tp] and shapes["w2"] == [H // tp, D]


def test_tp2_mlp_ranks_run_together_equal_the_unsharded_mlp():
    tp = 2
    _, ranks = mlp_ranks(tp)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((M, D), dtype=np.float32)
    w1 = rng.standard_normal((D, H), dtype=np.float32)
    w2 = rng.standard_normal((H, D), dtype=np.float32)
    h = H // tp
    inputs = [{"x": x, "w1": w1[:, r * h:(r + 1) * h], "w2": w2[r * h:(r + 1) * h]}
              for r in range(tp)]
    outs = solar.run_ranks([solar.parse_graph_json(json.dumps(s.graph)) for s in ranks], inputs)
    want = np.maximum(x @ w1, 0) @ w2
    for out in outs:
        np.testing.assert_allclose(out["y"], want, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ a small Llama, executed

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from solar import models  # noqa: E402
from solar.models import parallel  # noqa: E402
from solar.models.build import config_of  # noqa: E402
from solar.programs import ProgramOptions  # noqa: E402

TINY = {"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 128,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256}


def tiny_llama(phase: str):
    """The graph of a 2-layer Llama-3.1 of small sizes in f32, captured once, and its
    config (phase "train": a training step of 8 tokens: the loss and every gradient, no
    optimizer update, which the plans do not shard)."""
    train = phase == "train"
    run = models.ModelRun("hf:llama-3.1-8b", phase="prefill" if train else phase, batch=2,
                          seq=8, context=16, dtype="f32", config=dict(TINY),
                          optimizer="none" if train else None)
    result = models.analyze_model(run, ProgramOptions(crosscheck=False, cache_aware=False,
                                                      train=train))
    spec = models.resolve(run.ref, None)
    return json.loads(result.graph.to_json()), config_of(spec, run.config)


def run_plan(graph, config, plan):
    """The unsharded graph's outputs and the rank graphs' outputs, the rank outputs joined
    along their sharded dimension (the KV cache stays sharded by heads)."""
    weights, state, _ = parallel.sharding_rules(graph, config, plan.tp)
    ranks = [parallel.shard_model(graph, config, plan, r) for r in range(plan.tp)]
    rng = np.random.default_rng(1)
    inputs = {}
    for t in graph["tensors"]:
        if t["role"] in ("input", "weight"):
            if t["dtype"] == "i64":  # token ids, over the whole vocabulary
                inputs[t["name"]] = rng.integers(0, TINY["vocab_size"], t["shape"])
            else:
                inputs[t["name"]] = (0.2 * rng.standard_normal(t["shape"])).astype(np.float32)
    want = solar.run(solar.parse_graph_json(json.dumps(graph)), inputs)

    def block(name, r):
        dim = weights[name].dim if name in weights else state.get(name)
        x = inputs[name]
        if dim is None:
            return x
        n = x.shape[dim] // plan.tp
        return np.take(x, range(r * n, (r + 1) * n), axis=dim)

    outs = solar.run_ranks([parallel.parse(s.graph) for s in ranks],
                           [{n: block(n, r) for n in inputs} for r in range(plan.tp)])
    return want, outs, ranks, state


@pytest.mark.parametrize("phase, tp, sp", [("decode", 2, False), ("prefill", 2, False),
                                           ("prefill", 2, True), ("train", 2, False)])
def test_small_llama_ranks_equal_the_unsharded_model(phase, tp, sp):
    graph, config = tiny_llama(phase)
    want, outs, ranks, state = run_plan(graph, config, parallel.Plan(tp=tp, sp=sp))
    kinds = [c[0] for c in ranks[0].collectives]
    layers = TINY["num_hidden_layers"]
    if phase == "train":  # the loss and every gradient: partial sums reduced, none gathered
        assert set(kinds) == {"all_reduce"}
        # Every sharded weight's gradient stays with its shard: the linears', the head's and
        # the embedding's (rows added into the rank's block of the table).
        weights, _, _ = parallel.sharding_rules(graph, config, tp)
        local = sorted(tuple(t["shape"]) for t in ranks[0].graph["tensors"]
                       if t["role"] == "output" and t["shape"])
        full = sorted(tuple(t["shape"]) for t in graph["tensors"]
                      if t["role"] == "output" and t["shape"])
        expected = list(full)
        for name, rule in weights.items():
            shape = next(t["shape"] for t in graph["tensors"] if t["name"] == name)
            block = list(shape)
            block[rule.dim] //= tp
            expected.remove(tuple(shape))
            expected.append(tuple(block))
        assert local == sorted(expected)
    elif sp:  # Megatron-SP: the embedding and each block's output scattered, gathered before
        # each block's input, then the last token's hidden state and the logits gathered.
        assert kinds.count("reduce_scatter") == 1 + 2 * layers
        assert kinds.count("all_gather") == 2 * layers + 2
        assert "all_reduce" not in kinds
    else:  # the embedding and each attention and MLP block's output reduced; logits gathered
        assert kinds == ["all_reduce"] * (1 + 2 * layers) + ["all_gather"]
    assert not ranks[0].replicated_ops
    for name, value in want.items():
        got = [o[name] for o in outs]
        if got[0].shape != value.shape:  # a KV cache buffer (its heads), a weight's gradient
            axis = next(a for a, (x, y) in enumerate(zip(got[0].shape, value.shape)) if x != y)
            got = [np.concatenate(got, axis=axis)]
        # f32 sums split over ranks add in another order; a backward pass compounds it.
        tol = dict(rtol=1e-3, atol=1e-4) if phase == "train" else dict(rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got[0], value, **tol)
        for g in got[1:]:
            np.testing.assert_array_equal(g, got[0])


@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_kv_heads_fewer_than_tp_are_shared_by_the_ranks(phase):
    """2 key/value heads at tp 4 (Megatron): each rank keeps the head its query heads read,
    tp / kv = 2 ranks sharing one; its K/V projections are the whole ones over kv (one head's
    rows), its KV cache 1/kv of the whole; run together the ranks give the unsharded
    model's outputs, each rank's cache its head's."""
    graph, config = tiny_llama(phase)
    tp, kv = 4, TINY["num_key_value_heads"]
    weights, state, _ = parallel.sharding_rules(graph, config, tp)
    ranks = [parallel.shard_model(graph, config, parallel.Plan(tp=tp), r) for r in range(tp)]

    def kv_macs(g):  # MACs of the einsums reading a k_proj or v_proj weight: the index box
        names = {t["name"] for t in g["tensors"] if t["name"].endswith(("k_proj.weight",
                                                                         "v_proj.weight"))}
        return sum(int(np.prod([i["extent"] for i in op["indices"]])) for op in g["ops"]
                   if op["kind"] == "einsum" and names & set(op["inputs"]))

    def size(g, name):
        return np.prod(next(t["shape"] for t in g["tensors"] if t["name"] == name))

    for rank in ranks:
        assert kv_macs(rank.graph) == kv_macs(graph) // kv
        for name in state:
            assert size(rank.graph, name) == size(graph, name) // kv
        assert not rank.replicated_ops
    rng = np.random.default_rng(3)
    inputs = {t["name"]: (rng.integers(0, TINY["vocab_size"], t["shape"]) if t["dtype"] == "i64"
                          else (0.2 * rng.standard_normal(t["shape"])).astype(np.float32))
              for t in graph["tensors"] if t["role"] in ("input", "weight")}
    want = solar.run(solar.parse_graph_json(json.dumps(graph)), inputs)

    def block(name, r):  # rank r's block: of tp, or of kv shared by tp / kv ranks
        if name not in weights and name not in state:
            return inputs[name]
        dim, parts = (weights[name].dim, weights[name].parts or tp) if name in weights \
            else (state[name], kv)
        n = inputs[name].shape[dim] // parts
        b = r // (tp // parts)
        return np.take(inputs[name], range(b * n, (b + 1) * n), axis=dim)

    outs = solar.run_ranks([parallel.parse(s.graph) for s in ranks],
                           [{n: block(n, r) for n in inputs} for r in range(tp)])
    for name, value in want.items():
        for r, out in enumerate(outs):
            expect = value if out[name].shape == value.shape else \
                np.take(value, [r // (tp // kv)], axis=1)  # the cache of the rank's head
            np.testing.assert_allclose(out[name], expect, rtol=1e-4, atol=1e-5)


def test_llama_70b_decode_at_tp8_reads_an_eighth_per_gpu():
    """Llama-3.1-70B, decode, batch 1, 4k context, bf16, tp 8 on a DGX H100: per GPU the
    step reads the sharded linears and the head over 8, one embedding row, the replicated
    norms and an eighth of the KV cache; its time is that over the H100's 3.35 TB/s, the
    links' time being smaller."""
    B, C, tp, BF16 = 1, 4096, 8, 2
    run = models.ModelRun("hf:llama-3.1-70b", phase="decode", batch=B, context=C,
                          plan=parallel.Plan(tp=tp))
    report = models.analyze_model(run, ProgramOptions(crosscheck=False, cache_aware=False,
                                                      archs=(), system="DGX_H100")).report
    cfg = config_of(models.resolve(run.ref, None), {})
    L, D, V, F = cfg.num_hidden_layers, cfg.hidden_size, cfg.vocab_size, cfg.intermediate_size
    H, KV = cfg.num_attention_heads, cfg.num_key_value_heads
    hd = D // H
    linears = D * H * hd + 2 * D * KV * hd + H * hd * D + 3 * D * F  # q, k, v, o, MLP
    norms = BF16 * (2 * L + 1) * D  # two per layer and the final one, replicated
    sharded = BF16 * (L * linears + V * D) // tp  # the linears and the head
    row = BF16 * B * D  # the embedding: one row per token, from the rank's rows
    inv_freq = 4 * (hd // 2)  # the rotary embedding's f32 buffer, replicated
    kv_read = BF16 * L * 2 * B * KV * C * hd // tp  # the rank's heads of the cache
    ids = 8 * B
    assert report.totals.bytes_fused_read == sharded + norms + row + inv_freq + kv_read + ids
    kv_written = BF16 * L * 2 * B * KV * hd // tp
    logits = BF16 * B * V  # whole on every rank after the all-gather
    assert report.totals.bytes_fused_written == kv_written + logits
    system = report["system"]
    dram = int(report.totals.bytes_fused) / 3.35e12
    links = [float(x["seconds"]) for x in system["ranks"][0]["links"]]
    assert max(links) < dram
    assert float(system["seconds"]) == pytest.approx(dram, rel=1e-9)
    assert system["bottleneck"] == "dram"
    assert system["plan"]["tp"] == tp and system["gpus"] == tp
    assert system["tokens_per_second"] == pytest.approx(B / dram, rel=1e-9)
    mem = system["ranks"][0]["memory"]
    assert mem["kv_cache_bytes"] == BF16 * L * 2 * B * KV * (C + 1) * hd // tp  # all slots
    assert mem["fits"] is True
    # 2 all-reduces per layer and the embedding's, then the logits' all-gather.
    assert system["ranks"][0]["collectives"] == {"all_reduce": 2 * L + 1, "all_gather": 1}


def test_pipeline_and_tensor_parallel_ranks_equal_the_unsharded_model():
    """pp 2 x tp 2: the layers cut in two stages, the residual stream sent from stage 0's
    ranks to stage 1's (peer = stage x tp + tp rank); the four ranks run together."""
    from solar.models.stages import split_stages
    graph, config = tiny_llama("decode")
    pp, tp = 2, 2
    plan = parallel.Plan(tp=tp)
    weights, state, _ = parallel.sharding_rules(graph, config, tp)
    ranks = [None] * (pp * tp)
    for t in range(tp):
        for s, g in enumerate(split_stages(parallel.shard_model(graph, config, plan, t).graph,
                                           pp, tp, t, 8)):
            ranks[s * tp + t] = g
    assert [op["peer"] for op in ranks[0]["ops"] if op.get("collective") == "send"] == [2]
    assert [op["peer"] for op in ranks[3]["ops"] if op.get("collective") == "recv"] == [1]
    rng = np.random.default_rng(2)
    inputs = {t["name"]: (rng.integers(0, TINY["vocab_size"], t["shape"]) if t["dtype"] == "i64"
                          else (0.2 * rng.standard_normal(t["shape"])).astype(np.float32))
              for t in graph["tensors"] if t["role"] in ("input", "weight")}
    want = solar.run(solar.parse_graph_json(json.dumps(graph)), inputs)

    def block(name, r):
        dim = weights[name].dim if name in weights else state.get(name)
        x = inputs[name]
        n = x.shape[dim] // tp if dim is not None else 0
        return x if dim is None else np.take(x, range(r * n, (r + 1) * n), axis=dim)

    outs = solar.run_ranks(
        [parallel.parse(g) for g in ranks],
        [{t["name"]: block(t["name"], k % tp) for t in ranks[k]["tensors"]
          if t["role"] in ("input", "weight")} for k in range(pp * tp)])
    for name, value in want.items():
        got = [o[name] for o in outs if name in o][-tp:]  # the stage that makes it
        joined = got[0] if got[0].shape == value.shape else np.concatenate(got, axis=1)
        np.testing.assert_allclose(joined, value, rtol=1e-4, atol=1e-5)


def test_a_pipeline_step_is_m_plus_p_minus_1_stage_steps():
    """4 layers in 2 stages of tp 4 on a DGX H100, 2 microbatches of 2 sequences: the step is
    (m + p - 1) times the slowest stage's time for one microbatch, the bubble
    (p - 1) / (m + p - 1)."""
    pp, m, B = 2, 2, 4
    run = models.ModelRun("hf:llama-3.1-8b", phase="decode", batch=B, context=64,
                          config={"num_hidden_layers": 4},
                          plan=parallel.Plan(tp=4, pp=pp, microbatches=m))
    report = models.analyze_model(run, ProgramOptions(crosscheck=False, cache_aware=False,
                                                      archs=(), system="DGX_H100")).report
    system = report["system"]
    stages = [float(r["seconds"]) for r in system["ranks"]]
    assert [r["stage"] for r in system["ranks"]] == [0, 1]
    assert float(system["seconds"]) == pytest.approx((m + pp - 1) * max(stages), rel=1e-12)
    assert system["bubble_fraction"] == pytest.approx((pp - 1) / (m + pp - 1))
    assert system["tokens_per_second"] == pytest.approx(B / float(system["seconds"]))
    # Stage 0 sends the residual stream of one microbatch, [B/m, 1, hidden] bf16, to stage 1.
    assert system["ranks"][0]["collectives"]["send"] == 1
    assert system["ranks"][1]["collectives"]["recv"] == 1
    assert report.get_section("model")["batch"] == B


# ------------------------------------------------------------------ the command line

from conftest import run_solar  # noqa: E402

TINY_SET = [a for k, v in TINY.items() for a in ("--set", f"{k}={v}")]


def test_the_plan_options_take_values_before_the_model():
    """`--tp 2 hf:NAME`: 2 is --tp's value, not the graph (cli.py's _VALUED)."""
    r = run_solar("analyze", "--tp", "2", "--dp", "4", "hf:llama-3.1-8b", *TINY_SET,
                  "--phase", "decode", "--context", "16", "--system", "DGX_H100",
                  "--no-cache-aware", "--no-crosscheck", "--json", "-")
    assert r.returncode == 0, r.stderr
    system = json.loads(r.stdout)["system"]
    assert system["plan"]["tp"] == 2 and system["plan"]["dp"] == 4 and system["gpus"] == 8
    assert system["tokens_per_second"] == pytest.approx(
        4 * 1 / float(system["seconds"]))  # dp replicas of batch 1, one token each


@pytest.mark.parametrize("args, code, words", [
    (["hf:llama-3.1-8b", "--tp", "2"], 2, "runs on a system (--system)"),
    (["hf:llama-3.1-8b", "--tp", "2", "--system", "DGX_H100"], 2, "a plan fills its system"),
    (["hf:llama-3.1-8b", "--ep", "2", "--tp", "4", "--dp", "2", "--system", "DGX_H100"], 7,
     "not modelled yet"),
    (["hf:llama-3.1-8b", "--ep", "8", "--dp", "8", "--system", "DGX_H100"], 7,
     "no experts module"),
    (["hf:llama-3.1-8b", "--pp", "4", "--tp", "2", "--system", "DGX_H100"], 2,
     "2 layers do not make 4 pipeline stages"),
    (["hf:llama-3.1-8b", "--tp", "8", "--system", "DGX_H100"], 7,
     "nor do the ranks share them evenly (4 query heads)"),
    (["hf:llama-3.1-8b", "--pp", "4", "--tp", "2", "--microbatches", "3", "--system",
      "DGX_H100"], 2, "does not divide --batch"),
    (["hf:llama-3.1-8b", "--sp", "--system", "DGX_H100"], 2, "--sp shards the sequence"),
    (["hf:llama-3.1-8b", "--zero", "1", "--system", "DGX_H100"], 2, "needs --train"),
    (["hf:mamba-130m", "--tp", "8", "--system", "DGX_H100"], 7, "no tensor-parallel rules"),
    (["examples/torch/activations.py", "--tp", "2", "--system", "DGX_H100"], 2,
     "for models only"),
])
def test_plans_are_refused_where_they_do_not_apply(args, code, words):
    r = run_solar("analyze", *args, *(TINY_SET if "llama" in args[0] else []),
                  "--no-cache-aware")
    assert r.returncode == code, r.stderr
    assert words in r.stderr and "Traceback" not in r.stderr


def test_the_plan_sweep_captures_once_and_ranks_by_tokens_per_gpu(monkeypatch):
    from solar.models import analyze as analyze_mod
    from solar.models import plans

    captures = []
    real_capture = analyze_mod.capture_model

    def counted(run, options):
        captures.append(run)
        return real_capture(run, options)

    monkeypatch.setattr(plans, "capture_model", counted)
    result = plans.sweep_plans(
        models.ModelRun("hf:llama-3.1-8b", phase="decode", context=64,
                        config={"num_hidden_layers": 4}),
        ProgramOptions(archs=(), crosscheck=False, cache_aware=False, system="DGX_H100"))
    assert len(captures) == 1
    # tp x pp x dp = 8, tp dividing the 8 kv heads, pp at most the 4 layers.
    got = {(r["plan"]["tp"], r["plan"]["pp"], r["plan"]["dp"]) for r in result["rows"]}
    want = {(tp, pp, 8 // tp // pp) for tp in (1, 2, 4, 8) for pp in (1, 2, 4)
            if (8 // tp) % pp == 0}
    assert got == want
    ok = [r for r in result["rows"] if r["status"] == "ok"]
    per_gpu = [r["tokens_per_second_per_gpu"] for r in ok]
    assert per_gpu == sorted(per_gpu, reverse=True)
    assert result["best"] == ok[0]["plan"]


def test_mixtral_at_ep8_charges_its_all_to_alls():
    """Mixtral-8x7B decode at ep 8 across 8 data-parallel replicas of 4 sequences on a DGX
    H100: each rank holds one expert per layer; per layer the (token, expert) pairs'
    activations are dispatched and combined and their expert ids sent, three all-to-alls of
    T K pairs (uniform top-2 routing); the links' time is part of the bound."""
    B, C, ep, BF16 = 4, 1024, 8, 2
    run = models.ModelRun("hf:mixtral-8x7b", phase="decode", batch=B, context=C,
                          plan=parallel.Plan(ep=ep, dp=ep))
    result = models.analyze_model(run, ProgramOptions(crosscheck=False, cache_aware=False,
                                                      archs=(), system="DGX_H100"))
    report = result.report
    cfg = config_of(models.resolve(run.ref, None), {})
    L, D, K, E = (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_experts_per_tok,
                  cfg.num_local_experts)
    pairs = B * K
    system = report["system"]
    assert system["ranks"][0]["collectives"] == {"all_to_all": 3 * L}
    # Per layer: the pairs' activations out and back ([T K, D] bf16 each way) and their ids.
    assert int(report.totals.comm_bytes_by_kind["all_to_all"]) == \
        L * (2 * pairs * D * BF16 + pairs * 8)
    # Each rank sends (n - 1)/n of each buffer over NVLink (parallel.md, all-to-all).
    link = {x["link"]: x for x in system["ranks"][0]["links"]}["scale_up"]
    assert float(link["bytes"]) == pytest.approx(
        (ep - 1) / ep * L * (2 * pairs * D * BF16 + pairs * 8))
    assert float(link["seconds"]) == pytest.approx(float(link["bytes"]) / 450e9)
    # E / ep experts per rank: the rank's expert weights are [E / ep, ...].
    g = json.loads(result.graph.to_json())
    experts = [t["shape"][0] for t in g["tensors"] if t["name"].endswith("experts.down_proj")]
    assert experts == [E // ep] * L
    assert system["tokens_per_second"] == pytest.approx(B * ep / float(system["seconds"]))


@pytest.mark.parametrize("zero", [0, 1, 3])
def test_data_parallel_training_reduces_the_gradients_as_zero_says(zero):
    """tp 2 x dp 4 on a DGX H100, a training step of a 2-layer Llama-3.1-8B: over the dp
    group, ZeRO 0 all-reduces every gradient; 1 (and 2) reduce-scatter them and all-gather
    the updated parameters; 3 all-gathers the parameters before the forward and the backward
    too (ZeRO, section 7: 2 x the parameters per step, 3 x for stage 3)."""
    tp, dp, BF16 = 2, 4, 2
    run = models.ModelRun("hf:llama-3.1-8b", phase="prefill", seq=64,
                          config={"num_hidden_layers": 2},
                          plan=parallel.Plan(tp=tp, dp=dp, zero=zero))
    result = models.analyze_model(run, ProgramOptions(crosscheck=False, cache_aware=False,
                                                      archs=(), system="DGX_H100", train=True))
    g = json.loads(result.graph.to_json())
    shapes = {t["name"]: t["shape"] for t in g["tensors"]}

    def numel(name):
        n = 1
        for s in shapes[name]:
            n *= s
        return n

    grads = [t["name"] for t in g["tensors"] if t["role"] == "output" and t["shape"]
             and not t["name"].endswith((".shard", ".bwd_gathered"))]
    grad_elements = sum(numel(f"{x}.local") for x in grads)  # the rank's gradients (tp)
    payload = {}
    for op in g["ops"]:
        if op["kind"] == "collective" and op["group"].get("name") == "dp":
            kind = op["collective"]
            # nccl-tests' size: an all-reduce's buffer, a reduce-scatter's input, an
            # all-gather's output.
            x = op["outputs"][0] if kind == "all_gather" else op["inputs"][0]
            payload[kind] = payload.get(kind, 0) + BF16 * numel(x)
    if zero == 0:
        assert payload == {"all_reduce": BF16 * grad_elements}
    elif zero == 1:
        assert payload == {"reduce_scatter": BF16 * grad_elements,
                           "all_gather": BF16 * grad_elements}
    else:  # the update's gather and the parameters' before the forward and the backward
        assert payload["reduce_scatter"] == BF16 * grad_elements
        held = [t["name"] for t in g["tensors"] if t["name"].endswith(".fsdp_shard")]
        # every linear's weight is held as its 1/dp shard
        for kind in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                     "down_proj"):
            assert any(f".{kind}.weight" in h for h in held)
        assert payload["all_gather"] == BF16 * grad_elements + \
            2 * BF16 * dp * sum(numel(h) for h in held)
    mem = result.report["system"]["ranks"][0]["memory"]
    assert mem["optimizer_bytes"] == 12 * grad_elements // (dp if zero else 1)



def test_the_plan_sweep_of_a_training_step_splits_one_global_batch_and_ranks_by_step_time():
    """A training sweep's --batch is the step's global batch, split over the dp replicas: a
    plan whose dp does not divide it is skipped; the model is captured once per per-replica
    batch; every plan steps over the same tokens, so they rank by step time."""
    from solar.models import plans

    B, S = 4, 32
    result = plans.sweep_plans(
        models.ModelRun("hf:llama-3.1-8b", phase="prefill", batch=B, seq=S,
                        config={"num_hidden_layers": 2}),
        ProgramOptions(archs=(), crosscheck=False, cache_aware=False, system="DGX_H100",
                       train=True), zero=1)
    got = {(r["plan"]["tp"], r["plan"]["pp"], r["plan"]["dp"], r["plan"]["zero"])
           for r in result["rows"]}
    assert got == {(tp, 1, 8 // tp, 1 if tp < 8 else 0) for tp in (1, 2, 4, 8)}
    skipped = {r["plan"]["dp"] for r in result["rows"] if r["status"] == "skipped"}
    assert skipped == {8}  # 4 sequences do not split over 8 replicas
    assert result["captures"] == 3  # per-replica batches 1, 2 and 4 (dp 4, 2, 1)
    ok = [r for r in result["rows"] if r["status"] == "ok"]
    assert {r["tokens_per_step"] for r in ok} == {B * S}
    steps = [r["seconds"] for r in ok]
    assert steps == sorted(steps) and result["best"] == ok[0]["plan"]
    assert result["ranked_by"] == "step time" and result["batch_is"] == "global"
