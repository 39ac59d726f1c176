"""`solar sweep plans` (docs/sweep.md, "Plans"): the candidate plans of a system, expert
parallelism among them for a mixture-of-experts model, and the command on a local Dask
cluster. The ranking and the capture counts are tested in test_parallel.py."""

from __future__ import annotations

import json

from solar.models import parallel
from solar.models.plans import candidate_plans

from conftest import run_solar


def test_a_mixture_of_experts_model_gets_expert_parallel_plans():
    """8 GPUs, 8 kv heads, 4 layers, 8 experts: besides every (tp, pp, dp), each ep > 1
    dividing both dp and the experts at tp 1 (expert parallelism across the replicas)."""
    devices, experts = 8, 8
    plans = candidate_plans(devices, kv_heads=8, layers=4, experts=experts)
    dense = candidate_plans(devices, kv_heads=8, layers=4)
    assert all(p.ep == 1 for p in dense)
    ep_plans = {(p.tp, p.pp, p.ep, p.dp) for p in plans if p.ep > 1}
    want = {(1, pp, ep, devices // pp) for pp in (1, 2, 4) for ep in (2, 4, 8)
            if (devices // pp) % ep == 0 and experts % ep == 0}
    assert ep_plans == want
    assert set(plans) - {p for p in plans if p.ep > 1} == set(dense)
    for p in plans:
        p.check(train=False)  # every candidate is a plan the analysis accepts
    assert all(p.ep == 1 for p in candidate_plans(devices, 8, 4, train=True, experts=8))


def test_tp_past_the_key_value_heads_shares_them_when_serving():
    """8 key/value heads, 64 query heads on 16 GPUs: tp 16 shares each key/value head between
    2 ranks and splits the query heads (serving only); 40 query heads do not split over 16."""
    serving = {p.tp for p in candidate_plans(16, kv_heads=8, layers=4, heads=64)}
    assert serving == {1, 2, 4, 8, 16}
    assert {p.tp for p in candidate_plans(16, kv_heads=8, layers=4, heads=40)} == {1, 2, 4, 8}
    training = {p.tp for p in candidate_plans(16, kv_heads=8, layers=4, heads=64, train=True)}
    assert training == {1, 2, 4, 8}


def test_the_command_runs_the_plans_on_a_dask_cluster(tmp_path):
    out = tmp_path / "plans.json"
    r = run_solar("sweep", "plans", "hf:llama-3.1-8b", "--system", "DGX_H100",
                  "--set", "num_hidden_layers=2", "--set", "hidden_size=256",
                  "--set", "intermediate_size=512", "--set", "num_attention_heads=8",
                  "--set", "vocab_size=1024", "--context", "64", "--jobs", "2",
                  "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "analyzed on 2 Dask worker(s)" in r.stdout
    result = json.loads(out.read_text())
    assert result["workers"] == 2
    ok = [row for row in result["rows"] if row["status"] == "ok"]
    assert ok and result["best"] == ok[0]["plan"]
    assert parallel.Plan(**result["best"]).gpus == 8


def test_jobs_out_of_range_is_refused():
    r = run_solar("sweep", "plans", "hf:llama-3.1-8b", "--system", "DGX_H100",
                  "--jobs", "0")
    assert r.returncode == 2 and "--jobs 0" in r.stderr and "Traceback" not in r.stderr
