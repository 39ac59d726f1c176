// Whole-graph DRAM traffic Q(S) for an on-chip capacity of S bytes: per-einsum ski-slopes
// (curve.h) composed over the graph with untiled and tiled (FFMT/FFMR rows, heads, flash-style
// keys) fusion and a segmentation search, plus the sound graph-level provable bound
// (docs/cache-aware.md,
// §2.3 "Fused graphs", §3 "Fusion search"; docs/cache-aware.md "Fusion").
//
// Semantics
// - Attainable: every op is placed in exactly one group (a run of consecutive analyzed ops
//   in graph order). A group of one op moves its own ski-slope traffic Q_i(S) (einsums with
//   a curve; a masked einsum's curve is its full box's, MaskedEinsum::Box) or its own
//   unfused bytes (data movement, opaque, einsums the tiling model refuses). A fused group keeps the intermediates it produces and consumes on chip (no
//   DRAM traffic; their bytes, or their tile, are reserved from S); an intermediate also
//   read after the group, or a graph output, is still written once.
// - Free views (views, non-copying slices: zero bytes) cost nothing and are transparent: a
//   view of an on-chip intermediate is on chip too. Unanalyzed ops contribute nothing (the
//   report counts them); what they read is taken to be in DRAM.
// - Q(S) reaches cost.compulsory_bytes() once everything fits, except where an op must find
//   an intermediate in DRAM (an opaque op's or a multi-input move's input, an unanalyzed op's
//   input): that intermediate is written.
// - Provable: a lower bound no schedule of the whole graph (any fusion, tiling or
//   recomputation) beats: max(compulsory bytes of the graph, per-op bounds that survive
//   fusion); always <= the attainable value at the same S.
// - All sizes in bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "solar/cost/graph_cost.h"
#include "solar/ir/graph.h"
#include "solar/tiling/curve.h"
#include "solar/util/count.h"

namespace solar::tiling {

enum class TrafficMode { Attainable, Provable };
std::string_view traffic_mode_name(TrafficMode m);  // "attainable" | "provable"
std::optional<TrafficMode> parse_traffic_mode(std::string_view name);

enum class FusionKind {
  None,     // the op alone, through DRAM
  Untiled,  // intermediates kept whole on chip
  Tiled,    // a chain sharing a fused outer rank: one intermediate tile resident (FFMT)
};
std::string_view fusion_kind_name(FusionKind k);  // "none" | "untiled" | "tiled"

struct FusionGroup {
  std::vector<ir::OpId> ops;  // analyzed ops of the group, graph order (free views not listed)
  FusionKind kind = FusionKind::None;
  Count traffic_bytes;        // the group's DRAM traffic at the capacity, bytes
  Count buffer_bytes;         // buffer its chosen mapping uses (<= capacity), bytes
  std::string detail;         // "rows m tiled by 256; weights resident", for reports
};

struct GraphTraffic {
  TrafficMode mode = TrafficMode::Attainable;
  Count capacity_bytes;
  Count traffic_bytes;  // whole-graph Q(S); always >= cost.compulsory_bytes()
  // Attainable: a partition of the analyzed non-view ops. Provable: one group per op whose
  // bound exceeds its compulsory share (may be empty).
  std::vector<FusionGroup> groups;
  // Indexed by OpId: the op's share of its group's traffic (split in proportion to each
  // op's own unfused bytes); 0 for free views and unanalyzed ops. In provable mode, the
  // share of the op whose bound gave the maximum (others 0) when a per-op bound won.
  std::vector<Count> op_traffic_bytes;
  bool exhaustive = true;  // false when any einsum search was thinned
  std::string detail;      // which strategy or formula gave the value ("gemm on op 3: ...")
};

struct GraphCurveOptions {
  CurveOptions einsum;       // per-einsum search (curve.h)
  bool fuse = true;          // false: the no-fusion sum only
  int max_segment_ops = 8;   // longest fused segment the segmentation search tries
  // Tiled fusion may also loop over a second rank one value at a time that later ops reduce
  // online (flash attention's keys; an MLP's hidden units), holding the row tiles of the
  // tensors without it; and tile by a rank the last ops reduce into an output kept on chip
  // (a loss summed over rows; an MLP's hidden units). false: FFMT/FFMR row tiling only
  // (Orojenesis' tiled fusion).
  bool key_tiling = true;
  // The segmentation search prices a segment once per structure: segments whose units,
  // tensors and uses are the same up to renaming (the same place in two repeated layers)
  // share their traffic at each capacity (docs/cache-aware.md, "Repeated layers"). false:
  // every segment priced on its own (the same results; for tests).
  bool memo_segments = true;
};

// Precomputes every einsum's ski-slope (and its tiled-fusion tables) once, then answers
// Q(S) for any capacity quickly: a per-capacity query costs O(ops * max_segment_ops) group
// evaluations, each a few curve lookups.
class GraphTrafficModel {
 public:
  GraphTrafficModel(const ir::Graph& g, const cost::GraphCost& cost,
                    const GraphCurveOptions& options = {});
  ~GraphTrafficModel();
  GraphTrafficModel(GraphTrafficModel&&) noexcept;
  GraphTrafficModel& operator=(GraphTrafficModel&&) noexcept;

  // Whole-graph traffic at `capacity_bytes` (> 0, else UserError(BadArgument)).
  GraphTraffic at(Count capacity_bytes, TrafficMode mode) const;
  // The same at several capacities (each > 0): one segmentation search for all of them,
  // several times faster than one query each on long graphs. Results are memoized.
  std::vector<GraphTraffic> at(const std::vector<Count>& capacities, TrafficMode mode) const;
  // One strategy on one run of ops, for reports and tests: the analyzed ops from `first` to
  // `last` (graph order, inclusive; free views and unanalyzed ops are skipped) as one group of
  // kind `kind` at `capacity_bytes` (> 0). Kind None needs a run of one op (its Q_i(S));
  // Untiled also applies to one op that reads a source twice or has a dead output.
  // nullopt when the strategy does not apply to the run (no intermediate kept on chip, no
  // shared fused rank) or fits in no mapping at that capacity.
  std::optional<FusionGroup> group_at(ir::OpId first, ir::OpId last, FusionKind kind,
                                      Count capacity_bytes) const;
  // The attainable ski-slope of one op, or nullptr when the op has no einsum curve (data
  // movement, opaque, masked, unanalyzed).
  const TrafficCurve* op_curve(ir::OpId op) const;
  // Mappings whose cost was computed while building the model (all einsum searches).
  std::uint64_t mappings_evaluated() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace solar::tiling
