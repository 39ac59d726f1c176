// Opaque kernels whose values are index arithmetic (docs/executor.md): "nonzero_coords" (coordinates
// of an input's nonzero elements), "arange" (evenly spaced values, no input) and
// "strided_offsets" (the element offsets of a strided view, no input).
#pragma once

#include <span>

#include "solar/exec/buffer.h"
#include "solar/ir/graph.h"

namespace solar::exec {

// outputs[0] = the coordinates (i64 [K, rank], row-major order) of the nonzero elements of
// inputs[0]. K is the output's declared size; an input with another count is a UserError.
void run_nonzero(const ir::OpaqueOp& op, std::span<const Buffer* const> inputs,
                 std::span<Buffer* const> outputs);

// outputs[0][i] = start + i * step (attributes `start`, `step`; numbers), rounded to the
// output's dtype; integer outputs are computed in integers when both are integral. No input.
void run_arange(const ir::OpaqueOp& op, std::span<const Buffer* const> inputs,
                std::span<Buffer* const> outputs);

// outputs[0][j] = offset + sum_d j_d * strides[d] over the output's shape (attributes
// `strides`, one integer per output dimension, and `offset`): the offsets, within a
// row-major tensor, of the elements of a strided view of it (as_strided_scatter). Integer
// output, no input.
void run_strided_offsets(const ir::OpaqueOp& op, std::span<const Buffer* const> inputs,
                         std::span<Buffer* const> outputs);

}  // namespace solar::exec
