// Internal to the cost module: op_work that also reports the bytes read from each input, so
// graph_cost computes every footprint once.
#pragma once

#include <vector>

#include "solar/cost/work.h"

namespace solar::cost::detail {

// op_work(g, op), and when `input_bytes` is not null it receives one entry per op input:
// the bytes the op reads from that input (0 for free views; for opaque ops the input's
// full size, since an opaque cost does not say which bytes it reads).
Work op_work(const ir::Graph& g, const ir::Op& op, std::vector<Count>* input_bytes);

// True for ops that move no bytes: views and non-copy slices.
bool is_free_view(const ir::Op& op);

// True for a Slice move that copies its slice (attribute copy=1): it reads the slice whole.
bool is_copying_slice(const ir::Op& op);

}  // namespace solar::cost::detail
