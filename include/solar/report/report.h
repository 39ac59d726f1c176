// The analysis report: totals, coverage, per-device SOL levels (unfused, fused,
// cache-aware), the ski-slope, per-op rows; as JSON ("solar.report.v1", every field in
// docs/report-json.md), as a readable table and the ski-slope as an SVG chart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "solar/bound/cache_aware.h"
#include "solar/bound/inverse.h"
#include "solar/bound/sol.h"
#include "solar/cost/graph_cost.h"
#include "solar/insight/reassociate.h"
#include "solar/ir/graph.h"
#include "solar/report/framework.h"
#include "solar/report/memory.h"

namespace solar::report {

inline constexpr const char* kReportSchema = "solar.report.v1";

// What analyze computes beyond the unfused and fused levels.
struct LevelOptions {
  bool cache_aware = true;  // the cache-aware level (and the ski-slope); off: `--no-cache-aware`
  tiling::TrafficMode mode = tiling::TrafficMode::Attainable;  // the cache-aware level's Q(S)
  bool ski_slope = true;    // the `ski_slope` section (needs cache_aware)
  int ski_slope_points = 32;  // log-spaced capacities; fewer (down to 4) in proportion past
                              // kSkiSlopeFullOps ops, where each point costs seconds
  static constexpr std::size_t kSkiSlopeFullOps = 4000;
  int ski_slope_ops = 5;      // heaviest ops charted
  // Mappings each einsum's tiling search may evaluate before its candidate tiles are thinned
  // (tiling::CurveOptions::max_evaluations): thinned curves stay attainable, only less
  // tight, and the level says `exhaustive: false`. 65,536 keeps a ResNet block's analysis
  // near 0.1 s (the full 2^22 takes seconds per convolution).
  std::uint64_t max_mappings = kDefaultMaxMappings;
  static constexpr std::uint64_t kDefaultMaxMappings = std::uint64_t{1} << 16;
  // The `insights` section (docs/insight.md): cheaper orders of contraction chains, each with
  // the SOL of the graph rewritten in that order. The cache-aware level after a rewrite costs
  // a new traffic model: computed for the kInsightCacheAware groups that save the most.
  bool insights = true;
  static constexpr std::size_t kInsightCacheAware = 4;
};

// A contraction chain that a cheaper order computes with fewer MACs (docs/insight.md), and
// what that saves on each device: the whole graph's SOL levels before and after the rewrite.
struct ReassociationInsight {
  insight::Reassociation group;
  struct Device {
    std::string id;
    double fused_before = 0, fused_after = 0;                  // seconds
    std::optional<double> cache_aware_before, cache_aware_after;  // when computed
  };
  std::vector<Device> devices;  // in the report's device order; empty: no cheaper order
  std::string note;             // why a level after the rewrite is missing, when one is
  // The saving in MACs, as written over least (>= 1).
  double saving() const;
};

struct Report {
  const ir::Graph* graph = nullptr;  // not owned; must outlive the report
  cost::GraphCost cost;
  std::vector<bound::DeviceBounds> devices;
  // Parallel to `devices` when analyze computed it (each device's DRAM against the graph's
  // footprint); empty in reports built by hand.
  std::vector<MemoryFit> memory;
  bound::Options options;  // the options every device was bounded with
  LevelOptions levels;
  // The framework kernels (framework.h) and, parallel to `devices`, the framework-kernel
  // level on each; empty in reports built by hand.
  std::vector<FrameworkKernel> kernels;
  std::vector<FrameworkLevel> framework;
  // Parallel to `devices` when levels.cache_aware (each says whether it is available and
  // why not); empty otherwise.
  std::vector<bound::CacheAwareBound> cache_aware;
  std::string cache_aware_skipped;  // why there is no cache-aware level at all, when so
  std::optional<bound::SkiSlope> ski_slope;
  // Each device's on-chip capacity for the chart's vertical lines (id, bytes).
  std::vector<std::pair<std::string, Count>> device_capacities;
  // Every group of two or more contractions (levels.insights), in graph order.
  std::vector<ReassociationInsight> reassociation;
  // The system the graph runs on as one rank (analyze's `system`): the first device is its
  // device, bounded with the system's links (the `system` section, docs/report-json.md).
  std::optional<hw::System> system;
};

// The reassociation insights of r's graph on `devices` (r's own device order), with r's
// levels before each rewrite. Called by analyze; exposed for tests.
std::vector<ReassociationInsight> reassociation_insights(
    const Report& r, const std::vector<const hw::Device*>& devices);

// Costs the graph and bounds it on every device (in the given order), with the cache-aware
// level in the default (attainable) mode and the ski-slope. With a `system`, the graph is one
// rank's program on it: the first device must be the system's device, and its bounds price
// the collectives on the system's links (the other devices' leave their link time unknown).
// Throws UserError(BadArgument) on a null device, or a system whose device is not the first.
Report analyze(const ir::Graph& g, const std::vector<const hw::Device*>& devices,
               const bound::Options& options);
Report analyze(const ir::Graph& g, const std::vector<const hw::Device*>& devices,
               const bound::Options& options, const LevelOptions& levels,
               const hw::System* system = nullptr);

// The "solar.report.v1" document. Counts are JSON integers, or decimal strings when they
// exceed 64 bits; seconds and rates are doubles at full precision.
nlohmann::json to_json(const Report& r);
// The readable table: totals, per-device SOL per level with bottleneck, top ops by share.
std::string to_table(const Report& r, int top_ops = 10);
// The ski-slope as an SVG document (log-log: capacity in bytes against DRAM traffic in bytes;
// the whole graph in both modes, the heaviest ops' curves, each device's on-chip capacity
// as a vertical line). Throws UserError(BadArgument) when the report has no ski-slope.
std::string ski_slope_svg(const Report& r);

inline constexpr const char* kInverseSchema = "solar.inverse.v1";

// The inverse roofline of `g` (docs/inverse-roofline.md) as a "solar.inverse.v1" document
// and as readable text (`solar inverse`).
nlohmann::json inverse_to_json(const ir::Graph& g, const bound::InverseResult& r);
std::string inverse_table(const ir::Graph& g, const bound::InverseResult& r);

}  // namespace solar::report
