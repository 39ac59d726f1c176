// Private to the tiling module: per-dimension tile hulls of a tensor access.
#pragma once

#include <cstdint>
#include <vector>

#include "solar/tiling/problem.h"

namespace solar::tiling::detail {

// Over all DRAM-level tiles of the ranks in `d` (tile sizes `tile`, rank extents `extent`),
// the sum and the maximum of the in-range length of the tile's hull along this dimension.
struct HullStats {
  std::int64_t sum = 0;
  std::int64_t max = 0;
};
HullStats hull_stats(const DimAccess& d, const std::vector<std::int64_t>& tile,
                     const std::vector<std::int64_t>& extent);

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace solar::tiling::detail
