#include "solar/tiling/mapping.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>

#include "hull.h"
#include "live.h"
#include "solar/util/errors.h"
#include "storage.h"

namespace solar::tiling {

namespace detail {

HullStats plain_stats(std::int64_t n, std::int64_t t, std::int64_t dim_extent, std::int64_t group) {
  // Tiles partition [0, n); the part inside [0, D) sums to L = min(n, D).
  const std::int64_t L = std::min(n, dim_extent);
  if (group <= 1) return {L, std::min(t, dim_extent)};
  // Tile i reads [i t, min((i+1) t, L)) and covers the groups it touches, clipped to [0, L):
  // [down(i t), up(end)) with down/up rounding to multiples of the group.
  const std::int64_t g = group;
  auto down = [&](std::int64_t x) { return x / g * g; };
  auto up = [&](std::int64_t x) { return std::min(ceil_div(x, g) * g, L); };
  const std::int64_t tiles = ceil_div(L, t);
  // The first tile starts at 0 and the last ends at L; each inner boundary b = i t not on a
  // group boundary is inside a group that both neighbours load: that group counts twice.
  // Boundaries i t with i in [1, tiles) fall on a group boundary every g / gcd(t, g) tiles.
  const std::int64_t period = g / std::gcd(t, g);
  const std::int64_t inner = tiles - 1;
  const std::int64_t split = inner - inner / period;
  // Those inside the last group when it is partial ([L - L % g, L)) split a smaller group.
  const std::int64_t last_start = down(L);
  const std::int64_t in_last =
      L % g == 0 ? 0 : std::max<std::int64_t>(0, (L - 1) / t - last_start / t);
  HullStats s;
  s.sum = L + g * (split - in_last) + (L - last_start) * in_last;
  // A full tile's cover depends only on where it starts within a group (a cycle of at most g
  // tiles) away from the end: the first g tiles and the last g tiles hold every value.
  auto cover = [&](std::int64_t i) { return up(std::min((i + 1) * t, L)) - down(i * t); };
  for (std::int64_t i = 0; i < std::min(tiles, g); ++i) s.max = std::max(s.max, cover(i));
  for (std::int64_t i = std::max<std::int64_t>(0, tiles - g); i < tiles; ++i)
    s.max = std::max(s.max, cover(i));
  return s;
}

HullStats hull_stats(const DimAccess& d, const std::vector<std::int64_t>& tile,
                     const std::vector<std::int64_t>& extent, std::int64_t group) {
  if (d.plain()) {
    const int r = d.terms[0].rank;
    return plain_stats(extent[r], tile[r], d.extent, group);
  }
  // The positions the whole grid reads, in range: whole groups are counted inside them only.
  std::int64_t all_lo = d.constant, all_hi = d.constant;
  for (const DimTerm& term : d.terms) {
    const std::int64_t span = term.coef * (extent[term.rank] - 1);
    (span > 0 ? all_hi : all_lo) += span;
  }
  all_lo = std::max<std::int64_t>(all_lo, 0);
  all_hi = std::min(all_hi, d.extent - 1);
  // Enumerate the tile grid of this dimension's ranks (small for windows).
  HullStats s;
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
    lo = std::max<std::int64_t>(lo, 0);
    hi = std::min(hi, d.extent - 1);
    if (group > 1 && lo <= hi) {
      lo = std::max(floor_div(lo, group) * group, all_lo);
      hi = std::min(floor_div(hi, group) * group + group - 1, all_hi);
    }
    const std::int64_t len = std::max<std::int64_t>(0, hi - lo + 1);
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
  for (std::size_t t = 0; t < m.bypass.size(); ++t) {
    if (m.bypass[t] && !p.tensors[t].plain())
      bad("tensor '" + p.tensors[t].name + "' has a sliding-window access and cannot be bypassed");
    if (m.bypass[t] && p.tensors[t].storage.format != StorageFormat::Dense)
      bad("tensor '" + p.tensors[t].name +
          "' is stored sparse (2:4 or bitmap) and cannot be bypassed element by element");
    if (m.bypass[t] && !p.mask.empty())
      bad("tensor '" + p.tensors[t].name + "' of a masked problem cannot be bypassed");
  }
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
  std::optional<detail::LiveTiles> live;
  RankMask active = 0;
  if (!p.mask.empty()) {
    live.emplace(p);
    for (int r : loops) active |= RankMask{1} << r;
  }
  for (std::size_t t = 0; t < p.tensors.size(); ++t) {
    const TensorAccess& x = p.tensors[t];
    Count buffer = 0, access = 0;
    const bool bypassed = !m.bypass.empty() && m.bypass[t];
    Count touched = 1;  // sum over the tile grid of tile elements
    Count tile = 1;
    for (std::size_t d = 0; d < x.dims.size(); ++d) {
      const std::int64_t group = static_cast<int>(d) == x.group_dim ? detail::kGroup : 1;
      detail::HullStats s = detail::hull_stats(x.dims[d], m.tile, extent, group);
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
      RankMask prefix = 0;
      for (int j = 0; j < inner; ++j)
        if (!(x.ranks & (RankMask{1} << loops[j]))) mult *= Count::from_signed(T[loops[j]]);
      for (int j = 0; j <= inner; ++j) prefix |= RankMask{1} << loops[j];
      buffer = tile;
      if (live)
        access = Count::from_raw(detail::masked_access(*live, p, t, m.tile, T, prefix, active));
      else
        access = x.output ? Count(2) * touched * mult - touched : touched * mult;
    }
    c.buffer_elements.push_back(buffer);
    c.access_elements.push_back(access);
    c.buffer_bits += storage_bits(x, buffer);
    c.traffic_bits += storage_bits(x, access);
  }
  return c;
}

}  // namespace solar::tiling
