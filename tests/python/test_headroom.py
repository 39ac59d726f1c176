"""External timings joined with bounds (solar.headroom): headroom formulas, violation
detection on a planted impossible timing, per-level summaries, the scatter plot's data."""

from __future__ import annotations

import json
import math
import statistics

import pytest

import solar
from solar import headroom
from solar.programs import ProgramOptions, analyze_file

pytest.importorskip("torch")

PROGRAM = """
import torch
N = {n}
class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.relu(a @ b)
def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]
def get_init_inputs():
    return []
"""


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    """Three matmul problems in level folders, analyzed for H100_SXM as a suite would."""
    root = tmp_path_factory.mktemp("kb")
    entries = []
    for level, n in (("level1", 1024), ("level1", 2048), ("level2", 4096)):
        folder = root / level
        folder.mkdir(exist_ok=True)
        path = folder / f"mm_{n}.py"
        path.write_text(PROGRAM.format(n=n))
        r = analyze_file(str(path), ProgramOptions(archs=["H100_SXM"], crosscheck=False))
        entries.append(json.loads(r.report.to_json()))
    entries.append({"program": {"source": str(root / "level2" / "broken.py")},
                    "error": {"cause": "program_error", "message": "boom"}})
    return root, entries


def fused_ms(entry) -> float:
    return entry["devices"]["H100_SXM"]["fused"]["seconds"] * 1e3


def test_join_computes_headroom_and_finds_the_planted_violation(suite, tmp_path):
    root, entries = suite
    ok1, ok2, big = entries[:3]
    timings = {
        "level1": {"mm_1024.py": {"min": 3 * fused_ms(ok1), "mean": 4 * fused_ms(ok1)},
                   "mm_2048.py": {"min": 2 * fused_ms(ok2), "mean": 2.5 * fused_ms(ok2)}},
        # impossible: half the fused SOL
        "level2": {"mm_4096.py": {"min": 0.5 * fused_ms(big), "mean": fused_ms(big)},
                   "broken.py": {"min": 1.0, "mean": 1.0},
                   "missing.py": None},
    }
    path = tmp_path / "t.json"
    path.write_text(json.dumps(timings))
    joined = headroom.join(entries, headroom.load_timings(str(path)), "H100_SXM")
    rows = {r["problem"]: r for r in joined["rows"]}
    assert set(rows) == {"mm_1024.py", "mm_2048.py", "mm_4096.py"}
    assert rows["mm_1024.py"]["headroom"]["fused"] == pytest.approx(3.0)  # 3*fused / fused
    assert rows["mm_2048.py"]["headroom"]["fused"] == pytest.approx(2.0)
    unfused_ms = ok1["devices"]["H100_SXM"]["unfused"]["seconds"] * 1e3
    assert rows["mm_1024.py"]["headroom"]["unfused"] == pytest.approx(3 * fused_ms(ok1) / unfused_ms)
    assert [v["source"].endswith("mm_4096.py") for v in joined["violations"]] == [True]
    # half the fused SOL is below every bound level, and fused <= cache-aware
    assert joined["violations"][0]["levels"] == ["fused", "cache_aware"]
    lv1 = joined["levels"]["level1"]
    assert lv1["problems"] == 2 and lv1["violations"] == 0
    assert lv1["fused"]["median_headroom"] == pytest.approx(statistics.median([3.0, 2.0]))
    assert lv1["fused"]["geomean_headroom"] == pytest.approx(math.sqrt(3.0 * 2.0))
    assert joined["levels"]["level2"]["violations"] == 1
    reasons = {u["source"].rsplit("/", 1)[-1]: u["reason"] for u in joined["unmatched"]}
    assert reasons["broken.py"].startswith("analysis failed")
    assert reasons["missing.py"] == "not in the suite"
    text = headroom.format_summary(joined)
    assert "VIOLATION" in text and "mm_4096.py" in text


def test_plot_writes_svg_and_png_with_one_point_per_joined_problem(suite, tmp_path):
    _, entries = suite
    timings = {"level1": {"mm_1024.py": {"min": 1.0, "mean": 1.1},
                          "mm_2048.py": {"min": 2.0, "mean": 2.1}},
               "level2": {"mm_4096.py": {"min": 30.0, "mean": 31.0}}}
    joined = headroom.join(entries, timings, "H100_SXM")
    data = headroom.plot_data(joined)
    assert {k: len(v) for k, v in data.items()} == {"level1": 2, "level2": 1}
    for level, pts in data.items():
        for sol, measured, name in pts:
            row = next(r for r in joined["rows"] if r["problem"] == name)
            assert (sol, measured) == (row["sol_ms"]["fused"], row["measured_min_ms"])
    svg, png = headroom.plot(joined, str(tmp_path / "scatter"))
    assert open(svg, encoding="utf-8").read().lstrip().startswith(("<?xml", "<svg"))
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def test_bad_timing_files_are_parse_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"level1": {"a.py": {"min": -1, "mean": 2}}}))
    with pytest.raises(solar.UserError, match="positive 'min'") as e:
        headroom.load_timings(str(bad))
    assert e.value.exit_code == 4
    bad.write_text("{not json")
    with pytest.raises(solar.UserError, match="not JSON"):
        headroom.load_timings(str(bad))


def test_an_arch_the_suite_did_not_analyze_is_refused(suite):
    _, entries = suite
    timings = {"level1": {"mm_1024.py": {"min": 1.0, "mean": 1.0}}}
    with pytest.raises(solar.UserError, match="no bounds for device 'B200'"):
        headroom.join(entries, timings, "B200")


def test_problem_key_reads_the_level_folder():
    assert headroom.problem_key("/x/KernelBench/level3/1_MLP.py") == ("level3", "1_MLP.py")
    assert headroom.problem_key("/x/other/1_MLP.py") is None
