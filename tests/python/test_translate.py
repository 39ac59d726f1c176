"""solar translate (docs/translate.md) against a scripted OpenAI-compatible server on 127.0.0.1
(translate_server.py): no network. The scripted cases: (a) a correct translation, (b) a wrong
one then a correct one after the feedback, (c) one that never validates, (d) malformed text,
(e) a program that tries `import os`, (f) HTTP 429 with Retry-After, 500 and a timeout. Each
test asserts the accepted graph, the attempts, the refusal reports, the provenance, and that no
model-written code ran: every scripted program carries MARKER in its docstring, and an audit
hook watches every code object Python executes (and os.system, subprocesses) for it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, run_solar

sys.path.insert(0, str(Path(__file__).resolve().parent))
from translate_server import ScriptedServer, answer, error, stall  # noqa: E402

import solar.loopir  # noqa: E402
from solar.translate import TranslateOptions, translate  # noqa: E402
from solar.translate import extract, prompt  # noqa: E402

MARKER = "model-written-7f3a"
SECRET = "sk-test-secret-5c1d9e"
MODEL = "scripted-coder"

GEMM_SOURCE = '''\
"""C = A @ B in NumPy (a source Solar runs itself)."""
import numpy as np

M, N, K = 64, 48, 32


def get_inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((M, K)).astype(np.float32),
            rng.standard_normal((K, N)).astype(np.float32)]


def forward(A, B):
    return A @ B
'''

GEMM_PROGRAM = f'''\
"""{MARKER}: C = A @ B."""
from solar.loopir import Tensor, kernel

M, N, K = 64, 48, 32

A = Tensor("M,K", dtype="f32", role="input")
B = Tensor("K,N", dtype="f32", role="input")
C = Tensor("M,N", dtype="f32", role="output")


@kernel
def gemm(A, B, C):
    for m in range(M):
        for n in range(N):
            for k in range(K):
                C[m, n] += A[m, k] * B[k, n]


def model():
    gemm(A, B, C)
'''

WRONG_GEMM = GEMM_PROGRAM.replace("C[m, n] += A[m, k] * B[k, n]",
                                  "C[m, n] += A[m, k] * B[k, n] * 1.5")


def fenced(program: str, prose: str = "Here is the translation:") -> str:
    return f"{prose}\n\n```python\n{program}```\n"


# ----------------------------------------------------------------------- fixtures


class _Watch:
    """Audit-hook record of what Python executed while a test translated."""

    on = False
    executed: list = []  # code objects whose constants hold MARKER
    calls: list = []  # os.system / subprocess / Tensor() calls that carry the marker
    tensor_calls = 0


def _holds_marker(code) -> bool:
    for c in code.co_consts:
        if isinstance(c, str) and MARKER in c:
            return True
        if hasattr(c, "co_consts") and _holds_marker(c):
            return True
    return False


def _audit(event, args):
    if not _Watch.on:
        return
    if event == "exec" and args and hasattr(args[0], "co_consts") and _holds_marker(args[0]):
        _Watch.executed.append(args[0].co_filename)
    elif event in ("os.system", "subprocess.Popen") and MARKER in repr(args):
        _Watch.calls.append((event, repr(args)[:200]))


sys.addaudithook(_audit)


@pytest.fixture
def no_model_code_runs(monkeypatch):
    """Fails the test if any model-written code ran: an exec'd code object holding MARKER,
    os.system or a subprocess carrying it, or a loop program's Tensor(...) run as Python."""
    _Watch.executed, _Watch.calls, _Watch.tensor_calls = [], [], 0
    original = solar.loopir.Tensor.__init__

    def counting(self, *a, **k):
        _Watch.tensor_calls += 1
        original(self, *a, **k)

    monkeypatch.setattr(solar.loopir.Tensor, "__init__", counting)
    _Watch.on = True
    yield
    _Watch.on = False
    assert _Watch.executed == [], f"model-written code was executed: {_Watch.executed}"
    assert _Watch.calls == [], f"model-written code reached the OS: {_Watch.calls}"
    assert _Watch.tensor_calls == 0, "a loop program was run as Python"


@pytest.fixture(scope="module")
def server():
    with ScriptedServer() as s:
        yield s


@pytest.fixture
def srv(server, monkeypatch):
    server.reset()
    monkeypatch.setenv("SOLAR_TRANSLATE_API_KEY", SECRET)
    return server


@pytest.fixture
def gemm(tmp_path):
    path = tmp_path / "gemm.py"
    path.write_text(GEMM_SOURCE)
    return path


def options(srv, tmp_path, **kw) -> TranslateOptions:
    base = dict(model=MODEL, endpoint=srv.url, cache_dir=str(tmp_path / "cache"), timeout=5.0,
                backoff=0.01, capture_check=False)
    base.update(kw)
    return TranslateOptions(**base)


def all_written_text(*folders: Path) -> str:
    return "".join(p.read_text(errors="replace") for f in folders if f.exists()
                   for p in f.rglob("*") if p.is_file() and p.suffix in (".py", ".json"))


# ----------------------------------------------------------------------- the prompt


def test_the_language_reference_is_found_without_solar_root(monkeypatch):
    """An installed package carries docs/loop-language.md and examples/loops/ (solar/reference/):
    the prompt needs no checkout and no SOLAR_ROOT."""
    monkeypatch.delenv("SOLAR_ROOT", raising=False)
    root = prompt.repository_root()
    assert (root / "docs" / "loop-language.md").is_file()
    assert (root / "examples" / "loops" / "gemm.py").is_file()


def test_prompt_is_reference_conventions_examples_then_source(gemm):
    system = prompt.system_prompt()
    # The language sections of docs/loop-language.md, not its CLI, report or lifting parts.
    for heading in ("## A first program", "## Tensors", "## Kernels", "## The model",
                    "## Refusals", "# Translation conventions"):
        assert heading in system
    for absent in ("## Lifting rules", "## Running and validating"):
        assert absent not in system
    # Six examples/loops pairs and the module-parameter example, each source then program.
    assert system.count("## Example ") == len(prompt.DEFAULT_EXAMPLES) + 1
    assert "fc1__weight" in system and "def get_init_inputs" in system
    assert 25_000 < len(system) < 45_000  # about 9k tokens: docs/translate.md
    assert prompt.reference_version(system) == prompt.reference_version(prompt.system_prompt())
    user = prompt.user_prompt(GEMM_SOURCE, "gemm.py", "numpy", None)
    assert "NumPy program (`gemm.py`)" in user and "def forward(A, B)" in user


# ----------------------------------------------------------------------- extraction, safety


