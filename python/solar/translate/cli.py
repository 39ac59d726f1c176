"""`solar translate SOURCE|DIR ...` (docs/translate.md, docs/cli.md).

Exit codes: 0 translated (validated, or unvalidated with --unvalidated); 8 no attempt
validated (a batch: some source failed); 3 the endpoint gave no answer; 9 the source itself
failed when Solar ran it; 2 usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import List

from .. import _core
from ..atomic_write import check as check_outputs
from ..atomic_write import write_atomically
from ..command_options import DEFAULT_ARCH, add_device_options, arch_ids
from ..errors import command, fail, parse_args
from . import agent, batch, capture, check, prompt, source


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="solar translate",
        description="Translate a program (PyTorch, JAX, NumPy, Triton, CUDA, C) into the loop "
                    "language with a language model; accepted only when its outputs match the "
                    "source's (docs/translate.md)")
    p.add_argument("source", help="a source file, or a folder (batch)")
    p.add_argument("--lang", default="auto", choices=("auto",) + source.LANGS)
    p.add_argument("--out", metavar="PATH",
                   help="the loop program (default SOURCE_loop.py); for a folder, the output "
                        "folder (default DIR_loop)")
    p.add_argument("--model", help="model name (default $SOLAR_TRANSLATE_MODEL)")
    p.add_argument("--endpoint", metavar="URL",
                   help="OpenAI-compatible base URL, e.g. http://localhost:8000/v1 (default "
                        "$SOLAR_TRANSLATE_ENDPOINT, else https://api.openai.com/v1)")
    p.add_argument("--api-key-env", metavar="VAR",
                   help="the environment variable holding the API key (default "
                        "SOLAR_TRANSLATE_API_KEY, then OPENAI_API_KEY; none for a local server)")
    p.add_argument("--attempts", type=int, default=4, help="answers asked for (default 4)")
    p.add_argument("--reference", metavar="DATA.npz|REF.py",
                   help="inputs and outputs to validate against (needed for Triton, CUDA, C)")
    p.add_argument("--unvalidated", action="store_true",
                   help="accept a translation that parses and lifts without validating it; "
                        "every report says so")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    p.add_argument("--cache-dir", metavar="DIR")
    p.add_argument("--shrink", type=int, default=16, metavar="N",
                   help="test sizes: the source's size constants reduced to at most N (default 16)")
    add_device_options(p)
    p.add_argument("--json", dest="json_path", metavar="PATH",
                   help="the report JSON with its `translation` section (a folder: the summary)")
    p.add_argument("--jobs", type=int, default=1, help="a folder: sources translated at once")
    p.add_argument("--retry-failed", action="store_true",
                   help="a folder: translate again the sources a previous run failed")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per model request")
    p.add_argument("--retries", type=int, default=4,
                   help="retries of a request after HTTP 429/5xx or a timeout (default 4)")
    p.add_argument("--backoff", type=float, default=1.0,
                   help="seconds before the first retry after HTTP 5xx or a timeout, doubled "
                        "each time (default 1; a 429 waits its Retry-After)")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--max-tokens", type=int)
    p.add_argument("--ref-timeout", type=float, default=300.0,
                   help="seconds the source may run for validation (default 300)")
    p.add_argument("--ref-memory-gb", type=float, default=16.0,
                   help="address space the source may use, GiB (default 16)")
    p.add_argument("--examples", metavar="A,B,...",
                   help="worked examples from examples/loops/ in the prompt (default "
                        + ",".join(prompt.DEFAULT_EXAMPLES) + ")")
    p.add_argument("--no-capture-check", action="store_true",
                   help="skip comparing the work and bytes with Solar's capture of the source")
    p.add_argument("--print-prompt", action="store_true",
                   help="print the first request's messages and exit (runs the source, asks "
                        "no model)")
    p.add_argument("--top", type=int, default=10)
    p.add_argument("--debug", action="store_true")
    return p


def _options(ns) -> agent.TranslateOptions:
    archs = arch_ids(ns.arch) or [DEFAULT_ARCH]
    return agent.TranslateOptions(
        lang=ns.lang, model=ns.model, endpoint=ns.endpoint, key_env=ns.api_key_env,
        attempts=ns.attempts, reference=ns.reference, unvalidated=ns.unvalidated,
        cache=not ns.no_cache, cache_dir=ns.cache_dir, shrink=ns.shrink, archs=archs,
        timeout=ns.timeout, retries=ns.retries, backoff=ns.backoff, temperature=ns.temperature,
        max_tokens=ns.max_tokens, ref_timeout=ns.ref_timeout, ref_memory_gb=ns.ref_memory_gb,
        examples=tuple(ns.examples.split(",")) if ns.examples else prompt.DEFAULT_EXAMPLES,
        capture_check=not ns.no_capture_check)


def summary_lines(t: agent.Translation) -> str:
    """The translation block `solar translate SOURCE` prints above the report."""
    p = t.provenance
    status = t.status.upper()
    n = len(p.get("attempts", []))
    hit = p.get("cache", {}).get("hit")
    head = (f"Translation of {t.source} ({p['source']['lang']}) by {p['model']} at "
            f"{p['endpoint_host']}: {status}"
            + (f" after {n} attempt(s)" if n else "") + (" (from the cache)" if hit else ""))
    lines = [head]
    if t.status == "unvalidated":
        lines.append("  !!! UNVALIDATED (--unvalidated): its outputs were never compared with "
                     "the source's")
    for a in p.get("attempts", []):
        retries = "".join(f"; {e['error']}" + (f" (waited {e['waited_s']:g} s)" if "waited_s" in e
                                                else "") for e in a.get("requests", []))
        if a["status"] == "accepted":
            lines.append(f"  attempt {a['attempt']}: accepted{retries}")
        else:
            f = a["failure"]
            first = check.headline(f["message"])
            lines.append(f"  attempt {a['attempt']}: {f['kind']}: {first}{retries}")
    v = p.get("validation", {})
    data = v.get("data")
    if data:
        sizes = ", ".join(f"{k}={val}" for k, val in data.get("sizes", {}).items())
        lines.append(f"  validation: {v['status']} against {data['from']} ({data['framework']})"
                     + (f" at {sizes}" if sizes else ""))
        for i, at in (data.get("compared_at") or {}).items():
            lines.append(f"    output {i} compared at {at['dtype']}'s tolerance, the precision "
                         f"the source computed in ({at['why']})")
    u = p.get("usage") or {}
    lines.append(f"  tokens: prompt {u.get('prompt_tokens', 0)}, completion "
                 f"{u.get('completion_tokens', 0)}")
    c = p.get("capture_check")
    if c:
        loud = "!!! " if c["status"] == "differ" else ""
        lines.append(f"  {loud}capture check: {capture.line(c)}")
    for w in p.get("warnings", []):
        lines.append(f"  !!! warning: {w}")
    if t.program_path:
        prov = agent.companion(t.program_path, "provenance")
        lines.append(f"  wrote {t.program_path} and {prov}")
    elif t.error:
        lines.append(f"  {t.error}")
    return "\n".join(lines) + "\n"


def _print_prompt(ns, options: agent.TranslateOptions) -> int:
    options = agent._resolve(options)
    with open(ns.source, encoding="utf-8") as f:
        text = f.read()
    lang = source.detect_lang(ns.source, text, options.lang)
    plan = agent._plan(ns.source, lang, options)
    data = agent._reference_data(ns.source, plan, lang, options)
    system = prompt.system_prompt(options.examples)
    user = prompt.user_prompt(text, os.path.basename(ns.source), lang,
                              data.listing if data is not None else None)
    for m in prompt.first_messages(system, user):
        sys.stdout.write(f"===== {m['role']} ({len(m['content'])} characters)\n{m['content']}\n")
    return 0


def _check_outputs(ns) -> None:
    """Before any work: no output replaces a source, the reference or another output
    (docs/cli.md, "Output files"). A folder's translations keep their relative paths under
    --out, so --out may not be the source folder itself."""
    json_path = None if ns.json_path == "-" else ns.json_path
    if os.path.isdir(ns.source):
        out_dir = ns.out or ns.source.rstrip("/\\") + "_loop"
        if os.path.realpath(out_dir) == os.path.realpath(ns.source):
            raise fail(f"cannot write into '{out_dir}': --out is the source folder, whose "
                       "sources the translations would replace; give another folder", "io")
        sources = [("SOURCE", os.path.join(ns.source, rel)) for rel in batch.discover(ns.source)]
        check_outputs(sources + [("--reference", ns.reference)], [("--json", json_path)])
        return
    out = ns.out or agent.default_out(ns.source)
    check_outputs([("SOURCE", ns.source), ("--reference", ns.reference)],
                  [("--out", out), ("--out's provenance", agent.companion(out, "provenance")),
                   ("--json", json_path)])


@command()
def main(args: List[str]) -> int:
    """`solar translate ...` (args after `translate`); returns the exit code."""
    codes = _core.EXIT_CODES
    ns = parse_args(parser(), args)
    options = _options(ns)
    if not ns.print_prompt and os.path.exists(ns.source):
        _check_outputs(ns)
    try:
        if ns.print_prompt:
            return _print_prompt(ns, options)
        if os.path.isdir(ns.source):
            summary = batch.translate_dir(ns.source, ns.out, options, ns.jobs, ns.retry_failed,
                                          progress=sys.stderr)
            sys.stdout.write(batch.summary_table(summary))
            if ns.json_path:
                write_atomically(ns.json_path, json.dumps(summary, indent=1))
            return codes["ok"] if summary["failed"] == 0 else codes["validation_failed"]
        t = agent.translate(ns.source, ns.out, options)
    except source.SourceError as e:  # Solar's errors and OSError: command()
        raise fail(str(e), "program_error") from None
    sys.stdout.write(summary_lines(t))
    if not t.accepted:
        sys.stderr.write(f"solar: error: {t.error}\n")
        return codes[t.exit_name]
    sys.stdout.write("\n" + t.report.table(ns.top))
    if ns.json_path:
        write_atomically(ns.json_path, t.report.to_json(2) + "\n")
    return codes["ok"]
