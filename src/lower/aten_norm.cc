// The aten table's normalization layers: layer norm, batch norm (eval and training, with the
// running-statistics update) and group norm, and their gradients.
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

// ---------------------------------------------------------------- gradients

// x̂ = (x - mean) * rstd over `shape` (stats broadcast from the right or kept as size 1).
TensorId normalized(Context& c, TensorId x, TensorId mean, TensorId rstd) {
  TensorId xh = c.temp("xhat", c.t(x).shape, c.t(x).dtype);
  bcast(c, {x, mean, rstd}, xh, c.t(x).shape, std::vector<bool>(c.t(x).shape.size(), false),
        mul(sub(arg(0), arg(1)), arg(2)), Reduce::None);
  return xh;
}

// native_layer_norm_backward: with gw = g * weight over the normalized dims (N elements),
//   dx = rstd / N * (N gw - sum(gw) - x̂ sum(gw x̂)),  dweight = sum_batch g x̂,  dbias = sum_batch g.
void lower_layer_norm_backward(Context& c) {
  TensorId g = c.use_arg("grad_out"), x = c.use_arg("input");
  const Shape shape = c.t(x).shape;
  const Shape norm_shape = c.ints("normalized_shape");
  if (norm_shape.size() > shape.size() || c.t(g).shape != shape)
    throw Unsupported("layer norm gradient shapes do not match");
  const std::size_t axis = shape.size() - norm_shape.size();
  Shape keep = shape;
  for (std::size_t d = axis; d < shape.size(); ++d) keep[d] = 1;
  const double n = static_cast<double>(numel(norm_shape));
  ir::DType dt = c.t(x).dtype;
  TensorId mean = reshaped(c, c.use_arg("mean"), keep, "mean");
  TensorId rstd = reshaped(c, c.use_arg("rstd"), keep, "rstd");
  TensorId xh = wants(c, 0) || wants(c, 1) ? normalized(c, x, mean, rstd) : TensorId{};
  std::vector<bool> inner(shape.size(), false), outer(shape.size(), false);
  for (std::size_t d = 0; d < shape.size(); ++d) (d >= axis ? inner : outer)[d] = true;
  if (wants(c, 0)) {
    TensorId gw = g;
    if (c.has("weight")) {
      gw = c.temp("gw", shape, dt);
      c.elementwise({g, c.use_arg("weight")}, gw, mul(arg(0), arg(1)));
    }
    TensorId s1 = c.temp("sum_g", keep, dt), s2 = c.temp("sum_gx", keep, dt);
    bcast(c, {gw}, s1, shape, inner, arg(0), Reduce::Sum);
    bcast(c, {gw, xh}, s2, shape, inner, mul(arg(0), arg(1)), Reduce::Sum);
    c.elementwise(
        {gw, s1, xh, s2, rstd}, c.def(0),
        mul(mul(arg(4), num(1 / n)), sub(sub(mul(num(n), arg(0)), arg(1)), mul(arg(2), arg(3)))));
  }
  if (wants(c, 1)) bcast(c, {g, xh}, c.def(1), shape, outer, mul(arg(0), arg(1)), Reduce::Sum);
  if (wants(c, 2)) bcast(c, {g}, c.def(2), shape, outer, arg(0), Reduce::Sum);
}

// native_batch_norm_backward over channel dimension 1 (M = elements per channel).
//   train: dx = w invstd / M (M g - sum(g) - x̂ sum(g x̂)) with the saved batch statistics;
//   eval:  dx = g w invstd, invstd = rsqrt(running_var + eps);
//   dweight = sum(g x̂), dbias = sum(g), per channel.
void lower_batch_norm_backward(Context& c) {
  TensorId g = c.use_arg("grad_out"), x = c.use_arg("input");
  const Shape shape = c.t(x).shape;
  if (shape.size() < 2 || c.t(g).shape != shape)
    throw Unsupported("batch norm gradient of a rank < 2 input");
  const std::int64_t C = shape[1];
  const double m = static_cast<double>(numel(shape) / C);
  const bool train = c.bool_arg("train", true);
  ir::DType dt = c.t(x).dtype;
  TensorId mean, invstd;
  if (train) {
    if (!c.has("save_mean") || !c.has("save_invstd"))
      throw Unsupported("training batch norm without saved statistics");
    mean = c.use_arg("save_mean");
    invstd = c.use_arg("save_invstd");
  } else {
    if (!c.has("running_mean") || !c.has("running_var"))
      throw Unsupported("eval batch norm without running statistics");
    mean = c.use_arg("running_mean");
    invstd = c.temp("invstd", {C}, dt);
    c.elementwise({c.use_arg("running_var")}, invstd,
                  un(ExprOp::Rsqrt, add(arg(0), num(c.num_arg("eps", 1e-5)))));
  }
  if (c.t(mean).shape != Shape{C} || c.t(invstd).shape != Shape{C})
    throw Unsupported("batch norm statistics are not per-channel vectors");
  TensorId xh;
  if (wants(c, 1) || (train && wants(c, 0))) {
    xh = c.temp("xhat", shape, dt);
    c.channelwise({x, mean, invstd}, xh, mul(sub(arg(0), arg(1)), arg(2)), 1);
  }
  const auto red = all_but(shape.size(), 1);
  const bool need_sums = train && wants(c, 0);
  TensorId s1 = wants(c, 2) ? c.def(2) : need_sums ? c.temp("sum_g", {C}, dt) : TensorId{};
  TensorId s2 = wants(c, 1) ? c.def(1) : need_sums ? c.temp("sum_gx", {C}, dt) : TensorId{};
  if (s1.valid()) bcast(c, {g}, s1, shape, red, arg(0), Reduce::Sum);
  if (s2.valid()) bcast(c, {g, xh}, s2, shape, red, mul(arg(0), arg(1)), Reduce::Sum);
  if (!wants(c, 0)) return;
  std::vector<TensorId> ins{g, invstd};
  Expr scale = arg(1);
  if (c.has("weight")) {
    ins.push_back(c.use_arg("weight"));
    scale = mul(scale, arg(2));
  }
  if (!train) return c.channelwise(ins, c.def(0), mul(arg(0), scale), 1);
  const int k = static_cast<int>(ins.size());
  ins.insert(ins.end(), {s1, xh, s2});
  c.channelwise(ins, c.def(0),
                mul(mul(scale, num(1 / m)),
                    sub(sub(mul(num(m), arg(0)), arg(k)), mul(arg(k + 1), arg(k + 2)))),
                1);
}

