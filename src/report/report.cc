// report::analyze: cost once, bound on every device, then the cache-aware level and the
// ski-slope from one graph traffic model (built once, queried per device capacity).
#include "solar/report/report.h"

#include <algorithm>

#include <fmt/format.h>

#include "solar/tiling/fusion.h"
#include "solar/util/errors.h"

namespace solar::report {

Report analyze(const ir::Graph& g, const std::vector<const hw::Device*>& devices,
               const bound::Options& options) {
  return analyze(g, devices, options, LevelOptions{});
}

Report analyze(const ir::Graph& g, const std::vector<const hw::Device*>& devices,
               const bound::Options& options, const LevelOptions& levels,
               const hw::System* system) {
  Report r;
  r.graph = &g;
  r.options = options;
  r.levels = levels;
  r.cost = cost::graph_cost(g);
  r.devices.reserve(devices.size());
  if (system) {
    if (devices.empty() || devices[0] == nullptr || devices[0]->id != system->device)
      throw UserError(UserError::Kind::BadArgument,
                      fmt::format("analyze: system {} needs its device {} first in the list",
                                  system->id, system->device));
    r.system = *system;
  }
  for (const hw::Device* d : devices) {
    if (d == nullptr)
      throw UserError(UserError::Kind::BadArgument, "analyze: a device in the list is null");
    // The system prices the first device's collectives; the others are single devices.
    const hw::System* links = system && r.devices.empty() ? system : nullptr;
    r.devices.push_back(bound::compute_bounds(g, r.cost, *d, options, links));
    r.memory.push_back(memory_fit(g, *d));
  }
  r.kernels = framework_kernels(r);
  r.framework = framework_levels(r);
  auto with_insights = [&]() -> Report& {
    if (levels.insights) r.reassociation = reassociation_insights(r, devices);
    return r;
  };
  if (!levels.cache_aware) {
    r.cache_aware_skipped = "skipped on request (--no-cache-aware)";
    return with_insights();
  }
  if (std::optional<std::string> why = bound::why_not_cache_aware(options)) {
    r.cache_aware_skipped = *why;  // no device could use the model: do not build it
    return with_insights();
  }
  std::vector<Count> capacities;
  for (const hw::Device* d : devices) {
    bound::OnChipCapacity c = bound::on_chip_capacity(*d, tiling::TrafficMode::Attainable);
    if (c.bytes) {
      r.device_capacities.emplace_back(d->id, *c.bytes);
      capacities.push_back(*c.bytes);
    }
  }
  // The model searches every einsum once; the per-device levels and the ski-slope reuse it.
  tiling::GraphCurveOptions curve_options;
  curve_options.einsum.max_evaluations = levels.max_mappings;
  tiling::GraphTrafficModel model(g, r.cost, curve_options);
  // The ski-slope first: its one search also answers the devices' capacities, which the
  // model remembers for the levels.
  if (levels.ski_slope) {
    // Every sampled capacity adds segment evaluations to the one search (planning is
    // shared): a graph past kSkiSlopeFullOps ops (unrolled RNNs) is sampled more coarsely.
    const std::size_t ops = std::max<std::size_t>(g.ops().size(), 1);
    const int points = std::clamp<int>(
        static_cast<int>(std::min<std::size_t>(
            levels.ski_slope_points, levels.ski_slope_points * LevelOptions::kSkiSlopeFullOps / ops)),
        std::min(levels.ski_slope_points, 4), levels.ski_slope_points);
    r.ski_slope = bound::ski_slope(g, r.cost, model, capacities, points, levels.ski_slope_ops);
  }
  r.cache_aware.reserve(devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i)
    r.cache_aware.push_back(
        bound::cache_aware_bound(g, r.cost, *devices[i], r.devices[i], model, levels.mode));
  return with_insights();
}

}  // namespace solar::report
