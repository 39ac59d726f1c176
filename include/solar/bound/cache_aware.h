// The cache-aware fused SOL level (docs/bounds.md, docs/cache-aware.md): the whole graph as one kernel, like the
// fused level, but moving the DRAM traffic Q(S) that an on-chip memory of S bytes allows
// (tiling/fusion.h) instead of only its compulsory bytes; and the ski-slope Q(S) samples the
// report charts.
//
// Semantics (docs/bounds.md, "Cache-aware SOL"):
// - S = the device's total on-chip capacity: the sum of the published capacities of every
//   memory level other than `dram` (l2/llc, smem/l1, tmem, rf, ...). Any distributed-buffer
//   schedule can be simulated by one buffer of the summed capacity (each level's contents
//   are a subset of the union), so the single-buffer bound still holds (docs/cache-aware.md,
//   "Provable bounds"). A device publishing no on-chip
//   capacity gets no level (a stated reason, never a default); in provable mode an on-chip
//   level without a published capacity also refuses the level (a smaller S would raise the
//   bound above what the real chip may achieve).
// - seconds = max(the fused level's compute terms, Q(S) / DRAM bandwidth), in seconds at
//   dense peak rates. Mode `attainable`: Q is the least traffic of a schedule in the fusion
//   and tiling mapspace (an estimate real kernels are expected not to beat); mode
//   `provable`: Q is a communication lower bound (a hard lower bound, like fused).
// - Invariants: fused <= cache_aware <= the no-fusion per-op-at-S sum
//   Σ_op max(op compute terms, Q_op(S)/β); and cache_aware <= unfused whenever every
//   analyzed op's Q_op(S) <= its unfused bytes (every op's curve has reached its compulsory
//   traffic at S).
// - Links (with a system, sol.h): the fused level's link terms join the compute terms, so
//   seconds = max(compute, Q(S)/β, every link's total) and seconds_no_overlap =
//   max(compute, Q(S)/β) + the sum of the link terms. A collective is a fusion boundary: its
//   input and result stay in DRAM (tiling/fusion.h).
// - Cold cache state only: the warm state (inputs already in L2) is refused with a reason.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "solar/bound/sol.h"
#include "solar/cost/graph_cost.h"
#include "solar/hw/device.h"
#include "solar/ir/graph.h"
#include "solar/tiling/fusion.h"
#include "solar/util/count.h"

namespace solar::bound {

// One on-chip memory level counted in S.
struct CapacityLevel {
  hw::MemoryLevel level;  // l2, smem, rf, ...
  Count bytes;            // its published capacity for the whole device, bytes
};

// The total on-chip capacity of a device, or why there is none.
struct OnChipCapacity {
  std::optional<Count> bytes;          // the sum over `levels`; nullopt when refused
  std::vector<CapacityLevel> levels;   // the levels summed, outermost first
  std::vector<hw::MemoryLevel> unpublished;  // on-chip levels without a published capacity
  std::string reason;                  // why `bytes` is nullopt; empty otherwise
};

// S for `device` in `mode` (see the semantics above).
OnChipCapacity on_chip_capacity(const hw::Device& device, tiling::TrafficMode mode);

// Why no device gets a cache-aware level under `options` (the warm cache state), or nullopt.
std::optional<std::string> why_not_cache_aware(const Options& options);

struct CacheAwareBound {
  bool available = false;
  std::string reason;  // why the level is absent (no on-chip capacity, warm cache state)
  tiling::TrafficMode mode = tiling::TrafficMode::Attainable;
  double seconds = 0;
  std::string bottleneck;   // the largest term's resource; "none" when 0
  std::vector<Term> terms;  // the fused level's compute and link terms and "dram" = Q(S)/β,
                            // largest first
  // With a system: max(compute terms, Q(S)/β) + the sum of the link terms; nullopt without.
  std::optional<double> seconds_no_overlap;
  std::optional<double> latency_seconds;  // the fused level's latency floor (never in seconds)
  std::vector<std::string> unknown;  // unpriced work (as the fused level's), missing DRAM rate
  std::vector<std::string> ceiling;  // work priced at a ceiling rate (the fused level's)
  OnChipCapacity capacity;
  Count traffic_bytes;                    // Q(S) of the mode
  std::vector<tiling::FusionGroup> groups;  // the groups that give Q(S)
  std::vector<Count> op_traffic_bytes;    // indexed by OpId (fusion.h: each op's part of Q(S))
  // Indexed by OpId: the op's part of the level's bottleneck term (its traffic over Q(S) when
  // DRAM bounds, its seconds on the bottleneck unit kind over the term when compute does);
  // sums to 1. Empty when no split exists (the level is 0, or a provable bound of the whole
  // graph, not of one op, gave Q(S)); `share_basis` then says why.
  std::vector<double> op_share;
  std::string share_basis;
  bool exhaustive = true;  // false when an einsum search was thinned
  std::string detail;      // which strategy or formula gave Q(S)
  // The no-fusion reference at the same S: every op its own kernel moving its own attainable
  // Q_op(S) (its unfused bytes when it has no curve; its smallest mapping's traffic when no
  // mapping fits in S, as the traffic model costs it).
  std::optional<double> no_fusion_seconds;
  std::optional<Count> no_fusion_traffic_bytes;
  // Whether every analyzed op's Q_op(S) <= its unfused bytes (then cache_aware <= unfused).
  bool ops_at_compulsory = false;
  // Headroom decomposition: unfused/fused and cache_aware/fused (nullopt when fused is 0).
  std::optional<double> fusion_gap;
  std::optional<double> tiling_gap;
};

// The cache-aware level of `g` on `device`, from its fused and per-op levels `bounds` (the
// result of compute_bounds for the same graph, cost and device) and the graph's traffic
// model. Throws InternalError when `bounds` or `cost` do not match `g`.
CacheAwareBound cache_aware_bound(const ir::Graph& g, const cost::GraphCost& cost,
                                  const hw::Device& device, const DeviceBounds& bounds,
                                  const tiling::GraphTrafficModel& model,
                                  tiling::TrafficMode mode);

// The ski-slope of a graph for charts and the inverse roofline: whole-graph Q(S) in both
// modes at log-spaced capacities, and the Pareto points of the heaviest ops' own curves.
struct SkiSlopeOp {
  ir::OpId op;
  std::vector<tiling::CurvePoint> points;  // the op's attainable Pareto points (bytes)
};

struct SkiSlope {
  std::vector<Count> capacities;  // bytes, strictly increasing, log-spaced
  std::vector<Count> attainable;  // Q(S) per capacity, bytes
  std::vector<Count> provable;    // lower bound per capacity, bytes
  Count compulsory_bytes;         // the fused level's traffic (the curves' floor)
  // Up to `heaviest` ops with a curve, ranked by their traffic at the smallest capacity
  // (the steepest slopes), ties by op id.
  std::vector<SkiSlopeOp> heaviest;
};

// Samples `points` (>= 2) capacities log-spaced from 1 KiB to max(4x the largest of
// `extra_capacities`, 2x the largest maximal effectual buffer of any op curve), so that every
// op curve reaches its floor inside the chart (the graph's own curve may need more, when
// only fusing long chains reaches the compulsory traffic). Throws UserError(BadArgument) when
// points < 2.
SkiSlope ski_slope(const ir::Graph& g, const cost::GraphCost& cost,
                   const tiling::GraphTrafficModel& model,
                   const std::vector<Count>& extra_capacities, int points = 32,
                   int heaviest = 5);

}  // namespace solar::bound
