"""The rough edges a new user hit: each test reproduces one as the user met it."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import solar
from conftest import EXAMPLES, ROOT, run_solar


def _program(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


# ---- 2. counts past 64 bits are Python ints, not strings

def test_counts_past_64_bits_are_ints():
    n = 10**10
    g = solar.parse_graph(f"""graph huge
a = bf16[{n},{n}]{{dims="M,K"}} input
b = bf16[{n},{n}]{{dims="K,N"}} weight
c = bf16[{n},{n}]{{output}} einsum "mk,kn->mn" (a, b)
""")
    r = solar.analyze(g, arch="H100_SXM")
    assert r.totals.macs == n * n * n and type(r.totals.macs) is int
    assert r.totals.flops == 2 * n * n * n and type(r.totals.flops) is int
    assert r.totals.macs_by_dtype["bf16"] == n * n * n
    assert r.totals.bytes_unfused == 2 * 3 * n * n  # A, B read and C written, 2 B each
    (op,) = [o for o in r.ops if o.macs]
    assert op.macs == n * n * n and type(op.macs) is int
    # The JSON text keeps the documented decimal strings (exact for every reader).
    assert json.loads(r.to_json())["totals"]["macs"] == str(n * n * n)


# ---- 5. output files honour the umask, as graph outputs do

SMALL_TORCH = """
import torch
M, N, K = 64, 32, 16
class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.relu(a @ b)
def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]
def get_init_inputs():
    return []
"""


def _solar_with_umask(mask: int, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "solar", *args], cwd=ROOT, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=300,
                          preexec_fn=lambda: os.umask(mask))


@pytest.mark.parametrize("mask", [0o022, 0o027])
def test_program_outputs_honour_the_umask(tmp_path, mask):
    pytest.importorskip("torch")
    prog = _program(tmp_path, "small.py", SMALL_TORCH)
    outs = [tmp_path / "r.json", tmp_path / "s.svg", tmp_path / "t.json"]
    r = _solar_with_umask(mask, "analyze", str(prog), "--json", str(outs[0]), "--ski-slope",
                          str(outs[1]), "--save-trace", str(outs[2]))
    assert r.returncode == 0, r.stderr
    # The C++ CLI's graph output (solar analyze g.solar --json) is the reference.
    graph_out = tmp_path / "g.json"
    g = _solar_with_umask(mask, "analyze", str(EXAMPLES / "gemm.solar"), "--json",
                          str(graph_out))
    assert g.returncode == 0, g.stderr
    assert stat.S_IMODE(graph_out.stat().st_mode) == 0o666 & ~mask
    for out in outs:
        assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask, out


def test_report_save_honours_the_umask(tmp_path):
    r = solar.analyze(solar.load_graph(str(EXAMPLES / "gemm.solar")))
    old = os.umask(0o027)
    try:
        r.save(str(tmp_path / "r.json"))
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "r.json").stat().st_mode) == 0o640
    assert json.loads((tmp_path / "r.json").read_text())["totals"]["macs"] == 4096**3


# ---- 4. bench --profile joins a bound with the op's time including its children

def test_bench_profile_joins_convolution_with_its_children(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "bench.json"
    r = run_solar("bench", str(EXAMPLES / "torch" / "convs.py"), "--device", "cpu", "--trials",
                  "1", "--warmup", "1", "--no-flush", "--profile", "--json", str(out))
    assert r.returncode == 0, r.stderr
    rows = {row["op"]: row for row in json.loads(out.read_text())["measurement"]["per_op"]}
    conv = rows["aten::convolution"]
    # The CPU's work runs in the child aten::mkldnn_convolution (or the slow-path kernels):
    # it is in aten::convolution's time, not a row of its own with no bound.
    assert not any(name in rows for name in ("aten::mkldnn_convolution", "aten::_convolution"))
    assert conv["sol_seconds"] > 0 and conv["headroom"] >= 1 and not conv["below_bound"]
    measured = sum(row["measured_seconds"] or 0 for row in rows.values())
    assert conv["measured_seconds"] >= 0.5 * measured  # the convolutions hold the run
    assert "including the op's children" in r.stdout


def test_a_per_op_time_below_its_bound_is_flagged():
    from solar import bench

    section = {"device": "host", "mode": "eager", "trials": 1, "cache": "warm",
               "min_seconds": 1e-3, "median_seconds": 1e-3, "sol_seconds": {}, "headroom": {},
               "violations": [],
               "per_op": [{"op": f"aten::op{i}", "measured_seconds": 1e-3, "sol_seconds": 1e-4,
                           "headroom": 10.0, "below_bound": False} for i in range(3)]
               + [{"op": "aten::mm", "measured_seconds": 1e-6, "sol_seconds": 1e-5,
                   "headroom": 0.1, "below_bound": True}]}
    text = bench.format_measurement(section, top=2)  # the beaten row is past the top 2
    assert "aten::mm" in text and "BELOW THE BOUND" in text
    assert "1 op(s) measured below Solar's per-op bound" in text


# ---- 9. bench --device cuda on a torch without CUDA

def test_bench_cuda_without_cuda_is_an_environment_error():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this torch has CUDA: the refusal is for builds without it")
    r = run_solar("bench", str(EXAMPLES / "torch" / "mlp.py"), "--device", "cuda")
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("solar: error: --device cuda: CUDA is not available")
    assert "the program failed" not in r.stderr and r.stderr.count("\n") == 1


# ---- 6. a forward that fails under fake tensors: one line, no torch log

def test_a_failing_forward_is_one_line_without_torch_logging(tmp_path):
    pytest.importorskip("torch")
    prog = _program(tmp_path, "wrong_width.py", """
        import torch
        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(16, 8)
            def forward(self, x):
                return self.lin(x)
        def get_inputs():
            return [torch.randn(4, 12)]
        def get_init_inputs():
            return []
        """)
    r = run_solar("analyze", str(prog))
    assert r.returncode == 9, r.stderr
    assert r.stderr.count("\n") == 1, r.stderr  # torch logged ~180 lines before
    assert r.stderr.startswith(f"solar: error: {prog}:8: the program failed: RuntimeError")
    # torch's loggers are restored after the capture.
    import logging

    from solar.frontends.torch.capture import capture_program
    from solar.frontends.torch.quiet import torch_logging_silenced

    fake_tensor_log = logging.getLogger("torch._subclasses.fake_tensor")
    with pytest.raises(RuntimeError):
        capture_program(str(prog))
    assert not fake_tensor_log.disabled
    with torch_logging_silenced():
        assert fake_tensor_log.disabled
    assert not fake_tensor_log.disabled


# ---- 14. a torch program written as forward() + get_inputs()

FORWARD_TORCH = """
import torch
M, N, K = 64, 32, 16
def forward(a, b):
    return torch.relu(a @ b)
