"""`solar translate SOURCE`: a language model translates a source program into the loop
language; the translation is accepted only when it validates (docs/translate.md).

    prompt (reference + conventions + examples + source)
      -> answer -> program text -> check.py (safe? parses? sizes? tensors line up? outputs
         match the source's on the source's own inputs?) -> accepted
                                   `-> rejected: the reason goes back to the model, up to N
                                       attempts
    accepted -> PROG.py, PROG.provenance.json, PROG.transcript.json, the cache; the report
                at the program's own sizes; for a PyTorch/JAX source, its work and compulsory
                bytes beside those of Solar's own capture of the source (capture.py).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence

from .. import _core
from ..atomic_write import write_atomically
from ..errors import user_error
from ..report import Report
from . import cache, capture, check, client, prompt, source

SCHEMA = "solar.translation.v1"
# In-process checks and analyses (the C++ core, the interpreter) run one at a time when a
# batch translates several sources at once; model calls and reference runs overlap.
_SOLAR_LOCK = threading.Lock()


@dataclasses.dataclass
class TranslateOptions:
    """What `solar translate` does; the defaults are the command's (docs/translate.md)."""

    lang: str = "auto"  # auto pytorch jax numpy triton cuda c
    model: Optional[str] = None  # default: $SOLAR_TRANSLATE_MODEL
    endpoint: Optional[str] = None  # default: $SOLAR_TRANSLATE_ENDPOINT, else OpenAI's
    key_env: Optional[str] = None  # the variable holding the key (default: client.KEY_ENVS)
    attempts: int = 4
    reference: Optional[str] = None  # DATA.npz or REF.py (a source Solar runs)
    unvalidated: bool = False
    cache: bool = True  # False: --no-cache (neither read nor written)
    cache_dir: Optional[str] = None
    shrink: int = 16  # test sizes: the source's size constants reduced to at most this
    archs: Sequence[str] = ("H100_SXM",)
    timeout: float = 300.0  # seconds per model request
    retries: int = 4  # transient failures retried per request
    backoff: float = 1.0  # seconds: the first wait after a 5xx or a timeout (then doubled)
    temperature: Optional[float] = 0.0
    max_tokens: Optional[int] = None
    ref_timeout: float = 300.0  # seconds of wall time for the source's run
    ref_memory_gb: float = 16.0  # address space of the source's run
    examples: Sequence[str] = prompt.DEFAULT_EXAMPLES
    capture_check: bool = True
    sleep: Optional[Callable[[float], None]] = None  # waits between retries (tests)


@dataclasses.dataclass
class Translation:
    """The outcome for one source."""

    source: str
    status: str  # validated, unvalidated, failed
    program_path: Optional[str]
    program: Optional[str]  # the program's text
    provenance: Dict[str, Any]
    analysis: Any = None  # Analysis at the program's own sizes (accepted only)
    error: Optional[str] = None  # why it failed
    exit_name: str = "ok"  # the EXIT_CODES name of the outcome

    @property
    def accepted(self) -> bool:
        return self.status in ("validated", "unvalidated")

    @property
    def attempts(self) -> int:
        return len(self.provenance.get("attempts", []))

    @property
    def report(self):
        return None if self.analysis is None else self.analysis.report

    @property
    def graph(self):
        return None if self.analysis is None else self.analysis.graph


class EndpointFailure(Exception):
    pass


def default_out(path: str) -> str:
    """PROG.py beside the source: <stem>_loop.py."""
    stem, _ = os.path.splitext(path)
    return stem + "_loop.py"


def companion(out: str, what: str) -> str:
    """<out stem>.<what>.json: the provenance and transcript files beside a translation."""
    return os.path.splitext(out)[0] + f".{what}.json"


