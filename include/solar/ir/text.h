// The text form of an EinsumGraph: parser and printer for the same syntax (docs/ir-text.md).
#pragma once

#include <string>
#include <string_view>

#include "solar/ir/graph.h"

namespace solar::ir {

// Parses a graph; `file` is used in error origins. Throws UserError(Parse) with file:line.
// The result is verified (UserError(InvalidGraph) otherwise).
Graph parse_graph(std::string_view text, std::string_view file = "<text>");

// Prints the canonical text form; parse_graph(print_graph(g)) == g.
std::string print_graph(const Graph& g);

// The statements of `g` without its header (the graph line and module classes): how a
// repeat op's body is written, and what RepeatOp's equality compares.
std::string print_statements(const Graph& g);

// An affine expression as the text form writes it (`p*2+r-1`), naming indices by `indices`.
std::string print_affine(const AffineExpr& e, const std::vector<IndexDim>& indices);

}  // namespace solar::ir
