// Validation: run a graph and compare its outputs with a framework's (docs/executor.md, docs/validation.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "solar/exec/executor.h"

namespace solar::exec {

// An element passes when |got - want| <= atol * scale + rtol * |want|, where scale is the
// reference tensor's typical magnitude, max(1, median |want| over its finite elements): the
// rounding error of a long reduction grows with the size of what is summed, not with the
// (possibly cancelled) result, so the absolute term follows the tensor's scale. Equal values
// (including equal infinities) and NaN against NaN pass; NaN against a number fails.
struct Tolerance {
  double atol = 0;
  double rtol = 0;
};
// Dtype-aware defaults (docs/executor.md, "Validation"): f64 1e-9; f32 rtol 1e-4, atol 1e-5;
// tf32 and f16 5e-3; bf16 2e-2; fp8 e4m3 0.125, e5m2 0.25, fp6 0.125, fp4 0.5 (one unit in the
// last place); integers and bool exact.
Tolerance tolerance_for(ir::DType d);

// One compared tensor.
struct OutputCheck {
  std::string name;
  bool pass = false;
  double max_abs_error = 0;      // over all elements (inf when an infinity or NaN mismatches)
  double max_rel_error = 0;      // |got - want| / |want| over elements with want != 0
  std::int64_t mismatches = 0;   // elements outside the tolerance
  std::int64_t worst_index = -1; // flat index of the largest violation; -1 when none
  double worst_got = 0;          // the values at worst_index
  double worst_want = 0;
  double scale = 1;              // the scale the absolute tolerance was multiplied by
  // The element that used the largest part of its allowance (atol * scale + rtol * |want|):
  // its error |got - want| and its allowance; both 0 when every element is equal. A check
  // passes when no element's error exceeds its allowance, so error / allowance is the margin.
  double tightest_error = 0;
  double tightest_allowance = 0;
  std::vector<std::int64_t> shape;  // of the compared tensor (worst_index is row-major in it)
  Tolerance tolerance;
};

// Compares `got` with `want` (same shape; any dtypes: values are compared as doubles) under
// `tol`. UserError naming `name` when the shapes differ.
OutputCheck compare(const std::string& name, const Buffer& got, const Buffer& want,
                    Tolerance tol);

struct ValidationResult {
  bool pass = false;  // every output, and every intermediate with a reference, within tolerance
  std::vector<OutputCheck> outputs;
  std::vector<OutputCheck> intermediates;  // one per intermediate reference, in graph order
  // When intermediate references were given and something diverged: the first op (in graph
  // order) with an output outside tolerance, and that output's check.
  std::optional<std::string> first_divergent_op;
  std::optional<OutputCheck> first_divergent_check;
};

// Runs `g` on `sources` and compares every Output tensor with `references` (by name; each
// output must have one, of the output's shape). `intermediate_references` (optional, by
// tensor name) are kept during the run and compared too; they locate the first diverging op.
// Each tensor is compared under tolerance_for(its declared dtype). UserError naming the
// tensor for a missing, unknown or mis-shaped reference.
ValidationResult validate(const ir::Graph& g, const TensorMap& sources,
                          const TensorMap& references,
                          const TensorMap& intermediate_references = {},
                          const ExecOptions& options = {});

// A few lines for people: PASS/FAIL per output with errors and tolerance, and the first
// divergent op.
std::string describe(const ValidationResult& r);
// One line: "PASS y [4,2]: max abs error ..." or "FAIL y [4,2]: 2 of 8 elements ...".
std::string describe(const OutputCheck& c);

}  // namespace solar::exec