def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]
"""


def test_a_forward_function_program_is_analyzed_and_validated(tmp_path):
    pytest.importorskip("torch")
    prog = _program(tmp_path, "fwd.py", FORWARD_TORCH)
    out = tmp_path / "r.json"
    r = run_solar("validate", str(prog), "--set", "M=96", "--json", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["totals"]["macs"] == 96 * 32 * 16
    assert doc["validation"]["status"] == "passed"
    assert doc["crosscheck"]["status"] == "agree"


def test_a_forward_program_with_init_values_is_refused(tmp_path):
    pytest.importorskip("torch")
    prog = _program(tmp_path, "fwd_init.py", FORWARD_TORCH + "def get_init_inputs():\n"
                                                           "    return [3]\n")
    r = run_solar("analyze", str(prog))
    assert r.returncode == 4 and "get_init_inputs() returns 1 value(s)" in r.stderr, r.stderr
    neither = _program(tmp_path, "neither.py", "import torch\ndef get_inputs():\n"
                                               "    return [torch.randn(2)]\n")
    r = run_solar("analyze", str(neither))
    assert r.returncode == 4 and "neither 'Model' nor 'forward'" in r.stderr, r.stderr


# ---- 8. errors that name their file, checked before the capture

def test_a_truncated_optrace_names_its_file(tmp_path):
    doc = json.dumps({"schema": "solar.optrace.v1", "name": "t", "frontend": "torch",
                      "tensors": [], "ops": []})
    trace = tmp_path / "trace.json"
    trace.write_text(doc[:45])
    r = run_solar("analyze", str(trace))
    assert r.returncode == 4, r.stderr
    assert r.stderr.startswith(f"solar: error: {trace}:1:"), r.stderr
    assert "malformed OpTrace JSON" in r.stderr and r.stderr.count("\n") == 1


# A program that would fail if it were captured: the checks must come first.
NEVER_CAPTURED = """
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        raise SystemExit("captured")
def get_inputs():
    return [torch.randn(2)]
