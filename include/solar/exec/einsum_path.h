// Which kernel path the executor's einsum takes (a diagnostic for tests and benchmarks), and
// the einsum kernel's tuning knobs (docs/executor.md, "Einsum kernels").
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "solar/ir/dtype.h"
#include "solar/ir/graph.h"

namespace solar::exec {

enum class EinsumPath {
  Gemm,        // a contraction over strided (plain-subscript) operands: BLAS sgemm/dgemm
  Im2colGemm,  // a contraction with sliding-window operands: materialize them, then BLAS
  LoopNest,    // everything else: the vectorized strided loop nest
};
std::string_view einsum_path_name(EinsumPath p);  // gemm im2col_gemm loop_nest

// The path run_einsum takes for `e` with operands and output of the given dtypes (empty:
// all f32). Decided from the op's structure; at run time a masked contraction whose unmasked
// operand holds inf or NaN still falls back to the loop nest (0 * inf would not vanish).
EinsumPath einsum_path(const ir::EinsumOp& e, std::span<const ir::DType> input_dtypes = {},
                       ir::DType output_dtype = ir::DType::F32);

// What the most recent run_einsum on the calling thread actually did: the path (after any
// run-time fallback) and, on the GEMM paths, into how many chunks the work was split to keep
// materialized operands within materialize_budget_bytes() (1: not split).
struct EinsumRunInfo {
  EinsumPath path = EinsumPath::LoopNest;
  int chunks = 0;
};
EinsumRunInfo last_einsum_run();

// Largest buffer, in bytes, that the GEMM path materializes for one operand (an im2col
// matrix, a packed or masked copy) before it splits the work into chunks; default 16 MiB
// (measured: per-image im2col chunks of a ResNet layer that stay near the caches beat one
// 115 MB matrix by ~10%). Process-wide; for tests of the chunked path and memory-tight runs.
void set_materialize_budget_bytes(std::size_t bytes);
std::size_t materialize_budget_bytes();

}  // namespace solar::exec
