// Private to the tiling module: the state behind GraphTrafficModel (fusion.h) shared by
// fusion.cc (units, no-fusion sum, segmentation search), fusion_plan.cc (what a fused segment
// keeps on chip and how it can be tiled), fusion_segment.cc (its traffic at a capacity, and
// the sub-searches) and fusion_provable.cc (the graph-level provable bound).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "live.h"
#include "solar/tiling/fusion.h"
#include "solar/tiling/problem.h"

namespace solar::tiling::detail {

using Wide = unsigned __int128;
inline constexpr Wide kInfinite = ~Wide{0};

Count to_count(Wide v);
Wide add_sat(Wide a, Wide b);  // saturates at kInfinite
Wide mul_sat(Wide a, Wide b);
std::string mib(Wide bytes);                     // "12.5 MiB"
std::string problem_key(const TilingProblem& p);  // equal keys: equal problems

// A repeat op's body as a graph of its own (fusion_repeat.cc; docs/cache-aware.md, "Repeat"):
// alone, the op moves `trips` times the body's Q at a capacity, either re-reading its
// invariant and carried inputs every iteration or keeping them on chip across iterations.
struct RepeatModel {
  RepeatModel(const ir::Op& op, const GraphCurveOptions& options);
  Wide traffic(Wide capacity, std::string* detail) const;

  Wide trips = 0;
  cost::GraphCost cost;  // the body's (the model points into it)
  std::unique_ptr<GraphTrafficModel> model;
  Wide resident = 0;        // invariant and carried params: bytes kept on chip across iterations
  Wide per_iteration = 0;   // what one iteration's compulsory traffic moves of them
  Wide once = 0;            // kept on chip: read once (and the final state written once)
};

// One analyzed op that is not a free view: the unit of segmentation. Units are in graph order,
// except that those computed from parameters alone come first (order_units).
struct Unit {
  ir::OpId op;
  // Curve: an einsum with an attainable ski-slope; Bytes: its own unfused bytes (data
  // movement, opaque, einsums the tiling model refuses).
  bool has_curve = false;
  // Curve of a masked einsum's full box (MaskedEinsum::Box, where its live tiles are not
  // modelled) or of an opaque arg-reduction's access pattern (problem_from_opaque):
  // attainable only, never a provable per-op bound.
  bool attainable_only = false;
  ir::Reduce reduce = ir::Reduce::None;  // Curve: how the op combines over reduced ranks
  // A pattern (problem_from_pattern): alone the op streams its own unfused bytes at any
  // capacity, or its curve's traffic where lower (a gather's pattern reads whole rows, more
  // than the picked elements; a permute's smallest tiles may move more); the curve serves
  // inside fused groups.
  bool pattern = false;
  int problem_id = -1;  // Curve: equal for units with equal problems
  std::optional<TilingProblem> problem;
  std::shared_ptr<const CurveResult> curve;
  // Curve and can_reside: per input, then the output, its root tensor id.
  std::vector<std::uint32_t> tensor_root;
  // Bytes units that can read on-chip inputs and write an on-chip output (moves with one
  // input and one output: copy, permute, cast, slice copy; einsums without a curve): their
  // traffic is the sum of their operands' reads plus the write, less what is on chip. The
  // others (opaque ops, multi-input moves) always go through DRAM.
  bool can_reside = false;
  std::vector<Wide> operand_bytes;       // Curve, can_reside: per input, its read bytes
  Wide read_bytes = 0, write_bytes = 0;  // from cost.per_op
  Wide own_bytes = 0;                    // read + write
  std::shared_ptr<const RepeatModel> repeat;  // a repeat op's body (a bytes unit otherwise)
};

// A segment [a, b) of units, planned once (independent of the capacity).
struct SegmentPlan {
  // Untiled fusion: variant 0 keeps the intermediates produced and consumed inside on chip;
  // variant 1 also loads once and keeps the graph sources read twice or more inside.
  struct Untiled {
    bool ok = false;
    std::vector<const TrafficCurve*> curve;  // per unit; nullptr for bytes units
    std::vector<Wide> unit_bytes;            // per bytes unit: its traffic
    std::vector<Wide> reserve;               // per unit: resident bytes live while it runs
    Wide fixed = 0;                          // writes of residents also needed outside + loads
    std::vector<std::uint32_t> kept, loaded;  // on-chip intermediates and sources, for details
  };
  Untiled untiled[2];
  // Tiled fusion (FFMT/FFMR): one fused output rank shared by every unit, tile p rows.
  struct Tiled {
    bool ok = false;
    std::int64_t rows = 0;                 // M, the fused rank's extent
    std::string rank_name;                 // the first unit's fused rank
    std::vector<int> rank;                 // per unit: the fused rank in its problem
    std::vector<std::int64_t> scale;       // per unit: positions of that rank per row (> 1:
                                           //   the rows are its outer part; a tile of p
                                           //   rows is p * scale of them)
    std::vector<char> grouped;             // per unit: the rank is a 2:4 group dimension there
                                           //   (p * scale must be whole groups of 4)
    std::vector<int> batch_rank;           // per unit: a rank indexing every tensor, looped
                                           //   outermost with tile 1 (-1: none)
    std::int64_t batch = 1;                // its extent
    // Flash-style key tiling (keys > 1): per unit the key rank, looped innermost one key at a
    // time; tensors with the rows but not the key are held across the key loop.
    std::vector<int> key_rank;
    std::int64_t keys = 1;
    std::string key_name;
    Wide held_bits_per_row = 0;            // held tensors and running reductions, one row of
                                           //   one batch slice
    Wide held_bytes = 0;                   // held tensors, moved once
    std::vector<std::uint32_t> drop[2];    // per unit: tensors dropped (0: streamed weights,
                                           //   1: weights resident too)
    std::vector<Wide> reserve_bits_per_row;  // per unit: resident intermediate tile bits per row
    Wide weight_bytes = 0;                 // non-fused-rank inputs, loaded once when resident
    Wide streamed_bytes = 0;               // the same, summed per reading operand: read at
                                           //   least once per row tile when streamed
    Wide fixed = 0;                        // writes of residents also needed outside
    Wide accumulator_bytes = 0;            // outputs reduced over the rows, held across the
                                           //   row loop (one batch slice)
    const std::vector<std::int64_t>* tiles = nullptr;  // candidate tile sizes p, increasing
    // Per variant, [tile index * units + unit]: the sub-curves of a full tile and of the last
    // one, found on first use (every capacity a search answers asks for the same ones).
    // Written under the model's lock, as every fused() runs.
    struct SubCurves {
      bool known = false;
      const TrafficCurve* full = nullptr;
      const TrafficCurve* last = nullptr;
    };
    mutable std::vector<SubCurves> curves[2];
  };
  // One per output rank of the first unit that every unit shares, and per such rank one
  // key-tiled (flash-style) variant when a key rank exists.
  std::vector<Tiled> tiled;
};

// Hash of a value list (fusion_memo.cc: signatures and segment keys).
struct KeyHash {
  std::size_t operator()(const std::vector<std::uint64_t>& v) const {
    std::uint64_t h = 0x9E3779B97F4A7C15ull ^ v.size();
    for (std::uint64_t x : v) {
      h ^= x + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
      h *= 0xBF58476D1CE4E5B9ull;
    }
    return static_cast<std::size_t>(h ^ (h >> 31));
  }
};

struct SegmentValue {
  Wide traffic = kInfinite;
  Wide buffer = 0;
  FusionKind kind = FusionKind::None;
  std::string detail;
};

}  // namespace solar::tiling::detail

