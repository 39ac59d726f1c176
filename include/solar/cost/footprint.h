// The elements an einsum operand reads: its footprint (docs/cost.md, "Footprints").
#pragma once

#include "solar/ir/graph.h"
#include "solar/util/count.h"

namespace solar::cost {

// Elements of `tensor` an operand reads: its footprint (distinct in-range elements touched
// over the whole iteration box; the mask is ignored, so a causal mask still reads every row
// of Q and K). Exact for plain, constant, single-term and window (conv) subscripts and for
// small diagonal groups; for huge irregular affine subscripts it falls back to a lower
// bound, never an overestimate (docs/cost.md).
Count operand_footprint(const ir::EinsumOp& e, const ir::Operand& operand,
                        const ir::Tensor& tensor);

}  // namespace solar::cost
