// solar._core: analyze a graph on devices; the report as JSON text and as a table.
#include <algorithm>
#include <memory>
#include <optional>

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bindings.h"
#include "solar/bound/inverse.h"
#include "solar/bound/policy.h"
#include "solar/cost/graph_cost.h"
#include "solar/tiling/fusion.h"
#include "solar/hw/database.h"
#include "solar/hw/system.h"
#include "solar/report/modules.h"
#include "solar/report/report.h"
#include "solar/util/errors.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace solar::python {

hw::DeviceDb& device_db();  // bind_hw.cc

namespace {

// A report with the graph it points into: report::Report holds a raw graph pointer, so the
// analysis owns a copy of the graph for as long as Python holds the report.
struct Analysis {
  std::shared_ptr<const ir::Graph> graph;
  report::Report report;
};

bound::Options options(const std::string& policy, const std::string& cache_state) {
  std::optional<bound::MathPolicy> p = bound::parse_policy(policy);
  if (!p)
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("unknown policy '{}' (expected pytorch-default, tf32 or "
                                "strict-fp32)",
                                policy));
  std::optional<bound::CacheState> c = bound::parse_cache_state(cache_state);
  if (!c)
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("unknown cache_state '{}' (expected cold or warm)", cache_state));
  return {*p, *c};
}

tiling::TrafficMode traffic_mode(const std::string& mode) {
  std::optional<tiling::TrafficMode> m = tiling::parse_traffic_mode(mode);
  if (!m)
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("unknown mode '{}' (expected attainable or provable)", mode));
  return *m;
}

Analysis analyze(const ir::Graph& g, const std::vector<std::string>& archs,
                 const std::string& policy, const std::string& cache_state,
                 const std::string& mode, bool cache_aware, std::uint64_t max_mappings,
                 const std::optional<std::string>& system_arg, std::optional<int> nodes) {
  bound::Options opts = options(policy, cache_state);
  report::LevelOptions levels;
  levels.mode = traffic_mode(mode);
  levels.cache_aware = cache_aware;
  levels.ski_slope = cache_aware;
  levels.max_mappings = max_mappings;
  std::optional<hw::System> system;
  if (system_arg)
    system = hw::resolve_system(*system_arg, nodes, device_db(), hw::SystemDb::builtin());
  else if (nodes)
    throw UserError(UserError::Kind::BadArgument, "nodes needs a system");
  // The system's device first; an arch naming it again is not a second column.
  std::vector<const hw::Device*> devices;
  if (system) devices.push_back(&device_db().get(system->device));
  for (const std::string& id : archs) {
    const hw::Device* d = &device_db().get(id);
    if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
  }
  nb::gil_scoped_release release;
  Analysis a{std::make_shared<const ir::Graph>(g), {}};
  a.report = report::analyze(*a.graph, devices, opts, levels, system ? &*system : nullptr);
  return a;
}

// The inverse roofline as (JSON text, readable text).
std::pair<std::string, std::string> inverse(const ir::Graph& g, const std::vector<std::string>& archs,
                                            double target_seconds,
                                            std::optional<double> bandwidth,
                                            const std::string& mode, const std::string& policy,
                                            std::uint64_t max_mappings) {
  bound::InverseOptions o;
  o.target_seconds = target_seconds;
  o.bandwidth = bandwidth;
  o.mode = traffic_mode(mode);
  o.policy = options(policy, "cold").policy;
  std::vector<const hw::Device*> devices;
  for (const std::string& id : archs) devices.push_back(&device_db().get(id));
  nb::gil_scoped_release release;
  cost::GraphCost cost = cost::graph_cost(g);
  tiling::GraphCurveOptions curve_options;
  curve_options.einsum.max_evaluations = max_mappings;
  tiling::GraphTrafficModel model(g, cost, curve_options);
  bound::InverseResult r = bound::inverse_roofline(g, cost, model, devices, o);
  return {report::inverse_to_json(g, r).dump(2), report::inverse_table(g, r)};
}

}  // namespace

void bind_report(nb::module_& m) {
  m.attr("REPORT_SCHEMA") = report::kReportSchema;
  nb::class_<Analysis>(m, "Analysis", "A report (use solar.Report, which wraps it).")
      .def("to_json", [](const Analysis& a, int indent, bool ops) {
             nlohmann::json j = report::to_json(a.report);
             if (!ops) j.erase("ops");
             return j.dump(indent);
           },
           "indent"_a = -1, "ops"_a = true,
           "The report as JSON (solar.report.v1); ops=False leaves out the per-op rows.")
      .def("table",
           [](const Analysis& a, int top, const std::string& by, int depth) {
             std::optional<report::Breakdown> b = report::parse_breakdown(by);
             if (!b)
               throw UserError(UserError::Kind::BadArgument,
                               "unknown breakdown '" + by + "' (expected module, line or op)");
             report::TableOptions o;
             o.top_ops = top;
             o.by = *b;
             o.depth = depth;
             return report::to_table(a.report, o);
           },
           "top"_a = 10, "by"_a = "module", "depth"_a = 3,
           "The readable table (the CLI's output), broken down by module, line or op.")
      .def("ski_slope_svg", [](const Analysis& a) { return report::ski_slope_svg(a.report); },
           "The ski-slope chart as SVG text (UserError when the cache-aware level was skipped).")
      .def_prop_ro("graph", [](const Analysis& a) { return *a.graph; });
  m.def("analyze", &analyze, "graph"_a, "archs"_a, "policy"_a = "pytorch-default",
        "cache_state"_a = "cold", "mode"_a = "attainable", "cache_aware"_a = true,
        "max_mappings"_a = report::LevelOptions::kDefaultMaxMappings, "system"_a = nb::none(),
        "nodes"_a = nb::none(),
        "Costs the graph and bounds it on every device id in `archs` (with the cache-aware "
        "level in `mode` unless cache_aware is False). With `system` (a built-in id, a "
        "solar.system.v1 file or NxDEVICE, `nodes` domains), the graph is one rank of it: the "
        "system's device comes first and its collectives are priced on the system's links.");
  m.def("inverse", &inverse, "graph"_a, "archs"_a, "target_seconds"_a,
        "bandwidth"_a = nb::none(), "mode"_a = "attainable", "policy"_a = "pytorch-default",
        "max_mappings"_a = report::LevelOptions::kDefaultMaxMappings,
        "The inverse roofline (docs/inverse-roofline.md) as (JSON text, readable text); "
        "bandwidth in bytes/s.");
}

}  // namespace solar::python
