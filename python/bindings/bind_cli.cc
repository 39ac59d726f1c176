// solar._core: the CLI entry shared with the C++ executable.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "solar/cli/cli.h"
#include "solar/util/output_file.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace solar::python {
namespace {

// [(what, path)] -> NamedPath (the argument adapter of check_outputs).
std::vector<NamedPath> named_paths(const std::vector<std::pair<std::string, std::string>>& v) {
  std::vector<NamedPath> out;
  for (const auto& [what, path] : v) out.push_back({what, path});
  return out;
}

}  // namespace

void bind_cli(nb::module_& m) {
  m.attr("__version__") = cli::kVersion;
  m.def(
      "cli_run",
      [](const std::vector<std::string>& args) {
        nb::gil_scoped_release release;  // a long analysis need not hold the interpreter
        return cli::run(args);
      },
      "args"_a, "Runs `solar` with argv-style args (args[0] is the program name); returns the exit code.");
  m.def(
      "check_outputs",
      [](const std::vector<std::pair<std::string, std::string>>& inputs,
         const std::vector<std::pair<std::string, std::string>>& outputs) {
        check_outputs(named_paths(inputs), named_paths(outputs));
      },
      "inputs"_a, "outputs"_a,
      "Checks a command's outputs before any work, each (what, path): none replaces an input "
      "or another output, each can be written (solar/util/output_file.h); raises "
      "UserError(io).");

  nb::dict codes;
  codes["ok"] = int(cli::kOk);
  codes["usage"] = int(cli::kUsage);
  codes["io"] = int(cli::kIoError);
  codes["parse"] = int(cli::kParseError);
  codes["invalid_graph"] = int(cli::kInvalidGraph);
  codes["unknown_device"] = int(cli::kUnknownDevice);
  codes["unsupported"] = int(cli::kUnsupported);
  codes["validation_failed"] = int(cli::kValidationFailed);
  codes["program_error"] = int(cli::kProgramError);
  codes["bound_violated"] = int(cli::kBoundViolated);
  codes["outside_language"] = int(cli::kOutsideLanguage);
  codes["not_affine"] = int(cli::kNotAffine);
  codes["data_dependent"] = int(cli::kDataDependent);
  codes["unknown_intrinsic"] = int(cli::kUnknownIntrinsic);
  codes["shape_mismatch"] = int(cli::kShapeMismatch);
  codes["undeclared"] = int(cli::kUndeclared);
  codes["non_constant_bound"] = int(cli::kNonConstantBound);
  codes["internal"] = int(cli::kInternal);
  m.attr("EXIT_CODES") = codes;
}

}  // namespace solar::python
