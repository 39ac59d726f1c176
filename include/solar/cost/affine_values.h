// Distinct in-range values of one affine expression over a box: the footprint of one tensor
// dimension (docs/cost.md), also the tiling search's floor (src/tiling/curve.cc).
#pragma once

#include <cstdint>
#include <vector>

namespace solar::cost {

struct ValueTerm {
  std::int64_t coef;    // any sign
  std::int64_t extent;  // >= 1: the index runs over [0, extent)
};

// How many distinct values of `constant + sum coef_k * i_k` fall in [0, size). Exact except
// for huge irregular multi-term expressions, where it is a lower bound (never more).
std::int64_t distinct_values_in_range(const std::vector<ValueTerm>& terms, std::int64_t constant,
                                      std::int64_t size);

}  // namespace solar::cost
