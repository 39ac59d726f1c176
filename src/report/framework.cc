// The framework-kernel level (include/solar/report/framework.h): the ops grouped into the
// kernels their framework ops lowered to, each bounded as one fused kernel.
#include "solar/report/framework.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "group_tree.h"
#include "solar/ir/attrs.h"
#include "solar/report/report.h"
#include "solar/util/errors.h"

namespace solar::report {
namespace {

// Ops lowered from one traced op are one kernel; ops that name no traced op (a graph file's,
// or a pass's without one) by the rest of their origin.
bool same_kernel(const Origin& a, const Origin& b) {
  if (a.traced_op >= 0 || b.traced_op >= 0) return a.traced_op == b.traced_op;
  return a.file == b.file && a.line == b.line && a.op == b.op && a.module == b.module;
}

// Largest first; ties by name, so that reports do not depend on map order.
void sort_terms(std::vector<bound::Term>& terms) {
  std::stable_sort(terms.begin(), terms.end(), [](const bound::Term& a, const bound::Term& b) {
    return a.seconds != b.seconds ? a.seconds > b.seconds : a.resource < b.resource;
  });
}

}  // namespace

std::vector<FrameworkKernel> framework_kernels(const Report& r) {
  SOLAR_CHECK(r.graph != nullptr, "report without a graph");
  const ir::Graph& g = *r.graph;
  SOLAR_CHECK(r.cost.per_op.size() == g.ops().size(), "report cost does not match its graph");
  std::vector<FrameworkKernel> kernels;
  const ir::Op* last = nullptr;  // the last live op, whose kernel is kernels.back()
  for (const ir::Op& op : g.ops()) {
    const cost::Work& w = r.cost.per_op[op.id.value];
    if (w.dead) continue;  // in no level; it does not split a kernel either
    if (last == nullptr || !same_kernel(last->origin, op.origin)) {
      FrameworkKernel k;
      k.op = op.origin.op.empty() ? op.name : op.origin.op;
      k.module = op.origin.module;
      kernels.push_back(std::move(k));
    }
    FrameworkKernel& k = kernels.back();
    k.ops.push_back(op.id.value);
    // A kernel launches when one of its ops is not a free view (no work, no bytes).
    if (!ir::is_free_view(op)) k.free = false;
    last = &op;
  }
  return kernels;
}

std::vector<FrameworkLevel> framework_levels(const Report& r) {
  const ir::Graph& g = *r.graph;
  // One group per kernel, all directly under the root: the group tree gives each its
  // boundary bytes and its fused seconds per device.
  std::vector<std::string> paths(g.ops().size());
  for (std::size_t k = 0; k < r.kernels.size(); ++k)
    for (std::uint32_t i : r.kernels[k].ops) paths[i] = fmt::format("k{}", k);
  const ModuleNode root = detail::group_tree(r, paths);
  std::map<std::string, const ModuleNode*> node;  // "k<i>" -> its group
  for (const ModuleNode& c : root.children) node[c.path] = &c;

  std::vector<FrameworkLevel> levels;
  for (std::size_t d = 0; d < r.devices.size(); ++d) {
    const bound::DeviceBounds& db = r.devices[d];
    FrameworkLevel level;
    level.unknown = db.unfused.unknown;
    std::map<std::string, double> terms, by_bottleneck;
    double sum = 0;
    for (std::size_t k = 0; k < r.kernels.size(); ++k) {
      const FrameworkKernel& kernel = r.kernels[k];
      if (!kernel.free) ++level.kernels;
      // The ops run apart: their rooflines summed, their terms per resource.
      double apart = 0;
      std::map<std::string, double> apart_terms;
      for (std::uint32_t i : kernel.ops) {
        apart += db.per_op[i].seconds;
        for (const bound::Term& t : db.per_op[i].terms) apart_terms[t.resource] += t.seconds;
      }
      double seconds = apart;
      std::vector<bound::Term> kernel_terms;
      auto it = node.find(fmt::format("k{}", k));
      if (it != node.end() && d < it->second->devices.size() &&
          it->second->devices[d].fused_seconds < apart) {
        seconds = it->second->devices[d].fused_seconds;
        kernel_terms = it->second->devices[d].fused_terms;
      } else {
        for (const auto& [res, s] : apart_terms) kernel_terms.push_back(bound::Term{res, s});
        sort_terms(kernel_terms);
      }
      level.kernel_seconds.push_back(seconds);
      sum += seconds;
      for (const bound::Term& t : kernel_terms) terms[t.resource] += t.seconds;
      if (seconds > 0 && !kernel_terms.empty()) by_bottleneck[kernel_terms.front().resource] += seconds;
    }
    // Each kernel moves at least what crosses its boundary and the program's compulsory bytes
    // cross some boundary, so the sum is at least the fused SOL; where the two count a byte
    // differently (a gathered table's rows), the fused SOL, itself a lower bound on any
    // implementation, holds.
    level.seconds = std::max(sum, db.fused.seconds);
    for (const auto& [res, s] : terms) level.terms.push_back(bound::Term{res, s});
    sort_terms(level.terms);
    level.bottleneck = "none";
    double most = 0;
    for (const auto& [res, s] : by_bottleneck)
      if (s > most) {
        most = s;
        level.bottleneck = res;
      }
    levels.push_back(std::move(level));
  }
  return levels;
}

}  // namespace solar::report
