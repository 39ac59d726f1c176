// The aten table's reductions: sum/mean/max/min/prod, arg-reductions, var/std, logsumexp,
// vector norms, softmax, log_softmax and their gradients, any/all/count_nonzero, aminmax and
// cdist.
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

std::vector<std::int64_t> reduce_dims(Context& c, const char* name, std::size_t rank) {
  std::vector<std::int64_t> dims = c.ints(name);
  if (dims.empty()) {  // None or []: every dimension
    for (std::size_t d = 0; d < rank; ++d) dims.push_back(static_cast<std::int64_t>(d));
  }
  for (std::int64_t& d : dims) d = norm_dim(d, rank);
  return dims;
}

Fn reduction(Reduce r, bool mean = false) {
  return [=](Context& c) {
    std::int64_t x = c.trace_id("self");
    auto dims = reduce_dims(c, "dim", c.shape(x).size());
    TensorId in = c.use(x);
    TensorId out = c.def(0);
    if (!mean) return c.reduce(in, out, dims, r);
    TensorId s = c.temp("sum", c.t(out).shape, c.t(out).dtype);
    c.reduce(in, s, dims, Reduce::Sum);
    c.elementwise({s}, out, mul(arg(0), num(1.0 / static_cast<double>(reduced_count(c.shape(x), dims)))));
  };
}

// max.dim / min.dim: values (an einsum) and indices (an arg-reduction).
Fn reduce_with_indices(Reduce r) {
  return [=](Context& c) {
    std::int64_t x = c.trace_id("self");
    std::vector<std::int64_t> dims{norm_dim(c.int_arg("dim", 0), c.shape(x).size())};
    TensorId in = c.use(x);
    c.reduce(in, c.def(0), dims, r);
    if (c.out_id(1)) arg_reduce(c, in, c.def(1), r == Reduce::Max ? "argmax" : "argmin", dims[0]);
  };
}

Fn arg_reduction(const char* what) {
  return [=](Context& c) {
    std::int64_t x = c.trace_id("self");
    std::optional<std::int64_t> axis;
    if (c.has("dim")) axis = norm_dim(c.int_arg("dim", 0), c.shape(x).size());
    arg_reduce(c, c.use(x), c.def(0), what, axis);
  };
}

// var/std (correction overloads): mean, centred square sum, divide by N - correction;
// var_mean/std_mean also return the mean.
Fn variance(bool is_std, bool with_mean = false) {
  return [=](Context& c) {
    std::int64_t x = c.trace_id("self");
    const auto& shape = c.shape(x);
    auto dims = reduce_dims(c, "dim", shape.size());
    double correction = c.num_arg("correction", 1);
    if (c.has("unbiased")) correction = c.bool_arg("unbiased", true) ? 1 : 0;
    double n = static_cast<double>(reduced_count(shape, dims));
    TensorId in = c.use(x);
    ir::DType dt = c.t(in).dtype;
    std::vector<std::int64_t> keep = shape;
    for (std::int64_t d : dims) keep[d] = 1;
    TensorId s = c.temp("sum", keep, dt), m = c.temp("mean", keep, dt);
    c.reduce(in, s, dims, Reduce::Sum);
    c.elementwise({s}, m, mul(arg(0), num(1 / n)));
    TensorId xc = c.temp("centred", shape, dt);
    c.elementwise({in, m}, xc, sub(arg(0), arg(1)));
    TensorId out = c.def(0);
    TensorId ss = c.temp("sqsum", c.t(out).shape, dt);
    c.reduce(xc, ss, dims, Reduce::Sum, un(ExprOp::Square, arg(0)));
    Expr v = mul(arg(0), num(1 / std::max(n - correction, 0.0)));
    c.elementwise({ss}, out, is_std ? un(ExprOp::Sqrt, v) : v);
    if (with_mean && c.out_id(1)) {  // var_mean / std_mean: (var or std, mean)
      TensorId mo = c.def(1);
      c.move(MoveKind::View, {m}, mo);
    }
  };
}

// logsumexp: max-reduce, exp(x - max), sum-reduce, log(sum) + max.
void lower_logsumexp(Context& c) {
  std::int64_t x = c.trace_id("self");
  const auto shape = c.shape(x);
  auto dims = reduce_dims(c, "dim", shape.size());
  TensorId in = c.use(x);
  TensorId out = c.def(0);
  ir::DType dt = c.t(out).dtype;
  std::vector<std::int64_t> keep = shape;
  for (std::int64_t d : dims) keep[d] = 1;
  TensorId m = c.temp("max", keep, dt);
  c.reduce(in, m, dims, Reduce::Max);
  TensorId e = c.temp("exp", shape, dt);
  c.elementwise({in, m}, e, un(ExprOp::Exp, sub(arg(0), arg(1))));
  TensorId s = c.temp("sum", keep, dt);
  c.reduce(e, s, dims, Reduce::Sum);
  // out has the reduced shape (keepdim or not): log(sum) + max over the same elements
  TensorId mo = m, so = s;
  if (c.t(out).shape != keep) {
    mo = c.temp("max_view", c.t(out).shape, dt);
    c.move(MoveKind::View, {m}, mo);
    so = c.temp("sum_view", c.t(out).shape, dt);
    c.move(MoveKind::View, {s}, so);
  }
  c.elementwise({so, mo}, out, add(un(ExprOp::Log, arg(0)), arg(1)));
}