"""


@pytest.mark.parametrize("args,code,message", [
    (["--json", "{missing}/x.json"], 3, "cannot write '{missing}/x.json': folder '{missing}' "
                                        "does not exist"),
    (["--save-trace", "{missing}/t.json"], 3, "folder '{missing}' does not exist"),
    (["--ski-slope", "{missing}/s.svg"], 3, "folder '{missing}' does not exist"),
    (["--arch", "H100_SXM,Z9000"], 6, "unknown device 'Z9000'"),
], ids=["json", "save-trace", "ski-slope", "arch"])
def test_program_outputs_and_devices_are_checked_before_the_capture(tmp_path, args, code,
                                                                     message):
    prog = _program(tmp_path, "never.py", NEVER_CAPTURED)
    missing = str(tmp_path / "missing")
    r = run_solar("analyze", str(prog), *[a.format(missing=missing) for a in args])
    assert r.returncode == code, r.stderr
    assert r.stderr.startswith("solar: error: ") and message.format(missing=missing) in r.stderr
    assert "captured" not in r.stderr and r.stderr.count("\n") == 1
    assert not os.path.exists(missing)


def test_inverse_and_export_check_their_outputs_before_the_capture(tmp_path):
    prog = _program(tmp_path, "never.py", NEVER_CAPTURED)
    missing = tmp_path / "missing"
    r = run_solar("inverse", str(prog), "--target-ms", "1", "--json", str(missing / "i.json"))
    assert r.returncode == 3 and "does not exist" in r.stderr, r.stderr
    r = run_solar("export", str(prog), "--format", "timeloop", "--out", str(missing / "w"))
    assert r.returncode == 3 and f"folder '{missing}' does not exist" in r.stderr, r.stderr


# ---- 9. usage errors that say what was wrong

def test_a_mistyped_command_gets_the_close_match():
    r = run_solar("anlyze", str(EXAMPLES / "gemm.solar"))
    assert r.returncode == 2
    assert r.stderr.startswith("solar: error: unknown command 'anlyze'; did you mean "
                               "`solar analyze`?"), r.stderr
    r = run_solar("frobnicate")
    assert r.returncode == 2 and "did you mean" not in r.stderr and "commands:" in r.stderr
    r = run_solar(str(EXAMPLES / "gemm.solar"))  # the command left out
    assert r.returncode == 2
    assert f"did you mean `solar analyze {EXAMPLES / 'gemm.solar'}`?" in r.stderr, r.stderr


@pytest.mark.parametrize("target", ["gemm.solar", "program"])
def test_a_negative_top_is_a_usage_error(tmp_path, target):
    path = (str(EXAMPLES / "gemm.solar") if target == "gemm.solar"
            else str(_program(tmp_path, "never.py", NEVER_CAPTURED)))
    r = run_solar("analyze", path, "--top", "-1")
    assert r.returncode == 2, r.stderr
    assert r.stderr == ("solar: error: --top -1: expected 0 or more rows (0 hides the top-ops "
                        "table)\n")  # not CLI11's 300-digit range


def test_validate_on_a_graph_says_what_validate_reads():
    r = run_solar("validate", str(EXAMPLES / "gemm.solar"))
    assert r.returncode == 2, r.stderr
    assert "solar validate runs a Python program" in r.stderr
    assert "--set" not in r.stderr and "--train" not in r.stderr  # flags never given


# ---- 13. one help page per command: graph and program options, no repeated block

def test_analyze_help_shows_graph_and_program_options():
    r = run_solar("analyze", "--help")
    assert r.returncode == 0, r.stderr
    page = r.stdout
    for graph_option in ("--arch", "--json", "--policy", "--ski-slope", "--max-mappings"):
        assert graph_option in page
    assert "Program options" in page
    for program_option, words in (("--set NAME=VALUE", "module-level constant"),
                                  ("--train", "forward + backward"), ("--strict", "exit 7"),
                                  ("--save-trace PATH", "OpTrace"), ("--shrink N", "size")):
        line = next(ln for ln in page.splitlines() if ln.strip().startswith(program_option))
        assert words in page[page.index(line):page.index(line) + 200], program_option
    assert "Python programs (the `solar` console script" not in page
    # `solar analyze model.py --help` is the same page.
    assert run_solar("analyze", "model.py", "--help").stdout == page


def test_the_command_list_is_on_the_main_help_page_only():
    main = run_solar("--help").stdout
    assert "Python programs (the `solar` console script" in main
    for cmd in (["arch"], ["inverse"], ["export"]):
        page = run_solar(*cmd, "--help").stdout
        assert page and "Python programs (the `solar` console script" not in page, cmd
    assert "Program options" in run_solar("inverse", "--help").stdout


# ---- 12. JAX validation names its seed

def test_jax_validation_prints_its_seed(tmp_path):
    pytest.importorskip("jax")
    prog = _program(tmp_path, "np_inputs.py", """
        import jax.numpy as jnp
        import numpy as np
        def forward(a, b):
            return jnp.tanh(a @ b)
        def get_inputs():  # numpy's global generator: seeded by the validation
            return [jnp.asarray(np.random.randn(8, 4), jnp.float32),
                    jnp.asarray(np.random.randn(4, 2), jnp.float32)]
        """)
    out = tmp_path / "r.json"
    r = run_solar("validate", str(prog), "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "Validation (solar executor, seed 0): PASSED" in r.stdout
    assert "seed ?" not in r.stdout
    assert json.loads(out.read_text())["validation"]["seed"] == 0
    # Seeded: the program's numpy draws are those of seed 0, and the caller's state is kept.
    import numpy as np

    from solar.frontends.jax.program import SEED, _seeded_generators
    state = np.random.get_state()
    with _seeded_generators():
        first = np.random.randn(3)
    np.random.seed(SEED)
    assert (first == np.random.randn(3)).all()
    np.random.set_state(state)
    with _seeded_generators():
        pass
    assert np.random.get_state()[1].tolist() == state[1].tolist()


# ---- 7. an unanalyzed op is named once in the report, cross-check on

def test_an_unanalyzed_op_is_not_repeated_by_the_crosscheck(tmp_path):
    pytest.importorskip("torch")
    # A complex matmul: FlopCounterMode counts it, the aten table leaves it unanalyzed.
    prog = _program(tmp_path, "cmm.py", """
        import torch
        class Model(torch.nn.Module):
            def forward(self, x):
                return x @ x
        def get_inputs():
            return [torch.randn(4, 4, dtype=torch.complex64)]
        """)
    out = tmp_path / "r.json"
    r = run_solar("analyze", str(prog), "--json", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    if doc["coverage"]["unanalyzed"] != 1:
        pytest.skip("complex mm now lowers: this test needs an op the table leaves unanalyzed")
    assert doc["crosscheck"]["status"] != "skipped"
    assert r.stderr.count("unanalyzed op aten::mm") == 1
    assert r.stdout.count("aten::mm") == 1, r.stdout  # the coverage block at the top
    assert "1 aten op(s) Solar left unanalyzed (listed at the top)" in r.stdout


def test_suite_analyzes_a_forward_function_program(tmp_path):
    pytest.importorskip("torch")
    folder = tmp_path / "progs"
    folder.mkdir()
    _program(folder, "fwd.py", FORWARD_TORCH)
    out = tmp_path / "suite.json"
    r = run_solar("suite", str(folder), "--json", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["summary"]["analyzed"] == 1 and doc["summary"]["skipped"]["count"] == 0
    (entry,) = doc["programs"]
    assert entry["totals"]["macs"] == 64 * 32 * 16


@pytest.mark.parametrize("command", [["analyze", "PROGRAM"], ["validate", "PROGRAM"],
                                     ["suite", "."]])
def test_a_removed_working_folder_is_one_clear_line(tmp_path, command):
    # A program run from a removed folder dies in its libraries (oneMKL ends the process
    # while torch loads): refused first, with or without a server.
    program = _program(tmp_path, "p.py", FORWARD_TORCH)
    args = " ".join(str(program) if a == "PROGRAM" else a for a in command)
    gone = tmp_path / "gone"
    gone.mkdir()
    r = subprocess.run(["sh", "-c", f"cd {gone} && rmdir {gone} && exec {sys.executable} -m solar "
                        f"{args}"], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "SOLAR_NO_SERVER": "1"})
    assert r.returncode == 3, r.stderr
    assert r.stderr == ("solar: error: the working folder has been removed; run solar from a "
                        "folder that exists\n")
    assert r.stdout == ""
