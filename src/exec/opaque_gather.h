// Opaque kernels of XLA's general gather and scatter (the `lax.gather` / `lax.scatter*`
// primitives with any dimension numbers), which the graph's gather/scatter moves (one axis,
// "take" or "elements") cannot express. The JAX table lowers such ops to these
// (src/lower/jax_index.cc); semantics follow the XLA operation semantics page, with JAX's modes.
//
// "xla_gather": inputs (operand, indices), one output. Integer-list attributes
// offset_dims, collapsed_slice_dims, start_index_map, operand_batching_dims,
// start_indices_batching_dims, slice_sizes; string `mode` ("clip", "promise_in_bounds",
// "fill_or_drop"), number `fill_value` (fill_or_drop only). The index vector is the last
// dimension of `indices`. For an output position O: the batch position G is O at the
// dimensions not in offset_dims (in order, = the dimensions of `indices` but its last);
// the window start is S[start_index_map[k]] = indices[G, k], S[operand_batching_dims[i]] =
// G[start_indices_batching_dims[i]], 0 elsewhere; "clip"/"promise_in_bounds" clamp each
// start to [0, operand_dim - slice_size]; "fill_or_drop" writes `fill_value` for a whole
// window whose start is outside that range. out[O] = operand[S + W], W the offset
// dimensions of O placed on the operand dimensions that are neither collapsed nor batching,
// in increasing order.
//
// "xla_scatter": inputs (operand, indices, updates), one output with the operand's shape,
// starting as its copy. Integer-list attributes update_window_dims, inserted_window_dims,
// scatter_dims_to_operand_dims, operand_batching_dims, scatter_indices_batching_dims;
// string `mode` ("clip", "promise_in_bounds", "fill_or_drop"), string `combine` ("none":
// overwrite, last update in row-major order wins; "sum", "prod", "min", "max"). For each
// update scatter position G (the update dimensions not in update_window_dims): the window
// start as for gather; the window's extent along each operand dimension is the matching
// update window dimension (1 for inserted and batching dimensions); "clip" clamps the
// start, the other modes skip a window that does not fit (XLA's behaviour: JAX clamps only
// for "clip").
// Float results accumulate in the compute representation and are rounded to the dtype
// once; integers wrap to the dtype's width. Index values are integers of any width.
#pragma once

#include <span>

#include "solar/exec/buffer.h"
#include "solar/ir/graph.h"

namespace solar::exec {

void run_xla_gather(const ir::OpaqueOp& op, std::span<const Buffer* const> inputs,
                    std::span<Buffer* const> outputs);

void run_xla_scatter(const ir::OpaqueOp& op, std::span<const Buffer* const> inputs,
                     std::span<Buffer* const> outputs);

}  // namespace solar::exec
