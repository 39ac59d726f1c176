// Opaque kernel "pool_argmax": the indices output of max pooling (max_pool{1,2,3}d with
// indices, adaptive_max_pool{1,2,3}d), which is not an einsum (docs/executor.md).
#pragma once

#include <span>

#include "solar/exec/buffer.h"
#include "solar/ir/graph.h"

namespace solar::exec {

// outputs[0] (integers, [lead..., O_1..O_nd]) = for each pooling window of inputs[0]
// ([lead..., L_1..L_nd]) the row-major offset, within the input's nd spatial dimensions, of
// the window's maximum: PyTorch's CPU rule (a later element replaces the running maximum when
// it is greater or NaN; the running maximum starts at -inf, at the window's first in-range
// element). Windows from attributes: either `kernel`, `stride`, `padding`, `dilation` (one
// integer per spatial dimension: start o*stride - padding, taps start + r*dilation inside
// [0, L)), or `output_size` with `adaptive` = 1 (start floor(o*L/O), end ceil((o+1)*L/O)).
// nd is the attributes' length; a shape or attribute that does not fit is a UserError.
void run_pool_argmax(const ir::OpaqueOp& op, std::span<const Buffer* const> inputs,
                     std::span<Buffer* const> outputs);

}  // namespace solar::exec
