// Validation: dtype-aware comparison of executed values with a framework's (docs/executor.md,
// "Validation").
#include "solar/exec/validate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "solar/ir/shape.h"
#include "solar/util/errors.h"

namespace solar::exec {

Tolerance tolerance_for(ir::DType d) {
  switch (d) {
    // Different summation orders of the same f64 sum agree to ~K * 1.1e-16 of the scale.
    case ir::DType::F64: return {1e-9, 1e-9};
    // f32 (unit roundoff 6e-8): a K-term reduction summed in another order (BLAS blocking vs
    // a framework's kernels) differs by about sqrt(K) * 6e-8 of the scale, up to K * 6e-8 for
    // plain sequential sums: atol 1e-5 * scale covers K in the tens of thousands; rtol 1e-4
    // covers a few ulp of libm vs vectorized special functions through a chain of ops.
    case ir::DType::F32: return {1e-5, 1e-4};
    // 10 stored mantissa bits (1 ulp = 2^-10 ~ 1e-3): five ulp.
    case ir::DType::TF32: case ir::DType::F16: return {5e-3, 5e-3};
    // 7 mantissa bits (1 ulp = 2^-7 ~ 7.8e-3): a rounding on either side plus accumulation.
    case ir::DType::BF16: return {2e-2, 2e-2};
    // One ulp of 3 (e4m3, fp6 e2m3), 2 (e5m2) and 1 (fp4 e2m1) mantissa bits: a value rounded
    // to the neighbouring grid point on one side.
    case ir::DType::F8E4M3: case ir::DType::F6: return {0.125, 0.125};
    case ir::DType::F8E5M2: return {0.25, 0.25};
    case ir::DType::F4: return {0.5, 0.5};
    case ir::DType::I64: case ir::DType::I32: case ir::DType::I16: case ir::DType::I8:
    case ir::DType::I4: case ir::DType::U8: case ir::DType::Bool:
      return {0, 0};
  }
  SOLAR_UNREACHABLE("unknown dtype");
}

namespace {

using ir::position_str;
using ir::shape_str;

// Every value of a buffer as a double.
std::vector<double> as_doubles(const Buffer& b) {
  const auto n = static_cast<std::size_t>(b.num_elements());
  std::vector<double> v(n);
  switch (b.storage()) {
    case Storage::F32: std::copy_n(b.data<float>(), n, v.begin()); break;
    case Storage::F64: std::copy_n(b.data<double>(), n, v.begin()); break;
    case Storage::I64:
      for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<double>(b.data<std::int64_t>()[i]);
      break;
  }
  return v;
}

}  // namespace

OutputCheck compare(const std::string& name, const Buffer& got, const Buffer& want,
                    Tolerance tol) {
  if (got.shape() != want.shape())
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("reference for '{}' has shape {} but the tensor has shape {}",
                                name, shape_str(want.shape()), shape_str(got.shape())));
  OutputCheck c;
  c.name = name;
  c.shape = got.shape();
  c.tolerance = tol;
  // Integers and integer-valued data compare exactly in doubles up to 2^53; larger i64 values
  // are compared exactly as integers.
  const bool exact_ints = got.storage() == Storage::I64 && want.storage() == Storage::I64;
  const std::vector<double> g = as_doubles(got), w = as_doubles(want);
  {
    std::vector<double> mags;
    mags.reserve(w.size());
    for (double x : w)
      if (std::isfinite(x)) mags.push_back(std::fabs(x));
    if (!mags.empty()) {
      auto mid = mags.begin() + static_cast<std::ptrdiff_t>(mags.size() / 2);
      std::nth_element(mags.begin(), mid, mags.end());
      c.scale = std::max(1.0, *mid);
    }
  }
  const double atol = tol.atol * c.scale;
  double worst_excess = -1;
  double tightest_ratio = -1;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < g.size(); ++i) {
    double a = g[i], b = w[i];
    bool equal = exact_ints ? got.data<std::int64_t>()[i] == want.data<std::int64_t>()[i]
                            : (a == b || (std::isnan(a) && std::isnan(b)));
    if (equal) continue;
    double diff = std::fabs(a - b);
    // Unequal non-finite values (NaN against a number, inf against anything else) always fail.
    const bool non_finite = !std::isfinite(a) || !std::isfinite(b);
    if (non_finite) diff = kInf;
    if (exact_ints && diff == 0) diff = 1;  // beyond 2^53, unequal integers can round alike
    c.max_abs_error = std::max(c.max_abs_error, diff);
    if (b != 0 && std::isfinite(b)) c.max_rel_error = std::max(c.max_rel_error, diff / std::fabs(b));
    const double bound = exact_ints ? 0 : atol + tol.rtol * std::fabs(b);
    // The tightest element: the largest error / allowance (infinite for a zero allowance).
    const double ratio = bound > 0 ? diff / bound : kInf;
    if (tightest_ratio < 0 || ratio > tightest_ratio) {
      tightest_ratio = ratio;
      c.tightest_error = diff;
      c.tightest_allowance = bound;
    }
    if (!non_finite && diff <= bound) continue;
    ++c.mismatches;
    double excess = std::isinf(diff) ? kInf : diff - bound;
    if (excess > worst_excess) {
      worst_excess = excess;
      c.worst_index = static_cast<std::int64_t>(i);
      c.worst_got = a;
      c.worst_want = b;
    }
  }
  c.pass = c.mismatches == 0;
  return c;
}