// native_group_norm_backward: per (sample, group) statistics over Cg channels x HxW; the
// einsums run over (n, g, c, spatial...) with x[n, g*Cg + c, ...] as the forward's.
void lower_group_norm_backward(Context& c) {
  TensorId g = c.use_arg("grad_out"), x = c.use_arg("input");
  const Shape xs = c.t(x).shape;
  if (xs.size() < 2 || c.t(g).shape != xs)
    throw Unsupported("group norm gradient of a rank < 2 input");
  const std::int64_t N = xs[0], C = xs[1], G = c.int_arg("group", 1);
  if (G < 1 || C % G != 0) throw Unsupported("channels are not a multiple of groups");
  const std::int64_t Cg = C / G;
  const double m = static_cast<double>(numel(xs) / N / G);
  ir::DType dt = c.t(x).dtype;
  TensorId mean = c.use_arg("mean"), rstd = c.use_arg("rstd");
  if (c.t(mean).shape != Shape{N, G} || c.t(rstd).shape != Shape{N, G})
    throw Unsupported("group norm statistics are not [N, group]");
  // kind per input: 0 full tensor, 1 [N, G] statistic, 2 [C] vector. out_kind: 0 full,
  // 1 [N, G], 3 [G, Cg] (a per-channel vector, viewed as [C] afterwards).
  auto emit = [&](std::vector<TensorId> ins, TensorId out, int out_kind, Expr combine, Reduce r) {
    Space s;
    ir::IndexPos n = s.add("n", N), gi = s.add("g", G), ci = s.add("c", Cg);
    std::vector<AffineExpr> sx{ix(n), AffineExpr::make({AffineTerm{gi, Cg}, AffineTerm{ci, 1}}, 0)};
    for (std::size_t d = 2; d < xs.size(); ++d)
      sx.push_back(ix(s.add(fmt::format("s{}", d), xs[d])));
    std::vector<std::vector<AffineExpr>> subs;
    for (TensorId in : ins) {
      const Shape& sh = c.t(in).shape;
      if (sh == xs)
        subs.push_back(sx);
      else if (sh == Shape{N, G})
        subs.push_back({ix(n), ix(gi)});
      else if (sh == Shape{C})
        subs.push_back({sx[1]});
      else
        throw Unsupported("group norm operand of an unexpected shape");
    }
    std::vector<AffineExpr> so = out_kind == 0   ? sx
                                 : out_kind == 1 ? std::vector<AffineExpr>{ix(n), ix(gi)}
                                                 : std::vector<AffineExpr>{ix(gi), ix(ci)};
    c.einsum(std::move(ins), out, std::move(s), std::move(subs), std::move(so), std::move(combine),
             r);
  };
  TensorId xh;
  if (wants(c, 0) || wants(c, 1)) {
    xh = c.temp("xhat", xs, dt);
    emit({x, mean, rstd}, xh, 0, mul(sub(arg(0), arg(1)), arg(2)), Reduce::None);
  }
  if (wants(c, 0)) {
    TensorId gw = g;
    if (c.has("weight")) {
      gw = c.temp("gw", xs, dt);
      emit({g, c.use_arg("weight")}, gw, 0, mul(arg(0), arg(1)), Reduce::None);
    }
    TensorId s1 = c.temp("sum_g", {N, G}, dt), s2 = c.temp("sum_gx", {N, G}, dt);
    emit({gw}, s1, 1, arg(0), Reduce::Sum);
    emit({gw, xh}, s2, 1, mul(arg(0), arg(1)), Reduce::Sum);
    emit({gw, s1, xh, s2, rstd}, c.def(0), 0,
         mul(mul(arg(4), num(1 / m)), sub(sub(mul(num(m), arg(0)), arg(1)), mul(arg(2), arg(3)))),
         Reduce::None);
  }
  for (std::size_t k : {std::size_t{1}, std::size_t{2}}) {
    if (!wants(c, k)) continue;
    TensorId out = c.def(k);
    TensorId gc = c.temp(k == 1 ? "dweight" : "dbias", {G, Cg}, c.t(out).dtype);
    if (k == 1)
      emit({g, xh}, gc, 3, mul(arg(0), arg(1)), Reduce::Sum);
    else
      emit({g}, gc, 3, arg(0), Reduce::Sum);
    c.move(MoveKind::View, {gc}, out);
  }
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
  reg("aten::native_layer_norm_backward.default", lower_layer_norm_backward);
  reg("aten::native_batch_norm_backward.default", lower_batch_norm_backward);
  reg("aten::native_group_norm_backward.default", lower_group_norm_backward);
}

}  // namespace solar::lower::detail