// Vector p-norms (linalg_vector_norm, norm.ScalarOpt_dim): p = 2, 1, inf, -inf, or general.
void lower_vector_norm(Context& c, const char* ord_arg) {
  std::int64_t x = c.trace_id("self");
  auto dims = reduce_dims(c, "dim", c.shape(x).size());
  double p = c.num_arg(ord_arg, 2);
  TensorId in = c.use(x);
  TensorId out = c.def(0);
  if (std::isinf(p)) return c.reduce(in, out, dims, p > 0 ? Reduce::Max : Reduce::Min, un(ExprOp::Abs, arg(0)));
  if (p == 0) throw Unsupported("the 0-norm (a count of non-zeros)");
  if (p == 1) return c.reduce(in, out, dims, Reduce::Sum, un(ExprOp::Abs, arg(0)));
  TensorId s = c.temp("sum", c.t(out).shape, c.t(out).dtype);
  if (p == 2) {
    c.reduce(in, s, dims, Reduce::Sum, un(ExprOp::Square, arg(0)));
    return c.elementwise({s}, out, un(ExprOp::Sqrt, arg(0)));
  }
  c.reduce(in, s, dims, Reduce::Sum, fn(ExprOp::Pow, {un(ExprOp::Abs, arg(0)), num(p)}));
  c.elementwise({s}, out, fn(ExprOp::Pow, {arg(0), num(1 / p)}));
}

Fn softmax_op(Softmax kind) {
  return [=](Context& c) {
    std::int64_t x = c.trace_id("self");
    std::int64_t dim = norm_dim(c.int_arg("dim", -1), c.shape(x).size());
    softmax(c, c.use(x), c.def(0), dim, kind);
  };
}

std::int64_t dim_arg(Context& c, const char* tensor, const char* name, std::int64_t dflt) {
  return norm_dim(c.int_arg(name, dflt), c.shape(c.trace_id(tensor)).size());
}

// _softmax_backward_data: y (g - sum(g y)); _log_softmax_backward_data: g - exp(y) sum(g).
Fn softmax_backward(bool log) {
  return [=](Context& c) {
    TensorId g = c.use_arg("grad_output"), y = c.use_arg("output");
    const Shape shape = c.t(y).shape;
    const std::int64_t dim = dim_arg(c, "output", "dim", -1);
    if (c.t(g).shape != shape)
      throw Unsupported("softmax gradient of another shape than the output");
    TensorId out = c.def(0);
    if (shape.empty()) throw Unsupported("softmax backward of a scalar");
    Shape keep = shape;
    keep[dim] = 1;
    std::vector<bool> red(shape.size(), false);
    red[dim] = true;
    TensorId s = c.temp("sum", keep, c.t(out).dtype);
    if (log) {
      bcast(c, {g}, s, shape, red, arg(0), Reduce::Sum);
      c.elementwise({g, y, s}, out, sub(arg(0), mul(un(ExprOp::Exp, arg(1)), arg(2))));
    } else {
      bcast(c, {g, y}, s, shape, red, mul(arg(0), arg(1)), Reduce::Sum);
      c.elementwise({g, y, s}, out, mul(arg(1), sub(arg(0), arg(2))));
    }
  };
}

// _cdist_forward(x1 [.., P, M], x2 [.., R, M], p): out[.., i, j] = (sum_k |x1 - x2|^p)^(1/p)
// (p = 2: square and root; 1: abs; inf: max).
void lower_cdist(Context& c) {
  TensorId a = c.use_arg("x1"), b = c.use_arg("x2");
  TensorId out = c.def(0);
  const auto as = c.t(a).shape, bs = c.t(b).shape, os = c.t(out).shape;
  if (as.size() < 2 || bs.size() != as.size()) throw Unsupported("cdist operand ranks");
  const double p = c.num_arg("p", 2);
  const std::size_t r = as.size();
  Space s;
  std::vector<AffineExpr> sa, sb, so;
  for (std::size_t d = 0; d + 2 < r; ++d) {
    if (as[d] != bs[d]) throw Unsupported("cdist with broadcast batch dimensions");
    AffineExpr i = ix(s.add(fmt::format("b{}", d), as[d]));
    sa.push_back(i), sb.push_back(i), so.push_back(i);
  }
  AffineExpr i = ix(s.add("i", as[r - 2])), j = ix(s.add("j", bs[r - 2])), k = ix(s.add("k", as[r - 1]));
  sa.insert(sa.end(), {i, k});
  sb.insert(sb.end(), {j, k});
  so.insert(so.end(), {i, j});
  Expr diff = un(ExprOp::Abs, sub(arg(0), arg(1)));
  if (std::isinf(p)) return c.einsum({a, b}, out, std::move(s), {sa, sb}, so, diff, Reduce::Max);
  if (p == 0) throw Unsupported("cdist with p = 0");
  TensorId sum = p == 1 ? out : c.temp("sum", os, c.t(out).dtype);
  Expr term = p == 1 ? diff : p == 2 ? un(ExprOp::Square, diff) : fn(ExprOp::Pow, {diff, num(p)});
  c.einsum({a, b}, sum, std::move(s), {sa, sb}, so, term, Reduce::Sum);
  if (p == 2) c.elementwise({sum}, out, un(ExprOp::Sqrt, arg(0)));
  else if (p != 1) c.elementwise({sum}, out, fn(ExprOp::Pow, {arg(0), num(1 / p)}));
}

}  // namespace

