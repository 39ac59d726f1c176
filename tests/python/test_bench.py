"""`solar bench`: a real run of a project example on this machine's CPU against the host
device's bounds (the project's own proof that its bounds hold: any violation fails), and
the violation rule on planted measurements."""

from __future__ import annotations

import json

import pytest

from conftest import EXAMPLES, run_solar
from solar import bench

pytest.importorskip("torch")


def devices(fused: float, unfused: float) -> dict:
    return {"host": {"fused": {"seconds": fused}, "unfused": {"seconds": unfused}}}


def test_a_planted_impossible_measurement_is_a_violation():
    verdict = bench.judge(devices(fused=2e-3, unfused=5e-3), "host", measured_s=1e-3)
    assert [v["level"] for v in verdict["violations"]] == ["fused"]
    v = verdict["violations"][0]
    assert v["ratio"] == pytest.approx(1e-3 / 2e-3)
    assert verdict["headroom"]["fused"] == pytest.approx(1e-3 / 2e-3)


def test_beating_the_unfused_reference_is_not_a_violation():
    # Fused code may beat op-by-op execution; only bound levels can be violated.
    verdict = bench.judge(devices(fused=1e-3, unfused=5e-3), "host", measured_s=3e-3)
    assert verdict["violations"] == []
    assert verdict["headroom"]["unfused"] == pytest.approx(3e-3 / 5e-3)
    assert verdict["headroom"]["fused"] == pytest.approx(3e-3 / 1e-3)


def test_the_framework_level_is_the_eager_reference():
    """An eager run near the framework level (one kernel per framework op) has headroom
    about 1 there, and beating it (fused code) is no violation."""
    devs = devices(fused=1e-3, unfused=5e-3)
    devs["host"]["framework"] = {"seconds": 2e-3}
    verdict = bench.judge(devs, "host", measured_s=1.5e-3)
    assert verdict["violations"] == []
    assert verdict["headroom"]["framework"] == pytest.approx(1.5e-3 / 2e-3)
    section = {"device": "host", "mode": "eager", "trials": 1, "cache": "flushed",
               "min_seconds": 1.5e-3, "median_seconds": 1.5e-3, **verdict}
    line = next(l for l in bench.format_measurement(section).splitlines()
                if l.strip().startswith("framework"))
    assert line.endswith("(eager reference)")


def test_cache_aware_is_a_bound_level_when_present():
    devs = devices(fused=1e-3, unfused=5e-3)
    devs["host"]["cache_aware"] = {"seconds": 2e-3}
    verdict = bench.judge(devs, "host", measured_s=1.5e-3)
    assert [v["level"] for v in verdict["violations"]] == ["cache_aware"]


def test_cuda_names_map_to_database_devices():
    for needle, dev in bench._CUDA_NAMES:
        if dev is not None:
            assert dev in __import__("solar").device_ids(), dev


@pytest.mark.parametrize("example", ["mlp.py", "conv_block.py"])
def test_examples_never_beat_the_host_bounds(tmp_path, example):
    out = tmp_path / "bench.json"
    r = run_solar("bench", str(EXAMPLES / "torch" / example), "--trials", "3", "--warmup", "1",
                  "--profile", "--json", str(out))
    assert r.returncode == 0, r.stderr
    m = json.loads(out.read_text())["measurement"]
    assert m["device"] == "host" and m["mode"] == "eager" and m["cache"] == "flushed"
    assert len(m["times_seconds"]) == 3
    assert m["min_seconds"] == min(m["times_seconds"]) <= m["median_seconds"]
    assert m["violations"] == [] and m["status"] == "ok"
    # The run is no faster than the bound: headroom >= 1 at every bound level.
    for level in bench.BOUND_LEVELS:
        if level in m["headroom"]:
            assert m["headroom"][level] >= 1.0
    assert any(row["op"] == "aten::addmm" or row["op"] == "aten::convolution"
               for row in m["per_op"])
    assert "measured on host" in r.stdout


def test_bad_options_are_usage_errors():
    r = run_solar("bench", str(EXAMPLES / "torch" / "mlp.py"), "--trials", "0")
    assert r.returncode == 2 and "--trials" in r.stderr
