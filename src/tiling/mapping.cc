#include "solar/tiling/mapping.h"

#include <algorithm>
#include <string>

#include "hull.h"
#include "solar/util/errors.h"

namespace solar::tiling {

namespace detail {

HullStats hull_stats(const DimAccess& d, const std::vector<std::int64_t>& tile,
                     const std::vector<std::int64_t>& extent) {
  HullStats s;
  if (d.plain()) {
    // Tiles partition [0, N); the part inside [0, D) sums to min(N, D).
    const int r = d.terms[0].rank;
    s.sum = std::min(extent[r], d.extent);
    s.max = std::min(tile[r], d.extent);
    return s;
  }
  // Enumerate the tile grid of this dimension's ranks (small for windows).
  const std::size_t n = d.terms.size();
  std::vector<std::int64_t> idx(n, 0), trips(n);
  for (std::size_t i = 0; i < n; ++i)
    trips[i] = ceil_div(extent[d.terms[i].rank], tile[d.terms[i].rank]);
  while (true) {
    std::int64_t lo = d.constant, hi = d.constant;
    for (std::size_t i = 0; i < n; ++i) {
      const int r = d.terms[i].rank;
      const std::int64_t start = idx[i] * tile[r];
      const std::int64_t last = std::min(start + tile[r], extent[r]) - 1;
      const std::int64_t c = d.terms[i].coef;
      lo += c > 0 ? c * start : c * last;
      hi += c > 0 ? c * last : c * start;
    }
    const std::int64_t len = std::max<std::int64_t>(
        0, std::min(hi, d.extent - 1) - std::max<std::int64_t>(lo, 0) + 1);
    s.sum += len;
    s.max = std::max(s.max, len);
    std::size_t i = 0;
    for (; i < n; ++i) {
      if (++idx[i] < trips[i]) break;
      idx[i] = 0;
    }
    if (i == n) break;
  }
  return s;
}

}  // namespace detail

std::int64_t trips(const TilingProblem& p, const Mapping& m, int r) {
  return detail::ceil_div(p.ranks[r].extent, m.tile[r]);
}

namespace {

void check_mapping(const TilingProblem& p, const Mapping& m) {
  const int n = static_cast<int>(p.ranks.size());
  auto bad = [](const std::string& why) {
    throw UserError(UserError::Kind::BadArgument, "invalid mapping: " + why);
  };
  if (static_cast<int>(m.tile.size()) != n) bad("one tile size per rank is needed");
  if (!m.bypass.empty() && m.bypass.size() != p.tensors.size())
    bad("bypass must be empty or have one entry per tensor");
  RankMask in_order = 0;
  for (int r : m.order) {
    if (r < 0 || r >= n) bad("order names rank " + std::to_string(r) + ", which does not exist");
    if (in_order & (RankMask{1} << r)) bad("rank '" + p.ranks[r].name + "' is twice in the order");
    in_order |= RankMask{1} << r;
  }
  for (int r = 0; r < n; ++r) {
    if (m.tile[r] < 1 || m.tile[r] > p.ranks[r].extent)
      bad("tile of rank '" + p.ranks[r].name + "' must be in [1, " +
          std::to_string(p.ranks[r].extent) + "]");
    if (trips(p, m, r) > 1 && !(in_order & (RankMask{1} << r)))
      bad("rank '" + p.ranks[r].name + "' has several tiles but is not in the order");
  }
  for (std::size_t t = 0; t < m.bypass.size(); ++t)
    if (m.bypass[t] && !p.tensors[t].plain())
      bad("tensor '" + p.tensors[t].name + "' has a sliding-window access and cannot be bypassed");
}

}  // namespace

MappingCost evaluate_mapping(const TilingProblem& p, const Mapping& m) {
  check_mapping(p, m);
  const int n = static_cast<int>(p.ranks.size());
  std::vector<std::int64_t> extent(n), T(n);
  for (int r = 0; r < n; ++r) {
    extent[r] = p.ranks[r].extent;
    T[r] = trips(p, m, r);
  }
  // The DRAM loops that actually iterate, outer to inner.
  std::vector<int> loops;
  for (int r : m.order)
    if (T[r] > 1) loops.push_back(r);

  MappingCost c;
  const Count points = p.points();
  for (std::size_t t = 0; t < p.tensors.size(); ++t) {
    const TensorAccess& x = p.tensors[t];
    Count buffer = 0, access = 0;
    const bool bypassed = !m.bypass.empty() && m.bypass[t];
    Count touched = 1;  // sum over the tile grid of tile elements
    Count tile = 1;
    for (const DimAccess& d : x.dims) {
      detail::HullStats s = detail::hull_stats(d, m.tile, extent);
      touched *= Count::from_signed(s.sum);
      tile *= Count::from_signed(s.max);
    }
    if (bypassed) {
      access = x.output ? Count(2) * points - touched : points;
    } else {
      int inner = -1;  // position of the innermost loop indexing x
      for (int j = 0; j < static_cast<int>(loops.size()); ++j)
        if (x.ranks & (RankMask{1} << loops[j])) inner = j;
      Count mult = 1;
      for (int j = 0; j < inner; ++j)
        if (!(x.ranks & (RankMask{1} << loops[j]))) mult *= Count::from_signed(T[loops[j]]);
      buffer = tile;
      access = x.output ? Count(2) * touched * mult - touched : touched * mult;
    }
    c.buffer_elements.push_back(buffer);
    c.access_elements.push_back(access);
    c.buffer_bits += buffer * Count(static_cast<std::uint64_t>(x.bits));
    c.traffic_bits += access * Count(static_cast<std::uint64_t>(x.bits));
  }
  return c;
}

}  // namespace solar::tiling
