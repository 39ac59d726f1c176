// The aten table's normalization layers: layer norm, batch norm (eval and training, with the
// running-statistics update) and group norm.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "context.h"
#include "families.h"
#include "solar/util/errors.h"

namespace solar::lower::detail {

namespace {

void lower_layer_norm(Context& c) {
  std::int64_t x = c.trace_id("input");
  const auto shape = c.shape(x);
  auto norm_shape = c.ints("normalized_shape");
  if (norm_shape.size() > shape.size()) throw Unsupported("normalized_shape longer than the input");
  std::vector<std::int64_t> dims;
  for (std::size_t d = shape.size() - norm_shape.size(); d < shape.size(); ++d)
    dims.push_back(static_cast<std::int64_t>(d));
  double n = static_cast<double>(reduced_count(shape, dims));
  double eps = c.num_arg("eps", 1e-5);
  TensorId in = c.use(x);
  ir::DType dt = c.t(in).dtype;
  std::vector<std::int64_t> keep = shape;
  for (std::int64_t d : dims) keep[d] = 1;
  auto stat = [&](std::size_t k, const char* name) {
    if (c.out_id(k) && c.tt(*c.out_id(k)).shape == keep) return c.def(k);
    return c.temp(name, keep, dt);
  };
  TensorId s = c.temp("sum", keep, dt);
  c.reduce(in, s, dims, Reduce::Sum);
  TensorId mean = stat(1, "mean");
  c.elementwise({s}, mean, mul(arg(0), num(1 / n)));
  TensorId xc = c.temp("centred", shape, dt);
  c.elementwise({in, mean}, xc, sub(arg(0), arg(1)));
  TensorId ss = c.temp("sqsum", keep, dt);
  c.reduce(xc, ss, dims, Reduce::Sum, un(ExprOp::Square, arg(0)));
  TensorId rstd = stat(2, "rstd");
  c.elementwise({ss}, rstd, un(ExprOp::Rsqrt, add(mul(arg(0), num(1 / n)), num(eps))));
  std::vector<TensorId> ins{xc, rstd};
  Expr y = mul(arg(0), arg(1));
  if (c.has("weight")) ins.push_back(c.use_arg("weight")), y = mul(y, arg(static_cast<int>(ins.size() - 1)));
  if (c.has("bias")) ins.push_back(c.use_arg("bias")), y = add(y, arg(static_cast<int>(ins.size() - 1)));
  c.elementwise(ins, c.def(0), y);
}

// Batch norm over channel dimension 1: eval mode uses the running statistics; training
// mode computes them over every other dimension and, when the trace records the in-place
// update of the running statistics (outputs 3 and 4), makes their new versions.
void batch_norm(Context& c, bool training) {
  std::int64_t x = c.trace_id("input");
  const auto shape = c.shape(x);
  if (shape.size() < 2) throw Unsupported("batch norm of a rank < 2 input");
  const std::int64_t C = shape[1];
  double eps = c.num_arg("eps", 1e-5);
  TensorId in = c.use(x);
  ir::DType dt = c.t(in).dtype;
  TensorId mean, invstd;
  std::vector<TensorId> ins{in};
  if (training) {
    std::vector<std::int64_t> dims;
    for (std::size_t d = 0; d < shape.size(); ++d)
      if (d != 1) dims.push_back(static_cast<std::int64_t>(d));
    double m = static_cast<double>(numel(shape) / C);
    auto stat = [&](std::size_t k, const char* name) {
      if (c.out_id(k) && c.tt(*c.out_id(k)).shape == std::vector<std::int64_t>{C}) return c.def(k);
      return c.temp(name, {C}, dt);
    };
    TensorId s = c.temp("sum", {C}, dt);
    c.reduce(in, s, dims, Reduce::Sum);
    mean = stat(1, "mean");
    c.elementwise({s}, mean, mul(arg(0), num(1 / m)));
    TensorId xc = c.temp("centred", shape, dt);
    c.channelwise({in, mean}, xc, sub(arg(0), arg(1)), 1);
    TensorId ss = c.temp("sqsum", {C}, dt);
    c.reduce(xc, ss, dims, Reduce::Sum, un(ExprOp::Square, arg(0)));
    invstd = stat(2, "invstd");
    c.elementwise({ss}, invstd, un(ExprOp::Rsqrt, add(mul(arg(0), num(1 / m)), num(eps))));
    ins = {xc, invstd};
    if (c.out_id(3) && c.out_id(4) && c.has("running_mean") && c.has("running_var")) {
      // (1 - momentum) * running + momentum * batch statistic, the variance unbiased.
      const double mom = c.num_arg("momentum", 0.1);
      auto blend = [&](double scale) {
        return add(mul(arg(0), num(1 - mom)), mul(arg(1), num(mom * scale)));
      };
      c.elementwise({c.use_arg("running_mean"), mean}, c.def(3), blend(1));
      c.elementwise({c.use_arg("running_var"), ss}, c.def(4), blend(1 / (m - 1)));
    }
  } else {
    if (!c.has("running_mean") || !c.has("running_var"))
      throw Unsupported("eval-mode batch norm without running statistics");
    mean = c.use_arg("running_mean");
    invstd = c.temp("invstd", {C}, dt);
    c.elementwise({c.use_arg("running_var")}, invstd, un(ExprOp::Rsqrt, add(arg(0), num(eps))));
    TensorId xc = c.temp("centred", shape, dt);
    c.channelwise({in, mean}, xc, sub(arg(0), arg(1)), 1);
    ins = {xc, invstd};
  }
  Expr y = mul(arg(0), arg(1));
  if (c.has("weight")) ins.push_back(c.use_arg("weight")), y = mul(y, arg(static_cast<int>(ins.size() - 1)));
  if (c.has("bias")) ins.push_back(c.use_arg("bias")), y = add(y, arg(static_cast<int>(ins.size() - 1)));
  c.channelwise(ins, c.def(0), y, 1);
}

// native_group_norm: statistics per (sample, group) over Cg channels x spatial positions.
void lower_group_norm(Context& c) {
  TensorId in = c.use_arg("input");
  const auto xs = c.t(in).shape;
  if (xs.size() < 2) throw Unsupported("group norm of a rank < 2 input");
  const std::int64_t N = xs[0], C = xs[1], G = c.int_arg("group", 1);
  if (G < 1 || C % G != 0) throw Unsupported("channels are not a multiple of groups");
  const std::int64_t Cg = C / G;
  const double m = static_cast<double>(numel(xs) / N / G);
  const double eps = c.num_arg("eps", 1e-5);
  ir::DType dt = c.t(in).dtype;
  // Index space over (n, g, c, spatial...): x[n, g*Cg+c, s..].
  auto space = [&](Space& s, std::vector<AffineExpr>& sx, ir::IndexPos& n, ir::IndexPos& g) {
    n = s.add("n", N);
    g = s.add("g", G);
    ir::IndexPos ci = s.add("c", Cg);
    sx = {ix(n), AffineExpr::make({AffineTerm{g, Cg}, AffineTerm{ci, 1}}, 0)};
    for (std::size_t d = 2; d < xs.size(); ++d) sx.push_back(ix(s.add(fmt::format("s{}", d), xs[d])));
  };
  auto stat = [&](std::size_t k, const char* name) {
    if (c.out_id(k) && c.tt(*c.out_id(k)).shape == std::vector<std::int64_t>{N, G}) return c.def(k);
    return c.temp(name, {N, G}, dt);
  };
  auto reduce_ng = [&](TensorId src, TensorId dst, Expr combine) {
    Space s;
    std::vector<AffineExpr> sx;
    ir::IndexPos n, g;
    space(s, sx, n, g);
    c.einsum({src}, dst, std::move(s), {sx}, {ix(n), ix(g)}, std::move(combine), Reduce::Sum);
  };
  auto per_element = [&](std::vector<TensorId> ins, TensorId dst, Expr combine) {
    // ins[0] has x's shape; the others are [N, G] statistics or [C] affine vectors.
    Space s;
    std::vector<AffineExpr> sx;
    ir::IndexPos n, g;
    space(s, sx, n, g);
    std::vector<std::vector<AffineExpr>> subs{sx};
    for (std::size_t k = 1; k < ins.size(); ++k) {
      if (c.t(ins[k]).shape.size() == 2) subs.push_back({ix(n), ix(g)});
      else subs.push_back({sx[1]});
    }
    c.einsum(std::move(ins), dst, std::move(s), std::move(subs), sx, std::move(combine), Reduce::None);
  };
  TensorId sum = c.temp("sum", {N, G}, dt);
  reduce_ng(in, sum, arg(0));
  TensorId mean = stat(1, "mean");
  c.elementwise({sum}, mean, mul(arg(0), num(1 / m)));
  TensorId xc = c.temp("centred", xs, dt);
  per_element({in, mean}, xc, sub(arg(0), arg(1)));
  TensorId ss = c.temp("sqsum", {N, G}, dt);
  reduce_ng(xc, ss, un(ExprOp::Square, arg(0)));
  TensorId rstd = stat(2, "rstd");
  c.elementwise({ss}, rstd, un(ExprOp::Rsqrt, add(mul(arg(0), num(1 / m)), num(eps))));
  std::vector<TensorId> ins{xc, rstd};
  Expr y = mul(arg(0), arg(1));
  if (c.has("weight")) ins.push_back(c.use_arg("weight")), y = mul(y, arg(static_cast<int>(ins.size() - 1)));
  if (c.has("bias")) ins.push_back(c.use_arg("bias")), y = add(y, arg(static_cast<int>(ins.size() - 1)));
  per_element(ins, c.def(0), y);
}

}  // namespace

void register_norm_ops(const Register& reg) {
  // Norms.
  reg("aten::native_layer_norm.default", lower_layer_norm);
  reg("aten::_native_batch_norm_legit_no_training.default", [](Context& c) { batch_norm(c, false); });
  reg("aten::_native_batch_norm_legit.default",
      [](Context& c) { batch_norm(c, c.bool_arg("training", true)); });
  reg("aten::_native_batch_norm_legit.no_stats", [](Context& c) { batch_norm(c, true); });
  reg("aten::native_batch_norm.default",
      [](Context& c) { batch_norm(c, c.bool_arg("training", true)); });
  reg("aten::native_group_norm.default", lower_group_norm);
}

}  // namespace solar::lower::detail
