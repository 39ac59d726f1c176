// Lowering of an aten-level OpTrace (PyTorch) to an EinsumGraph: one table entry per aten op.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "solar/ir/graph.h"
#include "solar/lower/optrace.h"

namespace solar::lower {

struct LowerOptions {
  // An op no table entry lowers is an error (Unsupported) instead of an `unanalyzed` op.
  bool strict = false;
};

struct LowerResult {
  ir::Graph graph;
  // One line per op that became `unanalyzed`: "aten::foo.default (file:line): reason".
  std::vector<std::string> warnings;
  // The trace tensor each graph tensor stands for, by graph tensor id (-1: a tensor of a
  // decomposition). Validation uses it to feed the framework's values for sources and to
  // find the framework's value of each output.
  std::vector<std::int64_t> trace_ids;
};

// Lowers every op of the trace in order. Composite ops (softmax, layer norm, SDPA...) become
// their primitives. An op the table does not know, or whose arguments it cannot model,
// becomes an `unanalyzed` op with the reason (or, with `strict`, throws Unsupported).
// The graph is verified before it is returned.
LowerResult lower_aten(const OpTrace& trace, const LowerOptions& options = {});

// Whether the aten table has an entry for this op name ("aten::mm.default").
bool aten_op_known(std::string_view op);

}  // namespace solar::lower
