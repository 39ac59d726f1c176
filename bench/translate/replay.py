"""The translation benchmark (bench/README.md, "translate/"): every source in sources/ through
`solar translate`, scripted or live.

Scripted (the default): each source's transcript (transcripts/<stem>.md: the answers a model
gave, first tries that fail the ways models fail, then the fix) is served by the loopback
OpenAI-compatible server of the tests (tests/python/translate_server.py) and the real client
talks to it over HTTP, so the whole loop runs without a model: the prompt, extraction,
refusals, the feedback, validation against the source's own data and the capture check.
Each transcript states what each answer should meet (`<!-- answer 2: binding -->`); an
outcome that differs is drift, reported and failed by --check.

Live (SOLAR_TRANSLATE_ENDPOINT set, or --live): the same sources asked of that model
(SOLAR_TRANSLATE_MODEL or --model), up to --attempts answers each; the results go to
results/<model>.json and results/models.md compares every model recorded there (accepted
within N attempts, tokens used): how a new model is qualified.

    PYTHONPATH=python .venv/bin/python bench/translate/replay.py               # scripted
    PYTHONPATH=python .venv/bin/python bench/translate/replay.py --only l1_08_conv2d --check
    SOLAR_TRANSLATE_ENDPOINT=http://localhost:8000/v1 SOLAR_TRANSLATE_MODEL=qwen2.5-coder-32b \\
        PYTHONPATH=python .venv/bin/python bench/translate/replay.py --jobs 4
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SOURCES = HERE / "sources"
TRANSCRIPTS = HERE / "transcripts"
RESULTS = HERE / "results"
SCRIPTED_MODEL = "scripted-transcript"
DEVICE = "H100_SXM"

_ANSWER = re.compile(r"^<!-- answer (\d+): ([a-z_|]+) -->\s*$", re.M)


@dataclasses.dataclass
class Transcript:
    """A source's scripted answers and what each should meet: `accepted` or a failure kind
    (alternatives joined by `|`, for an answer a language change may turn)."""

    answers: List[str]
    expect: List[List[str]]


def read_transcript(path: Path) -> Transcript:
    text = path.read_text(encoding="utf-8")
    marks = list(_ANSWER.finditer(text))
    if not marks:
        raise ValueError(f"{path}: no `<!-- answer N: KIND -->` line")
    answers, expect = [], []
    for i, m in enumerate(marks):
        if int(m.group(1)) != i + 1:
            raise ValueError(f"{path}: answer {m.group(1)} where {i + 1} belongs")
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        answers.append(text[m.end():end].strip() + "\n")
        expect.append(m.group(2).split("|"))
    return Transcript(answers, expect)


def sources(only: Optional[Sequence[str]] = None) -> List[Path]:
    """The benchmark's sources (not the .npz beside them), sorted; `only`: stems to keep."""
    found = sorted(p for p in SOURCES.iterdir() if p.suffix in (".py", ".cu"))
    if only:
        missing = set(only) - {p.stem for p in found}
        if missing:
            raise SystemExit(f"no source {', '.join(sorted(missing))} in {SOURCES}")
        found = [p for p in found if p.stem in only]
    return found


def _options(model: str, endpoint: str, attempts: int, path: Path, cache_dir: str):
    from solar.translate import TranslateOptions

    npz = path.with_suffix(".npz")
    return TranslateOptions(model=model, endpoint=endpoint, attempts=attempts,
                            reference=str(npz) if npz.is_file() else None, cache=False,
                            cache_dir=cache_dir, archs=(DEVICE,), backoff=0.05)


