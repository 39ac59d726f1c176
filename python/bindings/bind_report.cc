// solar._core: analyze a graph on devices; the report as JSON text and as a table.
#include <memory>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bindings.h"
#include "solar/bound/policy.h"
#include "solar/hw/database.h"
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

Analysis analyze(const ir::Graph& g, const std::vector<std::string>& archs,
                 const std::string& policy, const std::string& cache_state) {
  bound::Options opts = options(policy, cache_state);
  std::vector<const hw::Device*> devices;
  for (const std::string& id : archs) devices.push_back(&device_db().get(id));
  nb::gil_scoped_release release;
  Analysis a{std::make_shared<const ir::Graph>(g), {}};
  a.report = report::analyze(*a.graph, devices, opts);
  return a;
}

}  // namespace

void bind_report(nb::module_& m) {
  m.attr("REPORT_SCHEMA") = report::kReportSchema;
  nb::class_<Analysis>(m, "Analysis", "A report (use solar.Report, which wraps it).")
      .def("to_json", [](const Analysis& a, int indent) {
             return report::to_json(a.report).dump(indent);
           },
           "indent"_a = -1, "The report as JSON (solar.report.v1).")
      .def("table", [](const Analysis& a, int top) { return report::to_table(a.report, top); },
           "top"_a = 10, "The readable table (the CLI's output).")
      .def_prop_ro("graph", [](const Analysis& a) { return *a.graph; });
  m.def("analyze", &analyze, "graph"_a, "archs"_a, "policy"_a = "pytorch-default",
        "cache_state"_a = "cold", "Costs the graph and bounds it on every device id in `archs`.");
}

}  // namespace solar::python
