// Test helper shared by the module tests: the op of a graph that produces a named tensor.
#pragma once

#include <string_view>

#include "solar/ir/graph.h"

namespace solar::testing {

// The op producing tensor `name` of `g` (a test's graph text names its results).
inline const ir::Op& op_of(const ir::Graph& g, std::string_view name) {
  return g.op(*g.producer(*g.find_tensor(name)));
}

}  // namespace solar::testing
