// The elements of a graph source read through slices, as a union of strided boxes: the
// compulsory-traffic pass uses it so that a source read in disjoint parts (unbind, the time
// steps of an unrolled scan, per-layer slices of stacked weights) counts every part once,
// not only the largest one.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "solar/ir/graph.h"
#include "solar/util/count.h"

namespace solar::cost::detail {

// Per dimension, the positions start, start + step, ..., (count of them) of a source.
struct StridedBox {
  std::vector<std::int64_t> start, step, count;
};

// The whole of a tensor of this shape.
StridedBox whole_box(const std::vector<std::int64_t>& shape);

// The box a Slice move selects from a tensor that is itself `in` of its source.
StridedBox slice_box(const StridedBox& in, const ir::MoveOp& slice);

// The number of distinct elements in the union of the boxes, or nullopt when the union is
// not computed exactly (boxes differing in several dimensions beyond a small number of
// cells); callers then keep a smaller, still valid, count.
std::optional<Count> union_elements(const std::vector<StridedBox>& boxes);

}  // namespace solar::cost::detail
