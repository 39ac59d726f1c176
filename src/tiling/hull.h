// Private to the tiling module: per-dimension tile hulls of a tensor access.
#pragma once

#include <cstdint>
#include <vector>

#include "solar/tiling/problem.h"
#include "solar/util/int_math.h"

namespace solar::tiling::detail {

// Over all DRAM-level tiles of the ranks in `d` (tile sizes `tile`, rank extents `extent`),
// the sum and the maximum of the in-range length of the tile's hull along this dimension.
// With `group` > 1 (the group dimension of a 2:4 tensor, problem.h) each tile covers the
// whole groups of `group` positions (aligned at multiples of `group` in the tensor) that it
// touches, within the positions the whole grid reads: those are assumed to be whole groups,
// as cost::tensor_bytes assumes of a footprint, so one tile over all of them costs exactly
// them, and each boundary between two tiles inside a group loads that group twice.
struct HullStats {
  std::int64_t sum = 0;
  std::int64_t max = 0;
};
HullStats hull_stats(const DimAccess& d, const std::vector<std::int64_t>& tile,
                     const std::vector<std::int64_t>& extent, std::int64_t group = 1);

// The same for a plain dimension of extent `dim_extent` read by a rank of extent `n` in tiles
// of `t`, in O(1).
HullStats plain_stats(std::int64_t n, std::int64_t t, std::int64_t dim_extent,
                      std::int64_t group = 1);

using solar::ceil_div;
using solar::floor_div;

}  // namespace solar::tiling::detail
