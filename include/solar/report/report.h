// The analysis report: totals, coverage, per-device SOL levels, per-op rows; as JSON
// ("solar.report.v1", every field in docs/report-json.md) and as a readable table.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "solar/bound/sol.h"
#include "solar/cost/graph_cost.h"
#include "solar/ir/graph.h"

namespace solar::report {

inline constexpr const char* kReportSchema = "solar.report.v1";

struct Report {
  const ir::Graph* graph = nullptr;  // not owned; must outlive the report
  cost::GraphCost cost;
  std::vector<bound::DeviceBounds> devices;
  bound::Options options;  // the options every device was bounded with
};

// Costs the graph and bounds it on every device (in the given order). Throws
// UserError(BadArgument) on a null device.
Report analyze(const ir::Graph& g, const std::vector<const hw::Device*>& devices,
               const bound::Options& options);

// The "solar.report.v1" document. Counts are JSON integers, or decimal strings when they
// exceed 64 bits; seconds and rates are doubles at full precision.
nlohmann::json to_json(const Report& r);
// The readable table: totals, per-device SOL per level with bottleneck, top ops by share.
std::string to_table(const Report& r, int top_ops = 10);

}  // namespace solar::report
