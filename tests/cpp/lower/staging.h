// Test helper: a lowering Context begun at the one op of a trace, for calling the op
// library's builders (src/lower/builders.h) directly.
#pragma once

#include <memory>

#include "builders.h"
#include "context.h"
#include "lower/trace_builder.h"
#include "solar/ir/graph.h"

namespace solar::lower::testing {

struct Staging {
  OpTrace trace;
  ir::Graph graph;
  detail::Context c;
  explicit Staging(const TraceBuilder& t) : trace(t.build()), c(trace, graph) {
    c.begin(trace.ops.at(0));
  }
  // The ops staged so far, committed to the graph.
  const ir::Graph& commit() {
    c.commit();
    return graph;
  }
};

}  // namespace solar::lower::testing
