// The traffic curve Q(S) of one einsum (the "ski-slope"): minimum DRAM traffic in bytes as
// a function of on-chip buffer capacity S in bytes, over the two-level mapspace of
// mapping.h (docs/cache-aware.md).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "solar/tiling/mapping.h"
#include "solar/tiling/problem.h"
#include "solar/util/count.h"

namespace solar::tiling {

// One Pareto point: a mapping needing `buffer_bytes` of buffer moves `traffic_bytes` to and
// from DRAM. Bytes are the sum over tensors of their storage bits (problem.h, storage_bits:
// dense, 2:4 or bitmap), rounded up to whole bytes.
struct CurvePoint {
  Count buffer_bytes;
  Count traffic_bytes;
  friend bool operator==(const CurvePoint&, const CurvePoint&) = default;
};

// A monotone Pareto list: buffer strictly increasing, traffic strictly decreasing.
class TrafficCurve {
 public:
  TrafficCurve() = default;
  explicit TrafficCurve(std::vector<CurvePoint> pareto);  // checks the monotonicity

  const std::vector<CurvePoint>& points() const { return points_; }
  // Q(S): the least traffic of a point with buffer <= S bytes; nullopt when no mapping of
  // the mapspace fits in S (S below the smallest tile set).
  std::optional<Count> traffic_at(Count capacity_bytes) const;
  // The last point: the least traffic at any capacity, and the smallest buffer reaching it
  // (the maximal effectual buffer).
  const CurvePoint& floor() const;

 private:
  std::vector<CurvePoint> points_;
};

enum class TileMode {
  Ceil,     // any tile size (candidates ceil(N/T)); edge tiles partial. Default.
  Divisor,  // tile sizes divide the extent: Orojenesis' `uber` mapspace.
};

struct CurveOptions {
  TileMode tiles = TileMode::Ceil;
  bool bypass = true;        // also try bypassing each plain tensor
  bool merge_ranks = true;   // reduce_problem's rank merging (ceil mode only changes results)
  // Upper bound on mappings evaluated; when the full grid is larger, candidate tile lists
  // are thinned (every point is still a real mapping, so the curve stays attainable, only
  // less tight) and `exhaustive` is false in the result.
  std::uint64_t max_evaluations = std::uint64_t{1} << 22;
  // Counts on 128 bits even where 64 provably suffice (the search picks 64 bits there, about
  // a fifth faster): the tests compare the two.
  bool wide_numbers = false;
  // Skips the mappings whose buffer alone shows them dominated (the envelope already reaches
  // the least traffic any mapping has at a smaller buffer, and larger tiles of the ranks read
  // only through plain dimensions only grow the buffer): the same curve, fewer evaluations.
  // The tests compare with the full search.
  bool skip_dominated = true;
};

struct CurveResult {
  TrafficCurve curve;
  Count compulsory_bytes;     // distinct inputs' footprints + the output, once each
  std::uint64_t evaluated = 0;  // mappings whose cost was computed
  bool exhaustive = true;     // false when the candidate lists were thinned
};

// The attainable ski-slope of `p`. Per order of the active loops (deduplicated by which
// loops lie outside each tensor's innermost relevant loop) and tile choice, the cost of
// mapping.h; the innermost plain loop always gets tile 1 (its trip count multiplies no
// tensor, so a larger tile only costs buffer).
CurveResult attainable_curve(const TilingProblem& p, const CurveOptions& options = {});

}  // namespace solar::tiling
