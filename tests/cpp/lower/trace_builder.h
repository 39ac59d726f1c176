// Test helper: an OpTrace written tensor by tensor and op by op, as a frontend records it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "solar/lower/optrace.h"

namespace solar::lower::testing {

struct TraceBuilder {
  std::string frontend = "torch";
  nlohmann::json tensors = nlohmann::json::array();
  nlohmann::json ops = nlohmann::json::array();

  // A tensor of `shape`; returns its id.
  int tensor(std::vector<std::int64_t> shape, const char* role = "intermediate",
             const char* dtype = "float32") {
    int id = static_cast<int>(tensors.size());
    tensors.push_back({{"id", id}, {"shape", shape}, {"dtype", dtype}, {"role", role}});
    return id;
  }
  // An op with schema-named `args`; `outs` are tensor ids (null for a None output).
  void op(const char* name, nlohmann::json args, std::vector<nlohmann::json> outs) {
    ops.push_back({{"op", name}, {"args", args}, {"outputs", outs}});
  }
  // The tensors and ops alone: a loop body nested in another trace.
  nlohmann::json body() const { return {{"tensors", tensors}, {"ops", ops}}; }
  OpTrace build() const {
    return optrace_from_json({{"schema", "solar.optrace.v1"}, {"name", "t"},
                              {"frontend", frontend}, {"tensors", tensors}, {"ops", ops}});
  }
};

}  // namespace solar::lower::testing
