"""A bound is a bound, against real GPU timings: KernelBench's measured PyTorch runtimes on
H100 SXM and PCIe (data/kernelbench-timings, MIT) joined with Solar's bounds for programs of
our own written at the same sizes (PROBLEMS below). No measured `min` may fall below a bound
level (fused, cache-aware); the compute- and memory-bound problems' SOL equals its formula."""

import json

import pytest

import solar
from solar import headroom

from conftest import ROOT, run_solar

TIMINGS = ROOT / "data" / "kernelbench-timings"
# KernelBench level-1 file -> (forward's arguments, its result, the sizes, get_inputs()), at
# KernelBench's sizes (its "v0.1" sizes, those of the timings); the programs are our own.
PROBLEMS = {
    "1_Square_matrix_multiplication_.py": ("a, b", "a @ b", "N = 4096",
                                           "torch.rand(N, N), torch.rand(N, N)"),
    "2_Standard_matrix_multiplication_.py": ("a, b", "a @ b", "M, K, N = 2048, 8192, 4096",
                                             "torch.rand(M, K), torch.rand(K, N)"),
    "4_Matrix_vector_multiplication_.py": ("a, b", "a @ b", "M, K = 2048, 1048576",
                                           "torch.rand(M, K), torch.rand(K, 1)"),
    "5_Matrix_scalar_multiplication.py": ("a, s", "a * s", "M, N = 65536, 16384",
                                          "torch.rand(M, N), 3.14"),
    "6_Matmul_with_large_K_dimension_.py": ("a, b", "a @ b", "M, N, K = 256, 256, 524288",
                                            "torch.rand(M, K), torch.rand(K, N)"),
    "19_ReLU.py": ("x", "torch.relu(x)", "ROWS, COLS = 4096, 393216", "torch.rand(ROWS, COLS)"),
    "23_Softmax.py": ("x", "torch.softmax(x, dim=1)", "ROWS, COLS = 4096, 393216",
                      "torch.rand(ROWS, COLS)"),
}
PROGRAM = """import torch


class Model(torch.nn.Module):
    def forward(self, {args}):
        return {result}


{sizes}


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return []
"""
# timing folder -> the Solar device it was measured on
MEASURED_ON = {"H100_Modal": "H100_SXM", "H100_PCIe_LambdaLabs": "H100_PCIe"}
FILES = ("baseline_time_torch.json", "baseline_time_torch_compile_inductor_default.json")


@pytest.mark.parametrize("folder", sorted(MEASURED_ON))
@pytest.mark.parametrize("file", FILES)
def test_shipped_timings_load_and_cover_kernelbench(folder, file):
    doc = headroom.load_timings(str(TIMINGS / folder / file))
    assert set(doc) == {"level1", "level2", "level3"}
    assert all(doc["level1"].get(name) for name in PROBLEMS), \
        "every program of ours names a measured level-1 problem"


@pytest.fixture(scope="module")
def joined(tmp_path_factory):
    """{(folder, file): the suite's headroom section} for every shipped timing file."""
    programs = tmp_path_factory.mktemp("kernelbench_sizes") / "level1"
    programs.mkdir()
    for name, (args, result, sizes, inputs) in PROBLEMS.items():
        (programs / name).write_text(
            PROGRAM.format(args=args, result=result, sizes=sizes, inputs=inputs))
    out = {}
    for folder, arch in MEASURED_ON.items():
        for file in FILES:
            js = tmp_path_factory.mktemp("suite") / "s.json"
            r = run_solar("suite", str(programs), "--no-crosscheck", "--quiet",
                          "--timings", str(TIMINGS / folder / file), "--arch", arch,
                          "--json", str(js))
            assert r.returncode == 0, r.stderr
            out[folder, file] = json.loads(js.read_text())["summary"]["headroom"]
    return out


def test_no_measured_run_beats_a_bound(joined):
    for key, h in joined.items():
        assert len(h["rows"]) == len(PROBLEMS), key
        assert h["violations"] == [], key
        for row in h["rows"]:  # the unfused level is a reference, not a bound
            for level in ("fused", "cache_aware"):
                assert row["headroom"][level] >= 1.0, (key, row["problem"], level)


def test_square_matmul_sol_is_its_compute_formula(joined):
    """4096^3 MACs at the fp32 FMA peak (TF32 off: pytorch-default), 1 MAC = 2 FLOP."""
    n = 4096
    for (folder, _), h in joined.items():
        dev = solar.device(MEASURED_ON[folder])
        peak = dev.peak(solar.UnitKind.vector, solar.DType.f32)
        row = next(r for r in h["rows"] if r["problem"] == "1_Square_matrix_multiplication_.py")
        assert row["sol_ms"]["fused"] == pytest.approx(2 * n**3 / peak * 1e3, rel=1e-9)


def test_relu_sol_is_its_memory_formula(joined):
    """ReLU reads and writes every f32 element once: 2 * 4 * rows * cols bytes at DRAM speed."""
    rows, cols = 4096, 393216
    for (folder, _), h in joined.items():
        dram = next(m for m in solar.device(MEASURED_ON[folder]).memory if m.name == "dram")
        row = next(r for r in h["rows"] if r["problem"] == "19_ReLU.py")
        assert row["sol_ms"]["fused"] == pytest.approx(
            2 * 4 * rows * cols / dram.bandwidth.value * 1e3, rel=1e-9)
