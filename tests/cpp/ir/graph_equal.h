// Test helper: structural comparison of two graphs, naming the first difference.
#pragma once

#include <fmt/format.h>

#include <string>

#include "solar/ir/graph.h"

namespace solar::ir::testing {

// "" when `a` and `b` are equal tensor by tensor and op by op (ids, names, shapes, bodies);
// otherwise a description of the first difference. Origins are compared only when
// `compare_origins` (a graph re-parsed from printed text has origins at the new lines).
inline std::string graph_diff(const Graph& a, const Graph& b, bool compare_origins = false) {
  if (a.name != b.name) return fmt::format("graph name '{}' vs '{}'", a.name, b.name);
  if (a.frontend != b.frontend)
    return fmt::format("frontend '{}' vs '{}'", a.frontend, b.frontend);
  if (a.module_types != b.module_types) return "module classes differ";
  if (a.tensors().size() != b.tensors().size())
    return fmt::format("{} vs {} tensors", a.tensors().size(), b.tensors().size());
  for (std::size_t i = 0; i < a.tensors().size(); ++i) {
    const Tensor& x = a.tensors()[i];
    const Tensor& y = b.tensors()[i];
    std::string what = fmt::format("tensor #{} ('{}' vs '{}')", i, x.name, y.name);
    if (x.id != y.id || x.name != y.name) return what + ": id or name";
    if (x.shape != y.shape) return what + ": shape";
    if (x.dtype != y.dtype) return what + ": dtype";
    if (x.role != y.role) return what + ": role";
    if (x.sparsity != y.sparsity) return what + ": sparsity";
    if (x.dim_names != y.dim_names) return what + ": dim names";
  }
  if (a.ops().size() != b.ops().size())
    return fmt::format("{} vs {} ops", a.ops().size(), b.ops().size());
  for (std::size_t i = 0; i < a.ops().size(); ++i) {
    const Op& x = a.ops()[i];
    const Op& y = b.ops()[i];
    std::string what = fmt::format("op #{} ('{}' vs '{}')", i, x.name, y.name);
    if (x.id != y.id || x.name != y.name) return what + ": id or name";
    if (x.inputs != y.inputs) return what + ": inputs";
    if (x.outputs != y.outputs) return what + ": outputs";
    if (x.body.index() != y.body.index()) return what + ": kind";
    if (x.body != y.body) return what + ": body";
    // The module path survives every form, re-parsed or not.
    if (x.origin.module != y.origin.module)
      return what + fmt::format(": module '{}' vs '{}'", x.origin.module, y.origin.module);
    if (compare_origins && (x.origin.file != y.origin.file || x.origin.line != y.origin.line ||
                            x.origin.op != y.origin.op))
      return what + fmt::format(": origin '{}' vs '{}'", x.origin.describe(), y.origin.describe());
  }
  return "";
}

}  // namespace solar::ir::testing
