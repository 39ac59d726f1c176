"""Makes the .npz references of the benchmark's CUDA and Triton sources by running the
sources' own kernels on the CPU (docs/translate.md, "Sources Solar does not run"):

- a CUDA kernel (one without shared memory or barriers) is compiled with g++ behind a small
  emulation of the CUDA runtime: `__global__` functions become plain functions, `k<<<grid,
  block, ...>>>(args)` a loop over every block and thread of the grid that sets `blockIdx`,
  `threadIdx`, `blockDim` and `gridDim`, so each thread runs the kernel's own code in turn;
- a Triton kernel runs in Triton's interpreter (TRITON_INTERPRET=1, on NumPy-backed CPU
  tensors; needs `pip install triton`).

Each .npz holds `inputs/<name>` (the kernel's arguments by name), `outputs/0` and
`sizes/<NAME>` (the size constants the data were made at: small, not multiples of the
kernels' block sizes, so the guards matter). Seeds are fixed; rerunning writes the same files.

    PYTHONPATH=python .venv/bin/python bench/translate/make_npz.py             # all of them
    PYTHONPATH=python .venv/bin/python bench/translate/make_npz.py cuda_row_softmax
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

import numpy as np

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "sources"

# The CUDA runtime as far as a kernel without shared memory or barriers needs it.
CUDA_SHIM = r"""
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <vector>
struct dim3 {
  unsigned x, y, z;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
static dim3 blockIdx, threadIdx, blockDim, gridDim;
using cudaStream_t = void*;
#define __global__
#define __device__
#define __restrict__
#define __forceinline__ inline
template <class F, class... A>
void solar_launch(F kernel, dim3 grid, dim3 block, A... args) {
  gridDim = grid;
  blockDim = block;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx)
        for (unsigned tz = 0; tz < block.z; ++tz)
          for (unsigned ty = 0; ty < block.y; ++ty)
            for (unsigned tx = 0; tx < block.x; ++tx) {
              blockIdx = dim3(bx, by, bz);
              threadIdx = dim3(tx, ty, tz);
              kernel(args...);
            }
}
static std::vector<float> read_floats(const char* path, std::size_t n) {
  std::vector<float> v(n);
  FILE* f = std::fopen(path, "rb");
  if (!f || std::fread(v.data(), sizeof(float), n, f) != n) std::exit(2);
  std::fclose(f);
  return v;
}
static void write_floats(const char* path, const std::vector<float>& v) {
  FILE* f = std::fopen(path, "wb");
  if (!f || std::fwrite(v.data(), sizeof(float), v.size(), f) != v.size()) std::exit(3);
  std::fclose(f);
}
"""


def _emulated(cu: Path, main: str) -> str:
    """The .cu's text compilable by g++: CUDA headers dropped, launches made loops."""
    text = cu.read_text(encoding="utf-8")
    text = re.sub(r"#include <cuda_runtime\.h>\n", "", text)
    text = re.sub(r"(\w+)<<<\s*(.+?),\s*([^,>]+?)(?:,[^>]*)?>>>\(", r"solar_launch(\1, \2, \3, ",
                  text)
    return CUDA_SHIM + text + main


def run_cuda(name: str, main: str, inputs: Dict[str, np.ndarray], out_shape, args: List[str]):
    """Compiles sources/<name>.cu with `main` (which reads the inputs in order and writes the
    output) and runs it; the output array."""
    with tempfile.TemporaryDirectory(prefix="solar-cuda-emu-") as work:
        w = Path(work)
        (w / "k.cc").write_text(_emulated(SOURCES / f"{name}.cu", main), encoding="utf-8")
        subprocess.run(["g++", "-O2", "-std=c++17", "-o", str(w / "k"), str(w / "k.cc")],
                       check=True)
        paths = []
        for key, a in inputs.items():
            p = w / f"{key}.bin"
            np.ascontiguousarray(a, dtype=np.float32).tofile(p)
            paths.append(str(p))
        out = w / "out.bin"
        subprocess.run([str(w / "k"), *paths, str(out), *args], check=True)
        return np.fromfile(out, dtype=np.float32).reshape(out_shape)


def gemm_bias_relu() -> Dict[str, np.ndarray]:
    m, k, n = 20, 24, 36  # not multiples of the 16x16 block: the bounds guard matters
    rng = np.random.default_rng(35)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    main = r"""
int main(int argc, char** argv) {
  int m = std::atoi(argv[5]), n = std::atoi(argv[6]), k = std::atoi(argv[7]);
  auto x = read_floats(argv[1], (std::size_t)m * k);
  auto w = read_floats(argv[2], (std::size_t)k * n);
  auto b = read_floats(argv[3], n);
  std::vector<float> y((std::size_t)m * n, -1.0f);
  launch_gemm_bias_relu(x.data(), w.data(), b.data(), y.data(), m, n, k, nullptr);
  write_floats(argv[4], y);
}
"""
    y = run_cuda("cuda_gemm_bias_relu", main, {"x": x, "w": w, "b": b}, (m, n),
                 [str(m), str(n), str(k)])
    return {"inputs/x": x, "inputs/w": w, "inputs/b": b, "outputs/0": y,
            "sizes/M": np.asarray(m), "sizes/K": np.asarray(k), "sizes/N": np.asarray(n)}


def row_softmax() -> Dict[str, np.ndarray]:
    rows, cols = 150, 24  # two blocks of 128 threads, the second partly idle
    rng = np.random.default_rng(36)
    x = (3 * rng.standard_normal((rows, cols))).astype(np.float32)
    main = r"""
int main(int argc, char** argv) {
  int rows = std::atoi(argv[3]), cols = std::atoi(argv[4]);
  auto x = read_floats(argv[1], (std::size_t)rows * cols);
  std::vector<float> y((std::size_t)rows * cols, -1.0f);
  launch_row_softmax(x.data(), y.data(), rows, cols, nullptr);
  write_floats(argv[2], y);
}
"""
    y = run_cuda("cuda_row_softmax", main, {"x": x}, (rows, cols), [str(rows), str(cols)])
    return {"inputs/x": x, "outputs/0": y, "sizes/batch": np.asarray(rows),
            "sizes/dim": np.asarray(cols)}


def triton_layernorm() -> Dict[str, np.ndarray]:
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location("triton_layernorm",
                                                  SOURCES / "triton_layernorm.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    m, n = 12, 20  # 20 features in a block of 32: the mask matters
    g = torch.Generator().manual_seed(37)
    x = torch.randn(m, n, generator=g)
    w = 1 + 0.1 * torch.randn(n, generator=g)
    b = 0.1 * torch.randn(n, generator=g)
    y = mod.layernorm(x, w, b)
    return {"inputs/x": x.numpy(), "inputs/w": w.numpy(), "inputs/b": b.numpy(),
            "outputs/0": y.numpy(), "sizes/M": np.asarray(m), "sizes/N": np.asarray(n)}


MAKERS = {"cuda_gemm_bias_relu": gemm_bias_relu, "cuda_row_softmax": row_softmax,
          "triton_layernorm": triton_layernorm}


def main(argv: List[str]) -> int:
    for name in argv or list(MAKERS):
        arrays = MAKERS[name]()
        np.savez(SOURCES / f"{name}.npz", **arrays)
        print(f"wrote {SOURCES / name}.npz: " + ", ".join(
            f"{k} {list(v.shape)}" for k, v in arrays.items() if not k.startswith("sizes/")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
