// solar._core: export to accelerator modelers (AccelForge, Timeloop) and the Timeloop reader.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "solar/interop/export.h"
#include "solar/interop/timeloop.h"
#include "solar/ir/graph.h"
#include "solar/util/errors.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace solar::python {
namespace {

interop::Format format_arg(const std::string& name) {
  if (auto f = interop::parse_format(name)) return *f;
  throw UserError(UserError::Kind::BadArgument,
                  "unknown --format '" + name + "' (expected accelforge or timeloop)");
}

// [(what, path)] -> NamedPath: the files the command reads.
std::vector<NamedPath> named_paths(const std::vector<std::pair<std::string, std::string>>& v) {
  std::vector<NamedPath> out;
  for (const auto& [what, path] : v) out.push_back({what, path});
  return out;
}

}  // namespace

void bind_interop(nb::module_& m) {
  m.def(
      "export_graph",
      [](const ir::Graph& g, const std::string& format, const std::string& out,
         const std::vector<std::pair<std::string, std::string>>& inputs) {
        interop::Format f = format_arg(format);
        std::vector<NamedPath> in = named_paths(inputs);
        nb::gil_scoped_release release;
        return interop::export_summary(interop::export_to(g, f, out, in), f, out);
      },
      "graph"_a, "format"_a, "out"_a,
      "inputs"_a = std::vector<std::pair<std::string, std::string>>{},
      "Writes the graph's einsums as an AccelForge or Timeloop workload under folder `out` "
      "(docs/export.md), never over one of `inputs` [(what, path)]; returns the lines "
      "`solar export` prints.");
  m.def(
      "check_export_folder",
      [](const std::string& out, const std::vector<std::pair<std::string, std::string>>& inputs) {
        interop::check_export_folder(out, named_paths(inputs));
      },
      "out"_a, "inputs"_a = std::vector<std::pair<std::string, std::string>>{},
      "Checks before any work that folder `out` can take an export (new, empty, or an earlier "
      "export's: docs/export.md); raises UserError(io).");
  m.def(
      "read_timeloop_problems",
      [](const std::vector<std::pair<std::string, std::string>>& files, const std::string& name) {
        return interop::read_timeloop_problems(files, name);
      },
      "files"_a, "graph_name"_a = "timeloop",
      "Reads classic Timeloop problems [(file name, YAML text)] into one graph (schema-checked).");
}

}  // namespace solar::python
