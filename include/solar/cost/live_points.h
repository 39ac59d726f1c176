// The exact count of an einsum's live points: the iteration points that satisfy its mask
// (docs/cost.md, "Masks").
#pragma once

#include <cstdint>

#include "solar/ir/graph.h"
#include "solar/util/count.h"

namespace solar::cost {

// Number of iteration points of an einsum that satisfy its mask (exact). Indices in no
// constraint multiply in as their extents; each group of indices linked by constraints is
// counted by solving one index as an integer interval, summing a second in closed form when
// the first has only -1/0/1 coefficients (causal and window masks: O(1) in the extents),
// and enumerating the rest. Throws Unsupported when that needs more than
// kMaxMaskEnumeration enumeration steps, and UserError(InvalidGraph) for a negative extent or
// a constraint over an index the einsum lacks.
inline constexpr std::uint64_t kMaxMaskEnumeration = std::uint64_t{1} << 27;
Count live_points(const ir::EinsumOp& e);

}  // namespace solar::cost
