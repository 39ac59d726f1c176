// Validation: run a graph and compare its outputs with a framework's (DESIGN.md §6).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "solar/exec/executor.h"

namespace solar::exec {

// |got - want| <= atol + rtol * |want| elementwise.
struct Tolerance {
  double atol = 0;
  double rtol = 0;
};
// Dtype-aware defaults: tight for f64/f32, looser for bf16/f16/fp8 (docs/executor.md).
Tolerance tolerance_for(ir::DType d);

struct OutputCheck {
  std::string name;
  bool pass = false;
  double max_abs_error = 0;
  double max_rel_error = 0;
  std::int64_t mismatches = 0;   // elements outside the tolerance
  std::int64_t worst_index = -1; // flat index of the largest violation
  Tolerance tolerance;
};

struct ValidationResult {
  bool pass = false;
  std::vector<OutputCheck> outputs;
  // When intermediate references were given and something diverged: the first op (in graph
  // order) whose result is outside tolerance, and its check.
  std::optional<std::string> first_divergent_op;
  std::optional<OutputCheck> first_divergent_check;
};

// Runs `g` on `sources` and compares every Output tensor with `references` (by name; each
// output must have one). `intermediate_references` (optional, by tensor name) locate the
// first diverging op.
ValidationResult validate(const ir::Graph& g, const TensorMap& sources,
                          const TensorMap& references,
                          const TensorMap& intermediate_references = {},
                          const ExecOptions& options = {});

}  // namespace solar::exec
