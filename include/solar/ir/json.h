// The versioned JSON form of an EinsumGraph ("solar.graph.v1", docs/graph-json.md).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "solar/ir/graph.h"

namespace solar::ir {

inline constexpr std::string_view kGraphSchema = "solar.graph.v1";

// Throws UserError(Parse) naming the JSON path of the problem (e.g. "ops[3].inputs[1]").
// The result is verified.
Graph graph_from_json(const nlohmann::json& j, std::string_view file = "<json>");
Graph parse_graph_json(std::string_view text, std::string_view file = "<json>");
nlohmann::json graph_to_json(const Graph& g);

// Reads a graph file: JSON when the first non-blank character is '{', text form otherwise.
// Throws UserError(Io) when the file cannot be read, UserError(Parse) when it is empty
// (blank) and UserError(InvalidGraph) when the graph has no ops (nothing to analyze).
Graph load_graph_file(const std::string& path);

}  // namespace solar::ir
