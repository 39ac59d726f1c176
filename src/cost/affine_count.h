// Internal to the cost module: the 128-bit affine arithmetic and the input checks that the
// live-point counter (live_points.cc) and the footprint counter (work.cc) share.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "solar/ir/graph.h"
#include "solar/util/count.h"
#include "solar/util/int_math.h"

namespace solar::cost::detail {

// Affine arithmetic is done in 128 bits: coefficient * extent products of int64 values
// cannot overflow it, so no intermediate wraps silently.
using I128 = __int128;

using solar::ceil_div;
using solar::floor_div;

// A non-negative 128-bit value as a Count.
Count to_count(I128 v);

// Throws UserError(InvalidGraph) with `message`.
[[noreturn]] void invalid(const std::string& message);

// Checks that every index position of `expr` is below `num_indices`; `where` names the
// expression in the message.
void check_indices(const ir::AffineExpr& expr, std::size_t num_indices, std::string_view where);

// Every affine value is bounded by |constant| + sum |coef| * (extent - 1); keeping that
// below 2^120 guarantees no 128-bit intermediate of the cost module can overflow.
void check_magnitude(const ir::AffineExpr& expr, const std::vector<std::int64_t>& ext,
                     std::string_view where);

// The einsum's extents, each checked non-negative.
std::vector<std::int64_t> checked_extents(const ir::EinsumOp& e);

// Union-find over small integer ids.
struct Dsu {
  std::vector<int> parent;
  explicit Dsu(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void unite(int a, int b) { parent[find(a)] = find(b); }
};


}  // namespace solar::cost::detail