@pytest.mark.parametrize("text, kind, words", [
    ("I cannot translate this.", "no_program", "no code block"),
    ("", "no_program", "empty"),
    ("```python\nx = 1\n```\n```python\ny = 2\n```", "no_program", "2 code blocks"),
    (fenced("import os\nfrom solar.loopir import Tensor\n"), "unsafe", "`import os`"),
    (fenced("from solar.loopir import Tensor\nimport subprocess\n"), "unsafe", "subprocess"),
    (fenced("from solar.loopir import Tensor\nN = x.shape\n"), "unsafe", "attribute access"),
    (fenced("from solar.loopir import Tensor\nN = open('f')\n"), "unsafe", "`open(...)`"),
    (fenced("from solar.loopir import Tensor\nN = __import__('os')\n"), "unsafe", "__import__"),
    (fenced("from solar.loopir import Tensor\nN = eval('1')\n"), "unsafe", "`eval(...)`"),
    (fenced("from os import path\nfrom solar.loopir import Tensor\n"), "unsafe", "from os"),
])
def test_answers_outside_the_language_are_rejected_unread(text, kind, words):
    with pytest.raises(extract.Rejected) as e:
        extract.candidate(text, "prog.py")
    assert e.value.kind == kind and words in e.value.message


def test_the_program_is_found_in_the_answer():
    think = "<think>```python\nimport os\n```</think>\n" + fenced(GEMM_PROGRAM)
    assert extract.program_text(think) == GEMM_PROGRAM
    two = fenced("from solar.loopir import Tensor\n") + fenced(GEMM_PROGRAM, "Corrected:")
    assert extract.program_text(two) == GEMM_PROGRAM
    assert extract.program_text(GEMM_PROGRAM) == GEMM_PROGRAM  # no fence at all


# ----------------------------------------------------------------------- (a) .. (f)


def test_a_correct_translation_is_accepted(srv, gemm, tmp_path, no_model_code_runs):
    srv.script = [answer(fenced(GEMM_PROGRAM), prompt_tokens=9000, completion_tokens=400)]
    out = tmp_path / "out" / "gemm_loop.py"
    t = translate(str(gemm), str(out), options(srv, tmp_path))
    assert t.status == "validated" and t.attempts == 1 and len(srv.requests) == 1
    # The accepted graph, at the program's own sizes: one contraction, 2*M*N*K FLOPs.
    (op,) = t.graph.ops
    assert op.name == "C" and t.report.totals.macs == 64 * 48 * 32
    assert t.report.totals.bytes_fused == 4 * (64 * 32 + 32 * 48 + 64 * 48)  # A, B read, C written
    text = out.read_text()
    assert text.startswith("# Translated from gemm.py by scripted-coder") and GEMM_PROGRAM in text
    p = json.loads((tmp_path / "out" / "gemm_loop.provenance.json").read_text())
    assert p == t.provenance
    request = srv.requests[0]
    assert request["path"] == "/v1/chat/completions"
    body = request["body"]
    assert body["model"] == MODEL and body["temperature"] == 0
    assert p["prompt"]["digest"] == prompt.messages_digest(body["messages"])
    assert body["messages"][0]["content"] == prompt.system_prompt()
    # The user message: the source and its tensors as Solar found them by running it.
    user = body["messages"][1]["content"]
    assert GEMM_SOURCE.strip() in user and "size constants: M=64, N=48, K=32" in user
    assert "A                        f32    [16, 8]" in user  # NumPy: listed at the test sizes
    assert p["model"] == MODEL and p["endpoint_host"] == srv.url.split("/")[2]
    assert p["api_key_env"] == "SOLAR_TRANSLATE_API_KEY"
    assert p["usage"] == {"prompt_tokens": 9000, "completion_tokens": 400, "total_tokens": 9400}
    assert [a["status"] for a in p["attempts"]] == ["accepted"]
    v = p["validation"]
    assert v["status"] == "validated" and v["data"]["sizes"] == {"M": "16", "N": "16", "K": "8"}
    assert v["section"]["status"] == "passed" and v["section"]["inputs"] == "given"
    assert v["section"]["reference"]["outputs"][0]["loop_program"]["passed"]
    assert p["cache"]["hit"] is False and t.report.get_section("translation") == p
    # The key went to the server, and nowhere else.
    assert request["headers"].get("authorization", request["headers"].get("Authorization")) \
        == f"Bearer {SECRET}"
    assert SECRET not in all_written_text(tmp_path)


def test_b_wrong_then_correct_after_feedback(srv, gemm, tmp_path, no_model_code_runs):
    srv.script = [answer(fenced(WRONG_GEMM)), answer(fenced(GEMM_PROGRAM))]
    t = translate(str(gemm), str(tmp_path / "g.py"), options(srv, tmp_path))
    assert t.status == "validated" and t.attempts == 2
    first = t.provenance["attempts"][0]
    assert first["status"] == "rejected" and first["failure"]["kind"] == "mismatch"
    # The first diverging output and the size of the difference, at the test sizes.
    msg = first["failure"]["message"]
    assert msg.startswith("output `C` (f32[16, 16], the source's output 0) differs: 256 of 256 ")
    assert "max abs error" in msg and "max rel error 0.5" in msg and "worst at [" in msg
    assert "M=16, N=16, K=8" in msg
    # ... went back to the model after its wrong answer.
    second = srv.requests[1]["body"]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[2]["content"] == fenced(WRONG_GEMM)
    assert "Attempt 1 of 4 was not accepted (outputs differ" in second[3]["content"]
    assert msg in second[3]["content"]
    assert t.provenance["usage"]["total_tokens"] == 2 * 1100


def test_c_never_validates(srv, gemm, tmp_path, no_model_code_runs):
    srv.script = [answer(fenced(WRONG_GEMM))] * 3
    out = tmp_path / "g.py"
    t = translate(str(gemm), str(out), options(srv, tmp_path, attempts=3))
    assert t.status == "failed" and t.exit_name == "validation_failed" and t.attempts == 3
    assert len(srv.requests) == 3 and not out.exists()
    assert all(a["failure"]["kind"] == "mismatch" for a in t.provenance["attempts"])
    assert "no translation validated in 3 attempt(s)" in t.error
    p = json.loads((tmp_path / "g.provenance.json").read_text())
    assert p["status"] == "failed" and p["program"] is None
    transcript = json.loads((tmp_path / "g.transcript.json").read_text())
    assert len(transcript["messages"]) == 1 + 2 * 3  # user, then answer + feedback each time
    assert not (tmp_path / "cache").exists()  # a failure is not cached


def test_d_malformed_text(srv, gemm, tmp_path, no_model_code_runs):
    srv.script = [answer("Sure! The loops multiply A by B, summing over k."),
                  answer("```python\nfrom solar.loopir import Tensor\nM, N = 64,\n```"),
                  answer(None),
                  answer(fenced(GEMM_PROGRAM))]
    t = translate(str(gemm), str(tmp_path / "g.py"), options(srv, tmp_path))
    assert t.status == "validated" and t.attempts == 4
    kinds = [a.get("failure", {}).get("kind") for a in t.provenance["attempts"]]
    assert kinds == ["no_program", "refused", "no_program", None]
    refused = t.provenance["attempts"][1]["failure"]["message"]
    assert refused.startswith("g.py:2: outside the language: ")  # the loop parser's refusal


