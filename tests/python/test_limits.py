"""Real runs that would not fit in memory are refused before anything is allocated
(solar.memory_limit; docs/validation.md, "Memory"): `solar validate`, `analyze --real`, the
JAX and loop-language paths and `solar suite --validate`, each with the estimate, the memory
available and the `--shrink N` that fits; a program that fits still runs."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest
from solar import _core
from solar import memory_limit as ml
from conftest import ROOT

N = 40000  # a 40,000 x 40,000 f32 matmul: 6.4 GB a matrix
F32 = 4
LIMIT = 4_000_000_000  # SOLAR_MEMORY_LIMIT for the tests: 4 GB
GUARD = 8 * 2**30  # RLIMIT_AS of the child: a regression fails there instead of paging

TORCH_MATMUL = """
    import torch
    import torch.nn as nn

    N = {n}


    class Model(nn.Module):
        def forward(self, a, b):
            return a @ b


    def get_inputs():
        return [torch.randn(N, N), torch.randn(N, N)]


    def get_init_inputs():
        return []
"""

JAX_MATMUL = """
    import jax
    import jax.numpy as jnp

    N = {n}


    def get_inputs():
        ka, kb = jax.random.split(jax.random.PRNGKey(0))
        return [jax.random.normal(ka, (N, N), jnp.float32),
                jax.random.normal(kb, (N, N), jnp.float32)]


    def forward(a, b):
        return a @ b