def run_one(path: Path, out_dir: Path, model: str, endpoint: str, attempts: int,
            transcript: Optional[Transcript]) -> Dict[str, Any]:
    """One source translated: attempts, the kinds of the rejections, the capture check and
    the translation's counts beside the capture's."""
    from solar.translate import SourceError, capture, translate

    start = time.monotonic()
    rec: Dict[str, Any] = {"source": path.name}
    out = out_dir / (path.stem + ("_loop.py" if path.suffix == ".py" else "_cu_loop.py"))
    try:
        t = translate(str(path), str(out), _options(model, endpoint, attempts, path,
                                                    str(out_dir / ".cache")))
    except (SourceError, ValueError) as e:  # solar.Error is a ValueError
        rec.update(status="error", error=str(e), seconds=round(time.monotonic() - start, 1))
        return rec
    p = t.provenance
    rec.update(lang=p["source"]["lang"], status=t.status, attempts=t.attempts,
               kinds=[a.get("failure", {}).get("kind", "accepted") for a in p["attempts"]],
               tokens=p.get("usage"))
    if t.error:
        rec["error"] = t.error
    if t.report is not None:
        rec["translation"] = capture.work_summary(t.report, DEVICE)
    c = p.get("capture_check")
    if c:
        rec["capture_check"] = c["status"]
        if c["status"] != "skipped":
            rec["capture"] = c["capture"]
        if c["status"] == "differ":  # translation / capture, of each kind that differs
            rec["capture_ratios"] = {k: c["ratios"][k] for k in c["differ"]}
        if c.get("warning"):
            rec["warning"] = c["warning"]
    at = (p.get("validation", {}).get("data") or {}).get("compared_at")
    if at:
        rec["compared_at"] = at
    if transcript is not None:
        rec["drift"] = drift(rec["kinds"], transcript)
    rec["seconds"] = round(time.monotonic() - start, 1)
    return rec


def drift(kinds: List[str], transcript: Transcript) -> List[str]:
    """Where the outcomes differ from what the transcript expects, in words."""
    out = []
    for i, kind in enumerate(kinds):
        if i >= len(transcript.expect):
            out.append(f"answer {i + 1} asked for, the transcript has {len(transcript.expect)}")
        elif kind not in transcript.expect[i]:
            out.append(f"answer {i + 1}: {kind}, expected {'|'.join(transcript.expect[i])}")
    if kinds and kinds[-1] != "accepted" and len(kinds) < len(transcript.expect):
        out.append(f"stopped after {len(kinds)} of {len(transcript.expect)} answers")
    return out


def run(paths: Sequence[Path], out_dir: Path, live: bool, model: str, endpoint: str,
        attempts: int, jobs: int, progress=sys.stderr) -> List[Dict[str, Any]]:
    """Every source in `paths`, `jobs` at a time; scripted unless `live`."""
    transcripts: Dict[str, Transcript] = {}
    server = None
    key_before = os.environ.get("SOLAR_TRANSLATE_API_KEY")
    if not live:
        sys.path.insert(0, str(ROOT / "tests" / "python"))
        from translate_server import ScriptedServer, answer

        server = ScriptedServer().__enter__()
        for p in paths:
            tr = read_transcript(TRANSCRIPTS / f"{p.stem}.md")
            transcripts[p.name] = tr
            server.routes[f"`{p.name}`"] = [answer(a, estimate=True) for a in tr.answers]
        endpoint = server.url
        os.environ.setdefault("SOLAR_TRANSLATE_API_KEY", "scripted")
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(run_one, p, out_dir, model, endpoint, attempts,
                                   transcripts.get(p.name)) for p in paths]
            records = []
            for f in futures:
                rec = f.result()
                records.append(rec)
                if progress:
                    progress.write(f"translate bench: {rec['source']}: {rec['status']} "
                                   f"({rec.get('attempts', 0)} attempt(s), {rec['seconds']} s)\n")
                    progress.flush()
    finally:
        if server is not None:
            server.__exit__(None, None, None)
            if key_before is None:  # the stand-in key goes with the server
                os.environ.pop("SOLAR_TRANSLATE_API_KEY", None)
    return records


# ----------------------------------------------------------------------- reports


def _si(x: Optional[float], unit: str) -> str:
    if x is None:
        return "-"
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.4g} {prefix}{unit}"
    return f"{x:.4g} {unit}"


def _seconds(s: Optional[float]) -> str:
    if s is None:
        return "-"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
        if s >= scale:
            return f"{s / scale:.4g} {unit}"
    return f"{s / 1e-9:.4g} ns"


_SHORT = {"macs": "MACs", "vector_flops": "vector", "special_ops": "special",
          "bytes_fused": "bytes"}


def _ratio(v: Optional[float]) -> str:
    """3 significant digits, more where those would print a ratio that differs from 1 as 1."""
    if v is None:
        return "where the capture has none"
    digits = 3
    while v != 1 and float(f"{v:.{digits}g}") == 1 and digits < 9:
        digits += 1
    return f"{v:.{digits}g}x"