namespace solar::tiling {

struct GraphTrafficModel::Impl {
  const ir::Graph* graph = nullptr;
  const cost::GraphCost* cost = nullptr;
  GraphCurveOptions options;
  std::vector<detail::Unit> units;
  std::vector<int> unit_of_op;           // by OpId: unit index, -1 for free views/unanalyzed
  std::vector<std::uint32_t> root;       // by tensor id: the tensor it is a free view of
  std::vector<int> view_parent;          // by tensor id: the free op's input, -1 for roots
  std::vector<std::vector<int>> users;   // by root id: units reading it (sorted, unique)
  std::vector<bool> used_outside;        // by root id: a graph output or read by an unanalyzed op
  std::vector<detail::Wide> tensor_size;  // by tensor id: its size (planning asks often)
  std::uint64_t evaluated = 0;
  bool exhaustive = true;

  // Provable: einsum ops whose bound survives fusion (see fusion_provable.cc).
  struct ProvableOp {
    ir::OpId op;
    TilingProblem problem;
    bool full = false;  // operands are graph sources and the output is stored
  };
  std::vector<ProvableOp> provable_ops;

  // Lazily built state; at() is const, so it is guarded.
  mutable std::mutex mu;
  mutable std::map<std::pair<int, int>, std::unique_ptr<detail::SegmentPlan>> plans;
  mutable std::map<std::string, std::unique_ptr<TrafficCurve>> sub_curves;  // by problem text
  // By (unit problem id, dropped tensors, fused rank, tile): units with equal problems share.
  struct SubKey {
    int problem;
    std::uint32_t drop;
    int rank;
    std::int64_t tile;
    int batch_rank;
    int key_rank;
    friend bool operator==(const SubKey&, const SubKey&) = default;
  };
  struct SubKeyHash {
    std::size_t operator()(const SubKey& k) const {
      std::uint64_t h = static_cast<std::uint64_t>(k.problem) * 0x9E3779B97F4A7C15ull;
      h ^= static_cast<std::uint64_t>(k.drop) << 20;
      h ^= static_cast<std::uint64_t>(k.rank + 1) << 52;
      h ^= static_cast<std::uint64_t>(k.tile) * 0xC2B2AE3D27D4EB4Full;
      h ^= static_cast<std::uint64_t>(k.batch_rank + 1) << 40;
      h ^= static_cast<std::uint64_t>(k.key_rank + 1) << 46;
      return static_cast<std::size_t>(h ^ (h >> 29));
    }
  };
  mutable std::unordered_map<SubKey, const TrafficCurve*, SubKeyHash> sub_by_key;
  mutable std::map<std::int64_t, std::vector<std::int64_t>> tiles_by_rows;
  mutable std::uint64_t sub_evaluated = 0;
  // Attainable results by capacity, so that a provable query after an attainable one (or the
  // other way round), or a level after the ski-slope sampled its capacity, searches once.
  static constexpr std::size_t kAttainedOps = std::size_t{1} << 22;  // ops x results kept
  mutable std::mutex attained_mu;
  mutable std::map<detail::Wide, GraphTraffic> attained;