"""

# examples/loops/gemm.py in f32 at N x N x N (the estimate's formula below is f32's)
LOOP_MATMUL = (ROOT / "examples" / "loops" / "gemm.py").read_text(encoding="utf-8") \
    .replace('dtype="bf16"', 'dtype="f32"').replace("M, N, K = 512, 1024, 256", "M, N, K = {n}, {n}, {n}")


def write(tmp_path, name: str, body: str, n: int = N) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body.format(n=n)))
    return str(path)


def solar_child(*args: str, limit=LIMIT, cwd=None):
    """(exit code, stdout, stderr, seconds, the child's max RSS in bytes) of `solar ARGS`
    with SOLAR_MEMORY_LIMIT=limit (None: the machine's own figure), under an address-space
    guard. os.wait4 gives this child's own rusage (RUSAGE_CHILDREN is the max over every
    child the test process ever waited for)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop(ml.ENV, None)
    if limit is not None:
        env[ml.ENV] = str(limit)

    def guard():
        resource.setrlimit(resource.RLIMIT_AS, (GUARD, GUARD))

    start = time.monotonic()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen([sys.executable, "-m", "solar", *args], stdout=out, stderr=err,
                             stdin=subprocess.DEVNULL, env=env, cwd=cwd, preexec_fn=guard)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    return p.returncode, stdout, stderr, seconds, usage.ru_maxrss * 1024  # ru_maxrss: kB


def largest_fitting_shrink(bytes_per_n2: int, limit: int = LIMIT) -> int:
    """The largest power of two n whose estimate bytes_per_n2 * n^2 fits `limit`."""
    n = 1
    while bytes_per_n2 * (2 * n) ** 2 <= limit:
        n *= 2
    return n


# (program, command, estimate in bytes per element of one N x N matrix, as its formula)
CASES = {
    # validate: A, B and C in the program (3), the clones of A, B and C kept for the
    # comparison (3), the executor's C (1): 7 matrices of f32
    "torch-validate": (TORCH_MATMUL, ["validate"], 7 * F32),
    # --real: the capture holds A, B and C
    "torch-real": (TORCH_MATMUL, ["analyze", "--real"], 3 * F32),
    # JAX validate: A, B, C; the reference copy of C; the executor's C
    "jax-validate": (JAX_MATMUL, ["validate"], 5 * F32),
    "jax-real": (JAX_MATMUL, ["analyze", "--real"], 3 * F32),
    # a loop program's validate: the interpreter's float64 A, B, C (3 * 8), the executor's
    # f32 arrays of A, B, C (3 * 4) and its own C (4)
    "loop-validate": (LOOP_MATMUL, ["validate"], 3 * 8 + 3 * F32 + F32),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_40000_squared_matmul_is_refused_before_anything_is_allocated(tmp_path, case):
    body, command, per_element = CASES[case]
    path = write(tmp_path, f"big_{case.replace('-', '_')}.py", body)
    report = tmp_path / "report.json"
    code, stdout, stderr, seconds, maxrss = solar_child(
        command[0], path, *command[1:], "--json", str(report))
    estimate = per_element * N * N  # e.g. torch validate: 7 * 4 * 40000^2 = 44.8 GB
    assert code == _core.EXIT_CODES["usage"], stderr  # kind "too_large": exit 2
    assert stdout == ""
    assert f"would need about {ml.format_bytes(estimate)}" in stderr, stderr
    assert f"more than the {ml.format_bytes(LIMIT)} available" in stderr, stderr
    shrink = largest_fitting_shrink(per_element)
    assert f"--shrink {shrink} fits" in stderr, stderr
    assert ml.format_bytes(per_element * shrink * shrink) in stderr  # the estimate there
    assert not report.exists() and os.listdir(tmp_path) == [os.path.basename(path)]
    # Nothing allocated: one matrix alone is 6.4 GB; Python and torch/jax take ~0.5-1 GB.
    assert maxrss < 2 * 10**9, maxrss
    assert seconds < 120, seconds  # fake capture and a few shrunk ones: seconds, not minutes
    print(f"{case}: refused in {seconds:.1f} s, child max RSS {maxrss / 1e9:.2f} GB")


def test_the_shrink_hint_is_a_setting_that_runs(tmp_path):
    """A 4096^2 matmul under a 1 MB limit: refused with --shrink 128 (7 * 4 * 128^2 =
    458,752 bytes fit, 256 would need 1.8 MB), and `--shrink 128` then validates."""
    path = write(tmp_path, "mid.py", TORCH_MATMUL, n=4096)
    code, _, stderr, _, _ = solar_child("validate", path, "--no-crosscheck", limit=10**6)
    assert code == 2 and "--shrink 128 fits" in stderr, stderr
    assert f"would need about {ml.format_bytes(7 * 4 * 4096 * 4096)}" in stderr
    code, stdout, stderr, _, _ = solar_child("validate", path, "--no-crosscheck",
                                             "--shrink", "128", limit=10**6)
    assert code == 0, stderr
    assert "Validation (solar executor, seed 0): PASSED" in stdout
    assert "ran at N=128" in stderr


def test_a_small_program_still_validates(tmp_path):
    """Under the test limit and under the machine's own figure."""
    path = write(tmp_path, "small.py", TORCH_MATMUL, n=64)
    for limit in (LIMIT, None):
        code, stdout, stderr, _, _ = solar_child("validate", path, "--no-crosscheck",
                                                 limit=limit)
        assert code == 0, stderr
        assert "Validation (solar executor, seed 0): PASSED" in stdout


def test_suite_validate_records_the_refusal(tmp_path):
    """`solar suite --validate`: the too-large program fails with cause `too_large` (its
    message names the estimate), the small one passes."""
    folder = tmp_path / "progs"
    folder.mkdir()
    write(folder, "big.py", TORCH_MATMUL)
    write(folder, "small.py", TORCH_MATMUL, n=32)
    out = tmp_path / "suite.json"
    code, _, stderr, _, maxrss = solar_child("suite", str(folder), "--validate", "--jobs", "1",
                                             "--no-crosscheck", "--json", str(out))
    entries = {os.path.basename(e["program"]["source"]): e
               for e in json.loads(out.read_text())["programs"]}
    big, small = entries["big.py"], entries["small.py"]
    assert big["error"]["cause"] == "too_large", big["error"]
    assert ml.format_bytes(7 * F32 * N * N) in big["error"]["message"]
    assert big["error"]["exit_code"] == _core.EXIT_CODES["usage"]
    assert small["validation"]["status"] == "passed"
    assert code == 0, stderr  # the suite ran (a program's failure is in its entry)
    assert maxrss < 2 * 10**9, maxrss  # the suite and the worker it reaped allocated nothing


# ------------------------------------------------------------------ the estimates, in process


def test_available_memory_reads_the_override(monkeypatch):
    monkeypatch.setenv(ml.ENV, "8GiB")
    assert ml.available_memory() == (8 * 2**30, f"{ml.ENV}=8GiB")
    monkeypatch.setenv(ml.ENV, "4e9")
    assert ml.available_memory()[0] == 4 * 10**9
    monkeypatch.setenv(ml.ENV, "lots")
    with pytest.raises(_core.UserError, match="expected a number of bytes"):
        ml.available_memory()
    monkeypatch.delenv(ml.ENV)
    avail, where = ml.available_memory()
    assert avail > 0 and where  # MemAvailable, the cgroup's room or RLIMIT_AS


def test_estimates_of_a_hand_written_trace():
    """x [8, 16] f32 input, w [16, 32] bf16 parameter, y = x @ w, z = y.t() (a view of y's
    storage), out = relu(z) [32, 8] f32 output."""
    trace = {"tensors": [
        {"id": 0, "shape": [8, 16], "dtype": "float32", "role": "input", "storage": 0},
        {"id": 1, "shape": [16, 32], "dtype": "bfloat16", "role": "parameter", "storage": 1},
        {"id": 2, "shape": [8, 32], "dtype": "float32", "role": "intermediate", "storage": 2,
         "strides": [32, 1], "storage_offset": 0},
        {"id": 3, "shape": [32, 8], "dtype": "float32", "role": "intermediate", "storage": 2,
         "strides": [1, 32], "storage_offset": 0},
        {"id": 4, "shape": [32, 8], "dtype": "float32", "role": "output", "storage": 3}],
        "ops": [{"op": "mm", "args": {"self": {"tensor": 0}, "mat2": {"tensor": 1}},
                 "outputs": [2]},
                {"op": "t", "args": {"self": {"tensor": 2}}, "outputs": [3]},
                {"op": "relu", "args": {"self": {"tensor": 3}}, "outputs": [4]}]}
    real = ml.torch_estimate(trace, validate=False)
    # sources: 8*16*4 + 16*32*2; y and its view z share one storage; out
    assert real.total == 8 * 16 * 4 + 16 * 32 * 2 + 8 * 32 * 4 + 32 * 8 * 4
    full = ml.torch_estimate(trace, validate=True)
    kept = 8 * 16 * 4 + 16 * 32 * 2 + 32 * 8 * 4  # clones of the sources and the output
    # the executor: two of y, z, out live at once (y dies after the t, its last reader),
    # in f32 words, plus its f32 copy of the bf16 weight
    executor = 2 * 8 * 32 * 4 + 16 * 32 * 4
    assert full.total == real.total + kept + executor
    assert ml.executor_peak(trace) == 2 * 8 * 32 * 4


def test_format_bytes():
    assert ml.format_bytes(44_800_000_000) == "44800000000 bytes (44.80 GB)"
    assert ml.format_bytes(512) == "512 bytes"