def _check_cell(r: Dict[str, Any]) -> str:
    """The capture check: `differ` with each differing kind's ratio (translation / capture)."""
    cell = r.get("capture_check", "no capture")
    ratios = r.get("capture_ratios") or {}
    if ratios:
        cell += " (" + ", ".join(f"{_SHORT.get(k, k)} {_ratio(v)}" for k, v in ratios.items()) + ")"
    return cell + (" !!! 2x or more" if r.get("warning") else "")


def _pair(rec: Dict[str, Any], key: str, fmt) -> str:
    mine = fmt((rec.get("translation") or {}).get(key))
    theirs = (rec.get("capture") or {}).get(key)
    if theirs is None or fmt(theirs) == mine:
        return mine
    return f"{mine} / {fmt(theirs)}"


def summary(records: List[Dict[str, Any]], attempts: int) -> Dict[str, Any]:
    accepted = [r for r in records if r["status"] in ("validated", "unvalidated")]
    within = {str(n): sum(1 for r in accepted if r["attempts"] <= n) for n in
              range(1, attempts + 1)}
    tokens = {k: sum(int((r.get("tokens") or {}).get(k, 0)) for r in records)
              for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    kinds: Dict[str, int] = {}
    for r in records:
        for k in r.get("kinds", []):
            if k != "accepted":
                kinds[k] = kinds.get(k, 0) + 1
    return {"sources": len(records), "accepted": len(accepted), "accepted_within": within,
            "rejections": dict(sorted(kinds.items())), "tokens": tokens,
            "capture": {s: sum(1 for r in records if r.get("capture_check") == s)
                        for s in ("agree", "differ", "skipped")},
            "warnings": sum(1 for r in records if r.get("warning")),
            "drift": sum(1 for r in records if r.get("drift")),
            "seconds": round(sum(r["seconds"] for r in records), 1)}


def table(records: List[Dict[str, Any]], summ: Dict[str, Any], title: str) -> str:
    """The per-source table (Markdown): where a count differs from the capture's, both are
    given, translation / capture."""
    lines = [f"### {title}", "",
             "| source | lang | status | attempts | rejections | capture check | MACs | "
             "vector FLOPs | compulsory bytes | fused SOL (H100_SXM) |",
             "| --- | --- | --- | ---: | --- | --- | ---: | ---: | ---: | ---: |"]
    for r in records:
        rejected = ", ".join(k for k in r.get("kinds", []) if k != "accepted") or "-"
        # Solar captures PyTorch and JAX sources; a NumPy, CUDA or Triton one has no capture.
        check = _check_cell(r)
        lines.append(
            f"| {r['source']} | {r.get('lang', '-')} | {r['status']} | {r.get('attempts', 0)} "
            f"| {rejected} | {check} | {_pair(r, 'macs', lambda v: _si(v, 'MAC'))} "
            f"| {_pair(r, 'vector_flops', lambda v: _si(v, 'FLOP'))} "
            f"| {_pair(r, 'bytes_fused', lambda v: _si(v, 'B'))} "
            f"| {_pair(r, 'fused_sol_s', _seconds)} |")
    w = summ["accepted_within"]
    t = summ["tokens"]
    lines += ["", f"accepted {summ['accepted']} of {summ['sources']}; within 1, 2, ... "
                  f"attempts: {', '.join(str(v) for v in w.values())}; rejections "
                  + (", ".join(f"{k} {v}" for k, v in summ["rejections"].items()) or "none")
              + f"; capture check agree {summ['capture']['agree']}, differ "
                f"{summ['capture']['differ']} ({summ['warnings']} by 2x or more); tokens "
                f"prompt {t['prompt_tokens']:,}, completion {t['completion_tokens']:,}; "
                f"{summ['seconds']} s of translation (summed over sources)"]
    drifted = [r for r in records if r.get("drift")]
    for r in drifted:
        lines.append(f"- DRIFT {r['source']}: " + "; ".join(r["drift"]))
    for r in records:
        if r["status"] not in ("validated", "unvalidated"):
            lines.append(f"- FAILED {r['source']}: {r.get('error', '')}")
    return "\n".join(lines) + "\n"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "model"


def write_live(records, summ, model: str, endpoint_host: str, attempts: int,
               results: Path) -> Path:
    """results/<model>.json, and results/models.md comparing every model recorded there."""
    results.mkdir(parents=True, exist_ok=True)
    doc = {"schema": "solar.translate-bench.v1", "model": model, "endpoint_host": endpoint_host,
           "attempts": attempts, "created": time.strftime("%Y-%m-%d"), "summary": summ,
           "records": records}
    (results / f"{_safe(model)}.json").write_text(json.dumps(doc, indent=1) + "\n",
                                                  encoding="utf-8")
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(results.glob("*.json"))]
    lines = ["# Models on the translation benchmark", "",
             "Written by bench/translate/replay.py (live); one row per model run recorded in "
             "this folder.", "",
             "| model | date | sources | accepted | within 1 | within 2 | within N | tokens "
             "(prompt + completion) | tokens per accepted source |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for d in runs:
        s = d["summary"]
        w = s["accepted_within"]
        total = s["tokens"]["total_tokens"]
        per = f"{total / s['accepted']:,.0f}" if s["accepted"] else "-"
        lines.append(f"| {d['model']} | {d['created']} | {s['sources']} | {s['accepted']} | "
                     f"{w.get('1', 0)} | {w.get('2', 0)} | {w.get(str(d['attempts']), 0)} "
                     f"(N={d['attempts']}) | {total:,} | {per} |")
    names = sorted({r["source"] for d in runs for r in d["records"]})
    lines += ["", "Attempts per source (`-`: not accepted):", "",
              "| source | " + " | ".join(d["model"] for d in runs) + " |",
              "| --- |" + " ---: |" * len(runs)]
    for n in names:
        cells = []
        for d in runs:
            r = next((x for x in d["records"] if x["source"] == n), None)
            cells.append("" if r is None else (str(r.get("attempts", 0)) if r["status"] in (
                "validated", "unvalidated") else "-"))
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    (results / "models.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return results / "models.md"


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated source stems")
    ap.add_argument("--sample", type=int, metavar="N",
                    help="every k-th source so that N are run (a quick pass)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--attempts", type=int, default=4)
    ap.add_argument("--out", help="folder for the translations (default: a temporary one)")
    ap.add_argument("--json", help="write the records and the summary here")
    ap.add_argument("--live", action="store_true", help="ask the model at "
                    "$SOLAR_TRANSLATE_ENDPOINT (the default when it is set)")
    ap.add_argument("--scripted", action="store_true", help="replay the transcripts even "
                    "when $SOLAR_TRANSLATE_ENDPOINT is set")
    ap.add_argument("--model", help="live: the model (default $SOLAR_TRANSLATE_MODEL)")
    ap.add_argument("--results", default=str(RESULTS), help="live: where results go")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless every source is accepted as its transcript says")
    ns = ap.parse_args(argv)
    endpoint = os.environ.get("SOLAR_TRANSLATE_ENDPOINT", "")
    live = (ns.live or bool(endpoint)) and not ns.scripted
    if live and not endpoint:
        raise SystemExit("--live needs SOLAR_TRANSLATE_ENDPOINT (and SOLAR_TRANSLATE_MODEL)")
    model = (ns.model or os.environ.get("SOLAR_TRANSLATE_MODEL", "")) if live else SCRIPTED_MODEL
    if not model:
        raise SystemExit("a live run needs --model or SOLAR_TRANSLATE_MODEL")
    paths = sources(ns.only.split(",") if ns.only else None)
    if ns.sample and ns.sample < len(paths):
        step = len(paths) / ns.sample
        paths = [paths[int(i * step)] for i in range(ns.sample)]
    with tempfile.TemporaryDirectory(prefix="solar-translate-bench-") as tmp:
        out_dir = Path(ns.out or tmp)
        out_dir.mkdir(parents=True, exist_ok=True)
        records = run(paths, out_dir, live, model, endpoint, ns.attempts, ns.jobs)
    summ = summary(records, ns.attempts)
    title = (f"{model} (live)" if live else "Scripted transcripts") + \
        f": {len(paths)} sources, up to {ns.attempts} attempts"
    sys.stdout.write(table(records, summ, title))
    if ns.json:
        Path(ns.json).write_text(json.dumps({"summary": summ, "records": records}, indent=1)
                                 + "\n", encoding="utf-8")
    if live:
        from solar.translate import client

        path = write_live(records, summ, model, client.endpoint_host(endpoint), ns.attempts,
                          Path(ns.results))
        sys.stdout.write(f"wrote {path}\n")
    if ns.check and (summ["drift"] or summ["accepted"] < summ["sources"]):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