def test_e_import_os_is_refused_and_never_runs(srv, gemm, tmp_path, no_model_code_runs):
    sentinel = tmp_path / "PWNED"
    attack = GEMM_PROGRAM.replace(
        "from solar.loopir import Tensor, kernel",
        f"import os\nos.system('touch {sentinel} # {MARKER}')\n"
        "from solar.loopir import Tensor, kernel")
    in_kernel = GEMM_PROGRAM.replace("C[m, n] += A[m, k] * B[k, n]",
                                     f"C[m, n] += open('{sentinel}', 'w')")
    srv.script = [answer(fenced(attack)), answer(fenced(in_kernel)), answer(fenced(GEMM_PROGRAM))]
    t = translate(str(gemm), str(tmp_path / "g.py"), options(srv, tmp_path))
    assert t.status == "validated" and t.attempts == 3
    a1, a2 = (a["failure"] for a in t.provenance["attempts"][:2])
    assert a1["kind"] == "unsafe" and a1["message"].startswith("g.py:2: `import os`")
    assert a2["kind"] == "unsafe" and "`open(...)` is a Python builtin" in a2["message"]
    assert "refused: not loop-language code" in srv.requests[1]["body"]["messages"][-1]["content"]
    assert not sentinel.exists()


def test_f_429_500_and_timeout_are_retried(srv, gemm, tmp_path, no_model_code_runs):
    waits = []
    srv.script = [error(429, {"Retry-After": "7"}), error(500), stall(1.5),
                  answer(fenced(GEMM_PROGRAM))]
    t = translate(str(gemm), str(tmp_path / "g.py"),
                  options(srv, tmp_path, timeout=0.5, sleep=waits.append))
    assert t.status == "validated" and t.attempts == 1 and len(srv.requests) == 4
    events = t.provenance["attempts"][0]["requests"]
    assert [e["error"] for e in events] == ["HTTP 429", "HTTP 500", "timeout"]
    assert events[0]["retry_after_s"] == 7.0 and waits[0] == 7.0  # Retry-After honoured
    assert waits[1:] == [0.02, 0.04]  # then exponential backoff from --backoff (0.01 s)


def test_endpoint_failures_end_the_translation(srv, gemm, tmp_path):
    srv.script = [error(500)] * 3
    t = translate(str(gemm), str(tmp_path / "g.py"),
                  options(srv, tmp_path, retries=2, sleep=lambda s: None))
    assert t.status == "failed" and t.exit_name == "io" and len(srv.requests) == 3
    assert t.provenance["attempts"][0]["failure"]["kind"] == "endpoint"
    assert "no answer after 3 requests (HTTP 500, HTTP 500, HTTP 500)" in t.error
    srv.reset()
    srv.script = [error(401, message="bad key"), answer(fenced(GEMM_PROGRAM))]
    t = translate(str(gemm), str(tmp_path / "g.py"), options(srv, tmp_path))
    assert t.exit_name == "io" and "HTTP 401" in t.error and len(srv.requests) == 1  # not retried


# ----------------------------------------------------------------------- checks


def test_size_constants_keep_the_sources_values(srv, gemm, tmp_path, no_model_code_runs):
    other_k = GEMM_PROGRAM.replace("M, N, K = 64, 48, 32", "M, N, K = 64, 48, 16")
    renamed_k = GEMM_PROGRAM.replace("M, N, K = 64, 48, 32\n", "M, N, KK = 64, 48, 32\n").replace(
        '"K,N"', '"KK,N"').replace('"M,K"', '"M,KK"').replace("range(K)", "range(KK)")
    srv.script = [answer(fenced(other_k)), answer(fenced(renamed_k)), answer(fenced(GEMM_PROGRAM))]
    t = translate(str(gemm), str(tmp_path / "g.py"), options(srv, tmp_path))
    assert t.attempts == 3
    f1, f2 = (a["failure"] for a in t.provenance["attempts"][:2])
    assert f1 == {"kind": "sizes", "message": "`K` is 16 in your program, 32 in the source. "
                                              "Size constants keep the source's names and values."}
    # KK stays 32 at the test sizes, where the source's K is 8: a binding failure with a hint.
    assert f2["kind"] == "binding"
    assert "`A` (input, f32[16, 32]) has shape [16, 32] at the test sizes, the source's input " \
           "`A` [16, 8]" in f2["message"]
    assert "Size constants of the source your program does not define: K" in f2["message"]


def test_module_parameters_by_state_dict_names(srv, tmp_path, no_model_code_runs):
    """A KernelBench model whose parameters live inside nn.Linear modules: the convention
    (weights named after state_dict keys) is stated, enforced, fed back; the prompt's own
    module example validates; Solar's capture of the source agrees on MACs and bytes."""
    here = ROOT / "python" / "solar" / "translate" / "examples"
    src = tmp_path / "mlp_module_torch.py"
    src.write_text((here / "mlp_module_torch.py").read_text())
    good = (here / "mlp_module.py").read_text().replace('"""mlp_module', f'"""{MARKER} mlp_module')
    transposed = good.replace('fc1__weight = Tensor("hidden, in_features"',
                              'fc1__weight = Tensor("in_features, hidden"').replace(
        "acc[i, o] += x[i, k] * w[o, k]", "acc[i, o] += x[i, k] * w[k, o]")
    srv.script = [answer(fenced(good.replace("fc1__", "w1_"))), answer(fenced(transposed)),
                  answer(fenced(good))]
    t = translate(str(src), str(tmp_path / "mlp_loop.py"),
                  options(srv, tmp_path, capture_check=True))
    assert t.status == "validated" and t.attempts == 3
    user = srv.requests[0]["body"]["messages"][1]["content"]
    assert "fc1.weight -> fc1__weight                f32    [1024, 512]" in user  # own sizes
    f1, f2 = (a["failure"] for a in t.provenance["attempts"][:2])
    assert f1["kind"] == "binding"
    assert "`w1_weight` (weight, f32[16, 8]) is no argument, parameter or buffer" in f1["message"]
    assert "fc1.weight -> fc1__weight" in f1["message"]  # what the source has, listed
    assert f2["kind"] == "binding" and "`fc1__weight` (weight, f32[8, 16]) has shape [8, 16] " \
        "at the test sizes, the source's weight `fc1__weight` [16, 8]" in f2["message"]
    sizes = t.provenance["validation"]["data"]["sizes"]
    assert sizes == {"batch_size": "2", "in_features": "8", "hidden": "16", "out_features": "4"}
    macs = 64 * 512 * 1024 + 64 * 1024 * 256
    assert t.report.totals.macs == macs
    c = t.provenance["capture_check"]
    assert c["status"] == "agree" and c["capture"]["macs"] == macs
    assert c["translation"]["bytes_fused"] == 4 * (64 * 512 + 1024 * 512 + 1024 + 256 * 1024
                                                   + 64 * 256)


CUMSUM_SOURCE = '''\
"""A prefix sum along the last dimension (PyTorch)."""
import torch
import torch.nn as nn

batch_size = 8
n = 512


class Model(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=1)


def get_inputs():
    return [torch.randn(batch_size, n)]


def get_init_inputs():
    return []
'''

