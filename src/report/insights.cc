// The `insights` section: re-association of contraction chains (insight/reassociate.h) with
// each device's SOL levels before and after the rewrite (docs/insight.md).
#include <algorithm>
#include <numeric>

#include "solar/report/report.h"

namespace solar::report {

double ReassociationInsight::saving() const {
  const double least = group.macs_least.to_double();
  return least > 0 ? group.macs_as_written.to_double() / least : 1.0;
}

std::vector<ReassociationInsight> reassociation_insights(
    const Report& r, const std::vector<const hw::Device*>& devices) {
  const ir::Graph& g = *r.graph;
  std::vector<ReassociationInsight> out;
  for (insight::Reassociation& group : insight::find_reassociations(g))
    out.push_back({std::move(group), {}, {}});
  // The groups that save, largest saving first: the cache-aware level after the rewrite is
  // computed for the first few (a traffic model each).
  std::vector<std::size_t> saving;
  for (std::size_t k = 0; k < out.size(); ++k)
    if (out[k].group.macs_least < out[k].group.macs_as_written) saving.push_back(k);
  std::stable_sort(saving.begin(), saving.end(), [&](std::size_t a, std::size_t b) {
    return out[a].saving() > out[b].saving();
  });
  for (std::size_t rank = 0; rank < saving.size(); ++rank) {
    ReassociationInsight& in = out[saving[rank]];
    const ir::Graph h = insight::reassociated(g, in.group);
    const cost::GraphCost cost = cost::graph_cost(h);
    const bool cache_aware = !r.cache_aware.empty() && rank < LevelOptions::kInsightCacheAware;
    std::optional<tiling::GraphTrafficModel> model;
    if (cache_aware) {
      tiling::GraphCurveOptions options;
      options.einsum.max_evaluations = r.levels.max_mappings;
      model.emplace(h, cost, options);
    } else if (!r.cache_aware.empty()) {
      in.note = "cache-aware level after the rewrite computed for the groups that save most";
    }
    for (std::size_t i = 0; i < devices.size(); ++i) {
      const bound::DeviceBounds after = bound::compute_bounds(h, cost, *devices[i], r.options);
      ReassociationInsight::Device d{devices[i]->id, r.devices[i].fused.seconds,
                                     after.fused.seconds, std::nullopt, std::nullopt};
      if (model && r.cache_aware[i].available) {
        d.cache_aware_before = r.cache_aware[i].seconds;
        d.cache_aware_after =
            bound::cache_aware_bound(h, cost, *devices[i], after, *model, r.levels.mode).seconds;
      }
      in.devices.push_back(std::move(d));
    }
  }
  return out;
}

}  // namespace solar::report
