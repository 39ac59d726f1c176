// Private helpers shared by the report's JSON and table writers: op classes and human units.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "solar/cost/work.h"
#include "solar/ir/graph.h"
#include "solar/util/count.h"

namespace solar::report::detail {

// Exact counts: a JSON integer when it fits in 64 bits, else its decimal string (JSON
// readers commonly lose integers above 2^53 or 2^64; a string never does).
inline nlohmann::json count_json(Count c) {
  return c.fits_u64() ? nlohmann::json(c.to_u64()) : nlohmann::json(c.str());
}

// The op's class in reports: matmul, convolution, elementwise, reduction (einsums), move,
// opaque, unanalyzed.
std::string op_class(const ir::Op& op, const cost::Work& w);

// The op as people know it: its framework op and, for one step of a decomposition, the step
// ("scaled_dot_product_attention: exp" for t50.exp16 of aten SDPA; "layernorm: row_sum"
// for a loop statement); the op's own name where its origin names nothing else (graph files).
std::string op_label(const ir::Op& op);

// A number with an SI prefix and a unit, four significant digits: "68.72 GMAC", "512 B".
std::string si(double value, const std::string& unit);
inline std::string si(Count value, const std::string& unit) { return si(value.to_double(), unit); }

// Seconds in the nearest human unit, four significant digits: "139 us", "2.5 ms", "0 s".
std::string human_seconds(double seconds);

// Estimated bytes of an unanalyzed op: every input and output at full size.
Count unanalyzed_bytes_estimate(const ir::Graph& g, const ir::Op& op);

// The framework op and reason of an op the cost module did not analyze.
std::string unanalyzed_framework_op(const ir::Op& op);
std::string unanalyzed_reason(const ir::Op& op, const cost::Work& w);

}  // namespace solar::report::detail
