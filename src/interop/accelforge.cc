// accelforge_yaml: the workload as AccelForge's `workload:` spec.
#include "solar/interop/accelforge.h"

#include <fmt/format.h>

#include "common.h"
#include "solar/ir/dtype.h"

namespace solar::interop {
namespace {

using detail::comment_safe;
using detail::yaml_quote;

// `{A_M: "m", A_K: "k"}`: every projection expression quoted (one may start with '-').
std::string projection_text(const Workload& w, const WorkloadEinsum& e, const WorkloadAccess& a) {
  const WorkloadTensor& t = w.tensor_of(a);
  std::string out = "{";
  for (std::size_t d = 0; d < a.projection.size(); ++d) {
    if (d) out += ", ";
    out += fmt::format("{}: {}", t.ranks[d],
                       yaml_quote(isl_affine(a.projection[d], e.rank_variables)));
  }
  return out + "}";
}

// `input`, `weight` and `output`, the names AccelForge's example architectures constrain:
// the first operand is the input, a second one the weight.
std::string renames_text(const Workload& w, const WorkloadEinsum& e) {
  std::vector<std::string> inputs;
  std::string output;
  for (const WorkloadAccess& a : e.accesses)
    (a.output ? output : inputs.emplace_back()) = w.tensor_of(a).name;
  std::string out = "{";
  if (!inputs.empty()) out += fmt::format("input: {}, ", inputs[0]);
  if (inputs.size() == 2) out += fmt::format("weight: {}, ", inputs[1]);
  return out + fmt::format("output: {}}}", output);
}

}  // namespace

std::string accelforge_yaml(const Workload& w) {
  std::string out;
  out += comment_safe(fmt::format("# AccelForge workload exported by Solar from graph '{}' "
                                  "(frontend {}{}).",
                                  w.graph_name, w.frontend,
                                  w.source.empty() ? "" : ", source " + w.source)) +
         "\n";
  out +=
      "# Load it with accelforge.Spec.from_yaml(\"workload.yaml\", ARCH.yaml, ...). One Einsum "
      "per live einsum\n"
      "# op of the graph; its operation count (Workload.n_computes) is the op's live points "
      "(its\n"
      "# iteration box minus its mask), for a contraction its MACs. Padding points are "
      "operations\n"
      "# (no rank_sizes), as Solar counts them. Solar's figures: solar-export.json.\n";
  out += fmt::format("# Totals: {} operations, {} MACs; einsums: {}.\n",
                     w.total_operations().str(), w.total_macs().str(), w.einsums.size());
  if (!w.folded.empty())
    out += comment_safe(fmt::format("# Folded into projections (layout only): {} movement "
                                    "ops.",
                                    w.folded.size())) +
           "\n";
  if (!w.left_out.empty()) {
    out += fmt::format("# Left out ({} ops; their outputs are workload inputs):\n",
                       w.left_out.size());
    for (const LeftOut& l : w.left_out)
      out += comment_safe(fmt::format("#   {} '{}': {}", l.kind, l.op, l.reason)) + "\n";
  }
  out += "workload:\n  einsums:\n";
  for (const WorkloadEinsum& e : w.einsums) {
    out += fmt::format("  - name: {}\n", e.name);
    out += "    # " + detail::einsum_summary(w, e) + "\n";
    out += "    iteration_space_shape:\n";
    for (std::size_t i = 0; i < e.indices.size(); ++i)
      out += fmt::format("    - {}\n", yaml_quote(fmt::format("0 <= {} < {}", e.rank_variables[i],
                                                              e.indices[i].extent)));
    for (const ir::AffineConstraint& c : e.mask)
      out += fmt::format("    - {}\n",
                         yaml_quote(isl_affine(c.expr, e.rank_variables) + " >= 0"));
    out += "    tensor_accesses:\n";
    for (const WorkloadAccess& a : e.accesses) {
      const WorkloadTensor& t = w.tensor_of(a);
      out += fmt::format("    - name: {}\n", t.name);
      if (!t.alias_of.empty() || t.solar_name != t.name || !a.folded.empty() || a.pad) {
        std::string note = fmt::format("graph tensor '{}'", t.solar_name);
        if (!t.alias_of.empty())
          note += fmt::format(", read a second time (alias of {})", t.alias_of);
        if (!a.folded.empty()) {
          note += ", through";
          for (const std::string& f : a.folded) note += fmt::format(" '{}'", f);
        }
        if (a.pad) note += fmt::format(", padded with {} outside the tensor", *a.pad);
        out += "      # " + comment_safe(note) + "\n";
      }
      out += fmt::format("      projection: {}\n", projection_text(w, e, a));
      if (a.output) out += "      output: true\n";
      out += fmt::format("      bits_per_value: {}\n", ir::dtype_bits(t.dtype));
    }
    out += fmt::format("    renames: {}\n", renames_text(w, e));
  }
  return out;
}

}  // namespace solar::interop