def _resolve(options: TranslateOptions) -> TranslateOptions:
    model = options.model or os.environ.get(client.MODEL_ENV)
    if not model:
        raise user_error(f"solar translate needs a model: --model NAME or ${client.MODEL_ENV}",
                         "usage")
    endpoint = options.endpoint or os.environ.get(client.ENDPOINT_ENV) or client.DEFAULT_ENDPOINT
    if endpoint == client.DEFAULT_ENDPOINT and client.api_key(options.key_env)[0] is None:
        names = options.key_env or " or ".join(client.KEY_ENVS)
        raise user_error(f"{endpoint} needs an API key in {names} (a local server needs none: "
                         "--endpoint http://localhost:PORT/v1)", "usage")
    if options.attempts < 1:
        raise user_error("--attempts must be at least 1", "usage")
    if options.shrink is not None and options.shrink < 1:
        raise user_error("--shrink must be at least 1", "usage")
    return dataclasses.replace(options, model=model, endpoint=endpoint)


def _write(path: str, text: str) -> None:
    """Writes `path` whole or not at all, its folder created."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write_atomically(path, text)


def _sha(text: str) -> str:
    return prompt.digest(text)


def _plan(path: str, lang: str, options: TranslateOptions) -> Dict[str, Any]:
    """How the translation is checked: {"mode": validated|unvalidated, "reference": what,
    "digest": of the reference's content}; a usage error when it cannot be."""
    if options.unvalidated:
        return {"mode": "unvalidated", "reference": None, "digest": None}
    ref = options.reference
    if ref:
        if not os.path.isfile(ref):
            raise user_error(f"--reference {ref}: no such file", "io")
        if not (ref.endswith(".npz") or ref.endswith(".py")):
            raise user_error(f"--reference {ref}: an .npz of inputs and outputs or a Python "
                             "program Solar runs (docs/translate.md)", "usage")
        with open(ref, "rb") as f:
            digest = prompt.digest(f.read().hex())
        return {"mode": "validated", "reference": ref, "digest": digest}
    if lang in source.RUNNABLE:
        return {"mode": "validated", "reference": path, "digest": None}
    raise user_error(f"{path}: a {prompt.LANGUAGE_NAMES[lang]} source is validated against "
                     "--reference DATA.npz (its inputs and outputs) or REF.py (a PyTorch, JAX "
                     "or NumPy program); --unvalidated translates it without validation",
                     "usage")


def _reference_data(path: str, plan: Dict[str, Any], lang: str, options: TranslateOptions):
    """The data the translation is checked against (None: unvalidated)."""
    ref = plan["reference"]
    if plan["mode"] == "unvalidated":
        return None
    if ref.endswith(".npz"):
        return source.load_npz(ref)
    ref_lang = lang
    if ref != path:
        with open(ref, encoding="utf-8") as f:
            ref_lang = source.detect_lang(ref, f.read())
    if ref_lang not in source.RUNNABLE:
        raise user_error(f"--reference {ref}: a {ref_lang} program is not run by Solar; give "
                         "its inputs and outputs as an .npz", "usage")
    archs = list(options.archs)[:1] if options.capture_check else []
    return source.run_source(ref, ref_lang, options.shrink, options.ref_timeout,
                             options.ref_memory_gb, archs, options.key_env)


def _header(status: str, src: str, model: str, data, out: str) -> str:
    prov = os.path.basename(companion(out, "provenance"))
    if status == "unvalidated":
        return (f"# UNVALIDATED translation of {os.path.basename(src)} by {model} (solar "
                f"translate --unvalidated): its outputs were never compared with the "
                f"source's. Provenance: {prov}\n")
    sizes = ", ".join(f"{k}={v}" for k, v in data.sizes.items()) or "its own sizes"
    return (f"# Translated from {os.path.basename(src)} by {model} (solar translate); validated "
            f"against {os.path.basename(data.label)} at {sizes}. Provenance: {prov}\n")


def translate(path: str, out: Optional[str] = None,
              options: Optional[TranslateOptions] = None) -> Translation:
    """Translates the source at `path` into a loop program at `out` (default
    <stem>_loop.py), accepted only when it validates (docs/translate.md). Raises solar.UserError
    for bad options and source.SourceError when the source itself fails to run."""
    options = _resolve(options or TranslateOptions())
    if not os.path.isfile(path):
        raise user_error(f"{path}: no such file", "io")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lang = source.detect_lang(path, text, options.lang)
    out = out or default_out(path)
    plan = _plan(path, lang, options)
    system = prompt.system_prompt(options.examples)
    version = prompt.reference_version(system)
    key = cache.key({"source": text, "lang": lang, "model": options.model,
                     "language_reference": version, "mode": plan["mode"],
                     "reference": plan["digest"], "shrink": options.shrink})
    root = cache.cache_root(options.cache_dir)
    base = {"schema": SCHEMA, "source": {"path": path, "lang": lang, "sha256": _sha(text)},
            "model": options.model, "endpoint_host": client.endpoint_host(options.endpoint),
            "solar_version": _core.__version__}
    if options.cache:
        hit = cache.lookup(root, key)
        if hit is not None:
            return _from_cache(path, out, hit, key, base, options)
    data = _reference_data(path, plan, lang, options)
    source_constants = source.size_constants(text, lang)
    user = prompt.user_prompt(text, os.path.basename(path), lang,
                              data.listing if data is not None else None)
    messages = prompt.first_messages(system, user)
    llm = client.ModelClient(options.model, options.endpoint, options.key_env, options.timeout,
                             options.retries, options.backoff, options.temperature,
                             options.max_tokens, **({"sleep": options.sleep} if options.sleep
                                                    else {}))
    provenance = dict(base, api_key_env=llm.key_env, prompt={
        "digest": prompt.messages_digest(messages), "language_reference_version": version,
        "prompt_version": prompt.PROMPT_VERSION, "system_chars": len(system),
        "user_chars": len(user), "examples": list(options.examples) + [prompt.MODULE_EXAMPLE]})
    attempts: List[Dict[str, Any]] = []
    accepted: Optional[check.Checked] = None
    error, exit_name = None, "validation_failed"
    name = os.path.basename(out)
    for n in range(1, options.attempts + 1):
        try:
            reply = llm.complete(messages)
        except client.EndpointError as e:
            attempts.append({"attempt": n, "status": "no_answer", "requests": e.events,
                             "failure": {"kind": "endpoint", "message": str(e)}})
            error, exit_name = str(e), "io"
            break
        entry: Dict[str, Any] = {"attempt": n, "usage": reply.usage,
                                 "finish_reason": reply.finish_reason,
                                 "seconds": round(reply.seconds, 3)}
        if reply.events:
            entry["requests"] = reply.events
        try:
            with _SOLAR_LOCK:
                accepted = check.check(reply.text, name, data, source_constants)
            entry["status"] = "accepted"
            entry["program_sha256"] = _sha(accepted.text)
            attempts.append(entry)
            messages.append({"role": "assistant", "content": reply.text or ""})
            break
        except check.Failure as f:
            entry["status"] = "rejected"
            entry["failure"] = {"kind": f.kind, "message": f.message}
            attempts.append(entry)
            messages.append({"role": "assistant", "content": reply.text or ""})
            messages.append({"role": "user", "content": prompt.feedback(
                n, options.attempts, f.kind, f.message)})
    provenance["attempts"] = attempts
    provenance["usage"] = _usage(attempts)
    provenance["cache"] = {"key": key, "hit": False, "used": options.cache}
    transcript = {"schema": SCHEMA + ".transcript", "system_digest": _sha(system),
                  "messages": messages[1:]}
    if accepted is None:
        if error is None:
            last = attempts[-1]["failure"] if attempts else {"message": "no attempt"}
            error = (f"{path}: no translation validated in {len(attempts)} attempt(s); the "
                     f"last: {last.get('kind', '')}: {check.headline(last['message'])}")
        provenance["status"] = "failed"
        provenance["validation"] = {"status": "failed" if data is not None else "unvalidated",
                                    **({"data": data.summary()} if data is not None else {})}
        provenance["program"] = None
        provenance["created"] = _now()
        _write(companion(out, "provenance"), json.dumps(provenance, indent=1) + "\n")
        _write(companion(out, "transcript"), json.dumps(transcript, indent=1) + "\n")
        return Translation(path, "failed", None, None, provenance, error=error,
                           exit_name=exit_name)
    status = "validated" if data is not None else "unvalidated"
    program_text = _header(status, path, options.model, data, out) + accepted.text
    provenance["status"] = status
    provenance["program"] = {"path": out, "sha256": _sha(program_text)}
    provenance["validation"] = {"status": status}
    if data is not None:
        provenance["validation"].update(data=data.summary(), section=accepted.validation)
    provenance["created"] = _now()
    with _SOLAR_LOCK:
        analysis = _analyze(out, program_text, options)
    check_result = capture_check(data, analysis, list(options.archs)[0])
    provenance["capture_check"] = check_result
    if check_result and check_result.get("warning"):
        provenance["warnings"] = [check_result["warning"]]
    _write(out, program_text)
    _write(companion(out, "provenance"), json.dumps(provenance, indent=1) + "\n")
    _write(companion(out, "transcript"), json.dumps(transcript, indent=1) + "\n")
    if options.cache:
        cache.store(root, key, program_text, provenance)
    analysis.report.attach_section("translation", provenance)
    return Translation(path, status, out, program_text, provenance, analysis)


def _from_cache(path: str, out: str, hit, key: str, base: Dict[str, Any],
                options: TranslateOptions) -> Translation:
    text, cached = hit
    provenance = dict(cached, source=base["source"], cache={"key": key, "hit": True,
                                                            "used": True})
    provenance["program"] = {"path": out, "sha256": _sha(text)}
    with _SOLAR_LOCK:
        analysis = _analyze(out, text, options)
    _write(out, text)
    _write(companion(out, "provenance"), json.dumps(provenance, indent=1) + "\n")
    analysis.report.attach_section("translation", provenance)
    return Translation(path, provenance["status"], out, text, provenance, analysis)


@dataclasses.dataclass
class Analysis:
    """The accepted program at its own sizes (the fields of `solar analyze`'s result)."""

    report: Any  # solar.Report, with the `translation` section
    trace: Dict[str, Any]
    graph: Any  # solar.Graph
    trace_ids: Dict[str, int]


def _analyze(out: str, text: str, options: TranslateOptions) -> Analysis:
    """The accepted program lifted and analyzed at its own sizes."""
    lp = check.load_text(text, out)
    graph, trace_ids = check.lift(lp)
    report = Report(_core.analyze(graph, list(options.archs), "pytorch-default", "cold"))
    return Analysis(report, lp.trace, graph, trace_ids)


def capture_check(data, analysis, device: str) -> Optional[Dict[str, Any]]:
    """The translation's work of every kind and compulsory bytes beside Solar's own capture
    of a PyTorch/JAX source (both at their own sizes): `agree` when all are equal, else
    `differ` with the ratios and of the fused SOL on `device`, and a warning when one is 2x
    or more either way (capture.py)."""
    cap = None if data is None else data.capture
    if not cap:
        return None
    if "error" in cap:
        return {"status": "skipped", "reason": f"the source's capture failed: {cap['error']}"}
    out = capture.compare(capture.work_summary(analysis.report, device), cap)
    if cap.get("unanalyzed"):
        out["note"] = f"the capture left {cap['unanalyzed']} op(s) unanalyzed"
    return out


def _usage(attempts: List[Dict[str, Any]]) -> Dict[str, int]:
    total = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    for a in attempts:
        for k in total:
            total[k] += int((a.get("usage") or {}).get(k, 0))
    return total


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
