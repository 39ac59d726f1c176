"""The translation benchmark (bench/translate/, bench/README.md): every source's transcript
replayed through the real client against the loopback server, so the whole loop (prompt,
extraction, refusals, feedback, validation, the capture check) runs without a model; and
the live path, with the loopback server standing in for the model at
SOLAR_TRANSLATE_ENDPOINT, writing the comparison table a new model is qualified by."""

from __future__ import annotations

import json
import sys

import pytest

from conftest import ROOT

BENCH = ROOT / "bench" / "translate"
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT / "tests" / "python"))

import replay  # noqa: E402
from translate_server import CHARS_PER_TOKEN, ScriptedServer, answer  # noqa: E402

# What the benchmark has to hold (bench/README.md): 21 PyTorch sources across levels 1-3,
# a NumPy and a JAX program, two CUDA kernels and a Triton kernel with .npz references.
LANGS = {"pytorch": 21, "numpy": 1, "jax": 1, "cuda": 2, "triton": 1}
# The ways the transcripts' first answers fail (docs/translate.md, "The benchmark"): a wrong
# layout or name (binding), a missing guard or a construct outside the language (refused), a
# forbidden import (unsafe), wrong values (mismatch), prose without a program (no_program).
KINDS = {"binding", "refused", "unsafe", "mismatch", "no_program"}


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    """Every source replayed (26: about a minute and a half on two cores)."""
    paths = replay.sources()
    records = replay.run(paths, tmp_path_factory.mktemp("bench"), live=False,
                         model=replay.SCRIPTED_MODEL, endpoint="", attempts=4, jobs=2,
                         progress=None)
    return paths, records


def test_the_benchmark_covers_its_families(scripted):
    paths, records = scripted
    langs = {}
    for r in records:
        langs[r.get("lang")] = langs.get(r.get("lang"), 0) + 1
    for lang, n in LANGS.items():
        assert langs.get(lang, 0) >= n, langs
    levels = {p.name[:2] for p in paths if p.name[0] == "l"}
    assert levels == {"l1", "l2", "l3"}
    # CUDA and Triton sources have their .npz references beside them, kept small.
    for p in paths:
        if p.suffix == ".cu" or p.name.startswith("triton_"):
            npz = p.with_suffix(".npz")
            assert npz.is_file() and npz.stat().st_size < 64 * 1024, npz


def test_every_transcript_replays_as_written(scripted):
    """Each source is accepted, each answer meets what its transcript says (no drift), and
    the first answers fail in every way the transcripts were written to."""
    paths, records = scripted
    assert len(records) == len(paths)
    for r in records:
        assert r["status"] == "validated", (r["source"], r.get("error"))
        assert not r["drift"], (r["source"], r["drift"])
    kinds = {k for r in records for k in r["kinds"]} - {"accepted"}
    assert KINDS <= kinds, kinds


def test_the_capture_check_of_every_captured_source(scripted):
    """A PyTorch or JAX source has a capture check, agree only when every work kind and the
    bytes are equal; the translation's counts stand beside the capture's."""
    _, records = scripted
    for r in records:
        if r["lang"] not in ("pytorch", "jax"):
            assert "capture_check" not in r, r["source"]
            continue
        assert r["capture_check"] in ("agree", "differ"), r["source"]
        same = all(r["translation"][k] == r["capture"][k] for k in
                   ("macs", "vector_flops", "special_ops", "bytes_fused"))
        assert (r["capture_check"] == "agree") == same, r["source"]
    by = {r["source"]: r for r in records}
    # C = A @ B at the source's M, K, N = 1024, 2048, 512: M * K * N MACs either way.
    m, k, n = 1024, 2048, 512
    assert by["l1_01_square_matmul.py"]["translation"]["macs"] == m * k * n
    assert by["l1_01_square_matmul.py"]["capture_check"] == "agree"


def test_tokens_are_estimated_from_the_characters(scripted):
    """A replayed answer has no model to count its tokens: the loopback server estimates them
    from the characters of the request and the answer (CHARS_PER_TOKEN)."""
    _, records = scripted
    for r in records:
        t = r["tokens"]
        assert t["prompt_tokens"] > 1000 and 0 < t["completion_tokens"] < t["prompt_tokens"]
        assert t["total_tokens"] == t["prompt_tokens"] + t["completion_tokens"]
    summ = replay.summary(records, 4)
    table = replay.table(records, summ, "scripted")
    assert f"accepted {len(records)} of {len(records)}" in table
    for r in records:
        assert f"| {r['source']} |" in table