TRIANGULAR_CUMSUM = f'''\
"""{MARKER}: a prefix sum as a triangular reduction: n(n+1)/2 additions per row."""
from solar.loopir import Tensor, kernel

batch_size = 8
n = 512

x = Tensor("batch_size, n", dtype="f32", role="input")
y = Tensor("batch_size, n", dtype="f32", role="output")


@kernel
def cumsum(x, y):
    for b in range(batch_size):
        for i in range(n):
            for j in range(i + 1):
                y[b, i] += x[b, j]


def model():
    cumsum(x, y)
'''


def test_capture_check_compares_every_work_kind(srv, tmp_path, no_model_code_runs):
    """A cumsum written as a triangular reduction matches the source's values with far more
    additions: MACs and bytes are equal, the vector FLOPs are not, so the check says `differ`
    with the ratio of each kind and of the fused SOL, and a warning that every report
    carries (the translation is still accepted)."""
    from solar.translate import capture
    from solar.translate.cli import summary_lines

    src = tmp_path / "cumsum.py"
    src.write_text(CUMSUM_SOURCE)
    srv.script = [answer(fenced(TRIANGULAR_CUMSUM))]
    out = tmp_path / "cumsum_loop.py"
    t = translate(str(src), str(out), options(srv, tmp_path, capture_check=True))
    assert t.status == "validated", t.provenance["attempts"]
    c = t.provenance["capture_check"]
    b, n = 8, 512
    # torch's cumsum: n additions per row; the triangle: n(n+1)/2 points per row, less the
    # n outputs (a sum of k values takes k - 1 additions).
    assert c["capture"]["vector_flops"] == b * n
    assert c["translation"]["vector_flops"] == b * (n * (n + 1) // 2 - n)
    assert c["translation"]["macs"] == c["capture"]["macs"] == 0
    assert c["translation"]["bytes_fused"] == c["capture"]["bytes_fused"] == 2 * 4 * b * n
    assert c["status"] == "differ" and c["differ"] == ["vector_flops"] and c["device"] == "H100_SXM"
    assert c["ratios"]["vector_flops"] == pytest.approx((n * (n + 1) / 2 - n) / n)
    assert c["ratios"]["bytes_fused"] == 1.0 and c["ratios"]["macs"] == 1.0  # 0 and 0
    assert c["ratios"]["fused_sol_s"] == pytest.approx(
        c["translation"]["fused_sol_s"] / c["capture"]["fused_sol_s"])
    assert "vector FLOPs 256x (1,046,528 vs 4,096)" in c["warning"]
    assert t.provenance["warnings"] == [c["warning"]]
    printed = summary_lines(t)
    assert "!!! capture check: differ: MACs 0, vector FLOPs 1,046,528 (capture 4,096)" in printed
    assert f"!!! warning: {c['warning']}" in printed
    report = json.loads(t.report.to_json(None, ops=False))
    assert report["translation"]["warnings"] == [c["warning"]]
    a = run_solar("analyze", str(out), "--no-cache-aware")  # a later report warns too
    assert a.returncode == 0 and "vector FLOPs 256x" in a.stderr, a.stderr
    # Equal counts of every kind agree; a 2x difference of one warns, 1.5x does not.
    same = {"macs": 10, "vector_flops": 4, "special_ops": 2, "bytes_fused": 8,
            "fused_sol_s": 1e-6, "device": "H100_SXM"}
    assert capture.compare(same, dict(same))["status"] == "agree"
    assert "warning" not in capture.compare(dict(same, special_ops=3), same)
    assert "special ops 2x (4 vs 2)" in capture.compare(dict(same, special_ops=4), same)["warning"]
    assert "MACs 1/2x (5 vs 10)" in capture.compare(dict(same, macs=5), same)["warning"]


F32_SOURCE = '''\
"""tanh(x @ w) computed in f32 and returned as f64 (NumPy)."""
import numpy as np

M, N, K = 64, 48, 256


def get_inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((M, K)).astype(np.float32),
            rng.standard_normal((K, N)).astype(np.float32) / 16]


def forward(x, w):
    return np.tanh(x @ w).astype(np.float64)
'''

F64_PROGRAM = f'''\
"""{MARKER}: tanh(x @ w), the output f64 like the source's."""
from solar.loopir import Tensor, kernel, tanh

M, N, K = 64, 48, 256

x = Tensor("M,K", dtype="f32", role="input")
w = Tensor("K,N", dtype="f32", role="input")
y = Tensor("M,N", dtype="f64", role="output")


@kernel
def layer(x, w, y):
    acc = Tensor("M,N", dtype="f64")
    for m in range(M):
        for n in range(N):
            for k in range(K):
                acc[m, n] += x[m, k] * w[k, n]
    for m in range(M):
        for n in range(N):
            y[m, n] = tanh(acc[m, n])


def model():
    layer(x, w, y)
'''


def test_outputs_are_compared_at_the_precision_the_source_computed_in(srv, tmp_path,
                                                                    no_model_code_runs):
    """A NumPy source that computes in f32 and returns f64: compared at f64's tolerance
    (1e-9) no translation could match the source's own f32 rounding. Its float inputs are
    f32, so the output is compared at f32's tolerance, and every report says so; a source
    may declare its precision instead (SOLAR_PRECISION). A mismatch prints enough digits to
    tell the two values apart."""
    from solar.translate import check, source

    src = tmp_path / "f32.py"
    src.write_text(F32_SOURCE)
    off = F64_PROGRAM.replace("y[m, n] = tanh(acc[m, n])", "y[m, n] = tanh(acc[m, n] * 1.001)")
    srv.script = [answer(fenced(off)), answer(fenced(F64_PROGRAM))]
    t = translate(str(src), str(tmp_path / "f32_loop.py"), options(srv, tmp_path))
    assert t.status == "validated" and t.attempts == 2, t.provenance["attempts"]
    why = "detected: its float inputs and weights are at most f32, its output f64"
    data = t.provenance["validation"]["data"]
    assert data["compared_at"] == {"0": {"dtype": "f32", "why": why}}
    (entry,) = t.provenance["validation"]["section"]["reference"]["outputs"]
    assert entry["compared_at"] == "f32" and entry["loop_program"]["rtol"] == 1e-4
    message = t.provenance["attempts"][0]["failure"]["message"]
    assert "(atol 1e-05, rtol 0.0001; at f32's tolerance, not f64's: the precision the source " \
           f"computed in, {why})" in message
    got, want = message.split("your program gives ")[1].split(".\n")[0].split(", the source ")
    assert got != want
    # Values that agree in 4 significant digits are printed until they differ.
    assert check._pair(2.1160004, 2.116003) == ("2.116", "2.116003")
    assert check._pair(-0.5, 0.25) == ("-0.5", "0.25") and check._pair(1, 1.0) == ("1", "1")
    from solar.translate.cli import summary_lines
    assert f"output 0 compared at f32's tolerance, the precision the source computed in ({why})" \
        in summary_lines(t)
    # Declared: SOLAR_PRECISION = "f64" keeps f64's tolerance, which the f32 source fails.
    declared = tmp_path / "declared.py"
    declared.write_text(F32_SOURCE.replace("M, N, K =", 'SOLAR_PRECISION = "f64"\nM, N, K ='))
    srv.script = [answer(fenced(F64_PROGRAM))]
    t = translate(str(declared), str(tmp_path / "d_loop.py"), options(srv, tmp_path, attempts=1))
    assert t.status == "failed"
    assert "atol 1e-09, rtol 1e-09" in t.provenance["attempts"][0]["failure"]["message"]
    # An .npz declares it as `precision`.
    np.savez(tmp_path / "p.npz", **{"inputs/x": np.ones(4, np.float32), "outputs/0": np.ones(4),
                                    "precision": np.asarray("bf16")})
    assert source.load_npz(str(tmp_path / "p.npz")).precision == {
        0: {"dtype": "bf16", "why": "declared by SOLAR_PRECISION"}}


WINDOW_PROGRAM = '''\
"""Sums over a sliding window of W elements."""
from solar.loopir import Tensor, kernel

N, W = 256, 16

x = Tensor("N", dtype="f64", role="input")
y = Tensor("N - W + 1", dtype="f64", role="output")


@kernel
def window(x, y):
    for i in range(N - W + 1):
        for j in range(W):
            y[i] += x[i + j]


def model():
    window(x, y)
'''

WINDOW_REFERENCE = '''\
import numpy as np

W = 16


def reference(x):
    return np.convolve(x, np.ones(W), mode="valid")
'''


def test_set_reaches_a_reference_programs_constants(tmp_path):
    """`solar validate prog.py --set W=4 --reference ref.py`: the reference's own W must
    shrink with the program's, or the window it sums is another one; the settings it
    defines are applied to it, and the section says which were and which it lacks."""
    prog, ref = tmp_path / "window.py", tmp_path / "window_ref.py"
    prog.write_text(WINDOW_PROGRAM)
    ref.write_text(WINDOW_REFERENCE)
    section = solar.loopir.validate(str(prog), reference=str(ref), set={"N": 32, "W": 4})
    assert section["status"] == "passed", section
    assert section["reference"]["settings"] == {"applied": {"W": "4"},
                                                "not_in_reference": ["N"]}
    r = run_solar("validate", str(prog), "--set", "N=32", "--set", "W=4", "--reference",
                  str(ref))
    assert r.returncode == 0, r.stdout + r.stderr
    # A reference whose window is named otherwise keeps its own, and the error says why.
    ref.write_text(WINDOW_REFERENCE.replace("W", "WIDTH"))
    with pytest.raises(solar.UserError, match=r"has shape \[17\], the loop program's \[29\] "
                       r"\(--set N, W names no module-level constant of the reference"):
        solar.loopir.validate(str(prog), reference=str(ref), set={"N": 32, "W": 4})


def test_reference_limits(srv, tmp_path):
    """The source runs in a subprocess under a time and an address-space limit; a source
    that exceeds them fails before any model is asked."""
    from solar.translate import SourceError

    slow = tmp_path / "slow.py"
    slow.write_text(GEMM_SOURCE.replace("    rng = np.random", "    while True:\n        pass\n"
                                        "    rng = np.random"))
    with pytest.raises(SourceError, match=r"exceeded its time limit \(2 s\)"):
        translate(str(slow), None, options(srv, tmp_path, ref_timeout=2))
    hog = tmp_path / "hog.py"
    hog.write_text(GEMM_SOURCE.replace("    rng = np.random",
                                       "    big = np.ones(3 * 2**30 // 8)\n    rng = np.random"))
    with pytest.raises(SourceError, match="memory limit"):
        translate(str(hog), None, options(srv, tmp_path, ref_memory_gb=1.5))
    assert srv.requests == []


# ----------------------------------------------------------------------- cache


def test_cache_by_content_and_no_cache(srv, gemm, tmp_path, no_model_code_runs):
    srv.script = [answer(fenced(GEMM_PROGRAM))]
    first = translate(str(gemm), str(tmp_path / "a.py"), options(srv, tmp_path))
    again = translate(str(gemm), str(tmp_path / "b.py"), options(srv, tmp_path))
    assert len(srv.requests) == 1  # the second came from the cache
    assert again.provenance["cache"]["hit"] is True and again.status == "validated"
    assert again.program == first.program and again.report.totals.macs == 64 * 48 * 32
    assert again.provenance["attempts"] == first.provenance["attempts"]
    srv.script = [answer(fenced(GEMM_PROGRAM))] * 2
    fresh = translate(str(gemm), str(tmp_path / "c.py"), options(srv, tmp_path, cache=False))
    assert len(srv.requests) == 2 and fresh.provenance["cache"] == {
        "key": first.provenance["cache"]["key"], "hit": False, "used": False}
    other = translate(str(gemm), str(tmp_path / "d.py"), options(srv, tmp_path, model="other"))
    assert len(srv.requests) == 3 and other.provenance["cache"]["hit"] is False
    gemm.write_text(GEMM_SOURCE + "\n# edited\n")  # the source's content keys the cache
    srv.script = [answer(fenced(GEMM_PROGRAM))]
    translate(str(gemm), str(tmp_path / "e.py"), options(srv, tmp_path))
    assert len(srv.requests) == 4


# ----------------------------------------------------------------------- CLI


CUDA_SOURCE = """\
// y[i] = 2 x[i] + b[i]
__global__ void axpb(const float* x, const float* b, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i] + b[i];
}
"""

AXPB_PROGRAM = f'''\
"""{MARKER}: y = 2 x + b."""
from solar.loopir import Tensor, kernel

N = 4096

x = Tensor("N", dtype="f32", role="input")
b = Tensor("N", dtype="f32", role="input")
y = Tensor("N", dtype="f32", role="output")


@kernel
def axpb(x, b, y):
    for i in range(N):
        y[i] = 2.0 * x[i] + b[i]


def model():
    axpb(x, b, y)
'''


def _cli(srv, *args, cwd=ROOT, env_extra=None):
    os.environ["SOLAR_TRANSLATE_API_KEY"] = SECRET  # run_solar passes os.environ on
    try:
        return run_solar("translate", *args, "--model", MODEL, "--endpoint", srv.url,
                         "--backoff", "0.01", "--timeout", "5", cwd=cwd)
    finally:
        del os.environ["SOLAR_TRANSLATE_API_KEY"]


def test_cli_cuda_needs_a_reference_or_unvalidated(srv, tmp_path, monkeypatch):
    monkeypatch.setenv("SOLAR_CACHE_DIR", str(tmp_path / "cache"))
    cu = tmp_path / "axpb.cu"
    cu.write_text(CUDA_SOURCE)
    r = _cli(srv, str(cu))
    assert r.returncode == 2 and srv.requests == []
    assert "a CUDA source is validated against --reference DATA.npz" in r.stderr
    # --unvalidated: accepted when it parses and lifts, and every report says so.
    srv.script = [answer(fenced(AXPB_PROGRAM))]
    r = _cli(srv, str(cu), "--unvalidated")
    assert r.returncode == 0, r.stderr
    assert "VALIDATED" not in r.stdout.replace("UNVALIDATED", "")
    assert "!!! UNVALIDATED (--unvalidated)" in r.stdout
    out = tmp_path / "axpb_loop.py"
    assert out.read_text().startswith("# UNVALIDATED translation of axpb.cu by scripted-coder")
    a = run_solar("analyze", str(out))
    assert a.returncode == 0 and "is an UNVALIDATED translation of" in a.stderr
    a = run_solar("analyze", str(out), "--json", "-", "--no-cache-aware")
    assert json.loads(a.stdout)["translation"]["status"] == "unvalidated"  # in the report too
    s = run_solar("suite", str(tmp_path), "--jobs", "1", "--no-crosscheck")
    assert "translations            validated 0  unvalidated 1" in s.stdout, s.stdout
    # --reference DATA.npz: inputs, outputs and the sizes they were made at.
    rng = np.random.default_rng(1)
    xs, bs = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    np.savez(tmp_path / "axpb.npz", **{"inputs/x": xs, "inputs/b": bs, "outputs/0": 2 * xs + bs,
                                       "sizes/N": np.asarray(16)})
    srv.reset()
    srv.script = [answer(fenced(AXPB_PROGRAM.replace("2.0 * x[i]", "3.0 * x[i]"))),
                  answer(fenced(AXPB_PROGRAM))]
    r = _cli(srv, str(cu), "--reference", str(tmp_path / "axpb.npz"), "--json",
             str(tmp_path / "r.json"))
    assert r.returncode == 0, r.stderr
    assert "VALIDATED after 2 attempt(s)" in r.stdout
    assert "attempt 1: mismatch: output `y` (f32[16], the source's output 0) differs" in r.stdout
    assert "validation: validated against " in r.stdout and "(npz) at N=16" in r.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["totals"]["flops"] == 2 * 4096 and report["translation"]["status"] == "validated"
    assert SECRET not in r.stdout + r.stderr + all_written_text(tmp_path)


def test_npz_dtypes_listed_and_failures_summarized_by_their_reasons(srv, tmp_path,
                                                                    no_model_code_runs):
    """An .npz source's tensors are listed with their arrays' dtypes (not `?`); a failure's
    summary line (the error, the batch summary) names the problems of a binding failure,
    not only its heading "At the test sizes (...):"."""
    from solar.translate import batch

    cu = tmp_path / "axpb.cu"
    cu.write_text(CUDA_SOURCE)
    rng = np.random.default_rng(1)
    xs, bs = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    np.savez(tmp_path / "axpb.npz", **{"inputs/x": xs, "inputs/b": bs, "outputs/0": 2 * xs + bs,
                                       "sizes/N": np.asarray(16)})
    srv.script = [answer(fenced(AXPB_PROGRAM.replace("b = Tensor", "bias = Tensor").replace(
        "b[i]", "bias[i]").replace("(x, b, y)", "(x, bias, y)")))]
    t = translate(str(cu), str(tmp_path / "axpb_loop.py"),
                  options(srv, tmp_path, reference=str(tmp_path / "axpb.npz"), attempts=1))
    user = srv.requests[0]["body"]["messages"][1]["content"]
    assert "  x                        f32    [16]" in user
    assert "  0                        f32    [16]" in user and "?" not in user.split("```")[0]
    assert t.status == "failed"
    first = "`bias` (input, f32[16]) is no argument, parameter or buffer of the source"
    second = "the source's argument `b` ([16]) is not declared (or never read)"
    assert f"binding: At the test sizes (N=16): {first}; {second}" in t.error
    assert "  x                        f32    [16]" in t.provenance["attempts"][0]["failure"][
        "message"]  # the binding's listing too
    summary = batch.summarize([{"source": "axpb.cu", "status": "failed", "attempts": 1,
                                "error": "At the test sizes (N=16):\n- " + first + "\n"}],
                              "src", "out", options(srv, tmp_path))
    assert f"FAIL axpb.cu: At the test sizes (N=16): {first}" in batch.summary_table(summary)


def test_cli_retries_and_exit_codes(srv, gemm, tmp_path, monkeypatch):
    monkeypatch.setenv("SOLAR_CACHE_DIR", str(tmp_path / "cache"))
    srv.script = [error(429, {"Retry-After": "1"}), answer(fenced(GEMM_PROGRAM))]
    r = _cli(srv, str(gemm), "--out", str(tmp_path / "g.py"))
    assert r.returncode == 0, r.stderr
    assert "attempt 1: accepted; HTTP 429 (waited 1 s)" in r.stdout
    assert srv.requests[1]["time"] - srv.requests[0]["time"] >= 1.0  # Retry-After, for real
    assert "MACs          98.3 kMAC" in r.stdout  # the report at the program's own sizes
    srv.script = [answer(fenced(WRONG_GEMM))] * 2
    r = _cli(srv, str(gemm), "--out", str(tmp_path / "w.py"), "--attempts", "2", "--no-cache")
    assert r.returncode == 8 and "no translation validated in 2 attempt(s)" in r.stderr
    srv.script = [error(500)] * 2
    r = _cli(srv, str(gemm), "--out", str(tmp_path / "w.py"), "--retries", "1", "--no-cache")
    assert r.returncode == 3 and "no answer after 2 requests" in r.stderr


def test_cli_batch_is_resumable_and_suite_runs_on_it(srv, tmp_path, monkeypatch):
    monkeypatch.setenv("SOLAR_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "gemm.py").write_text(GEMM_SOURCE)
    (src / "sub" / "axpb.cu").write_text(CUDA_SOURCE)
    rng = np.random.default_rng(2)
    xs, bs = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    np.savez(src / "sub" / "axpb.npz", **{"inputs/x": xs, "inputs/b": bs,
                                           "outputs/0": 2 * xs + bs, "sizes/N": np.asarray(16)})
    (src / "hard.py").write_text(GEMM_SOURCE.replace("return A @ B", "return (A @ B) ** 2"))
    # A prompt example: the PyTorch twin of examples/loops/conv2d.py, answered with conv2d.py.
    loops = ROOT / "examples" / "loops"
    (src / "conv2d_torch.py").write_text((loops / "conv2d_torch.py").read_text())
    conv = (loops / "conv2d.py").read_text().replace('"""', f'"""{MARKER} ', 1)
    srv.routes = {"`gemm.py`": [answer(fenced(WRONG_GEMM)), answer(fenced(GEMM_PROGRAM))],
                  "`axpb.cu`": [answer(fenced(AXPB_PROGRAM))],
                  "`hard.py`": [answer(fenced(GEMM_PROGRAM))] * 2,
                  "`conv2d_torch.py`": [answer(fenced(conv))]}
    out = tmp_path / "out"
    r = _cli(srv, str(src), "--out", str(out), "--jobs", "2", "--attempts", "2")
    assert r.returncode == 8, r.stderr  # one source failed
    assert "translated   3  (validated 3, unvalidated 0)" in r.stdout
    assert "failed       1" in r.stdout and "attempts     1: 2  2: 1" in r.stdout
    assert "FAIL hard.py: " in r.stdout and r.stderr.count("solar translate: ") == 4
    # The capture of the conv counts every tap, N*K*OH*OW*(C/G)*KH*KW MACs; the loop program
    # only the taps its padding guard keeps: a disagreement, reported.
    capture_macs = 8 * 256 * 28 * 28 * (256 // 32) * 3 * 3
    assert f"!!! capture disagrees: conv2d_torch.py: macs translation 107495424 vs capture " \
           f"{capture_macs}" in r.stdout
    summary = json.loads((out / "translate-summary.json").read_text())
    assert summary["tokens"]["total_tokens"] == 6 * 1100 and len(srv.requests) == 6
    assert sorted(p.name for p in out.rglob("*.py")) == ["axpb_cu.py", "conv2d_torch.py",
                                                          "gemm.py"]
    # Resumed: nothing is asked again; --retry-failed asks again for the failed one only.
    r = _cli(srv, str(src), "--out", str(out), "--jobs", "2")
    assert "resumed      4" in r.stdout and len(srv.requests) == 6
    srv.routes["`hard.py`"] = [answer(fenced(GEMM_PROGRAM))]
    r = _cli(srv, str(src), "--out", str(out), "--retry-failed", "--attempts", "1")
    assert "resumed      3" in r.stdout and len(srv.requests) == 7
    s = run_solar("suite", str(out), "--jobs", "1")
    assert s.returncode == 0, s.stderr
    assert "analyzed                3" in s.stdout
    assert "translations            validated 3  unvalidated 0" in s.stdout


def test_work_at_the_test_sizes_is_bounded(srv, gemm, tmp_path, no_model_code_runs):
    """Extents that ignore the source's constants would make the interpreter run for hours:
    refused before it runs, with the count."""
    huge = GEMM_PROGRAM.replace("M, N, K = 64, 48, 32", "M, N, K = 64, 48, 32\nR = 10**6\n"
                                'Z = Tensor("R", role="constant", fill=0.0)').replace(
        "for k in range(K):", "for k in range(K):\n                for r in range(R):").replace(
        "C[m, n] += A[m, k] * B[k, n]", "    C[m, n] += A[m, k] * B[k, n] + Z[r]")
    srv.script = [answer(fenced(huge)), answer(fenced(GEMM_PROGRAM))]
    t = translate(str(gemm), str(tmp_path / "g.py"), options(srv, tmp_path))
    f = t.provenance["attempts"][0]["failure"]
    assert t.status == "validated" and f["kind"] == "too_big"
    assert f"run {16 * 16 * 8 * 10**6:,} iterations" in f["message"]


def test_a_bound_that_depends_on_an_outer_loop_counts_its_whole_range(srv, gemm, tmp_path,
                                                                    no_model_code_runs):
    """`for t in range(d - 10**9, d + 1): if t >= 0:` keeps few points but the interpreter
    sweeps all 10^9 + 1 values of t for each d: counted as such (it was counted as 1), refused
    before it runs."""
    wide = GEMM_PROGRAM.replace(
        "for k in range(K):\n                C[m, n] += A[m, k] * B[k, n]",
        "for d in range(K):\n                for t in range(d - 10**9, d + 1):\n"
        "                    if t >= 0 and t == d:\n"
        "                        C[m, n] += A[m, t] * B[d, n]")
    srv.script = [answer(fenced(wide)), answer(fenced(GEMM_PROGRAM))]
    t = translate(str(gemm), str(tmp_path / "g.py"), options(srv, tmp_path))
    f = t.provenance["attempts"][0]["failure"]
    assert t.status == "validated" and f["kind"] == "too_big", f
    # at the test sizes M=N=16, K=8: for each (m, n, d), t takes d + 1 - (d - 10^9) values
    # over its widest range, from 0 - 10^9 to K - 1 + 1
    assert f"run {16 * 16 * 8 * (10**9 + 8):,} iterations" in f["message"]


def test_validation_has_a_wall_clock_limit(srv, gemm, tmp_path, no_model_code_runs,
                                           monkeypatch):
    """What the work estimate does not foresee is stopped by the clock: an attempt whose
    validation runs past it is refused (too_big) and the next attempt is asked for."""
    from solar.translate import check

    monkeypatch.setattr(check, "VALIDATION_SECONDS", 1e-9)
    srv.script = [answer(fenced(GEMM_PROGRAM))]
    t = translate(str(gemm), str(tmp_path / "g.py"), options(srv, tmp_path, attempts=1))
    f = t.provenance["attempts"][0]["failure"]
    assert t.status != "validated" and f["kind"] == "too_big", f
    assert "ran past the 1e-09 s its validation may take" in f["message"]


FLAX_PROGRAM = f'''\
"""{MARKER}: Dense, ReLU, Dense with Flax's variables (a kernel is [in, out])."""
from solar.loopir import Tensor, kernel, relu

B, IN, HID, OUT = 32, 784, 256, 10

x = Tensor("B,IN", dtype="f32", role="input")
params__Dense_0__kernel = Tensor("IN,HID", dtype="f32", role="weight")
params__Dense_0__bias = Tensor("HID", dtype="f32", role="weight")
params__Dense_1__kernel = Tensor("HID,OUT", dtype="f32", role="weight")
params__Dense_1__bias = Tensor("OUT", dtype="f32", role="weight")
y = Tensor("B,OUT", dtype="f32", role="output")


@kernel
def dense(x, w, b, h, n_in, n_out, act):
    acc = Tensor("B, n_out", dtype="f32")
    for i in range(B):
        for o in range(n_out):
            for k in range(n_in):
                acc[i, o] += x[i, k] * w[k, o]
    for i in range(B):
        for o in range(n_out):
            h[i, o] = max(acc[i, o] + b[o], act)


def model():
    h = Tensor("B,HID", dtype="f32")
    dense(x, params__Dense_0__kernel, params__Dense_0__bias, h, IN, HID, 0)
    dense(h, params__Dense_1__kernel, params__Dense_1__bias, y, HID, OUT, -inf)
'''


def test_flax_variables_by_path(srv, tmp_path, no_model_code_runs):
    """A JAX source: a Flax Model's variables are weights named by their path, `/` written
    `__`, fed the values Model.init gave them; the prompt lists them at the source's own
    sizes (jax.eval_shape)."""
    src = tmp_path / "flax_mlp.py"
    src.write_text((ROOT / "examples" / "jax" / "flax_mlp.py").read_text())
    srv.script = [answer(fenced(FLAX_PROGRAM))]
    t = translate(str(src), str(tmp_path / "flax_loop.py"), options(srv, tmp_path))
    assert t.status == "validated" and t.attempts == 1, t.provenance["attempts"]
    user = srv.requests[0]["body"]["messages"][1]["content"]
    assert "Translate this JAX program (`flax_mlp.py`)" in user
    assert "params/Dense_0/kernel -> params__Dense_0__kernel f32    [784, 256]" in user
    assert t.provenance["validation"]["data"]["framework"] == "jax"
    assert t.report.totals.macs == 32 * (784 * 256 + 256 * 10)


def test_a_binding_failure_names_the_npz_sizes_and_the_batch_shows_its_whole_reason(
        srv, tmp_path, no_model_code_runs):
    """A CUDA source has no size constants Solar can read: the sizes its .npz was made at
    (sizes/N) are the ones a binding failure says the program does not define. The batch
    summary's line of a binding failure gives its reason's items, not its heading alone."""
    from solar.translate import batch, check

    cu = tmp_path / "axpb.cu"
    cu.write_text(CUDA_SOURCE)
    rng = np.random.default_rng(2)
    xs, bs = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    np.savez(tmp_path / "axpb.npz", **{"inputs/x": xs, "inputs/b": bs, "outputs/0": 2 * xs + bs,
                                       "sizes/N": np.asarray(16)})
    # The program names its size `n`: the .npz's N=16 cannot set it, so its tensors keep 4096.
    srv.script = [answer(fenced(AXPB_PROGRAM.replace("N = 4096", "n = 4096").replace(
        '"N"', '"n"').replace("range(N)", "range(n)")))]
    t = translate(str(cu), str(tmp_path / "axpb_loop.py"),
                  options(srv, tmp_path, reference=str(tmp_path / "axpb.npz"), attempts=1))
    assert t.status == "failed"
    message = t.provenance["attempts"][0]["failure"]["message"]
    assert "Size constants of the source your program does not define: N " in message
    # Every item of a listed reason, joined; beyond HEADLINE_ITEMS, how many more.
    items = [f"`{n}` (input, f32[4096]) has shape [4096] at the test sizes" for n in "xyzw"]
    listed = "At the test sizes (N=16):\n- " + "\n- ".join(items) + "\n\nmore\n"
    summary = batch.summarize([{"source": "axpb.cu", "status": "failed", "attempts": 1,
                                "error": listed}], "src", "out", options(srv, tmp_path))
    shown = "; ".join(items[:check.HEADLINE_ITEMS])
    assert f"FAIL axpb.cu: At the test sizes (N=16): {shown} (and 1 more)\n" in \
        batch.summary_table(summary)


def test_a_triton_source_in_a_folder_is_validated_against_its_npz(srv, tmp_path,
                                                                   no_model_code_runs):
    """`solar translate DIR`: a Triton kernel (a .py Solar does not run) is validated against
    the .npz beside it, like a CUDA file; before, every .py was taken for a runnable one."""
    from solar.translate import batch

    bench = ROOT / "bench" / "translate"
    folder = tmp_path / "src"
    folder.mkdir()
    for suffix in (".py", ".npz"):
        name = "triton_layernorm" + suffix
        (folder / name).write_bytes((bench / "sources" / name).read_bytes())
    sys.path.insert(0, str(bench))
    from replay import read_transcript

    accepted = read_transcript(bench / "transcripts" / "triton_layernorm.md").answers[-1]
    srv.script = [answer(accepted)]
    summary = batch.translate_dir(str(folder), str(tmp_path / "out"), options(srv, tmp_path))
    (rec,) = summary["records"]
    assert rec["status"] == "validated", rec
    data = json.loads((tmp_path / "out" / "triton_layernorm.provenance.json").read_text())[
        "validation"]["data"]
    assert data["framework"] == "npz" and data["from"] == str(folder / "triton_layernorm.npz")


def test_loop_validation_at_the_precision_an_output_was_computed_in(tmp_path):
    """`solar validate`: an f64 output of an f32 sum differs between the interpreter and the
    executor by f32's rounding (they sum in different orders), which f64's 1e-9 calls a
    mismatch: it is compared at f32's tolerance, and the report says so. An output outside
    even that tolerance still fails."""
    program = '''\
"""An f32 dot product widened to an f64 output."""
from solar.loopir import Tensor, kernel

N, K = 64, 4096

a = Tensor("N,K", dtype="f32", role="input")
b = Tensor("K", dtype="f32", role="weight")
t = Tensor("N", dtype="f32")
y = Tensor("N", dtype="f64", role="output")


@kernel
def dot(a, b, t, y):
    for n in range(N):
        for k in range(K):
            t[n] += a[n, k] * b[k]
    for n in range(N):
        y[n] = t[n]


def model():
    dot(a, b, t, y)
'''
    from solar.frontends.loopir.validation import computed_in

    path = tmp_path / "mixed.py"
    path.write_text(program)
    r = run_solar("validate", str(path), "--json", str(tmp_path / "r.json"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "(at f32's tolerance, the precision it was computed in)" in r.stdout
    (out,) = json.loads((tmp_path / "r.json").read_text())["validation"]["outputs"]
    assert out["compared_at"] == "f32" and out["rtol"] == 1e-4 and out["passed"]
    assert computed_in(solar.loopir.lift(str(path))) == {"y": "f32"}
    # Summed in f64, the same output keeps f64's tolerance.
    wide = tmp_path / "wide.py"
    wide.write_text(program.replace('t = Tensor("N", dtype="f32")', 't = Tensor("N", dtype="f64")'))
    assert computed_in(solar.loopir.lift(str(wide))) == {}


GATHER_CONV_T = '''\
"""A transposed 1-D convolution in gather form: every subscript a plain loop variable, the
window the guard p == S*i + k - P."""
from solar.loopir import Tensor, kernel

B, C, O, L, KW, S, P = 2, 8, 4, 16, 4, 2, 1
LO = (L - 1) * S - 2 * P + KW

x = Tensor("B,C,L", dtype="f32", role="input")
w = Tensor("C,O,KW", dtype="f32", role="weight")
y = Tensor("B,O,LO", dtype="f32", role="output")


@kernel
def conv_t(x, w, y):
    for b in range(B):
        for o in range(O):
            for p in range(LO):
                for c in range(C):
                    for i in range(L):
                        for k in range(KW):
                            if p == S * i + k - P:
                                y[b, o, p] += x[b, c, i] * w[c, o, k]


def model():
    conv_t(x, w, y)
'''


def test_macs_dense_of_a_gather_form_window_is_worded_for_what_it_counts(tmp_path):
    """A transposed convolution in gather form is a convolution (its window is the mask's
    equality), its MACs the live taps; its `macs_dense` is the whole box, which no
    implementation runs: the text and the JSON word it as a count of whole iteration boxes,
    masks ignored, not as the work of an implementation that computes the masked points."""
    path = tmp_path / "conv_t.py"
    path.write_text(GATHER_CONV_T)
    r = run_solar("analyze", str(path), "--json", str(tmp_path / "r.json"))
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    b, c, o, length, kw, s, p = 2, 8, 4, 16, 4, 2, 1
    lo = (length - 1) * s - 2 * p + kw
    # Live taps: every (input position, tap) whose output position p = s*i + k - pad lands
    # inside [0, lo); the box: every output position against every input position and tap.
    live = sum(1 for i in range(length) for k in range(kw) if 0 <= s * i + k - p < lo)
    assert doc["totals"]["macs"] == b * o * c * live
    assert doc["totals"]["macs_dense"] == b * o * lo * c * length * kw
    (op,) = [x for x in doc["ops"] if x["kind"] == "einsum"]
    assert op["class"] == "convolution"
    assert "(whole iteration boxes, masks ignored)" in r.stdout
    assert "masked points computed too" not in r.stdout
    note = doc["conventions"]["masks"]
    assert "macs_dense counts its whole box, masks ignored" in note
    assert "where the mask is the op's window (a transposed convolution in gather form), a " \
           "count no implementation runs" in note
