// How a one-input data-movement op renames elements: the positions of its output as affine
// functions of its input's and back, for analyses that carry facts across moves.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "solar/ir/graph.h"
#include "solar/ir/region.h"

namespace solar::ir {

// How the dimensions of a free view's input and output correspond: out_of_in[d] is the output
// dimension walking the same elements as input dimension d (-1: none); in_of_out the
// converse. Row-major reshapes: a pair of dimensions of equal extent (> 1) and equal element
// stride always holds the same coordinate; broadcasts: aligned right, size-1 input dimensions
// spread.
struct DimMap {
  std::vector<int> out_of_in, in_of_out;
};
DimMap view_map(const std::vector<std::int64_t>& in, const std::vector<std::int64_t>& out);

// The substitutions from the input's dimensions to the output's (forward: input dimension d
// -> the output position holding it) and from the output's to the input's (backward).
struct MovePaths {
  Substitution forward, backward;
};
// The paths of a one-input, one-output move that renames elements (a view, copy, broadcast,
// permute, slice, or a cast that keeps the shape); nullopt for a move that mixes or drops
// elements (concat, pad, gather, scatter), another op, or attributes it cannot read.
std::optional<MovePaths> move_paths(const Graph& g, const Op& op);

}  // namespace solar::ir
