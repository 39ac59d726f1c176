// Private to the tiling module: the tiles of a masked problem (problem.h, `mask`) that hold a
// live iteration point, and the DRAM accesses of a mapping that skips the others.
#pragma once

#include <array>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "solar/tiling/problem.h"

namespace solar::tiling::detail {

using Wide = unsigned __int128;

// Masks over more ranks are not tiled by their live region (problem_from_einsum refuses them
// in MaskedEinsum::Live mode).
inline constexpr int kMaxMaskRanks = 4;

// Sums over the tiles that hold a live point. A tile is taken to hold one when each
// constraint alone holds at some point of it (its largest value over the tile, at a corner,
// is >= 0): exact for one constraint and for parallel ones (a band); otherwise a tile the
// constraints leave empty together may be counted (more traffic, never less).
class LiveTiles {
 public:
  explicit LiveTiles(const TilingProblem& p);

  // Over the tile tuples of the mask's ranks in `tiled` (tiles of `tile[r]` iterations over
  // [0, extent[r]); the mask's other ranks whole), those holding a live point, the sum of the
  // product over the mask's ranks in `weighted` of the tile's extent (a whole rank: its
  // extent). Ranks outside the mask do not enter. Memoized.
  Wide sum(const std::vector<std::int64_t>& tile, const std::vector<std::int64_t>& extent,
           RankMask tiled, RankMask weighted);

  RankMask ranks() const { return ranks_; }

 private:
  using Key = std::array<std::int64_t, 2 * kMaxMaskRanks + 1>;
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      std::uint64_t h = 0;
      for (std::int64_t v : k) h = (h ^ static_cast<std::uint64_t>(v)) * 0x9E3779B97F4A7C15ull;
      return static_cast<std::size_t>(h ^ (h >> 31));
    }
  };
  Wide compute(const std::vector<std::int64_t>& tile, const std::vector<std::int64_t>& extent,
               RankMask tiled, RankMask weighted) const;

  std::vector<int> rank_list_;  // the mask's ranks, increasing
  RankMask ranks_ = 0;
  // Per constraint, per entry of rank_list_: the coefficient (0 when not named).
  std::vector<std::vector<std::int64_t>> coef_;
  std::vector<std::int64_t> constant_;
  std::unordered_map<Key, Wide, KeyHash> cache_;
};

// The DRAM accesses, in elements, of tensor `t` of a masked problem under the mapping with
// tiles `tile` (trip counts `T`) whose DRAM loops reloading `t` are the ranks in `prefix`
// (the loops outside its innermost relevant loop, and that loop and the tensor's other tiled
// ranks). Each live tile tuple of the prefix loads the tensor's tile; an element in no live
// tile is still read once (masks do not shrink footprints, docs/cost.md). The output writes
// each visit's tile, re-reads it on every visit but the first, and writes the tiles no live
// point reaches once (they hold the reduction's identity).
Wide masked_access(LiveTiles& live, const TilingProblem& p, std::size_t t,
                   const std::vector<std::int64_t>& tile, const std::vector<std::int64_t>& T,
                   RankMask prefix, RankMask active);

}  // namespace solar::tiling::detail
