#include "live.h"

#include <algorithm>

#include "solar/util/errors.h"
#include "solar/util/int_math.h"

namespace solar::tiling::detail {

namespace {

using I128 = __int128;

}  // namespace

LiveTiles::LiveTiles(const TilingProblem& p) {
  ranks_ = p.mask_ranks();
  for (int r = 0; r < static_cast<int>(p.ranks.size()); ++r)
    if (ranks_ & (RankMask{1} << r)) rank_list_.push_back(r);
  SOLAR_CHECK(static_cast<int>(rank_list_.size()) <= kMaxMaskRanks,
              "a mask tiled by its live region names at most 4 ranks");
  for (const RankConstraint& c : p.mask) {
    std::vector<std::int64_t> coef(rank_list_.size(), 0);
    for (const DimTerm& t : c.terms) {
      const auto it = std::find(rank_list_.begin(), rank_list_.end(), t.rank);
      coef[static_cast<std::size_t>(it - rank_list_.begin())] += t.coef;
    }
    coef_.push_back(std::move(coef));
    constant_.push_back(c.constant);
  }
}

Wide LiveTiles::sum(const std::vector<std::int64_t>& tile, const std::vector<std::int64_t>& extent,
                    RankMask tiled, RankMask weighted) {
  Key key{};
  for (std::size_t i = 0; i < rank_list_.size(); ++i) {
    const int r = rank_list_[i];
    const bool t = tiled & (RankMask{1} << r);
    key[2 * i] = t ? tile[r] : 0;
    key[2 * i + 1] = extent[r];
  }
  key[2 * kMaxMaskRanks] = static_cast<std::int64_t>(weighted & ranks_);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  const Wide v = compute(tile, extent, tiled, weighted);
  cache_.emplace(key, v);
  return v;
}

Wide LiveTiles::compute(const std::vector<std::int64_t>& tile,
                        const std::vector<std::int64_t>& extent, RankMask tiled,
                        RankMask weighted) const {
  const std::size_t m = rank_list_.size();
  // Per mask rank: tile size and trip count (a whole rank: one tile of its extent).
  std::vector<std::int64_t> t(m), trips(m), n(m);
  std::vector<bool> w(m);
  for (std::size_t i = 0; i < m; ++i) {
    const int r = rank_list_[i];
    n[i] = extent[r];
    t[i] = (tiled & (RankMask{1} << r)) ? std::min(tile[r], n[i]) : n[i];
    trips[i] = (n[i] + t[i] - 1) / t[i];
    w[i] = weighted & (RankMask{1} << r);
  }
  auto size = [&](std::size_t i, std::int64_t c) {
    return std::min(n[i], (c + 1) * t[i]) - c * t[i];
  };
  // Solve for the rank with the most tiles as an interval; enumerate the others.
  std::size_t y = 0;
  for (std::size_t i = 1; i < m; ++i)
    if (trips[i] > trips[y]) y = i;
  // Without a live-tile count in reach, every tile counts (the box: never less traffic).
  double steps = 1;
  for (std::size_t i = 0; i < m; ++i)
    if (i != y) steps *= static_cast<double>(trips[i]);
  if (m == 0 || steps > static_cast<double>(std::uint64_t{1} << 24)) {
    Wide all = 1;
    for (std::size_t i = 0; i < m; ++i) all *= static_cast<Wide>(w[i] ? n[i] : trips[i]);
    return all;
  }
  std::vector<std::int64_t> c(m, 0);
  Wide total = 0;
  while (true) {
    Wide weight = 1;
    for (std::size_t i = 0; i < m; ++i)
      if (i != y && w[i]) weight *= static_cast<Wide>(size(i, c[i]));
    // Tile indices of rank y with a live point: an interval.
    I128 lo = 0, hi = trips[y] - 1;
    for (std::size_t k = 0; k < coef_.size() && lo <= hi; ++k) {
      I128 rest = constant_[k];
      for (std::size_t i = 0; i < m; ++i) {
        if (i == y || coef_[k][i] == 0) continue;
        const I128 first = static_cast<I128>(c[i]) * t[i], last = first + size(i, c[i]) - 1;
        rest += coef_[k][i] * (coef_[k][i] > 0 ? last : first);  // the constraint's largest
      }
      const I128 a = coef_[k][y];
      if (a == 0) {
        if (rest < 0) hi = -1;
      } else if (a > 0) {
        // a * last_y + rest >= 0: last_y >= need, the tile's last point min(n, (c+1)t) - 1.
        const I128 need = ceil_div(-rest, a);
        if (need > n[y] - 1) hi = -1;
        else if (need >= 0) lo = std::max(lo, ceil_div(need + 1, I128{t[y]}) - 1);
      } else {
        // a * first_y + rest >= 0: first_y = c t <= rest / -a.
        const I128 lim = floor_div(rest, -a);
        if (lim < 0) hi = -1;
        else hi = std::min(hi, floor_div(lim, I128{t[y]}));
      }
    }
    if (lo <= hi) {
      Wide along;
      if (w[y]) {
        along = static_cast<Wide>((hi - lo + 1) * t[y]);
        if (hi == trips[y] - 1) along -= static_cast<Wide>(t[y] - size(y, trips[y] - 1));
      } else {
        along = static_cast<Wide>(hi - lo + 1);
      }
      total += weight * along;
    }
    std::size_t i = 0;
    for (; i < m; ++i) {
      if (i == y) continue;
      if (++c[i] < trips[i]) break;
      c[i] = 0;
    }
    if (i == m) break;
  }
  return total;
}

Wide masked_access(LiveTiles& live, const TilingProblem& p, std::size_t t,
                   const std::vector<std::int64_t>& tile, const std::vector<std::int64_t>& T,
                   RankMask prefix, RankMask active) {
  const TensorAccess& x = p.tensors[t];
  const RankMask mask = live.ranks();
  std::vector<std::int64_t> extent(p.ranks.size());
  for (std::size_t r = 0; r < p.ranks.size(); ++r) extent[r] = p.ranks[r].extent;
  // Ranks outside the mask multiply in: a loop over one moves the tile once per trip
  // (a rank of the tensor: its extent over the trips, partial last tile included).
  Wide factor = 1, elements = 1, unmasked = 1;
  for (std::size_t r = 0; r < p.ranks.size(); ++r) {
    const RankMask bit = RankMask{1} << r;
    const bool own = x.ranks & bit;
    if (own) elements *= static_cast<Wide>(extent[r]);
    if (mask & bit) continue;
    if (own) unmasked *= static_cast<Wide>(extent[r]);
    if (prefix & bit) factor *= static_cast<Wide>(own ? extent[r] : T[r]);
    else if (own) factor *= static_cast<Wide>(extent[r]);
  }
  const Wide visits = factor * live.sum(tile, extent, prefix & mask, x.ranks & mask);
  // The tensor's own tiles that some live point reaches.
  const Wide reached = unmasked * live.sum(tile, extent, x.ranks & mask & active, x.ranks & mask);
  if (!x.output) return visits + (elements - reached);
  return 2 * visits + elements - 2 * reached;
}

}  // namespace solar::tiling::detail