  // Segments priced once per structure (GraphCurveOptions::memo_segments): interned
  // signatures of every tensor (its metadata and the views it hangs from) and every unit
  // (its fields and its tensors' signatures); segment_key renames the tensors of a segment
  // by first appearance and adds which produced tensors are used outside it.
  std::vector<std::uint32_t> tensor_sig;  // by tensor id
  std::vector<std::uint32_t> unit_sig;    // by unit
  void build_signatures(const ir::Graph& g);
  std::vector<std::uint64_t> segment_key(int a, int b) const;

  void build(const ir::Graph& g, const cost::GraphCost& c, const GraphCurveOptions& o);
  // Puts the units computed from parameters alone first, then sets unit_of_op and users.
  void order_units(const ir::Graph& g);
  // Q_i(S) of a unit alone: its curve (the smallest mapping's traffic below the curve's
  // first buffer) or its own bytes.
  detail::Wide alone(int u, detail::Wide capacity) const;
  // One segmentation search answers all the capacities (each segment planned once).
  std::vector<GraphTraffic> attainable(const std::vector<Count>& capacities) const;
  // The search's result at one capacity: `best` the segmentation's traffic, `whole` the
  // whole graph as one segment, `segs` the segmentation and `values` its segments' values.
  GraphTraffic describe(Count capacity, detail::Wide best, const detail::SegmentValue& whole,
                        const std::vector<std::pair<int, int>>& segs,
                        const std::vector<detail::SegmentValue>& values) const;
  // `attainable`: the attainable traffic at the same capacity (the provable value's cap).
  GraphTraffic provable(Count capacity, Count attainable) const;

  // fusion_plan.cc
  detail::SegmentPlan& plan(int a, int b) const;  // under mu
  // Tiled fusion of units [a, b) by `rank` (per unit, at `scale`; `rows` of it, `batch`
  // slices): the sources several units read along the fused rank, each row tile loaded once
  // and held from its first reader to its last (softmax's input; x in x * sigmoid(x)). Adds
  // their tiles to tl.reserve_bits_per_row and their one load to tl.fixed.
  std::set<std::uint32_t> shared_row_sources(int a, int b, const std::vector<int>& rank,
                                             const std::vector<std::int64_t>& scale,
                                             std::int64_t rows, std::int64_t batch,
                                             detail::SegmentPlan::Tiled& tl) const;
  // fusion_segment.cc
  // The best fused strategy for units [a, b) (b - a >= 1), or only strategies of kind
  // `only` when given; traffic kInfinite when none applies or fits.
  // Strategies that cannot beat `budget` may be skipped (then traffic is >= budget).
  detail::SegmentValue fused(int a, int b, detail::Wide capacity, bool describe,
                             std::optional<FusionKind> only = std::nullopt,
                             detail::Wide budget = detail::kInfinite) const;
  // The same with the segment's plan at hand (under mu).
  detail::SegmentValue fused(const detail::SegmentPlan& plan, int a, int b,
                             detail::Wide capacity, bool describe,
                             std::optional<FusionKind> only = std::nullopt,
                             detail::Wide budget = detail::kInfinite) const;
  detail::SegmentValue alone_value(int u, detail::Wide capacity) const;
  // The curve of unit u's problem with the tensors in `drop` kept on chip (no traffic, no
  // buffer) and, when rank >= 0, that rank's extent set to `tile`; nullptr when the tiling
  // search refuses it.
  // `batch_rank`, `key_rank` >= 0: those ranks' extents are set to 1 as well.
  const TrafficCurve* sub_curve(int u, std::uint32_t drop, int rank, std::int64_t tile,
                                int batch_rank = -1, int key_rank = -1) const;
  const TrafficCurve* search_sub_curve(int u, std::uint32_t drop, int rank, std::int64_t tile,
                                       int batch_rank, int key_rank) const;  // uncached
  // Tiled fusion of a masked unit u whose mask names the fused rank or the key rank: how many
  // (row tile, key, batch slice) steps hold a live point, over the full row tiles of `p`
  // rows (`scale` positions of the rank per row) and over the last one; nullopt when the
  // mask names neither (every step is live). The sub-curves drop those constraints.
  std::optional<std::pair<detail::Wide, detail::Wide>> live_steps(int u, int rank,
                                                                  std::int64_t scale,
                                                                  std::int64_t p, std::int64_t rows,
                                                                  int batch_rank,
                                                                  int key_rank) const;
  mutable std::map<int, std::unique_ptr<detail::LiveTiles>> live_tiles;  // by problem id
};

}  // namespace solar::tiling