def test_the_live_path_writes_the_comparison_table(tmp_path, monkeypatch, capsys):
    """SOLAR_TRANSLATE_ENDPOINT set: the benchmark asks the model there (here the loopback
    server, answering from two transcripts with usage counts of its own) and writes
    results/<model>.json and results/models.md, which compares every model recorded."""
    stems = ["l1_02_batched_matmul", "l1_04_gelu"]
    usage = {"prompt_tokens": 5000, "completion_tokens": 300}
    with ScriptedServer() as srv:
        for stem in stems:
            tr = replay.read_transcript(BENCH / "transcripts" / f"{stem}.md")
            srv.routes[f"`{stem}.py`"] = [answer(a, **usage) for a in tr.answers]
        monkeypatch.setenv("SOLAR_TRANSLATE_ENDPOINT", srv.url)
        monkeypatch.setenv("SOLAR_TRANSLATE_MODEL", "loopback-model")
        monkeypatch.setenv("SOLAR_TRANSLATE_API_KEY", "loopback")
        results = tmp_path / "results"
        rc = replay.main(["--only", ",".join(stems), "--results", str(results), "--jobs", "1"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "loopback-model (live): 2 sources, up to 4 attempts" in out
    doc = json.loads((results / "loopback-model.json").read_text())
    s = doc["summary"]
    # batched matmul right the first time; GELU after one refusal (an import of math).
    assert s["accepted"] == 2 and s["accepted_within"] == {"1": 1, "2": 2, "3": 2, "4": 2}
    answers = 1 + 2
    assert s["tokens"]["total_tokens"] == answers * (usage["prompt_tokens"] +
                                                     usage["completion_tokens"])
    table = (results / "models.md").read_text()
    assert "| loopback-model | " in table and "| l1_04_gelu.py | 2 |" in table
    assert f"| 2 | 2 | 1 | 2 | 2 (N=4) | {answers * 5300:,} | {answers * 5300 / 2:,.0f} |" in table


def test_estimated_usage_counts_characters():
    from translate_server import estimated_usage

    body = {"messages": [{"role": "system", "content": "a" * 10},
                         {"role": "user", "content": "b" * 7}]}
    u = estimated_usage(body, "c" * 9)
    # ceil(17 / 4) prompt tokens, ceil(9 / 4) completion tokens.
    assert u["prompt_tokens"] == -(-17 // CHARS_PER_TOKEN) and u["completion_tokens"] == \
        -(-9 // CHARS_PER_TOKEN) and u["total_tokens"] == u["prompt_tokens"] + u[
            "completion_tokens"]


def test_a_transcript_that_no_longer_replays_as_written_is_drift(tmp_path):
    """An answer whose outcome is not the one its transcript states, or a translation that
    stops before the transcript's last answer, is drift, which --check fails."""
    tr = replay.Transcript(["a", "b"], [["binding"], ["accepted"]])
    assert replay.drift(["binding", "accepted"], tr) == []
    assert replay.drift(["accepted"], tr) == ["answer 1: accepted, expected binding"]
    assert replay.drift(["binding", "mismatch", "mismatch"], tr) == [
        "answer 2: mismatch, expected accepted", "answer 3 asked for, the transcript has 2"]
    either = replay.Transcript(["a", "b"], [["refused", "accepted"], ["accepted"]])
    assert replay.drift(["accepted"], either) == []
    bad = tmp_path / "t.md"
    bad.write_text("<!-- answer 2: accepted -->\nx\n")
    with pytest.raises(ValueError, match="answer 2 where 1 belongs"):
        replay.read_transcript(bad)
    summ = replay.summary([{"source": "s.py", "status": "validated", "attempts": 1,
                            "kinds": ["accepted"], "seconds": 1.0,
                            "drift": ["answer 1: accepted, expected binding"]}], 4)
    assert summ["drift"] == 1
