// The EinsumGraph verifier: shapes, extents, dtypes, acyclicity, dangling tensors.
#pragma once

#include <optional>
#include <string>

#include "solar/ir/graph.h"

namespace solar::ir {

// Why the graph is invalid (one precise sentence naming the op/tensor), or nullopt.
std::optional<std::string> why_invalid(const Graph& g);

// Throws UserError(InvalidGraph) with the reason (and the offending op's origin) when the
// graph is invalid.
void verify(const Graph& g);

}  // namespace solar::ir
