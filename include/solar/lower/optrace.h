// The OpTrace: what a framework frontend records (ops with schema-named arguments over
// tensors with shape, dtype, strides and storage), the input of lowering (docs/optrace.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "solar/ir/graph.h"

namespace solar::lower {

inline constexpr std::string_view kOpTraceSchema = "solar.optrace.v1";

// Where a trace tensor comes from. Output marks a value the program returns.
enum class TraceRole { Input, Parameter, Buffer, Constant, Intermediate, Output };
std::string_view trace_role_name(TraceRole r);
std::optional<TraceRole> parse_trace_role(std::string_view name);

// A constant tensor whose values the frontend read at capture (a module's buffer such as a
// causal mask): `inside` where lower <= c - r <= upper over its last two dimensions (r, c),
// a missing bound being no bound, `outside` elsewhere, the same in every leading index.
struct TraceBand {
  std::optional<std::int64_t> lower, upper;  // diagonals c - r
  double inside = 0, outside = 0;
};

struct TraceTensor {
  std::int64_t id = -1;
  std::string name;                   // optional ("fc1.weight"); empty when none
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;  // in elements
  std::string dtype;                  // torch name without the prefix: "float32", "bfloat16"
  std::int64_t storage = -1;          // tensors with equal storage alias the same memory
  std::int64_t storage_offset = 0;    // in elements
  TraceRole role = TraceRole::Intermediate;
  std::vector<std::string> dims;          // optional dimension names ("B", "S", "D")
  std::optional<ir::Sparsity> sparsity;   // optional declared sparsity (loop programs)
  std::optional<TraceBand> band;          // optional known values (a buffer's mask)
};

struct TraceOp {
  std::string op;               // "aten::mm.default": op name with its overload
  nlohmann::json args;          // object: schema argument name -> value (docs/optrace.md)
  std::vector<std::optional<std::int64_t>> outputs;  // tensor ids; nullopt for a None output
  std::string file;             // source location of the Python call, if known
  int line = 0;
  std::string module;           // the module path that ran it ("blocks.3.attn.qkv"), if known
};

struct OpTrace {
  std::string name = "program";
  std::string frontend = "torch";
  std::string source;  // the program file, if any
  std::vector<TraceTensor> tensors;
  std::vector<TraceOp> ops;
  std::map<std::string, std::string> modules;  // module path -> class name

  // The tensor with this id; throws UserError(Parse) when there is none.
  const TraceTensor& tensor(std::int64_t id) const;
  std::vector<std::size_t> index_;  // by id: position in `tensors` + 1 (0: none); built by parse
};

// Reads and checks the JSON form (schema "solar.optrace.v1"); throws UserError(Parse) naming
// `file` and the offending field.
OpTrace optrace_from_json(const nlohmann::json& j, std::string_view file = "<optrace>");
OpTrace parse_optrace(std::string_view text, std::string_view file = "<optrace>");
nlohmann::json optrace_to_json(const OpTrace& t);

}  // namespace solar::lower