ValidationResult validate(const ir::Graph& g, const TensorMap& sources,
                          const TensorMap& references,
                          const TensorMap& intermediate_references, const ExecOptions& options) {
  for (const auto& [name, ref] : references) {
    std::optional<ir::TensorId> id = g.find_tensor(name);
    if (!id || g.tensor(*id).role != ir::Role::Output)
      throw UserError(UserError::Kind::BadArgument,
                      fmt::format("reference '{}' is not an output of graph '{}' (pass references "
                                  "for other tensors as intermediate references)",
                                  name, g.name));
  }
  for (const ir::Tensor& t : g.tensors())
    if (t.role == ir::Role::Output && !references.contains(t.name))
      throw UserError(UserError::Kind::BadArgument,
                      fmt::format("no reference for output '{}' of graph '{}'", t.name, g.name));
  std::set<std::string> keep;
  for (const auto& [name, ref] : intermediate_references) {
    std::optional<ir::TensorId> id = g.find_tensor(name);
    if (!id)
      throw UserError(UserError::Kind::BadArgument,
                      fmt::format("intermediate reference '{}': graph '{}' has no tensor of that "
                                  "name",
                                  name, g.name));
    if (ir::is_graph_source(g.tensor(*id).role))
      throw UserError(UserError::Kind::BadArgument,
                      fmt::format("intermediate reference '{}' is a graph {}, not a value an op "
                                  "computes",
                                  name, ir::role_name(g.tensor(*id).role)));
    keep.insert(name);
  }

  TensorMap got = run_graph(g, sources, options, keep);

  ValidationResult r;
  auto check = [&](const ir::Tensor& t, const Buffer& ref) {
    return compare(t.name, got.at(t.name), ref, tolerance_for(t.dtype));
  };
  for (const ir::Tensor& t : g.tensors())
    if (t.role == ir::Role::Output) r.outputs.push_back(check(t, references.at(t.name)));
  bool intermediates_pass = true;
  if (!intermediate_references.empty()) {
    // Every referenced tensor in the order ops produce it: the first failure is where the
    // graph first departs from the framework.
    for (const ir::Op& op : g.ops()) {
      for (ir::TensorId o : op.outputs) {
        const ir::Tensor& t = g.tensor(o);
        std::optional<OutputCheck> c;
        if (auto it = intermediate_references.find(t.name); it != intermediate_references.end()) {
          c = check(t, it->second);
          r.intermediates.push_back(*c);
          intermediates_pass = intermediates_pass && c->pass;
        } else if (t.role == ir::Role::Output) {
          for (const OutputCheck& oc : r.outputs)
            if (oc.name == t.name) c = oc;
        }
        if (c && !c->pass && !r.first_divergent_op) {
          r.first_divergent_op = op.name;
          r.first_divergent_check = *c;
        }
      }
    }
  }
  r.pass = intermediates_pass &&
           std::all_of(r.outputs.begin(), r.outputs.end(), [](const OutputCheck& c) { return c.pass; });
  return r;
}

std::string describe(const OutputCheck& c) {
  std::string tol = fmt::format("atol {:g} x scale {:.3g}, rtol {:g}", c.tolerance.atol, c.scale,
                                c.tolerance.rtol);
  std::int64_t n = 1;
  for (std::int64_t d : c.shape) n *= d;
  if (c.pass)
    return fmt::format("PASS {} {}: max abs error {:.3g}, max rel error {:.3g} ({})", c.name,
                       shape_str(c.shape), c.max_abs_error, c.max_rel_error, tol);
  return fmt::format("FAIL {} {}: {} of {} elements outside tolerance, worst at {} (got {:.8g}, "
                     "want {:.8g}); max abs error {:.3g}, max rel error {:.3g} ({})",
                     c.name, shape_str(c.shape), c.mismatches, n,
                     position_str(c.worst_index, c.shape), c.worst_got, c.worst_want,
                     c.max_abs_error, c.max_rel_error, tol);
}

std::string describe(const ValidationResult& r) {
  std::string s = r.pass ? "validation passed" : "validation FAILED";
  for (const OutputCheck& c : r.outputs) s += "\n  output " + describe(c);
  for (const OutputCheck& c : r.intermediates) s += "\n  intermediate " + describe(c);
  if (r.first_divergent_op)
    s += fmt::format("\n  first divergent op: '{}' (its output '{}')", *r.first_divergent_op,
                     r.first_divergent_check->name);
  return s;
}

}  // namespace solar::exec
