// solar._core: re-association insights (insight/reassociate.h) — the groups of a graph and
// the graph rewritten in a group's best order.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "solar/insight/reassociate.h"
#include "solar/util/errors.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace solar::python {

namespace {

nb::dict group_dict(const ir::Graph& g, const insight::Reassociation& r) {
  nb::dict d;
  nb::list ops, leaves;
  for (ir::OpId id : r.ops) ops.append(g.op(id).name);
  for (const insight::Leaf& l : r.leaves) leaves.append(g.tensor(l.tensor).name);
  d["output"] = g.tensor(r.output).name;
  d["ops"] = ops;
  d["leaves"] = leaves;
  d["contractions"] = r.contractions;
  d["macs_as_written"] = count_to_py(r.macs_as_written);
  d["macs_least"] = count_to_py(r.macs_least);
  d["macs_absorbed"] = count_to_py(r.macs_absorbed);
  d["expression"] = r.expression;
  d["order"] = r.order;
  d["exhaustive"] = r.exhaustive;
  return d;
}

}  // namespace

void bind_insight(nb::module_& m) {
  m.def(
      "reassociations",
      [](const ir::Graph& g) {
        nb::list out;
        for (const insight::Reassociation& r : insight::find_reassociations(g))
          out.append(group_dict(g, r));
        return out;
      },
      "graph"_a, "Every group of two or more contractions (docs/insight.md), as dicts.");
  m.def(
      "reassociated",
      [](const ir::Graph& g, std::size_t index) {
        std::vector<insight::Reassociation> rs = insight::find_reassociations(g);
        if (index >= rs.size())
          throw UserError(UserError::Kind::BadArgument,
                          "reassociated: the graph has " + std::to_string(rs.size()) +
                              " re-association groups, no group " + std::to_string(index));
        return insight::reassociated(g, rs[index]);
      },
      "graph"_a, "index"_a, "The graph with group `index` computed in its best order.");
}

}  // namespace solar::python