std::int64_t reduced_count(const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= shape.empty() ? 1 : shape[d];
  return n;
}

void register_reduction_ops(const Register& reg) {
  // Reductions.
  reg("aten::sum.dim_IntList", reduction(Reduce::Sum));
  reg("aten::sum.default", reduction(Reduce::Sum));
  reg("aten::mean.dim", reduction(Reduce::Sum, true));
  reg("aten::mean.default", reduction(Reduce::Sum, true));
  reg("aten::amax.default", reduction(Reduce::Max));
  reg("aten::amin.default", reduction(Reduce::Min));
  reg("aten::max.default", reduction(Reduce::Max));
  reg("aten::min.default", reduction(Reduce::Min));
  reg("aten::prod.default", reduction(Reduce::Prod));
  reg("aten::prod.dim_int", reduction(Reduce::Prod));
  reg("aten::max.dim", reduce_with_indices(Reduce::Max));
  reg("aten::min.dim", reduce_with_indices(Reduce::Min));
  reg("aten::argmax.default", arg_reduction("argmax"));
  reg("aten::argmin.default", arg_reduction("argmin"));
  reg("aten::var.correction", variance(false));
  reg("aten::var.dim", variance(false));
  reg("aten::std.correction", variance(true));
  reg("aten::std.dim", variance(true));
  reg("aten::logsumexp.default", lower_logsumexp);
  reg("aten::linalg_vector_norm.default", [](Context& c) { lower_vector_norm(c, "ord"); });
  reg("aten::norm.ScalarOpt_dim", [](Context& c) { lower_vector_norm(c, "p"); });
  reg("aten::norm.Scalar", [](Context& c) { lower_vector_norm(c, "p"); });
  reg("aten::_softmax.default", softmax_op(Softmax::Plain));
  reg("aten::_log_softmax.default", softmax_op(Softmax::Log));
  reg("aten::softmax.int", softmax_op(Softmax::Plain));
  reg("aten::log_softmax.int", softmax_op(Softmax::Log));
  reg("aten::_safe_softmax.default", [](Context& c) {
    std::int64_t x = c.trace_id("self");
    softmax(c, c.use(x), c.def(0), norm_dim(c.int_arg("dim", -1), c.shape(x).size()),
            Softmax::Safe);
  });
  reg("aten::_softmax_backward_data.default", softmax_backward(false));
  reg("aten::_log_softmax_backward_data.default", softmax_backward(true));
  reg("aten::aminmax.default", [](Context& c) {
    std::int64_t x = c.trace_id("self");
    TensorId in = c.use(x);
    std::vector<std::int64_t> dims;
    if (c.has("dim")) dims = {norm_dim(c.int_arg("dim", 0), c.shape(x).size())};
    else dims = reduce_dims(c, "__all__", c.shape(x).size());
    c.reduce(in, c.def(0), dims, Reduce::Min);
    c.reduce(in, c.def(1), dims, Reduce::Max);
  });
  // any / all / count_nonzero: reductions of x != 0.
  for (auto [name, r] : std::initializer_list<std::pair<std::string_view, Reduce>>{
           {"aten::any.default", Reduce::Any}, {"aten::any.dim", Reduce::Any}, {"aten::any.dims", Reduce::Any},
           {"aten::all.default", Reduce::All}, {"aten::all.dim", Reduce::All}, {"aten::all.dims", Reduce::All},
           {"aten::count_nonzero.default", Reduce::Sum}, {"aten::count_nonzero.dim_IntList", Reduce::Sum}})
    reg(name, [r = r](Context& c) {  // init-capture: clang 14 captures no structured binding
      std::int64_t x = c.trace_id("self");
      auto dims = reduce_dims(c, "dim", c.shape(x).size());
      c.reduce(c.use(x), c.def(0), dims, r, fn(ExprOp::Ne, {arg(0), num(0)}));
    });
  reg("aten::var_mean.correction", variance(false, true));
  reg("aten::std_mean.correction", variance(true, true));
  reg("aten::var_mean.dim", variance(false, true));
  reg("aten::std_mean.dim", variance(true, true));
  reg("aten::_cdist_forward.default", lower_cdist);
}

}  // namespace solar::lower::detail
