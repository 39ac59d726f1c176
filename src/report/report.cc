#include "solar/report/report.h"

#include "solar/util/errors.h"

namespace solar::report {

Report analyze(const ir::Graph& g, const std::vector<const hw::Device*>& devices,
               const bound::Options& options) {
  Report r;
  r.graph = &g;
  r.options = options;
  r.cost = cost::graph_cost(g);
  r.devices.reserve(devices.size());
  for (const hw::Device* d : devices) {
    if (d == nullptr)
      throw UserError(UserError::Kind::BadArgument, "analyze: a device in the list is null");
    r.devices.push_back(bound::compute_bounds(g, r.cost, *d, options));
  }
  return r;
}

}  // namespace solar::report
