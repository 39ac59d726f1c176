// The GEMM path of the einsum kernel: contractions mapped onto BLAS sgemm/dgemm, with
// sliding-window (im2col), pre-reduced, masked or badly strided operands materialized first
// (private to src/exec; docs/executor.md, "Einsum kernels").
#pragma once

#include <optional>
#include <vector>

#include "loop_nest.h"
#include "solar/ir/graph.h"

namespace solar::exec {

// What each index is to a two-operand contraction (operands 0 and 1, as in the op).
enum class GemmRole {
  Batch,  // an output index in both operands (or in neither: the result is repeated)
  Free0,  // an output index of operand 0 only
  Free1,  // an output index of operand 1 only
  K,      // a reduced index of both operands
  Pre0,   // a reduced index of operand 0 only: summed out of it before the GEMM
  Pre1,
};

struct GemmClassification {
  std::vector<GemmRole> role;   // per index
  std::vector<int> mask_owner;  // per constraint: 0 or 1 (zero that operand), 2 (the output)
  bool affine_operands = false; // some operand subscript is not a plain index or constant
};

// The contraction structure of `e` when the GEMM path applies: reduce sum of mul($a,$b) over
// two distinct operands, a float compute type, a one-to-one output, at least one index reduced
// in both operands, matrices worth a BLAS call, and every mask constraint over the indices of
// one operand or of the output alone.
std::optional<GemmClassification> classify_contraction(const ir::EinsumOp& e, Storage compute);

// Runs the contraction described by `spec` (built from the op classified as `cl`). Returns
// false, having written nothing, when it must fall back to the loop nest: a masked operand's
// partner holds inf or NaN, where zeroing the masked points would not remove them.
// `chunks` receives the number of materialization chunks.
bool run_gemm_path(const GemmClassification& cl, const LoopSpec& spec, int threads, int& chunks);

}  // namespace solar::exec
