// Per-op kernels of the executor: one entry point per op kind, each computing the op's
// outputs from its inputs exactly as the IR's semantics say (include/solar/ir/graph.h).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "solar/exec/buffer.h"
#include "solar/ir/graph.h"

namespace solar::exec {

// Execution settings shared by all kernels.
struct ExecContext {
  int threads = 0;  // 0: every core
};

// Extended einsum: contractions through BLAS (transpose/reshape-to-GEMM; im2col for
// sliding-window operands), everything else through a vectorizable strided loop nest.
// Accumulation is in f32 for f32-and-narrower operands, f64 for f64, i64 for integers.
// `inputs` follow op.inputs; `output` is allocated by the caller with the output's shape.
void run_einsum(const ir::EinsumOp& e, std::span<const Buffer* const> inputs, Buffer& output,
                const ExecContext& ctx);

// Data movement (view, copy, permute, slice, concat, pad, gather, scatter, cast).
void run_move(const ir::MoveOp& m, std::span<const Buffer* const> inputs, Buffer& output,
              const ExecContext& ctx);

// Opaque ops the executor knows (sort, argsort, topk, cumsum, ...); throws Unsupported naming
// the function for any other. Semantics per function: docs/executor.md, "Data movement and
// opaque ops"; output shapes and counts are checked (UserError(InvalidGraph)).
void run_opaque(const ir::OpaqueOp& o, std::span<const Buffer* const> inputs,
                std::span<Buffer* const> outputs, const ExecContext& ctx);

// The opaque functions run_opaque knows, sorted by name.
std::vector<std::string> opaque_functions();
bool knows_opaque(std::string_view function);

}  // namespace solar::exec
