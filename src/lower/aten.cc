// The aten dialect table: one entry per aten op (name with overload), a small function per
// family. Composite ops are decomposed into primitives (docs/ir-text.md).
#include "solar/lower/aten.h"

#include <cmath>
#include <functional>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

#include "context.h"
#include "families.h"
#include "solar/ir/verify.h"
#include "solar/util/errors.h"

namespace solar::lower {
namespace {

using namespace detail;
using ir::AffineExpr;
using ir::AffineTerm;
using ir::Expr;
using ir::ExprOp;
using ir::MoveKind;
using ir::Reduce;
using ir::TensorId;


// ---------------------------------------------------------------- elementwise

// self OP (alpha * other): add, sub, mul, div and comparisons, Tensor and Scalar overloads.
Fn binary(ExprOp op, bool has_alpha = false, bool reversed = false) {
  return [=](Context& c) {
    std::vector<TensorId> in;
    Expr x = operand(c, "self", in);
    Expr y = operand(c, "other", in);
    if (has_alpha) {
      double alpha = c.num_arg("alpha", 1);
      if (reversed) x = scaled(alpha, x); else y = scaled(alpha, y);
    }
    if (c.has("rounding_mode")) throw Unsupported("division with a rounding mode");
    if (in.empty()) throw Unsupported("no tensor operand");
    c.elementwise(in, c.def(0), reversed ? fn(op, {y, x}) : fn(op, {x, y}));
  };
}

Expr gelu(Context& c, Expr x) {
  const auto& approx = c.a("approximate");
  if (approx.is_string() && approx.get<std::string>() == "tanh") {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    Expr inner = mul(num(std::sqrt(2.0 / M_PI)),
                     add(x, mul(num(0.044715), mul(x, un(ExprOp::Square, x)))));
    return mul(mul(num(0.5), x), add(num(1), un(ExprOp::Tanh, inner)));
  }
  // 0.5 x (1 + erf(x / sqrt 2))
  return mul(mul(num(0.5), x), add(num(1), un(ExprOp::Erf, mul(x, num(M_SQRT1_2)))));
}

Expr clamp(Context& c, Expr x, const char* lo, const char* hi, std::vector<TensorId>& in) {
  if (c.has(hi)) x = fn(ExprOp::Min, {x, operand(c, hi, in)});
  if (c.has(lo)) x = fn(ExprOp::Max, {x, operand(c, lo, in)});
  return x;
}

void lower_clamp(Context& c, const char* lo, const char* hi) {
  std::vector<TensorId> in;
  Expr x = operand(c, "self", in);
  Expr y = clamp(c, x, lo, hi, in);
  c.elementwise(in, c.def(0), y);
}

void lower_pow(Context& c) {
  std::vector<TensorId> in;
  Expr x = operand(c, "self", in);
  const auto& e = c.a("exponent");
  Expr y;
  if (e.is_number() && e.get<double>() == 2) y = un(ExprOp::Square, x);
  else if (e.is_number() && e.get<double>() == 0.5) y = un(ExprOp::Sqrt, x);
  else if (e.is_number() && e.get<double>() == 1) y = x;
  else y = fn(ExprOp::Pow, {x, operand(c, "exponent", in)});
  c.elementwise(in, c.def(0), y);
}

void lower_where(Context& c) {
  std::vector<TensorId> in;
  Expr cond = operand(c, "condition", in);
  Expr x = operand(c, "self", in);
  Expr y = operand(c, "other", in);
  c.elementwise(in, c.def(0), fn(ExprOp::Select, {cond, x, y}));
}

void lower_masked_fill(Context& c) {
  std::vector<TensorId> in;
  Expr x = operand(c, "self", in);
  Expr m = operand(c, "mask", in);
  Expr v = operand(c, "value", in);
  c.elementwise(in, c.def(0), fn(ExprOp::Select, {m, v, x}));
}

void lower_leaky_relu(Context& c) {
  std::vector<TensorId> in;
  Expr x = operand(c, "self", in);
  double slope = c.num_arg("negative_slope", 0.01);
  c.elementwise(in, c.def(0),
                fn(ExprOp::Select, {fn(ExprOp::Gt, {x, num(0)}), x, mul(num(slope), x)}));
}

// A factory op (zeros, ones, full, fill_): writes a constant, reads nothing.
Fn fill(std::optional<double> value, const char* value_arg = nullptr) {
  return [=](Context& c) {
    double v = value ? *value : c.num_arg(value_arg, 0);
    TensorId out = c.def(0);
    c.elementwise({}, out, num(v));
  };
}

Expr softplus(Expr x, double beta, double threshold) {
  // log(1 + exp(beta x)) / beta, linear above the threshold (as torch)
  Expr bx = beta == 1 ? x : mul(num(beta), x);
  Expr soft = un(ExprOp::Log, add(num(1), un(ExprOp::Exp, bx)));
  if (beta != 1) soft = mul(soft, num(1 / beta));
  return fn(ExprOp::Select, {fn(ExprOp::Gt, {bx, num(threshold)}), x, soft});
}

Expr hardsigmoid(Expr x) {  // clamp(x + 3, 0, 6) / 6
  return mul(fn(ExprOp::Max, {fn(ExprOp::Min, {add(x, num(3)), num(6)}), num(0)}), num(1.0 / 6));
}

// ---------------------------------------------------------------- reductions

std::vector<std::int64_t> reduce_dims(Context& c, const char* name, std::size_t rank) {
  std::vector<std::int64_t> dims = c.ints(name);
  if (dims.empty()) {  // None or []: every dimension
    for (std::size_t d = 0; d < rank; ++d) dims.push_back(static_cast<std::int64_t>(d));
  }
  for (std::int64_t& d : dims) d = norm_dim(d, rank);
  return dims;
}

std::int64_t reduced_count(const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= shape.empty() ? 1 : shape[d];
  return n;
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

// An argmax/argmin over one dimension (or all, without `axis`): not an einsum; compares
// every element once.
void arg_reduce(Context& c, TensorId in, TensorId out, const char* what,
                std::optional<std::int64_t> axis = std::nullopt, ir::Attrs attrs = {}) {
  const ir::Tensor& t = c.t(in);
  std::int64_t n = numel(t.shape);
  ir::OpaqueOp o;
  o.function = what;
  o.attrs = std::move(attrs);  // pool_argmax: its windows, so the executor can run it
  o.vector_flops = Count(n);
  o.special_ops = Count(0);
  o.bytes = t.size_bytes() + c.t(out).size_bytes();
  o.assumption = "one compare per input element; reads the input once, writes the indices once";
  if (axis) o.attrs["axis"] = *axis;
  c.opaque({in}, {out}, std::move(o));
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

// ---------------------------------------------------------------- softmax

void softmax_into(Context& c, TensorId in, TensorId out, std::int64_t dim, bool log,
                  const std::vector<ir::AffineConstraint>& mask = {}) {
  std::vector<std::int64_t> shape = c.t(in).shape;
  ir::DType dt = c.t(out).dtype;
  std::vector<std::int64_t> keep = shape;
  if (!keep.empty()) keep[dim] = 1;
  TensorId m = c.temp("max", keep, dt);
  c.reduce(in, m, {dim}, Reduce::Max, arg(0), mask);
  TensorId e = c.temp("exp", shape, dt);
  c.elementwise({in, m}, e, un(ExprOp::Exp, sub(arg(0), arg(1))), mask);
  TensorId s = c.temp("sum", keep, dt);
  c.reduce(e, s, {dim}, Reduce::Sum, arg(0), mask);
  if (log)
    c.elementwise({in, m, s}, out, sub(sub(arg(0), arg(1)), un(ExprOp::Log, arg(2))), mask);
  else
    c.elementwise({e, s}, out, fn(ExprOp::Div, {arg(0), arg(1)}), mask);
}

Fn softmax(bool log) {
  return [=](Context& c) {
    std::int64_t x = c.trace_id("self");
    std::int64_t dim = norm_dim(c.int_arg("dim", -1), c.shape(x).size());
    softmax_into(c, c.use(x), c.def(0), dim, log);
  };
}

// ---------------------------------------------------------------- norms

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

// ---------------------------------------------------------------- contractions

// out = a @ b with numpy matmul semantics: 1-D operands, broadcast batch dimensions.
void matmul_into(Context& c, TensorId a, TensorId b, TensorId out) {
  const auto as = c.t(a).shape, bs = c.t(b).shape, os = c.t(out).shape;
  if (as.empty() || bs.empty()) throw Unsupported("matmul of a scalar");
  const bool has_m = as.size() >= 2, has_n = bs.size() >= 2;
  const std::int64_t K = as.back();
  if ((has_n ? bs[bs.size() - 2] : bs[0]) != K)
    throw Unsupported("matmul operands disagree on the contracted extent");
  const std::size_t nb = os.size() - has_m - has_n;
  Space s;
  std::vector<AffineExpr> batch;
  for (std::size_t d = 0; d < nb; ++d) batch.push_back(ix(s.add(fmt::format("b{}", d), os[d])));
  auto batch_sub = [&](const std::vector<std::int64_t>& sh, std::size_t nmat) {
    std::vector<AffineExpr> sub;
    std::size_t k = sh.size() - nmat;
    if (k > nb) throw Unsupported("matmul operand has more batch dimensions than the output");
    for (std::size_t d = 0; d < k; ++d) {
      std::size_t od = d + nb - k;
      if (sh[d] == os[od]) sub.push_back(batch[od]);
      else if (sh[d] == 1) sub.push_back(zero());
      else throw Unsupported("matmul batch dimensions do not broadcast");
    }
    return sub;
  };
  std::vector<AffineExpr> sa = batch_sub(as, has_m ? 2 : 1), sb = batch_sub(bs, has_n ? 2 : 1);
  std::vector<AffineExpr> so = batch;
  if (has_m) {
    AffineExpr m = ix(s.add("m", as[as.size() - 2]));
    sa.push_back(m);
    so.push_back(m);
  }
  AffineExpr k = ix(s.add("k", K));
  sa.push_back(k);
  sb.push_back(k);
  if (has_n) {
    AffineExpr n = ix(s.add("n", bs.back()));
    sb.push_back(n);
    so.push_back(n);
  }
  c.einsum({a, b}, out, std::move(s), {sa, sb}, so, mul(arg(0), arg(1)), Reduce::Sum);
}

Fn matmul(const char* a, const char* b) {
  return [=](Context& c) { matmul_into(c, c.use_arg(a), c.use_arg(b), c.def(0)); };
}

// beta * self + alpha * (a @ b): addmm, baddbmm, addmv.
Fn add_matmul(const char* a, const char* b) {
  return [=](Context& c) {
    TensorId out = c.def(0);
    double alpha = c.num_arg("alpha", 1), beta = c.num_arg("beta", 1);
    TensorId prod = c.temp("mm", c.t(out).shape, c.t(out).dtype);
    matmul_into(c, c.use_arg(a), c.use_arg(b), prod);
    if (beta == 0) return c.elementwise({prod}, out, scaled(alpha, arg(0)));
    c.elementwise({c.use_arg("self"), prod}, out, add(scaled(beta, arg(0)), scaled(alpha, arg(1))));
  };
}

void lower_linear(Context& c) {
  TensorId x = c.use_arg("input"), w = c.use_arg("weight");
  TensorId out = c.def(0);
  const auto xs = c.t(x).shape, ws = c.t(w).shape;
  if (ws.size() != 2 || xs.empty()) throw Unsupported("linear with a weight of rank != 2");
  TensorId y = c.has("bias") ? c.temp("mm", c.t(out).shape, c.t(out).dtype) : out;
  Space s;
  std::vector<AffineExpr> sx, so;
  for (std::size_t d = 0; d + 1 < xs.size(); ++d) {
    AffineExpr i = ix(s.add(fmt::format("b{}", d), xs[d]));
    sx.push_back(i);
    so.push_back(i);
  }
  AffineExpr n = ix(s.add("n", ws[0])), k = ix(s.add("k", ws[1]));
  sx.push_back(k);
  so.push_back(n);
  c.einsum({x, w}, y, std::move(s), {sx, {n, k}}, so, mul(arg(0), arg(1)), Reduce::Sum);
  if (c.has("bias")) c.elementwise({y, c.use_arg("bias")}, out, add(arg(0), arg(1)));
}

std::vector<std::int64_t> per_dim(Context& c, const char* name, std::size_t n, std::int64_t dflt) {
  std::vector<std::int64_t> v = c.ints(name);
  if (v.empty()) v.assign(n, dflt);
  if (v.size() == 1) v.assign(n, v[0]);
  if (v.size() != n) throw Unsupported(fmt::format("'{}' has {} entries for {} spatial dims", name, v.size(), n));
  return v;
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return -floor_div(-a, b); }

// Transposed convolution in gather form. Input position i and tap r land on output
// position o when o + pad = i*s + r*d. Per spatial dimension the output position is split
// by its residue modulo the stride, o = s*q + rho, and the input position is written
// i = q + v, so the landing condition becomes r*d = rho + pad - s*v: for d = 1 the tap is
// affine in (rho, v) and each residue class is an ordinary strided correlation,
//   y[n, g*Kg+k, s*q+rho] = sum_{c,v} x[n, g*Cg+c, q+v] * w[g*Cg+c, k, rho+pad-s*v]
// masked to 0 <= q+v < Lin, 0 <= rho+pad-s*v < Kr and s*q+rho < Lout. For d > 1 the tap is
// its own index r with the equality r*d == rho+pad-s*v (two constraints), except when s
// divides d: then every tap lands on one residue and i = q + c0 - r*d/s. Every live point
// is one (input position, tap) pair that lands inside the output, so the MACs are exactly
// N * Cin * Kg * (such pairs): taps that padding crops are not counted. The einsum's output
// covers s*ceil(Lout/s) positions per dimension; when Lout is not a multiple of s the
// output is its leading slice (a free view), and the einsum writes those < s extra
// positions per dimension (zeros).
void lower_transposed_convolution(Context& c, TensorId x, TensorId w) {
  TensorId out = c.def(0);
  const auto xs = c.t(x).shape, ws = c.t(w).shape, os = c.t(out).shape;
  if (xs.size() < 3 || ws.size() != xs.size() || os.size() != xs.size())
    throw Unsupported("transposed convolution needs batched input [N, C, spatial...]");
  const std::size_t nd = xs.size() - 2;
  const std::int64_t G = c.int_arg("groups", 1);
  auto stride = per_dim(c, "stride", nd, 1), pad = per_dim(c, "padding", nd, 0),
       dil = per_dim(c, "dilation", nd, 1);
  const std::int64_t Cin = ws[0], Kg = ws[1];
  if (G < 1 || Cin % G != 0 || xs[1] != Cin || os[1] != Kg * G)
    throw Unsupported("inconsistent transposed-convolution groups");
  for (std::size_t d = 0; d < nd; ++d)
    if (stride[d] < 1 || dil[d] < 1 || pad[d] < 0)
      throw Unsupported("transposed convolution with a stride or dilation below 1");
  const std::int64_t Cg = Cin / G;
  std::vector<std::int64_t> yshape = os;
  bool overhang = false;
  for (std::size_t d = 0; d < nd; ++d) {
    yshape[2 + d] = stride[d] * ceil_div(os[2 + d], stride[d]);
    overhang = overhang || yshape[2 + d] != os[2 + d];
  }
  const bool bias = c.has("bias");
  TensorId y = bias || overhang ? c.temp("convt", yshape, c.t(out).dtype) : out;
  Space s;
  ir::IndexPos n = s.add("n", xs[0]);
  std::optional<ir::IndexPos> g;
  if (G > 1) g = s.add("g", G);
  ir::IndexPos k = s.add("k", Kg), ci = s.add("c", Cg);
  auto grouped = [&](ir::IndexPos i, std::int64_t per) {
    if (!g) return ix(i);
    return AffineExpr::make({AffineTerm{*g, per}, AffineTerm{i, 1}}, 0);
  };
  std::vector<AffineExpr> sx{ix(n), grouped(ci, Cg)}, sw{grouped(ci, Cg), ix(k)},
      so{ix(n), grouped(k, Kg)};
  std::vector<ir::AffineConstraint> mask;
  auto ge0 = [&](std::vector<AffineTerm> terms, std::int64_t constant) {
    mask.push_back({AffineExpr::make(std::move(terms), constant)});
  };
  for (std::size_t d = 0; d < nd; ++d) {
    const std::int64_t st = stride[d], dl = dil[d], p = pad[d], Kr = ws[2 + d], Lin = xs[2 + d],
                       Lout = os[2 + d];
    const std::int64_t v_min = ceil_div(p - dl * (Kr - 1), st), v_max = floor_div(st - 1 + p, st);
    if (v_max < v_min) throw Unsupported("transposed convolution whose taps never land");
    if (dl > 1 && dl % st == 0) {
      // s | d (s = 1 included): every tap lands on the one residue rho0 = -pad mod s, from
      // input position i = q + c0 - r*(d/s): the tap stays an index and the equality goes
      // away (the masked (rho, v, r) form iterates s*V*K points per output position for
      // the K*Lin/Lout that land). The other residues are outside the einsum's image: 0.
      const std::int64_t rho0 = ((-p) % st + st) % st, c0 = (rho0 + p) / st, dd = dl / st;
      ir::IndexPos q = s.add(fmt::format("q{}", d), yshape[2 + d] / st);
      ir::IndexPos r = s.add(fmt::format("r{}", d), Kr);
      sx.push_back(AffineExpr::make({AffineTerm{q, 1}, AffineTerm{r, -dd}}, c0));
      ge0({AffineTerm{q, 1}, AffineTerm{r, -dd}}, c0);
      ge0({AffineTerm{q, -1}, AffineTerm{r, dd}}, Lin - 1 - c0);
      sw.push_back(ix(r));
      so.push_back(AffineExpr::make({AffineTerm{q, st}}, rho0));
      if (yshape[2 + d] != Lout) ge0({AffineTerm{q, -st}}, Lout - 1 - rho0);
      continue;
    }
    ir::IndexPos q = s.add(fmt::format("q{}", d), yshape[2 + d] / st);
    ir::IndexPos rho = s.add(fmt::format("rho{}", d), st);
    ir::IndexPos v = s.add(fmt::format("v{}", d), v_max - v_min + 1);
    // input position q + v + v_min inside [0, Lin)
    sx.push_back(AffineExpr::make({AffineTerm{q, 1}, AffineTerm{v, 1}}, v_min));
    ge0({AffineTerm{q, 1}, AffineTerm{v, 1}}, v_min);
    ge0({AffineTerm{q, -1}, AffineTerm{v, -1}}, Lin - 1 - v_min);
    // tap: rho + pad - s*(v + v_min) (times 1/d), inside [0, Kr)
    const std::int64_t tap0 = p - st * v_min;
    if (dl == 1) {
      sw.push_back(AffineExpr::make({AffineTerm{rho, 1}, AffineTerm{v, -st}}, tap0));
      ge0({AffineTerm{rho, 1}, AffineTerm{v, -st}}, tap0);
      ge0({AffineTerm{rho, -1}, AffineTerm{v, st}}, Kr - 1 - tap0);
    } else {
      ir::IndexPos r = s.add(fmt::format("r{}", d), Kr);
      sw.push_back(ix(r));
      ge0({AffineTerm{rho, 1}, AffineTerm{v, -st}, AffineTerm{r, -dl}}, tap0);
      ge0({AffineTerm{rho, -1}, AffineTerm{v, st}, AffineTerm{r, dl}}, -tap0);
    }
    so.push_back(AffineExpr::make({AffineTerm{q, st}, AffineTerm{rho, 1}}, 0));
    if (yshape[2 + d] != Lout) ge0({AffineTerm{q, -st}, AffineTerm{rho, -1}}, Lout - 1);
  }
  c.einsum({x, w}, y, std::move(s), {sx, sw}, so, mul(arg(0), arg(1)), Reduce::Sum, mask,
           {0.0, 0.0});
  TensorId cropped = y;
  if (overhang) {
    cropped = bias ? c.temp("convt_crop", os, c.t(out).dtype) : out;
    std::vector<std::int64_t> starts(os.size(), 0), steps(os.size(), 1);
    c.move(MoveKind::Slice, {y}, cropped, {{"starts", starts}, {"ends", os}, {"steps", steps}});
  }
  if (bias) c.channelwise({cropped, c.use_arg("bias")}, out, add(arg(0), arg(1)), 1);
}

// Convolution as an affine-subscript einsum:
//   out[n, g*Kg+k, p...] = sum_{c,r...} in[n, g*Cg+c, p*stride + r*dilation - pad] * w[g*Kg+k, c, r...]
void lower_convolution(Context& c) {
  TensorId x = c.use_arg("input"), w = c.use_arg("weight");
  if (c.bool_arg("transposed", false)) return lower_transposed_convolution(c, x, w);
  TensorId out = c.def(0);
  const auto xs = c.t(x).shape, ws = c.t(w).shape, os = c.t(out).shape;
  if (xs.size() < 3 || ws.size() != xs.size() || os.size() != xs.size())
    throw Unsupported("convolution needs batched input [N, C, spatial...]");
  const std::size_t nd = xs.size() - 2;
  const std::int64_t G = c.int_arg("groups", 1);
  auto stride = per_dim(c, "stride", nd, 1), pad = per_dim(c, "padding", nd, 0),
       dil = per_dim(c, "dilation", nd, 1);
  const std::int64_t K = ws[0], Cg = ws[1];
  if (G < 1 || K % G != 0 || xs[1] != Cg * G) throw Unsupported("inconsistent convolution groups");
  const std::int64_t Kg = K / G;
  TensorId y = c.has("bias") ? c.temp("conv", os, c.t(out).dtype) : out;
  Space s;
  ir::IndexPos n = s.add("n", xs[0]);
  std::optional<ir::IndexPos> g;
  if (G > 1) g = s.add("g", G);
  ir::IndexPos k = s.add("k", Kg), ci = s.add("c", Cg);
  auto grouped = [&](ir::IndexPos i, std::int64_t per) {
    if (!g) return ix(i);
    return AffineExpr::make({AffineTerm{*g, per}, AffineTerm{i, 1}}, 0);
  };
  std::vector<AffineExpr> sx{ix(n), grouped(ci, Cg)}, sw{grouped(k, Kg), ix(ci)},
      so{ix(n), grouped(k, Kg)};
  bool padded = false;
  std::vector<ir::IndexPos> ps, rs;
  for (std::size_t d = 0; d < nd; ++d) ps.push_back(s.add(fmt::format("p{}", d), os[2 + d]));
  for (std::size_t d = 0; d < nd; ++d) rs.push_back(s.add(fmt::format("r{}", d), ws[2 + d]));
  for (std::size_t d = 0; d < nd; ++d) {
    sx.push_back(AffineExpr::make({AffineTerm{ps[d], stride[d]}, AffineTerm{rs[d], dil[d]}}, -pad[d]));
    sw.push_back(ix(rs[d]));
    so.push_back(ix(ps[d]));
    padded = padded || pad[d] != 0;
  }
  c.einsum({x, w}, y, std::move(s), {sx, sw}, so, mul(arg(0), arg(1)), Reduce::Sum, {},
           {padded ? std::optional<double>(0.0) : std::nullopt, std::nullopt});
  if (c.has("bias")) c.channelwise({y, c.use_arg("bias")}, out, add(arg(0), arg(1)), 1);
}

// ---------------------------------------------------------------- pooling

// A window reduction over the trailing `nd` dimensions (leading ones are batch/channel):
//   out[b.., p..] = REDUCE_{r..} in[b.., p*stride + r*dilation - pad]
// read outside the input yields `pad_value` (-inf for max, 0 for sum).
void pool_into(Context& c, TensorId in, TensorId out, std::size_t nd,
               const std::vector<std::int64_t>& kernel, const std::vector<std::int64_t>& stride,
               const std::vector<std::int64_t>& pad, const std::vector<std::int64_t>& dil,
               Reduce r, double pad_value) {
  const auto is = c.t(in).shape, os = c.t(out).shape;
  if (is.size() < nd || os.size() != is.size()) throw Unsupported("pooling rank mismatch");
  const std::size_t lead = is.size() - nd;
  Space s;
  std::vector<AffineExpr> si, so;
  for (std::size_t d = 0; d < lead; ++d) {
    if (is[d] != os[d]) throw Unsupported("pooling changes a batch dimension");
    AffineExpr b = ix(s.add(fmt::format("b{}", d), is[d]));
    si.push_back(b);
    so.push_back(b);
  }
  bool needs_pad = false;
  for (std::size_t d = 0; d < nd; ++d) {
    ir::IndexPos p = s.add(fmt::format("p{}", d), os[lead + d]);
    ir::IndexPos q = s.add(fmt::format("r{}", d), kernel[d]);
    AffineExpr a = AffineExpr::make({AffineTerm{p, stride[d]}, AffineTerm{q, dil[d]}}, -pad[d]);
    std::vector<std::int64_t> ext;
    for (const auto& dim : s.dims) ext.push_back(dim.extent);
    needs_pad = needs_pad || a.min_value(ext) < 0 || a.max_value(ext) >= is[lead + d];
    si.push_back(std::move(a));
    so.push_back(ix(p));
  }
  c.einsum({in}, out, std::move(s), {si}, so, arg(0), r, {},
           {needs_pad ? std::optional<double>(pad_value) : std::nullopt});
}

Fn max_pool(std::size_t nd) {
  return [=](Context& c) {
    TensorId in = c.use_arg("self");
    auto kernel = per_dim(c, "kernel_size", nd, 1);
    auto stride = c.ints("stride").empty() ? kernel : per_dim(c, "stride", nd, 1);
    auto pad = per_dim(c, "padding", nd, 0), dil = per_dim(c, "dilation", nd, 1);
    pool_into(c, in, c.def(0), nd, kernel, stride, pad, dil, Reduce::Max, -kInf);
    if (c.out_id(1))
      arg_reduce(c, in, c.def(1), "pool_argmax", std::nullopt,
                 {{"kernel", kernel}, {"stride", stride}, {"padding", pad}, {"dilation", dil}});
  };
}

// Window sizes that vary with the output position, per spatial dimension: count[o] = the
// number of taps r in [0, K) that satisfy `mask` (constraints over o = index 0, r = index
// 1), as a masked sum over a vector of ones. Costs O + O*K, next to nothing.
TensorId window_counts(Context& c, std::int64_t O, std::int64_t K,
                       std::vector<ir::AffineConstraint> mask, ir::DType dt) {
  TensorId ones = c.temp("ones", {K}, dt);
  c.elementwise({}, ones, num(1));
  TensorId count = c.temp("count", {O}, dt);
  Space s;
  ir::IndexPos o = s.add("o", O), r = s.add("r", K);
  c.einsum({ones}, count, std::move(s), {{ix(r)}}, {ix(o)}, arg(0), Reduce::Sum, std::move(mask));
  return count;
}

// out[b.., o..] = sum[b.., o..] / (product of the per-dimension counts at o..).
void divide_by_counts(Context& c, TensorId sum, TensorId out, std::size_t nd,
                      const std::vector<TensorId>& counts) {
  const auto os = c.t(out).shape;
  const std::size_t lead = os.size() - nd;
  Space s;
  std::vector<AffineExpr> so;
  for (std::size_t d = 0; d < os.size(); ++d) so.push_back(ix(s.add(fmt::format("i{}", d), os[d])));
  std::vector<TensorId> ins{sum};
  std::vector<std::vector<AffineExpr>> subs{so};
  Expr den;
  for (std::size_t d = 0; d < nd; ++d) {
    ins.push_back(counts[d]);
    subs.push_back({so[lead + d]});
    Expr x = arg(static_cast<int>(ins.size() - 1));
    den = d == 0 ? x : mul(den, x);
  }
  c.einsum(std::move(ins), out, std::move(s), std::move(subs), so, fn(ExprOp::Div, {arg(0), den}),
           Reduce::None);
}

// Average pooling. The divisor is the kernel size, unless a window is cut short: with
// count_include_pad=False it counts the taps inside the input, and with ceil_mode a last
// window that passes the padded end counts only the taps up to it (torch's rule); then the
// divisor is a product of per-dimension window counts.
Fn avg_pool(std::size_t nd) {
  return [=](Context& c) {
    TensorId in = c.use_arg("self");
    auto kernel = per_dim(c, "kernel_size", nd, 1);
    auto stride = c.ints("stride").empty() ? kernel : per_dim(c, "stride", nd, 1);
    auto pad = per_dim(c, "padding", nd, 0);
    const bool include_pad = c.bool_arg("count_include_pad", true);
    TensorId out = c.def(0);
    const auto is = c.t(in).shape, os = c.t(out).shape;
    if (is.size() < nd || os.size() != is.size()) throw Unsupported("pooling rank mismatch");
    TensorId sum = c.temp("sum", c.t(out).shape, c.t(out).dtype);
    pool_into(c, in, sum, nd, kernel, stride, pad, std::vector<std::int64_t>(nd, 1), Reduce::Sum, 0);
    if (c.has("divisor_override"))
      return c.elementwise({sum}, out, mul(arg(0), num(1 / c.num_arg("divisor_override", 1))));
    // Tap r of output o reads o*s - p + r; the divisor counts r with lo <= o*s - p + r <= hi.
    bool uniform = true;
    std::vector<std::pair<std::int64_t, std::int64_t>> range(nd);
    for (std::size_t d = 0; d < nd; ++d) {
      const std::int64_t L = is[is.size() - nd + d];
      range[d] = include_pad ? std::pair{-pad[d], L + pad[d] - 1} : std::pair{std::int64_t{0}, L - 1};
      const std::int64_t O = os[os.size() - nd + d];
      uniform = uniform && -pad[d] >= range[d].first &&
                (O - 1) * stride[d] - pad[d] + kernel[d] - 1 <= range[d].second;
    }
    if (uniform)
      return c.elementwise({sum}, out, mul(arg(0), num(1 / static_cast<double>(numel(kernel)))));
    std::vector<TensorId> counts;
    for (std::size_t d = 0; d < nd; ++d) {
      const std::int64_t O = os[os.size() - nd + d];
      // o*s - p + r - lo >= 0 and hi - (o*s - p + r) >= 0 over (o = 0, r = 1)
      counts.push_back(window_counts(
          c, O, kernel[d],
          {{AffineExpr::make({AffineTerm{0, stride[d]}, AffineTerm{1, 1}}, -pad[d] - range[d].first)},
           {AffineExpr::make({AffineTerm{0, -stride[d]}, AffineTerm{1, -1}}, range[d].second + pad[d])}},
          c.t(out).dtype));
    }
    divide_by_counts(c, sum, out, nd, counts);
  };
}

// Adaptive pooling. Output o of a dimension of length L pooled to O reads
// [floor(o*L/O), ceil((o+1)*L/O)). When O divides L that is a plain window; otherwise the
// window is j = o*a + w (a = floor(L/O), w < W, W the longest reach past o*a) masked to
//   (j+1)*O - o*L - 1 >= 0   and   (o+1)*L - j*O - 1 >= 0,
// so the live points are exactly the windows' elements; averages divide by each window's
// own size (a masked count).
Fn adaptive_pool(std::size_t nd, bool is_max) {
  return [=](Context& c) {
    TensorId in = c.use_arg("self");
    const auto is = c.t(in).shape;
    auto osz = per_dim(c, "output_size", nd, 1);
    if (is.size() < nd) throw Unsupported("adaptive pooling rank mismatch");
    const std::size_t lead = is.size() - nd;
    bool even = true;
    for (std::size_t d = 0; d < nd; ++d) {
      if (osz[d] < 1) throw Unsupported("adaptive pooling to an empty output");
      even = even && is[lead + d] % osz[d] == 0;
    }
    TensorId out = c.def(0);
    const ir::DType dt = c.t(out).dtype;
    if (even) {
      std::vector<std::int64_t> kernel(nd), zeros(nd, 0), ones(nd, 1);
      for (std::size_t d = 0; d < nd; ++d) kernel[d] = is[lead + d] / osz[d];
      if (is_max) {
        pool_into(c, in, out, nd, kernel, kernel, zeros, ones, Reduce::Max, -kInf);
        if (c.out_id(1))
          arg_reduce(c, in, c.def(1), "pool_argmax", std::nullopt,
                     {{"adaptive", std::int64_t{1}}, {"output_size", osz}});
        return;
      }
      TensorId sum = c.temp("sum", c.t(out).shape, dt);
      pool_into(c, in, sum, nd, kernel, kernel, zeros, ones, Reduce::Sum, 0);
      c.elementwise({sum}, out, mul(arg(0), num(1 / static_cast<double>(numel(kernel)))));
      return;
    }
    Space s;
    std::vector<AffineExpr> si, so;
    for (std::size_t d = 0; d < lead; ++d) {
      AffineExpr b = ix(s.add(fmt::format("b{}", d), is[d]));
      si.push_back(b);
      so.push_back(b);
    }
    std::vector<ir::AffineConstraint> mask;
    std::vector<std::vector<ir::AffineConstraint>> count_masks(nd);
    std::vector<std::int64_t> widths(nd);
    for (std::size_t d = 0; d < nd; ++d) {
      const std::int64_t L = is[lead + d], O = osz[d], a = L / O;
      std::int64_t W = 1;
      for (std::int64_t o = 0; o < O; ++o) W = std::max(W, ceil_div((o + 1) * L, O) - o * a);
      widths[d] = W;
      ir::IndexPos o = s.add(fmt::format("o{}", d), O), w = s.add(fmt::format("w{}", d), W);
      si.push_back(AffineExpr::make({AffineTerm{o, a}, AffineTerm{w, 1}}, 0));
      so.push_back(ix(o));
      // start: (o*a + w + 1)*O - o*L - 1 >= 0; end: (o+1)*L - (o*a + w)*O - 1 >= 0
      auto lo = [&](ir::IndexPos oo, ir::IndexPos ww) {
        return ir::AffineConstraint{AffineExpr::make({AffineTerm{oo, a * O - L}, AffineTerm{ww, O}}, O - 1)};
      };
      auto hi = [&](ir::IndexPos oo, ir::IndexPos ww) {
        return ir::AffineConstraint{AffineExpr::make({AffineTerm{oo, L - a * O}, AffineTerm{ww, -O}}, L - 1)};
      };
      mask.push_back(lo(o, w));
      mask.push_back(hi(o, w));
      count_masks[d] = {lo(0, 1), hi(0, 1)};
    }
    TensorId target = is_max ? out : c.temp("sum", c.t(out).shape, dt);
    c.einsum({in}, target, std::move(s), {si}, so, arg(0), is_max ? Reduce::Max : Reduce::Sum, mask,
             {is_max ? -kInf : 0.0});
    if (is_max) {
      if (c.out_id(1))
        arg_reduce(c, in, c.def(1), "pool_argmax", std::nullopt,
                   {{"adaptive", std::int64_t{1}}, {"output_size", osz}});
      return;
    }
    std::vector<TensorId> counts;
    for (std::size_t d = 0; d < nd; ++d)
      counts.push_back(window_counts(c, osz[d], widths[d], count_masks[d], dt));
    divide_by_counts(c, target, out, nd, counts);
  };
}

// constant_pad_nd: `pad` lists (before, after) pairs from the last dimension backwards.
void lower_constant_pad(Context& c) {
  TensorId in = c.use_arg("self");
  const std::size_t r = c.t(in).shape.size();
  auto p = c.ints("pad");
  if (p.size() % 2 != 0 || p.size() / 2 > r) throw Unsupported("malformed pad list");
  std::vector<std::int64_t> pads(2 * r, 0);
  for (std::size_t k = 0; k < p.size() / 2; ++k) {
    std::size_t d = r - 1 - k;
    pads[2 * d] = p[2 * k];
    pads[2 * d + 1] = p[2 * k + 1];
  }
  for (std::int64_t x : pads)
    if (x < 0) throw Unsupported("negative padding (cropping)");
  c.move(MoveKind::Pad, {in}, c.def(0), {{"pads", pads}, {"value", c.num_arg("value", 0)}});
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

// ---------------------------------------------------------------- attention

// SDPA (every backend's aten op): scores = Q K^T (GQA: query head hk*grp + j reads key head
// hk), scale, mask (causal: key s <= query l, top-left aligned as torch does), softmax, P V.
void lower_sdpa(Context& c) {
  TensorId q = c.use_arg("query"), k = c.use_arg("key"), v = c.use_arg("value");
  if (c.num_arg("dropout_p", 0) != 0) throw Unsupported("dropout inside attention");
  const auto qs = c.t(q).shape, ks = c.t(k).shape, vs = c.t(v).shape;
  const std::size_t r = qs.size();
  if (r < 3 || ks.size() != r || vs.size() != r) throw Unsupported("attention needs [..., H, L, E] operands");
  const std::int64_t Hq = qs[r - 3], Hk = ks[r - 3], L = qs[r - 2], S = ks[r - 2], E = qs[r - 1],
                     Ev = vs[r - 1];
  if (Hk < 1 || Hq % Hk != 0) throw Unsupported("query heads are not a multiple of key heads");
  const std::int64_t grp = Hq / Hk;
  const bool causal = c.bool_arg("is_causal", false);
  double scale = c.has("scale") ? c.num_arg("scale", 1) : 1 / std::sqrt(static_cast<double>(E));
  ir::DType dt = c.t(q).dtype;
  std::vector<std::int64_t> sshape(qs.begin(), qs.end() - 1);
  sshape.push_back(S);

  // One contraction builder for Q K^T and P V.
  auto contract = [&](TensorId a, TensorId b, TensorId out, std::int64_t inner, std::int64_t last,
                      bool qk) {
    Space s;
    std::vector<AffineExpr> batch;
    for (std::size_t d = 0; d + 3 < r; ++d) {
      if (ks[d] != qs[d]) throw Unsupported("attention batch dimensions differ");
      batch.push_back(ix(s.add(fmt::format("b{}", d), qs[d])));
    }
    // Without GQA the head is a plain index (a plain subscript is what marks a matmul).
    ir::IndexPos hk = s.add("hk", Hk);
    AffineExpr h = ix(hk);
    if (grp > 1) h = AffineExpr::make({AffineTerm{hk, grp}, AffineTerm{s.add("j", grp), 1}}, 0);
    ir::IndexPos l = s.add("l", L);
    ir::IndexPos red = s.add(qk ? "e" : "s", inner), col = s.add(qk ? "s" : "ev", last);
    std::vector<AffineExpr> sa = batch, sb = batch, so = batch;
    sa.insert(sa.end(), {h, ix(l), ix(red)});
    sb.insert(sb.end(), {ix(hk), qk ? ix(col) : ix(red), qk ? ix(red) : ix(col)});
    so.insert(so.end(), {h, ix(l), ix(col)});
    std::vector<ir::AffineConstraint> mask;
    ir::IndexPos key = qk ? col : red;
    if (causal) mask.push_back({AffineExpr::make({AffineTerm{l, 1}, AffineTerm{key, -1}}, 0)});
    c.einsum({a, b}, out, std::move(s), {sa, sb}, so, mul(arg(0), arg(1)), Reduce::Sum, mask);
  };
  // Causal mask over a [..., L, S] elementwise/reduction space: index l is r-2, s is r-1.
  std::vector<ir::AffineConstraint> mask;
  if (causal)
    mask.push_back({AffineExpr::make({AffineTerm{static_cast<ir::IndexPos>(r - 2), 1},
                                      AffineTerm{static_cast<ir::IndexPos>(r - 1), -1}}, 0)});
  TensorId scores = c.temp("scores", sshape, dt);
  contract(q, k, scores, E, S, true);
  TensorId scaled_scores = c.temp("scaled", sshape, dt);
  const char* mask_arg = c.has("attn_mask") ? "attn_mask" : c.has("attn_bias") ? "attn_bias" : nullptr;
  if (mask_arg) {
    TensorId m = c.use_arg(mask_arg);
    Expr x = mul(arg(0), num(scale));
    Expr y = c.t(m).dtype == ir::DType::Bool ? fn(ExprOp::Select, {arg(1), x, num(-kInf)})
                                             : add(x, arg(1));
    c.elementwise({scores, m}, scaled_scores, y, mask);
  } else {
    c.elementwise({scores}, scaled_scores, mul(arg(0), num(scale)), mask);
  }
  TensorId probs = c.temp("probs", sshape, dt);
  softmax_into(c, scaled_scores, probs, static_cast<std::int64_t>(r - 1), false, mask);
  contract(probs, v, c.def(0), S, Ev, false);
}

// ---------------------------------------------------------------- data movement

// torch's view rule (ATen's computeStride): the strides that view a tensor of (old_shape,
// old_strides) as `shape` without a copy, or nullopt when no such view exists.
std::optional<std::vector<std::int64_t>> view_strides(const std::vector<std::int64_t>& old_shape,
                                                      const std::vector<std::int64_t>& old_strides,
                                                      const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> st(shape.size(), 1);
  if (old_shape.empty()) return st;
  if (numel(old_shape) == 0) return std::nullopt;
  auto view_d = static_cast<std::int64_t>(shape.size()) - 1;
  std::int64_t chunk = old_strides.back(), tensor_n = 1, view_n = 1;
  for (auto d = static_cast<std::int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    tensor_n *= old_shape[d];
    if (d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != tensor_n * chunk)) {
      while (view_d >= 0 && (view_n < tensor_n || shape[view_d] == 1)) {
        st[view_d] = view_n * chunk;
        view_n *= shape[view_d];
        --view_d;
      }
      if (view_n != tensor_n) return std::nullopt;
      if (d > 0) {
        chunk = old_strides[d - 1];
        tensor_n = 1;
        view_n = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return st;
}

// A view (reshape, squeeze, expand...) of a strided alias: its layout by torch's rules.
void alias_view(Context& c, TensorId in, std::int64_t in_trace) {
  Context::Strided s = c.layout(in, in_trace);
  const auto is = c.t(in).shape;
  const auto os = c.tt(*c.out_id(0)).shape;
  if (numel(is) == numel(os)) {
    std::optional<std::vector<std::int64_t>> st = view_strides(is, s.strides, os);
    if (!st) {  // torch copies here (reshape of a non-viewable layout)
      TensorId copy = c.materialize(in);
      return c.move(MoveKind::View, {copy}, c.def(0));
    }
    s.strides = *st;
    c.alias_output(0, in, std::move(s));
    return;
  }
  // expand: new leading dimensions and broadcast size-1 dimensions read with stride 0
  if (os.size() < is.size()) throw Unsupported("a view that drops elements of a strided view");
  std::vector<std::int64_t> st(os.size(), 0);
  for (std::size_t d = 0; d < is.size(); ++d) {
    std::size_t od = d + os.size() - is.size();
    if (is[d] == os[od]) st[od] = s.strides[d];
    else if (is[d] != 1) throw Unsupported("a view that is neither a reshape nor a broadcast");
  }
  s.strides = st;
  c.alias_output(0, in, std::move(s));
}

// A view (view, reshape, expand, squeeze...): free. Of a plain tensor, a row-major reshape or
// broadcast move; of a strided alias, another alias.
void lower_view(Context& c) {
  std::int64_t x = c.trace_id("self");
  TensorId in = c.use(x);
  if (c.is_alias(in)) return alias_view(c, in, x);
  TensorId out = c.def(0);
  std::int64_t a = numel(c.t(in).shape), b = numel(c.t(out).shape);
  if (a != b && a != 1) {
    const auto& is = c.t(in).shape;
    const auto& os = c.t(out).shape;
    bool bcast = is.size() <= os.size();
    for (std::size_t d = 0; bcast && d < is.size(); ++d) {
      std::int64_t o = os[d + os.size() - is.size()];
      bcast = is[d] == o || is[d] == 1;
    }
    if (!bcast) throw Unsupported("a view that is neither a reshape nor a broadcast");
  }
  c.move(MoveKind::View, {in}, out);
}

// Permuting views (t, transpose, permute, numpy_T, mT...): a strided alias whose strides are
// the input's, permuted. `perm[d]`: the input dimension that output dimension d reads.
void permuted_view(Context& c, const std::vector<std::int64_t>& perm) {
  std::int64_t x = c.trace_id("self");
  TensorId in = c.use(x);
  Context::Strided s = c.layout(in, x);
  std::vector<std::int64_t> st;
  for (std::int64_t p : perm) st.push_back(s.strides.at(static_cast<std::size_t>(p)));
  s.strides = st;
  c.alias_output(0, in, std::move(s));
}

std::vector<std::int64_t> identity_perm(std::size_t r) {
  std::vector<std::int64_t> p(r);
  for (std::size_t d = 0; d < r; ++d) p[d] = static_cast<std::int64_t>(d);
  return p;
}

void lower_transpose(Context& c) {
  const std::size_t r = c.shape(c.trace_id("self")).size();
  std::vector<std::int64_t> p = identity_perm(r);
  if (r >= 2) std::swap(p[norm_dim(c.int_arg("dim0", 0), r)], p[norm_dim(c.int_arg("dim1", 1), r)]);
  permuted_view(c, p);
}

void lower_t(Context& c) {
  const std::size_t r = c.shape(c.trace_id("self")).size();
  std::vector<std::int64_t> p = identity_perm(r);
  if (r == 2) std::swap(p[0], p[1]);
  permuted_view(c, p);
}

void lower_permute(Context& c) {
  const std::size_t r = c.shape(c.trace_id("self")).size();
  std::vector<std::int64_t> p = c.ints("dims");
  if (p.size() != r) throw Unsupported("permute with a wrong number of dimensions");
  for (std::int64_t& d : p) d = norm_dim(d, r);
  permuted_view(c, p);
}

void lower_reverse_dims(Context& c) {  // numpy_T
  std::vector<std::int64_t> p = identity_perm(c.shape(c.trace_id("self")).size());
  std::reverse(p.begin(), p.end());
  permuted_view(c, p);
}

void lower_last_two_swapped(Context& c) {  // mT, mH of a real tensor
  const std::size_t r = c.shape(c.trace_id("self")).size();
  if (r < 2) throw Unsupported("mT of a tensor of rank < 2");
  std::vector<std::int64_t> p = identity_perm(r);
  std::swap(p[r - 1], p[r - 2]);
  permuted_view(c, p);
}

// unfold(dimension, size, step): windows along one dimension as a new last dimension.
void lower_unfold(Context& c) {
  std::int64_t x = c.trace_id("self");
  TensorId in = c.use(x);
  Context::Strided s = c.layout(in, x);
  const std::size_t r = c.t(in).shape.size();
  std::int64_t d = norm_dim(c.int_arg("dimension", 0), r);
  std::int64_t step = c.int_arg("step", 1);
  if (step < 1) throw Unsupported("unfold with a step below 1");
  std::int64_t st = r == 0 ? 1 : s.strides[d];
  if (r > 0) s.strides[d] = st * step;
  s.strides.push_back(st);
  c.alias_output(0, in, std::move(s));
}

// diagonal(offset, dim1, dim2): the two dimensions replaced by one diagonal at the end.
void lower_diagonal(Context& c) {
  std::int64_t x = c.trace_id("self");
  TensorId in = c.use(x);
  Context::Strided s = c.layout(in, x);
  const std::size_t r = c.t(in).shape.size();
  std::int64_t d1 = norm_dim(c.int_arg("dim1", 0), r), d2 = norm_dim(c.int_arg("dim2", 1), r);
  if (d1 == d2) throw Unsupported("diagonal over one dimension twice");
  std::int64_t off = c.int_arg("offset", 0);
  s.offset += off >= 0 ? off * s.strides[d2] : -off * s.strides[d1];
  std::vector<std::int64_t> st;
  for (std::size_t d = 0; d < r; ++d)
    if (static_cast<std::int64_t>(d) != d1 && static_cast<std::int64_t>(d) != d2) st.push_back(s.strides[d]);
  st.push_back(s.strides[d1] + s.strides[d2]);
  s.strides = st;
  c.alias_output(0, in, std::move(s));
}

// as_strided(size, stride, storage_offset) (and in-place as_strided_): strides and offset
// are in storage elements, so the viewed tensor must be contiguous in the trace (or an alias
// over such a tensor).
void lower_as_strided(Context& c) {
  std::int64_t x = c.trace_id("self");
  TensorId in = c.use(x);
  const TraceTensor& xt = c.tt(x);
  if (!c.is_alias(in) && !xt.strides.empty()) {
    std::int64_t want = 1;
    for (std::size_t d = xt.shape.size(); d-- > 0;) {
      if (xt.shape[d] != 1 && xt.strides[d] != want)
        throw Unsupported("as_strided of a tensor that is not contiguous in memory");
      want *= xt.shape[d];
    }
  }
  Context::Strided s = c.layout(in, x);
  std::int64_t storage_offset = c.has("storage_offset") ? c.int_arg("storage_offset", 0) : xt.storage_offset;
  s.strides = c.ints("stride");
  s.offset = storage_offset - s.root_offset;
  if (s.strides.size() != c.tt(*c.out_id(0)).shape.size()) throw Unsupported("as_strided rank mismatch");
  c.alias_output(0, in, std::move(s));
}

// as_strided_scatter(self, src, size, stride, storage_offset): self with the elements of
// self.as_strided(size, stride, storage_offset) (offsets relative to self's first element,
// self seen row-major, as torch's functional form clones it) replaced by src. The capture
// records it for a write through one view that another view must see (capture.py, _Trace).
// Graph: the offsets (an opaque "strided_offsets"), then a scatter into self flattened.
void lower_as_strided_scatter(Context& c) {
  TensorId self = c.use_arg("self");
  TensorId src = c.use_arg("src");
  const auto size = c.ints("size"), stride = c.ints("stride");
  const std::int64_t offset = c.int_arg("storage_offset", 0);
  const ir::Tensor& st = c.t(self);
  const std::int64_t n = numel(st.shape), m = numel(size);
  if (stride.size() != size.size() || c.t(src).shape != size)
    throw Unsupported("as_strided_scatter: src's shape differs from size, or stride's rank");
  if (m == 0 || n == 0) throw Unsupported("an empty (size-0) tensor");
  std::int64_t lo = offset, hi = offset;
  for (std::size_t d = 0; d < size.size(); ++d)
    (stride[d] < 0 ? lo : hi) += (size[d] - 1) * stride[d];
  if (lo < 0 || hi >= n)
    throw Unsupported(fmt::format("as_strided_scatter reaches elements [{}, {}] outside the {} "
                                  "of self", lo, hi, n));
  const ir::DType dt = st.dtype;
  if (c.t(src).dtype != dt) {
    TensorId cast = c.temp("src_cast", size, dt);
    c.move(MoveKind::Cast, {src}, cast);
    src = cast;
  }
  TensorId offsets = c.temp("offsets", size, ir::DType::I64);
  ir::OpaqueOp o;
  o.function = "strided_offsets";
  o.vector_flops = Count(m);
  o.special_ops = Count(0);
  o.bytes = c.t(offsets).size_bytes();
  o.assumption = "one multiply-add per written element (offset + sum_d j_d*stride_d); writes "
                 "the offsets once";
  o.attrs = {{"strides", stride}, {"offset", offset}};
  c.opaque({}, {offsets}, std::move(o));
  TensorId flat_self = c.temp("flat", {n}, dt), flat_src = c.temp("flat_src", {m}, dt),
           flat_idx = c.temp("flat_offsets", {m}, ir::DType::I64),
           out_flat = c.temp("scattered", {n}, dt);
  c.move(MoveKind::View, {self}, flat_self);
  c.move(MoveKind::View, {src}, flat_src);
  c.move(MoveKind::View, {offsets}, flat_idx);
  c.move(MoveKind::Scatter, {flat_self, flat_idx, flat_src}, out_flat,
         {{"axis", std::int64_t{0}}, {"mode", std::string("elements")},
          {"reduce", std::string("none")}});
  c.move(MoveKind::View, {out_flat}, c.def(0));
}

void slice_into(Context& c, TensorId in, TensorId out, std::int64_t dim, std::int64_t start,
                std::int64_t end, std::int64_t step) {
  const auto& shape = c.t(in).shape;
  std::int64_t size = shape[dim];
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<std::int64_t>(start, 0, size);
  end = std::clamp<std::int64_t>(end, start, size);
  std::vector<std::int64_t> starts(shape.size(), 0), ends = shape, steps(shape.size(), 1);
  starts[dim] = start;
  ends[dim] = end;
  steps[dim] = step;
  c.move(MoveKind::Slice, {in}, out, {{"starts", starts}, {"ends", ends}, {"steps", steps}});
}

// A slice (or, with `drop`, a select) of a strided alias: output k is another alias.
void alias_slice(Context& c, TensorId in, std::int64_t x, std::size_t k, std::int64_t dim,
                 std::int64_t start, std::int64_t end, std::int64_t step, bool drop) {
  Context::Strided s = c.layout(in, x);
  std::int64_t size = c.t(in).shape[dim];
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<std::int64_t>(start, 0, size);
  (void)end;
  s.offset += start * s.strides[dim];
  if (drop) s.strides.erase(s.strides.begin() + dim);
  else s.strides[dim] *= step;
  c.alias_output(k, in, std::move(s));
}

void lower_slice(Context& c) {
  std::int64_t x = c.trace_id("self");
  std::int64_t dim = norm_dim(c.int_arg("dim", 0), c.shape(x).size());
  std::int64_t big = std::numeric_limits<std::int64_t>::max();
  TensorId in = c.use(x);
  if (c.is_alias(in))
    return alias_slice(c, in, x, 0, dim, c.int_arg("start", 0), c.int_arg("end", big),
                       c.int_arg("step", 1), false);
  slice_into(c, in, c.def(0), dim, c.int_arg("start", 0), c.int_arg("end", big),
             c.int_arg("step", 1));
}

void lower_select(Context& c) {
  std::int64_t x = c.trace_id("self");
  const auto shape = c.shape(x);
  std::int64_t dim = norm_dim(c.int_arg("dim", 0), shape.size());
  std::int64_t i = c.int_arg("index", 0);
  if (i < 0) i += shape[dim];
  TensorId in = c.use(x);
  if (c.is_alias(in)) return alias_slice(c, in, x, 0, dim, i, i + 1, 1, true);
  std::vector<std::int64_t> one = shape;
  one[dim] = 1;
  TensorId s = c.temp("slice", one, c.t(in).dtype);
  slice_into(c, in, s, dim, i, i + 1, 1);
  c.move(MoveKind::View, {s}, c.def(0));
}

// split / split_with_sizes / unbind / chunk: one slice (and view for unbind) per output.
void lower_split(Context& c, bool unbind) {
  std::int64_t x = c.trace_id("self");
  const auto shape = c.shape(x);
  std::int64_t dim = norm_dim(c.int_arg("dim", 0), shape.size());
  TensorId in = c.use(x);
  const bool alias = c.is_alias(in);
  std::int64_t at = 0;
  for (std::size_t k = 0; k < c.op().outputs.size(); ++k) {
    if (!c.out_id(k)) continue;
    const auto& os = c.tt(*c.out_id(k)).shape;
    std::int64_t len = unbind ? 1 : os[dim];
    if (alias) {
      alias_slice(c, in, x, k, dim, at, at + len, 1, unbind);
    } else if (unbind) {
      std::vector<std::int64_t> one = shape;
      one[dim] = 1;
      TensorId s = c.temp("slice", one, c.t(in).dtype);
      slice_into(c, in, s, dim, at, at + 1, 1);
      c.move(MoveKind::View, {s}, c.def(k));
    } else {
      slice_into(c, in, c.def(k), dim, at, at + len, 1);
    }
    at += len;
  }
}

// clone / _to_copy / copy_: a copy, or a cast when the dtype changes.
void lower_copy(Context& c, const char* src) {
  TensorId in = c.use_arg(src);
  TensorId out = c.def(0);
  bool cast = c.t(in).dtype != c.t(out).dtype;
  if (cast && c.t(in).shape != c.t(out).shape) throw Unsupported("a broadcasting copy that casts");
  c.move(cast ? MoveKind::Cast : MoveKind::Copy, {in}, out);
}

void lower_cat(Context& c) {
  std::vector<TensorId> ins;
  for (std::int64_t id : c.trace_ids("tensors"))
    if (numel(c.shape(id)) != 0 || c.shape(id).size() != 1) ins.push_back(c.use(id));  // legacy [0]
  TensorId out = c.def(0);
  std::int64_t dim = norm_dim(c.int_arg("dim", 0), c.t(out).shape.size());
  c.move(MoveKind::Concat, ins, out, {{"axis", dim}});
}

// stack: each input viewed with a new size-1 axis, then concatenated along it.
void lower_stack(Context& c) {
  std::vector<TensorId> ins;
  TensorId out = c.def(0);
  const auto os = c.t(out).shape;
  std::int64_t dim = norm_dim(c.int_arg("dim", 0), os.size());
  for (std::int64_t id : c.trace_ids("tensors")) {
    TensorId x = c.use(id);
    std::vector<std::int64_t> shape = c.t(x).shape;
    shape.insert(shape.begin() + dim, 1);
    TensorId v = c.temp("unsqueezed", shape, c.t(x).dtype);
    c.move(MoveKind::View, {x}, v);
    ins.push_back(v);
  }
  c.move(MoveKind::Concat, ins, out, {{"axis", dim}});
}

void lower_gather_rows(Context& c, const char* data, const char* index, std::int64_t axis) {
  TensorId d = c.use_arg(data), i = c.use_arg(index);
  c.move(MoveKind::Gather, {d, i}, c.def(0), {{"axis", axis}});
}

// ---------------------------------------------------------------- random numbers

// A random-number op: opaque, counting the numbers generated (one generator step each, plus
// the special functions of the distribution's transform) and the bytes written and read.
// The executor cannot reproduce torch's generator: a graph with one is analyzable, and
// validation can compare only what does not depend on it.
void rng_into(Context& c, std::vector<TensorId> reads, TensorId out, const std::string& dist,
              ir::Attrs attrs = {}) {
  const Count n = c.t(out).num_elements();
  ir::OpaqueOp o;
  o.function = "random_" + dist;
  o.vector_flops = n;
  // Box-Muller: a log, a square root and a sine or cosine per number.
  o.special_ops = dist == "normal" ? n * Count(3) : Count(0);
  Count bytes = c.t(out).size_bytes();
  for (TensorId r : reads) bytes = bytes + c.t(r).size_bytes();
  o.bytes = bytes;
  o.assumption = dist == "normal"
                     ? "one generator step and a Box-Muller transform (log, sqrt, sin/cos) per "
                       "number; writes each number once, reads its parameters once"
                     : "one generator step per number; writes each number once, reads its "
                       "parameters once";
  attrs["distribution"] = dist;
  o.attrs = std::move(attrs);
  c.opaque(std::move(reads), {out}, std::move(o));
}

// rand, randn, randint, bernoulli, normal, uniform_ ... : `reads` names the tensor arguments
// whose values the distribution reads (probabilities, means, standard deviations).
Fn random_op(std::string dist, std::vector<const char*> reads) {
  return [=](Context& c) {
    std::vector<TensorId> in;
    for (const char* name : reads) {
      const auto& v = c.a(name);
      if (v.is_object() && v.contains("tensor")) in.push_back(c.use_arg(name));
    }
    ir::Attrs attrs;
    for (const char* name : {"p", "low", "high", "from", "to", "mean", "std"})
      if (auto v = number_value(c.a(name))) attrs[name] = *v;
    rng_into(c, std::move(in), c.def(0), dist, std::move(attrs));
  };
}

// A view of `in` as output 0: free; of an alias, another alias.
void view_into_output(Context& c, TensorId in, std::int64_t in_trace) {
  if (c.is_alias(in)) return alias_view(c, in, in_trace);
  c.move(MoveKind::View, {in}, c.def(0));
}

// dropout / native_dropout: identity in eval mode (mask all ones); in training a Bernoulli
// keep-mask (probability 1 - p) and out = in * mask / (1 - p).
void lower_dropout(Context& c) {
  const double p = c.num_arg("p", 0);
  const bool train = c.a("train").is_null() ? true : c.bool_arg("train", true);
  std::int64_t x = c.trace_id("input");
  TensorId in = c.use(x);
  if (!train || p == 0) {
    view_into_output(c, in, x);
    if (c.out_id(1)) c.elementwise({}, c.def(1), num(1));
    return;
  }
  TensorId out = c.def(0);
  TensorId mask = c.out_id(1) ? c.def(1) : c.temp("keep", c.t(out).shape, ir::DType::Bool);
  rng_into(c, {}, mask, "bernoulli", {{"p", 1 - p}});
  c.elementwise({in, mask}, out, mul(mul(arg(0), arg(1)), num(p >= 1 ? 0.0 : 1 / (1 - p))));
}

// flip: a copy that reads each flipped dimension backwards (subscript L-1-i).
void lower_flip(Context& c) {
  TensorId in = c.use_arg("self");
  TensorId out = c.def(0);
  const auto shape = c.t(in).shape;
  std::vector<bool> flipped(shape.size(), false);
  for (std::int64_t d : c.ints("dims")) flipped[norm_dim(d, shape.size())] = true;
  Space s;
  std::vector<AffineExpr> si, so;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) throw Unsupported("an empty (size-0) tensor");
    ir::IndexPos i = s.add(fmt::format("i{}", d), shape[d]);
    so.push_back(ix(i));
    si.push_back(flipped[d] ? AffineExpr::make({AffineTerm{i, -1}}, shape[d] - 1) : ix(i));
  }
  c.einsum({in}, out, std::move(s), {si}, so, arg(0), Reduce::None);
}

// roll: out[i] = in[(i - shift) mod L] per rolled dimension. With a two-valued index u per
// dimension, out[i] = sum_u in[i - shift + L*u] masked to the one u whose read lands inside
// [0, L): one live point per output element, so the op reads and writes each element once
// and does no arithmetic. Without dims, the flattened tensor is rolled.
void lower_roll(Context& c) {
  TensorId in = c.use_arg("self");
  TensorId out = c.def(0);
  std::vector<std::int64_t> shifts = c.ints("shifts"), dims = c.ints("dims");
  std::vector<std::int64_t> shape = c.t(in).shape;
  TensorId src = in, dst = out;
  if (dims.empty()) {
    if (shifts.size() != 1) throw Unsupported("roll without dims takes one shift");
    shape = {numel(shape)};
    src = c.temp("flat", shape, c.t(in).dtype);
    c.move(MoveKind::View, {in}, src);
    dst = c.temp("rolled", shape, c.t(out).dtype);
    dims = {0};
  }
  if (shifts.size() != dims.size()) throw Unsupported("roll with unequal shifts and dims");
  std::vector<std::int64_t> shift(shape.size(), 0);
  for (std::size_t k = 0; k < dims.size(); ++k) {
    std::int64_t d = norm_dim(dims[k], shape.size());
    if (shape[d] == 0) throw Unsupported("an empty (size-0) tensor");
    shift[d] = ((shift[d] + shifts[k]) % shape[d] + shape[d]) % shape[d];
  }
  Space s;
  std::vector<AffineExpr> si, so;
  std::vector<ir::AffineConstraint> mask;
  std::vector<ir::IndexPos> is;
  for (std::size_t d = 0; d < shape.size(); ++d) is.push_back(s.add(fmt::format("i{}", d), shape[d]));
  bool padded = false;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    so.push_back(ix(is[d]));
    if (shift[d] == 0) {
      si.push_back(ix(is[d]));
      continue;
    }
    padded = true;
    ir::IndexPos u = s.add(fmt::format("u{}", d), 2);
    AffineExpr read = AffineExpr::make({AffineTerm{is[d], 1}, AffineTerm{u, shape[d]}}, -shift[d]);
    si.push_back(read);
    mask.push_back({read});
    mask.push_back({AffineExpr::make({AffineTerm{is[d], -1}, AffineTerm{u, -shape[d]}},
                                     shape[d] - 1 + shift[d])});
  }
  c.einsum({src}, dst, std::move(s), {si}, so, arg(0), padded ? Reduce::Sum : Reduce::None, mask,
           {padded ? std::optional<double>(0.0) : std::nullopt});
  if (dst != out) c.move(MoveKind::View, {dst}, out);
}

// Uninitialized memory (empty): no op writes it; a reader reads whatever is there.
void lower_empty(Context& c) { c.mark_uninitialized(0); }

// ---------------------------------------------------------------- scans, sorting, scatter

std::int64_t ceil_log2(std::int64_t n) {
  std::int64_t k = 0;
  while ((std::int64_t{1} << k) < n) ++k;
  return k;
}

// Opaque ops over one dimension: the work formula and its assumption are stated; `attrs`
// tell the executor the axis and options (docs/executor.md).
void opaque_over_dim(Context& c, const char* function, std::int64_t flops_per_row,
                     std::int64_t row, const std::string& assumption, ir::Attrs attrs) {
  TensorId in = c.use_arg("self");
  std::vector<TensorId> outs;
  Count bytes = c.t(in).size_bytes();
  for (std::size_t k = 0; k < c.op().outputs.size(); ++k)
    if (c.out_id(k)) {
      outs.push_back(c.def(k));
      bytes = bytes + c.t(outs.back()).size_bytes();
    }
  std::int64_t n = numel(c.t(in).shape);
  std::int64_t rows = row > 0 ? n / row : 0;
  ir::OpaqueOp o;
  o.function = function;
  o.vector_flops = Count(rows) * Count(flops_per_row);
  o.special_ops = Count(0);
  o.bytes = bytes;
  o.assumption = assumption;
  o.attrs = std::move(attrs);
  c.opaque({in}, outs, std::move(o));
}

std::int64_t dim_size(Context& c, const char* dim_arg, std::int64_t dflt) {
  const auto& shape = c.shape(c.trace_id("self"));
  if (shape.empty()) return 1;
  return shape[norm_dim(c.int_arg(dim_arg, dflt), shape.size())];
}

std::int64_t axis_of(Context& c, const char* dim_arg, std::int64_t dflt) {
  const auto& shape = c.shape(c.trace_id("self"));
  return norm_dim(c.int_arg(dim_arg, dflt), shape.size());
}

Fn scan(const char* function) {
  return [=](Context& c) {
    std::int64_t n = dim_size(c, "dim", 0);
    opaque_over_dim(c, function, n, n,
                    "sequential scan: one combine per element; reads the input once, writes "
                    "each output once",
                    {{"axis", axis_of(c, "dim", 0)}});
  };
}

void lower_sort(Context& c) {
  std::int64_t n = dim_size(c, "dim", -1);
  opaque_over_dim(c, "sort", n * std::max<std::int64_t>(ceil_log2(n), 1), n,
                  "comparison sort: n*ceil(log2 n) compares per row; reads the input once, "
                  "writes values and indices once",
                  {{"axis", axis_of(c, "dim", -1)},
                   {"descending", std::int64_t{c.bool_arg("descending", false)}}});
}

void lower_topk(Context& c) {
  std::int64_t n = dim_size(c, "dim", -1);
  std::int64_t k = c.int_arg("k", 1);
  opaque_over_dim(c, "topk", n * std::max<std::int64_t>(ceil_log2(std::max<std::int64_t>(k, 2)), 1), n,
                  "heap selection: n*ceil(log2 k) compares per row; reads the input once, "
                  "writes k values and indices per row",
                  {{"axis", axis_of(c, "dim", -1)}, {"k", k},
                   {"largest", std::int64_t{c.bool_arg("largest", true)}}});
}

void lower_gather(Context& c) {
  std::int64_t x = c.trace_id("self");
  std::int64_t dim = norm_dim(c.int_arg("dim", 0), c.shape(x).size());
  c.move(MoveKind::Gather, {c.use(x), c.use_arg("index")}, c.def(0),
         {{"axis", dim}, {"mode", std::string("elements")}});
}

// torch.scatter / scatter_add: `reduce` is "none" (replace) or "sum" (scatter_add).
void lower_scatter_with(Context& c, const char* reduce) {
  std::int64_t x = c.trace_id("self");
  std::int64_t dim = norm_dim(c.int_arg("dim", 0), c.shape(x).size());
  if (c.has("reduce")) throw Unsupported("scatter with a reduce mode");
  c.move(MoveKind::Scatter, {c.use(x), c.use_arg("index"), c.use_arg("src")}, c.def(0),
         {{"axis", dim}, {"mode", std::string("elements")}, {"reduce", std::string(reduce)}});
}
void lower_scatter(Context& c) { lower_scatter_with(c, "none"); }

// scatter.value (a scalar src), scatter.reduce (add/multiply), scatter_reduce.two
// (sum/prod/mean/amax/amin, include_self).
void lower_scatter_general(Context& c) {
  std::int64_t x = c.trace_id("self");
  std::int64_t dim = norm_dim(c.int_arg("dim", 0), c.shape(x).size());
  TensorId index = c.use_arg("index");
  TensorId src;
  if (c.has("src")) {
    src = c.use_arg("src");
  } else {
    src = c.temp("fill", c.t(index).shape, c.t(c.use(x)).dtype);
    std::vector<TensorId> in;
    Expr v = operand(c, "value", in);
    c.elementwise(in, src, v);
  }
  std::string reduce = "none";
  if (c.a("reduce").is_string()) {
    const std::string r = c.a("reduce").get<std::string>();
    if (r == "add" || r == "sum") reduce = "sum";
    else if (r == "multiply" || r == "prod") reduce = "prod";
    else if (r == "mean") reduce = "mean";
    else if (r == "amax") reduce = "max";
    else if (r == "amin") reduce = "min";
    else throw Unsupported(fmt::format("scatter with reduce '{}'", r));
  }
  ir::Attrs attrs{{"axis", dim}, {"mode", std::string("elements")}, {"reduce", reduce}};
  if (c.has("include_self")) attrs["include_self"] = std::int64_t{c.bool_arg("include_self", true)};
  c.move(MoveKind::Scatter, {c.use(x), index, src}, c.def(0), std::move(attrs));
}
void lower_scatter_add(Context& c) { lower_scatter_with(c, "sum"); }

// ---------------------------------------------------------------- index-valued factories, triangles

// arange and linspace: their values are index arithmetic (start + i*step), not an einsum
// over data: an opaque op the executor runs ("arange").
void arange_into(Context& c, TensorId out, double start, double step) {
  ir::OpaqueOp o;
  o.function = "arange";
  o.vector_flops = c.t(out).num_elements();
  o.special_ops = Count(0);
  o.bytes = c.t(out).size_bytes();
  o.assumption = "one multiply-add per element (start + i*step); writes the output once";
  o.attrs = {{"start", start}, {"step", step}};
  c.opaque({}, {out}, std::move(o));
}

void lower_arange(Context& c) {
  const double start = c.has("start") ? c.num_arg("start", 0) : 0;
  arange_into(c, c.def(0), start, c.num_arg("step", 1));
}

void lower_linspace(Context& c) {
  const double start = c.num_arg("start", 0), end = c.num_arg("end", 0);
  const std::int64_t steps = c.int_arg("steps", 1);
  if (c.has("start") && !number_value(c.a("start"))) throw Unsupported("linspace with tensor bounds");
  arange_into(c, c.def(0), start, steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0);
}

// eye(n, m): ones on the diagonal as a masked fill (masked points hold 0).
void lower_eye(Context& c) {
  TensorId out = c.def(0);
  if (c.t(out).shape.size() != 2) throw Unsupported("eye of rank != 2");
  AffineExpr d = AffineExpr::make({AffineTerm{0, 1}, AffineTerm{1, -1}}, 0);
  AffineExpr nd = AffineExpr::make({AffineTerm{0, -1}, AffineTerm{1, 1}}, 0);
  c.elementwise({}, out, num(1), {{d}, {nd}});
}

// triu/tril: a masked elementwise copy over the last two dimensions; the masked-out
// points hold 0, the identity of reduce none.
Fn triangle(bool upper) {
  return [=](Context& c) {
    TensorId in = c.use_arg("self");
    TensorId out = c.def(0);
    const std::size_t r = c.t(out).shape.size();
    if (r < 2) throw Unsupported("triu/tril of a rank < 2 tensor");
    std::int64_t k = c.int_arg("diagonal", 0);
    auto row = static_cast<ir::IndexPos>(r - 2), col = static_cast<ir::IndexPos>(r - 1);
    // upper: col - row - k >= 0; lower: row - col + k >= 0
    AffineExpr e = upper ? AffineExpr::make({AffineTerm{col, 1}, AffineTerm{row, -1}}, -k)
                         : AffineExpr::make({AffineTerm{row, 1}, AffineTerm{col, -1}}, k);
    c.elementwise({in}, out, arg(0), {{e}});
  };
}

// ---------------------------------------------------------------- losses, advanced indexing

// Reduction enum of aten losses: 0 none, 1 mean, 2 sum.
void loss_reduce(Context& c, TensorId per_element, TensorId out) {
  std::int64_t mode = c.int_arg("reduction", 1);
  if (mode == 0) throw InternalError("loss_reduce with reduction none", __FILE__, __LINE__);
  const auto shape = c.t(per_element).shape;
  if (mode == 2) return c.reduce(per_element, out, {}, Reduce::Sum);
  TensorId s = c.temp("sum", c.t(out).shape, c.t(out).dtype);
  c.reduce(per_element, s, {}, Reduce::Sum);
  c.elementwise({s}, out, mul(arg(0), num(1 / static_cast<double>(std::max<std::int64_t>(numel(shape), 1)))));
}

// Pointwise losses: f(self, target) per element, then none / mean / sum.
Fn pointwise_loss(std::function<Expr(Context&, Expr, Expr)> f) {
  return [f](Context& c) {
    TensorId x = c.use_arg("self"), y = c.use_arg("target");
    TensorId out = c.def(0);
    Expr e = f(c, arg(0), arg(1));
    std::vector<TensorId> ins{x, y};
    if (c.has("weight")) ins.push_back(c.use_arg("weight")), e = mul(e, arg(2));  // broadcast
    if (c.int_arg("reduction", 1) == 0) return c.elementwise(ins, out, e);
    TensorId per = c.temp("loss", c.t(x).shape, c.t(out).dtype);
    c.elementwise(ins, per, e);
    loss_reduce(c, per, out);
  };
}

Expr huber(Context& c, Expr x, Expr y, double delta, bool smooth_l1) {
  // |d| < delta: 0.5 d^2 (/ beta for smooth L1); else delta (|d| - 0.5 delta) (|d| - 0.5 beta)
  Expr d = un(ExprOp::Abs, sub(x, y));
  (void)c;
  Expr quad = mul(num(smooth_l1 ? 0.5 / delta : 0.5), un(ExprOp::Square, d));
  Expr lin = smooth_l1 ? sub(d, num(0.5 * delta)) : mul(num(delta), sub(d, num(0.5 * delta)));
  return fn(ExprOp::Select, {fn(ExprOp::Lt, {d, num(delta)}), quad, lin});
}

// nll_loss_forward / nll_loss2d_forward: input [N, C, d...] (or [C]), target [N, d...].
// Exactly torch's rule: per[n..] = -w[t] * input[n, t, d..] where t = target[n..] !=
// ignore_index (0 elsewhere); none: per; sum: sum(per); mean: sum(per) / sum(w[t] over the
// counted targets). Output 1 (total_weight) is that denominator.
void lower_nll_loss(Context& c) {
  TensorId x = c.use_arg("self"), tgt = c.use_arg("target");
  auto xs = c.t(x).shape;
  const ir::DType dt = c.t(x).dtype;
  if (xs.size() == 1) {  // one sample: [C] with a scalar target
    TensorId v = c.temp("input", {1, xs[0]}, dt);
    c.move(MoveKind::View, {x}, v);
    x = v;
    xs = {1, xs[0]};
  }
  if (xs.size() < 2) throw Unsupported("nll_loss of a scalar input");
  std::vector<std::int64_t> ts = xs;  // target shape [N, d...]
  ts.erase(ts.begin() + 1);
  if (numel(c.t(tgt).shape) != numel(ts)) throw Unsupported("nll_loss target shape");
  const double ignore = c.num_arg("ignore_index", -100);
  TensorId t = tgt;
  if (c.t(tgt).shape != ts) {
    t = c.temp("target", ts, c.t(tgt).dtype);
    c.move(MoveKind::View, {tgt}, t);
  }
  // counted targets, and the target with ignored entries pointed at class 0 (read, then zeroed)
  TensorId valid = c.temp("valid", ts, ir::DType::Bool);
  c.elementwise({t}, valid, fn(ExprOp::Ne, {arg(0), num(ignore)}));
  std::vector<std::int64_t> idx_shape = xs;
  idx_shape[1] = 1;
  TensorId safe = c.temp("safe_target", ts, ir::DType::I64);
  c.elementwise({t, valid}, safe, fn(ExprOp::Select, {arg(1), arg(0), num(0)}));
  TensorId idx = c.temp("index", idx_shape, ir::DType::I64);
  c.move(MoveKind::View, {safe}, idx);
  TensorId picked = c.temp("picked", idx_shape, dt);
  c.move(MoveKind::Gather, {x, idx}, picked, {{"axis", std::int64_t{1}}, {"mode", std::string("elements")}});
  TensorId pv = c.temp("picked_flat", ts, dt);
  c.move(MoveKind::View, {picked}, pv);
  // weight of each sample: w[t] (0 where ignored)
  TensorId wt = c.temp("weight_of", ts, dt);
  if (c.has("weight")) {
    TensorId wg = c.temp("class_weight", ts, dt);
    c.move(MoveKind::Gather, {c.use_arg("weight"), safe}, wg, {{"axis", std::int64_t{0}}});
    c.elementwise({wg, valid}, wt, fn(ExprOp::Select, {arg(1), arg(0), num(0)}));
  } else {
    c.elementwise({valid}, wt, fn(ExprOp::Select, {arg(0), num(1), num(0)}));
  }
  const std::int64_t mode = c.int_arg("reduction", 1);
  TensorId out = c.def(0);
  TensorId per = mode == 0 ? out : c.temp("loss", ts, dt);
  if (mode == 0 && c.t(out).shape != ts) per = c.temp("loss", ts, dt);
  c.elementwise({pv, wt}, per, un(ExprOp::Neg, mul(arg(0), arg(1))));
  std::optional<TensorId> total;
  auto total_weight = [&] {
    if (!total) {
      total = c.out_id(1) && mode != 0 ? c.def(1) : c.temp("total_weight", {}, dt);
      c.reduce(wt, *total, {}, Reduce::Sum);
    }
    return *total;
  };
  if (mode == 0) {
    if (per != out) c.move(MoveKind::View, {per}, out);
    if (c.out_id(1)) c.elementwise({}, c.def(1), num(0));
    return;
  }
  if (mode == 2) {
    c.reduce(per, out, {}, Reduce::Sum);
    if (c.out_id(1)) total_weight();
    return;
  }
  TensorId s = c.temp("sum", {}, dt);
  c.reduce(per, s, {}, Reduce::Sum);
  TensorId den = total_weight();
  TensorId o = out;
  if (!c.t(out).shape.empty()) o = c.temp("mean", {}, dt);
  c.elementwise({s, den}, o, fn(ExprOp::Div, {arg(0), arg(1)}));
  if (o != out) c.move(MoveKind::View, {o}, out);
}

// ---------------------------------------------------------------- advanced indexing

// nonzero(mask): the coordinates (i64 [K, rank]) of its nonzero elements. K depends on the
// data; it is the count of the captured run, and the executor refuses data with another.
void nonzero_into(Context& c, TensorId mask, TensorId out) {
  ir::OpaqueOp o;
  o.function = "nonzero_coords";
  o.vector_flops = c.t(mask).num_elements();
  o.special_ops = Count(0);
  o.bytes = c.t(mask).size_bytes() + c.t(out).size_bytes();
  o.assumption = "one test per element; writes the coordinates of the nonzero ones (their "
                 "count is the captured run's)";
  c.opaque({mask}, {out}, std::move(o));
}

// The advanced (tensor) indices of index / index_put, as one long index per indexed
// dimension of self: a boolean mask over m dimensions becomes the m columns of its nonzero
// coordinates (K of them).
struct Advanced {
  std::vector<std::int64_t> dims;      // indexed dimensions of self, ascending
  std::vector<TensorId> index;         // one long index per indexed dimension
  std::vector<std::int64_t> bshape;    // the broadcast shape of the indices
  bool adjacent = true;
};

std::vector<std::int64_t> broadcast_shapes(const std::vector<std::vector<std::int64_t>>& shapes) {
  std::size_t r = 0;
  for (const auto& s : shapes) r = std::max(r, s.size());
  std::vector<std::int64_t> out(r, 1);
  for (const auto& s : shapes)
    for (std::size_t d = 0; d < s.size(); ++d) {
      std::int64_t& o = out[d + r - s.size()];
      if (s[d] == o || s[d] == 1) continue;
      if (o != 1) throw Unsupported("index tensors that do not broadcast together");
      o = s[d];
    }
  return out;
}

// `bool_count`: K for a boolean mask (the number of its true elements in the captured run).
Advanced advanced_indices(Context& c, std::optional<std::int64_t> bool_count) {
  const auto& list = c.a("indices");
  if (!list.is_array()) throw Unsupported("index without an index list");
  Advanced a;
  std::int64_t pos = 0;
  std::vector<std::vector<std::int64_t>> shapes;
  for (const auto& entry : list) {
    if (entry.is_null()) {
      ++pos;
      continue;
    }
    if (!entry.is_object() || !entry.contains("tensor")) throw Unsupported("a non-tensor index");
    const std::int64_t id = entry["tensor"].get<std::int64_t>();
    const std::string& dt = c.tt(id).dtype;
    TensorId t = c.use(id);
    if (dt == "bool" || dt == "uint8") {
      if (!bool_count) throw Unsupported("a boolean mask beside other index tensors");
      const std::int64_t m = static_cast<std::int64_t>(c.t(t).shape.size()), K = *bool_count;
      TensorId nz = c.temp("nonzero", {K, m}, ir::DType::I64);
      nonzero_into(c, t, nz);
      for (std::int64_t j = 0; j < m; ++j) {
        TensorId col = c.temp("col", {K, 1}, ir::DType::I64);
        slice_into(c, nz, col, 1, j, j + 1, 1);
        TensorId v = c.temp("index", {K}, ir::DType::I64);
        c.move(MoveKind::View, {col}, v);
        a.dims.push_back(pos + j);
        a.index.push_back(v);
        shapes.push_back({K});
      }
      pos += m;
      continue;
    }
    if (dt != "int64" && dt != "int32" && dt != "int16" && dt != "int8")
      throw Unsupported(fmt::format("an index tensor of dtype {}", dt));
    a.dims.push_back(pos++);
    a.index.push_back(t);
    shapes.push_back(c.t(t).shape);
  }
  if (a.dims.empty()) throw Unsupported("index without an index tensor");
  for (std::size_t k = 1; k < a.dims.size(); ++k) a.adjacent = a.adjacent && a.dims[k] == a.dims[k - 1] + 1;
  a.bshape = broadcast_shapes(shapes);
  return a;
}

// One boolean mask as the only advanced index: its position in self and its rank.
std::optional<std::pair<std::int64_t, std::int64_t>> sole_mask(Context& c) {
  const auto& list = c.a("indices");
  if (!list.is_array()) return std::nullopt;
  std::optional<std::pair<std::int64_t, std::int64_t>> found;
  std::int64_t tensors = 0;
  for (std::size_t k = 0; k < list.size(); ++k) {
    if (list[k].is_null()) continue;
    ++tensors;
    if (!list[k].is_object() || !list[k].contains("tensor")) return std::nullopt;
    const auto& t = c.tt(list[k]["tensor"].get<std::int64_t>());
    if (t.dtype == "bool" || t.dtype == "uint8")
      found = std::pair{static_cast<std::int64_t>(k), static_cast<std::int64_t>(t.shape.size())};
  }
  if (tensors != 1) return std::nullopt;
  return found;
}

// self with the indexed dimensions (adjacent, from a.dims[0]) merged into one, and the
// linear index into that merged dimension: sum_j idx_j * stride_j, each index taken modulo
// its size when negative (one index alone is left to the gather, which does that itself).
std::pair<TensorId, TensorId> merged(Context& c, TensorId self, const Advanced& a) {
  const auto S = c.t(self).shape;
  const std::size_t m = a.dims.size(), p0 = static_cast<std::size_t>(a.dims[0]);
  if (m == 1) return {self, a.index[0]};
  std::vector<std::int64_t> fs(S.begin(), S.begin() + p0);
  std::int64_t prod = 1;
  for (std::size_t j = 0; j < m; ++j) prod *= S[p0 + j];
  fs.push_back(prod);
  fs.insert(fs.end(), S.begin() + p0 + m, S.end());
  TensorId flat = c.temp("merged", fs, c.t(self).dtype);
  c.move(MoveKind::View, {self}, flat);
  TensorId lin = c.temp("linear_index", a.bshape, ir::DType::I64);
  Expr sum;
  std::int64_t stride = prod;
  for (std::size_t j = 0; j < m; ++j) {
    const std::int64_t size = S[p0 + j];
    stride /= size;
    Expr x = arg(static_cast<int>(j));
    Expr term = fn(ExprOp::Select, {fn(ExprOp::Lt, {x, num(0)}), add(x, num(static_cast<double>(size))), x});
    if (stride != 1) term = mul(term, num(static_cast<double>(stride)));
    sum = j == 0 ? term : add(sum, term);
  }
  c.elementwise(a.index, lin, sum);
  return {flat, lin};
}

// self with its indexed dimensions moved to the front (torch's rule for non-adjacent
// advanced indices: the indexed result dimensions come first). A copy.
TensorId indexed_dims_first(Context& c, TensorId self, Advanced& a) {
  const auto S = c.t(self).shape;
  std::vector<std::int64_t> perm = a.dims, shape;
  for (std::size_t d = 0; d < S.size(); ++d)
    if (std::find(a.dims.begin(), a.dims.end(), static_cast<std::int64_t>(d)) == a.dims.end())
      perm.push_back(static_cast<std::int64_t>(d));
  for (std::int64_t d : perm) shape.push_back(S[d]);
  TensorId t = c.temp("indexed_first", shape, c.t(self).dtype);
  c.move(MoveKind::Permute, {self}, t, {{"perm", perm}});
  for (std::size_t j = 0; j < a.dims.size(); ++j) a.dims[j] = static_cast<std::int64_t>(j);
  a.adjacent = true;
  return t;
}

// index.Tensor: x[i], x[i, j], x[:, i], x[mask]: a take-mode gather over the indexed
// dimensions merged into one, with the linear index.
void lower_index(Context& c) {
  std::int64_t x = c.trace_id("self");
  TensorId self = c.use(x);
  const auto& os = c.tt(*c.out_id(0)).shape;
  std::optional<std::int64_t> K;
  if (auto m = sole_mask(c)) {
    if (m->first >= static_cast<std::int64_t>(os.size())) throw Unsupported("mask index rank");
    K = os[m->first];
  }
  Advanced a = advanced_indices(c, K);
  if (!a.adjacent) self = indexed_dims_first(c, self, a);
  auto [data, lin] = merged(c, self, a);
  c.move(MoveKind::Gather, {data, lin}, c.def(0), {{"axis", a.dims[0]}});
}

// index_put(self, indices, values, accumulate) and x[...] = v: a take-mode scatter (sum when
// accumulating) into the merged indexed dimensions; x[mask] = scalar is a select.
void lower_index_put(Context& c) {
  std::int64_t x = c.trace_id("self");
  TensorId self = c.use(x);
  TensorId values = c.use_arg("values");
  const bool accumulate = c.bool_arg("accumulate", false);
  const auto S = c.t(self).shape;
  if (c.t(values).dtype != c.t(self).dtype) {
    TensorId cast = c.temp("values", c.t(values).shape, c.t(self).dtype);
    c.move(MoveKind::Cast, {values}, cast);
    values = cast;
  }
  if (auto m = sole_mask(c); m && numel(c.t(values).shape) == 1) {
    const auto& list = c.a("indices");
    TensorId mask = c.use(list[m->first]["tensor"].get<std::int64_t>());
    std::vector<std::int64_t> ms = c.t(mask).shape;
    const std::size_t trailing = S.size() - static_cast<std::size_t>(m->first + m->second);
    if (trailing > 0) {
      ms.insert(ms.end(), trailing, 1);
      TensorId v = c.temp("mask", ms, c.t(mask).dtype);
      c.move(MoveKind::View, {mask}, v);
      mask = v;
    }
    TensorId scalar = values;
    if (!c.t(values).shape.empty()) {
      scalar = c.temp("value", {}, c.t(values).dtype);
      c.move(MoveKind::View, {values}, scalar);
    }
    Expr y = accumulate ? add(arg(0), fn(ExprOp::Select, {arg(1), arg(2), num(0)}))
                        : fn(ExprOp::Select, {arg(1), arg(2), arg(0)});
    c.elementwise({self, mask, scalar}, c.def(0), y);
    return;
  }
  if (sole_mask(c)) throw Unsupported("x[mask] = tensor (values of a data-dependent count)");
  Advanced a = advanced_indices(c, std::nullopt);
  if (!a.adjacent) throw Unsupported("index_put with non-adjacent index tensors");
  auto [data, lin] = merged(c, self, a);
  // src: values broadcast to data.shape[:p0] + bshape + data.shape[p0+1:]
  const auto ds = c.t(data).shape;
  const std::size_t p0 = static_cast<std::size_t>(a.dims[0]);
  std::vector<std::int64_t> ss(ds.begin(), ds.begin() + p0);
  ss.insert(ss.end(), a.bshape.begin(), a.bshape.end());
  ss.insert(ss.end(), ds.begin() + p0 + 1, ds.end());
  TensorId src = values;
  if (c.t(values).shape != ss) {
    src = c.temp("src", ss, c.t(values).dtype);
    c.move(MoveKind::View, {values}, src);
  }
  TensorId out = c.def(0);
  TensorId target = data == self ? out : c.temp("scattered", ds, c.t(self).dtype);
  c.move(MoveKind::Scatter, {data, lin, src}, target,
         {{"axis", a.dims[0]}, {"mode", std::string("take")},
          {"reduce", std::string(accumulate ? "sum" : "none")}});
  if (target != out) c.move(MoveKind::View, {target}, out);
}

// index_add / index_copy / index_fill along one dimension: take-mode scatters.
void lower_index_scatter(Context& c, const char* reduce, bool fill) {
  std::int64_t x = c.trace_id("self");
  TensorId self = c.use(x);
  const auto S = c.t(self).shape;
  std::int64_t dim = norm_dim(c.int_arg("dim", 0), S.size());
  TensorId index = c.use_arg("index");
  TensorId src;
  if (fill) {
    std::vector<std::int64_t> ss(S.begin(), S.begin() + dim);
    const auto& is = c.t(index).shape;
    ss.insert(ss.end(), is.begin(), is.end());
    if (!S.empty()) ss.insert(ss.end(), S.begin() + dim + 1, S.end());
    src = c.temp("fill", ss, c.t(self).dtype);
    std::vector<TensorId> in;
    Expr v = operand(c, "value", in);
    c.elementwise(in, src, v);
  } else {
    src = c.use_arg("source");
    double alpha = c.num_arg("alpha", 1);
    if (alpha != 1) {
      TensorId scaled_src = c.temp("scaled", c.t(src).shape, c.t(src).dtype);
      c.elementwise({src}, scaled_src, mul(arg(0), num(alpha)));
      src = scaled_src;
    }
  }
  c.move(MoveKind::Scatter, {self, index, src}, c.def(0),
         {{"axis", dim}, {"mode", std::string("take")}, {"reduce", std::string(reduce)}});
}

// masked_select(self, mask): the elements where mask holds, in row-major order.
void lower_masked_select(Context& c) {
  TensorId self = c.use_arg("self"), mask = c.use_arg("mask");
  const auto S = c.t(self).shape;
  if (c.t(mask).shape != S) throw Unsupported("masked_select with a broadcast mask");
  TensorId out = c.def(0);
  const std::int64_t K = c.t(out).shape.at(0);
  const std::int64_t R = static_cast<std::int64_t>(S.size());
  TensorId nz = c.temp("nonzero", {K, R}, ir::DType::I64);
  nonzero_into(c, mask, nz);
  // linear index = nz @ row-major strides
  TensorId lin = c.temp("linear_index", {K}, ir::DType::I64);
  Space s;
  ir::IndexPos k = s.add("k", K);
  std::vector<std::vector<AffineExpr>> subs;
  std::vector<TensorId> ins;
  Expr sum;
  std::int64_t stride = numel(S);
  for (std::int64_t d = 0; d < R; ++d) {
    stride /= S[d];
    ins.push_back(nz);
    subs.push_back({ix(k), AffineExpr::constant(d)});
    Expr term = stride == 1 ? arg(static_cast<int>(d)) : mul(arg(static_cast<int>(d)), num(static_cast<double>(stride)));
    sum = d == 0 ? term : add(sum, term);
  }
  if (R == 0) throw Unsupported("masked_select of a scalar");
  c.einsum(ins, lin, std::move(s), std::move(subs), {ix(k)}, sum, Reduce::None);
  TensorId flat = c.temp("flat", {numel(S)}, c.t(self).dtype);
  c.move(MoveKind::View, {self}, flat);
  c.move(MoveKind::Gather, {flat, lin}, out, {{"axis", std::int64_t{0}}});
}

void lower_nonzero(Context& c) { nonzero_into(c, c.use_arg("self"), c.def(0)); }

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

// diag_embed(x, offset, dim1, dim2): x's last dimension on a diagonal of two new dimensions,
// a masked copy (off-diagonal points hold 0).
void lower_diag_embed(Context& c) {
  TensorId in = c.use_arg("self");
  TensorId out = c.def(0);
  const auto os = c.t(out).shape;
  const std::size_t r = os.size();
  std::int64_t d1 = norm_dim(c.int_arg("dim1", -2), r), d2 = norm_dim(c.int_arg("dim2", -1), r);
  std::int64_t off = c.int_arg("offset", 0);
  if (d1 == d2) throw Unsupported("diag_embed over one dimension twice");
  if (d1 > d2) std::swap(d1, d2), off = -off;
  Space s;
  std::vector<AffineExpr> so, si;
  std::vector<ir::IndexPos> idx;
  for (std::size_t d = 0; d < r; ++d) {
    idx.push_back(s.add(fmt::format("i{}", d), os[d]));
    so.push_back(ix(idx.back()));
  }
  for (std::size_t d = 0; d < r; ++d)
    if (static_cast<std::int64_t>(d) != d1 && static_cast<std::int64_t>(d) != d2) si.push_back(ix(idx[d]));
  // the diagonal's position along x's last dimension: i1 when off >= 0 (i2 = i1 + off),
  // else i2; written through the other index (i2 - off, i1 + off) so that a nonzero offset
  // is an affine read, the diagonal's length being the output's minus |off|
  si.push_back(off >= 0 ? AffineExpr::make({AffineTerm{idx[d2], 1}}, -off)
                        : AffineExpr::make({AffineTerm{idx[d1], 1}}, off));
  AffineExpr e = AffineExpr::make({AffineTerm{idx[d2], 1}, AffineTerm{idx[d1], -1}}, -off);
  AffineExpr ne = AffineExpr::make({AffineTerm{idx[d2], -1}, AffineTerm{idx[d1], 1}}, off);
  c.einsum({in}, out, std::move(s), {si}, so, arg(0), Reduce::None, {{e}, {ne}}, {0.0});
}

// pixel_shuffle(r): out[.., c, h*r+i, w*r+j] = in[.., c*r*r + i*r + j, h, w] (a copy);
// pixel_unshuffle is its inverse.
void lower_pixel_shuffle(Context& c, bool shuffle) {
  TensorId in = c.use_arg("self");
  TensorId out = c.def(0);
  const std::int64_t f = c.int_arg(shuffle ? "upscale_factor" : "downscale_factor", 1);
  const auto big = shuffle ? c.t(out).shape : c.t(in).shape;   // [.., C, H*r, W*r]
  const std::size_t r = big.size();
  if (r < 3 || big[r - 2] % f != 0 || big[r - 1] % f != 0) throw Unsupported("pixel shuffle shape");
  Space s;
  std::vector<AffineExpr> lead;
  for (std::size_t d = 0; d + 3 < r; ++d) lead.push_back(ix(s.add(fmt::format("b{}", d), big[d])));
  ir::IndexPos ch = s.add("c", big[r - 3]), h = s.add("h", big[r - 2] / f), i = s.add("i", f),
               w = s.add("w", big[r - 1] / f), j = s.add("j", f);
  std::vector<AffineExpr> sbig = lead, ssmall = lead;
  sbig.insert(sbig.end(), {ix(ch), AffineExpr::make({AffineTerm{h, f}, AffineTerm{i, 1}}, 0),
                           AffineExpr::make({AffineTerm{w, f}, AffineTerm{j, 1}}, 0)});
  ssmall.insert(ssmall.end(),
                {AffineExpr::make({AffineTerm{ch, f * f}, AffineTerm{i, f}, AffineTerm{j, 1}}, 0), ix(h), ix(w)});
  if (shuffle) c.einsum({in}, out, std::move(s), {ssmall}, sbig, arg(0), Reduce::None);
  else c.einsum({in}, out, std::move(s), {sbig}, ssmall, arg(0), Reduce::None);
}

// im2col (F.unfold): out[n, (c, ki, kj), (oh, ow)] = x[n, c, oh*s + ki*d - p, ow*s + kj*d - p]
// (pad 0), a copy with mixed-radix output subscripts.
void lower_im2col(Context& c) {
  TensorId in = c.use_arg("self");
  TensorId out = c.def(0);
  const auto xs = c.t(in).shape;
  if (xs.size() != 4 && xs.size() != 3) throw Unsupported("im2col of rank other than 3 or 4");
  const bool batched = xs.size() == 4;
  auto k = per_dim(c, "kernel_size", 2, 1), d = per_dim(c, "dilation", 2, 1), p = per_dim(c, "padding", 2, 0),
       st = per_dim(c, "stride", 2, 1);
  const std::int64_t C = xs[batched ? 1 : 0], H = xs[xs.size() - 2], W = xs[xs.size() - 1];
  const std::int64_t OH = (H + 2 * p[0] - d[0] * (k[0] - 1) - 1) / st[0] + 1,
                     OW = (W + 2 * p[1] - d[1] * (k[1] - 1) - 1) / st[1] + 1;
  Space s;
  std::vector<AffineExpr> sx, so;
  if (batched) {
    AffineExpr n = ix(s.add("n", xs[0]));
    sx.push_back(n), so.push_back(n);
  }
  ir::IndexPos ci = s.add("c", C), ki = s.add("ki", k[0]), kj = s.add("kj", k[1]), oh = s.add("oh", OH),
               ow = s.add("ow", OW);
  sx.insert(sx.end(), {ix(ci), AffineExpr::make({AffineTerm{oh, st[0]}, AffineTerm{ki, d[0]}}, -p[0]),
                       AffineExpr::make({AffineTerm{ow, st[1]}, AffineTerm{kj, d[1]}}, -p[1])});
  so.insert(so.end(), {AffineExpr::make({AffineTerm{ci, k[0] * k[1]}, AffineTerm{ki, k[1]}, AffineTerm{kj, 1}}, 0),
                       AffineExpr::make({AffineTerm{oh, OW}, AffineTerm{ow, 1}}, 0)});
  c.einsum({in}, out, std::move(s), {sx}, so, arg(0), Reduce::None, {}, {0.0});
}

// upsample_nearest{1,2,3}d: out[o] = in[floor(o * L / O)] per spatial dimension (torch's
// rule when the scale is the size ratio). An integer ratio s is a copy with output subscript
// s*i + j; otherwise a sum over j masked to the one j with j*O <= o*L < (j+1)*O.
void lower_upsample_nearest(Context& c, std::size_t nd) {
  TensorId in = c.use_arg("self");
  TensorId out = c.def(0);
  const auto is = c.t(in).shape, os = c.t(out).shape;
  if (is.size() < nd || os.size() != is.size()) throw Unsupported("upsample rank mismatch");
  const std::size_t lead = is.size() - nd;
  // explicit scales must be the size ratios
  const auto& scales = c.a("scales");
  std::vector<std::optional<double>> sc;
  if (scales.is_array()) for (const auto& v : scales) sc.push_back(number_value(v));
  for (const char* key : {"scales_d", "scales_h", "scales_w"})
    if (c.has(key)) sc.push_back(number_value(c.a(key)));
  for (std::size_t k = 0; k < sc.size() && k < nd; ++k) {
    std::size_t d = nd - sc.size() + k;
    if (sc[k] && std::abs(*sc[k] * static_cast<double>(is[lead + d]) - static_cast<double>(os[lead + d])) > 1e-9 * static_cast<double>(os[lead + d]))
      throw Unsupported("nearest upsampling with a scale that is not the size ratio");
  }
  Space s;
  std::vector<AffineExpr> si, so;
  std::vector<ir::AffineConstraint> mask;
  for (std::size_t d = 0; d < lead; ++d) {
    if (is[d] != os[d]) throw Unsupported("upsampling changes a batch dimension");
    AffineExpr b = ix(s.add(fmt::format("b{}", d), is[d]));
    si.push_back(b), so.push_back(b);
  }
  bool masked = false;
  for (std::size_t d = 0; d < nd; ++d) {
    const std::int64_t L = is[lead + d], O = os[lead + d];
    if (O % L == 0) {
      const std::int64_t f = O / L;
      ir::IndexPos i = s.add(fmt::format("i{}", d), L), j = s.add(fmt::format("j{}", d), f);
      si.push_back(ix(i));
      so.push_back(AffineExpr::make({AffineTerm{i, f}, AffineTerm{j, 1}}, 0));
      continue;
    }
    masked = true;
    ir::IndexPos o = s.add(fmt::format("o{}", d), O), j = s.add(fmt::format("j{}", d), L);
    si.push_back(ix(j));
    so.push_back(ix(o));
    mask.push_back({AffineExpr::make({AffineTerm{o, L}, AffineTerm{j, -O}}, 0)});
    mask.push_back({AffineExpr::make({AffineTerm{o, -L}, AffineTerm{j, O}}, O - 1)});
  }
  c.einsum({in}, out, std::move(s), {si}, so, arg(0), masked ? Reduce::Sum : Reduce::None, mask);
}

// ---------------------------------------------------------------- the table

const Table& table() {
  static const Table t = [] {
    Table m;
    auto reg = [&m](std::string_view name, Fn f) { m.emplace(name, std::move(f)); };
    register_math_ops(reg);  // first: its bitwise and div-with-rounding entries win (emplace)
    // Elementwise: functional and in-place overloads share a lowering (the trace gives an
    // in-place result a new tensor version).
    for (auto [name, op, alpha, rev] :
         std::initializer_list<std::tuple<std::string_view, ExprOp, bool, bool>>{
             {"aten::add.Tensor", ExprOp::Add, true, false}, {"aten::add_.Tensor", ExprOp::Add, true, false},
             {"aten::add.Scalar", ExprOp::Add, true, false}, {"aten::add_.Scalar", ExprOp::Add, true, false},
             {"aten::sub.Tensor", ExprOp::Sub, true, false}, {"aten::sub_.Tensor", ExprOp::Sub, true, false},
             {"aten::sub.Scalar", ExprOp::Sub, true, false}, {"aten::sub_.Scalar", ExprOp::Sub, true, false},
             {"aten::rsub.Tensor", ExprOp::Sub, true, true}, {"aten::rsub.Scalar", ExprOp::Sub, true, true},
             {"aten::mul.Tensor", ExprOp::Mul, false, false}, {"aten::mul_.Tensor", ExprOp::Mul, false, false},
             {"aten::mul.Scalar", ExprOp::Mul, false, false}, {"aten::mul_.Scalar", ExprOp::Mul, false, false},
             {"aten::div.Tensor", ExprOp::Div, false, false}, {"aten::div_.Tensor", ExprOp::Div, false, false},
             {"aten::div.Scalar", ExprOp::Div, false, false}, {"aten::div_.Scalar", ExprOp::Div, false, false},
             {"aten::div.Tensor_mode", ExprOp::Div, false, false},
             {"aten::maximum.default", ExprOp::Max, false, false},
             {"aten::minimum.default", ExprOp::Min, false, false},
             {"aten::pow.Tensor_Tensor", ExprOp::Pow, false, false},
             {"aten::eq.Tensor", ExprOp::Eq, false, false}, {"aten::eq.Scalar", ExprOp::Eq, false, false},
             {"aten::ne.Tensor", ExprOp::Ne, false, false}, {"aten::ne.Scalar", ExprOp::Ne, false, false},
             {"aten::lt.Tensor", ExprOp::Lt, false, false}, {"aten::lt.Scalar", ExprOp::Lt, false, false},
             {"aten::le.Tensor", ExprOp::Le, false, false}, {"aten::le.Scalar", ExprOp::Le, false, false},
             {"aten::gt.Tensor", ExprOp::Gt, false, false}, {"aten::gt.Scalar", ExprOp::Gt, false, false},
             {"aten::ge.Tensor", ExprOp::Ge, false, false}, {"aten::ge.Scalar", ExprOp::Ge, false, false},
         })
      reg(name, binary(op, alpha, rev));
    reg("aten::pow.Tensor_Scalar", lower_pow);
    reg("aten::pow_.Scalar", lower_pow);
    for (auto [name, op] : std::initializer_list<std::pair<std::string_view, ExprOp>>{
             {"aten::relu.default", ExprOp::Relu}, {"aten::relu_.default", ExprOp::Relu},
             {"aten::sigmoid.default", ExprOp::Sigmoid}, {"aten::sigmoid_.default", ExprOp::Sigmoid},
             {"aten::tanh.default", ExprOp::Tanh}, {"aten::tanh_.default", ExprOp::Tanh},
             {"aten::exp.default", ExprOp::Exp}, {"aten::exp_.default", ExprOp::Exp},
             {"aten::log.default", ExprOp::Log}, {"aten::log_.default", ExprOp::Log},
             {"aten::sqrt.default", ExprOp::Sqrt}, {"aten::sqrt_.default", ExprOp::Sqrt},
             {"aten::rsqrt.default", ExprOp::Rsqrt}, {"aten::rsqrt_.default", ExprOp::Rsqrt},
             {"aten::neg.default", ExprOp::Neg}, {"aten::neg_.default", ExprOp::Neg},
             {"aten::abs.default", ExprOp::Abs}, {"aten::abs_.default", ExprOp::Abs},
             {"aten::reciprocal.default", ExprOp::Recip}, {"aten::erf.default", ExprOp::Erf},
             {"aten::sin.default", ExprOp::Sin}, {"aten::cos.default", ExprOp::Cos},
         })
      reg(name, unary(op));
    for (std::string_view name : {"aten::gelu.default", "aten::gelu_.default"}) reg(name, unary(gelu));
    for (std::string_view name : {"aten::mish.default", "aten::mish_.default"})
      reg(name, unary([](Context&, Expr x) { return mul(x, un(ExprOp::Tanh, softplus(x, 1, 20))); }));
    for (std::string_view name : {"aten::softplus.default"})
      reg(name, unary([](Context& c, Expr x) {
            return softplus(x, c.num_arg("beta", 1), c.num_arg("threshold", 20));
          }));
    for (std::string_view name : {"aten::hardsigmoid.default", "aten::hardsigmoid_.default"})
      reg(name, unary([](Context&, Expr x) { return hardsigmoid(x); }));
    for (std::string_view name : {"aten::hardswish.default", "aten::hardswish_.default"})
      reg(name, unary([](Context&, Expr x) { return mul(x, hardsigmoid(x)); }));
    for (std::string_view name : {"aten::elu.default", "aten::elu_.default"})
      reg(name, unary([](Context& c, Expr x) {
            // scale * (x > 0 ? x : alpha * (exp(input_scale * x) - 1))
            double alpha = c.num_arg("alpha", 1), scale = c.num_arg("scale", 1),
                   in_scale = c.num_arg("input_scale", 1);
            Expr neg = mul(num(alpha), sub(un(ExprOp::Exp, scaled(in_scale, x)), num(1)));
            return scaled(scale, fn(ExprOp::Select, {fn(ExprOp::Gt, {x, num(0)}), x, neg}));
          }));
    reg("aten::xlogy.Tensor", [](Context& c) {
      std::vector<TensorId> in;
      Expr x = operand(c, "self", in);
      Expr y = operand(c, "other", in);
      // 0 where x == 0 (even if y is 0 or nan is not modeled: y nan propagates in torch)
      c.elementwise(in, c.def(0),
                    fn(ExprOp::Select, {fn(ExprOp::Eq, {x, num(0)}), num(0), mul(x, un(ExprOp::Log, y))}));
    });
    for (std::string_view name : {"aten::silu.default", "aten::silu_.default"})
      reg(name, unary([](Context&, Expr x) { return mul(x, un(ExprOp::Sigmoid, x)); }));
    for (std::string_view name : {"aten::clamp.default", "aten::clamp_.default", "aten::clamp.Tensor"})
      reg(name, [](Context& c) { lower_clamp(c, "min", "max"); });
    reg("aten::clamp_min.default", [](Context& c) { lower_clamp(c, "min", "__none__"); });
    reg("aten::clamp_max.default", [](Context& c) { lower_clamp(c, "__none__", "max"); });
    for (std::string_view name : {"aten::hardtanh.default", "aten::hardtanh_.default"})
      reg(name, [](Context& c) { lower_clamp(c, "min_val", "max_val"); });
    for (std::string_view name : {"aten::leaky_relu.default", "aten::leaky_relu_.default"})
      reg(name, lower_leaky_relu);
    for (std::string_view name : {"aten::where.self", "aten::where.ScalarOther", "aten::where.ScalarSelf",
                                  "aten::where.Scalar"})
      reg(name, lower_where);
    for (std::string_view name : {"aten::masked_fill.Scalar", "aten::masked_fill_.Scalar",
                                  "aten::masked_fill.Tensor", "aten::masked_fill_.Tensor"})
      reg(name, lower_masked_fill);
    reg("aten::zeros.default", fill(0.0));
    reg("aten::zeros_like.default", fill(0.0));
    reg("aten::zero_.default", fill(0.0));
    reg("aten::ones.default", fill(1.0));
    reg("aten::ones_like.default", fill(1.0));
    reg("aten::full.default", fill(std::nullopt, "fill_value"));
    reg("aten::full_like.default", fill(std::nullopt, "fill_value"));
    reg("aten::fill_.Scalar", fill(std::nullopt, "value"));
    for (std::string_view name : {"aten::fill_.Tensor", "aten::fill.Tensor"})
      reg(name, [](Context& c) {  // the one value of a 0-d tensor, broadcast
        TensorId v = c.use_arg("value");
        if (numel(c.t(v).shape) != 1) throw Unsupported("fill with a tensor of more than one value");
        if (!c.t(v).shape.empty()) {
          TensorId s = c.temp("value", {}, c.t(v).dtype);
          c.move(MoveKind::View, {v}, s);
          v = s;
        }
        c.elementwise({v}, c.def(0), arg(0));
      });
    reg("aten::scalar_tensor.default", fill(std::nullopt, "s"));
    for (std::string_view name : {"aten::empty.memory_format", "aten::empty_like.default",
                                  "aten::empty_strided.default"})
      reg(name, lower_empty);
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
    reg("aten::_softmax.default", softmax(false));
    reg("aten::_log_softmax.default", softmax(true));
    reg("aten::softmax.int", softmax(false));
    reg("aten::log_softmax.int", softmax(true));
    // Norms.
    reg("aten::native_layer_norm.default", lower_layer_norm);
    reg("aten::_native_batch_norm_legit_no_training.default", [](Context& c) { batch_norm(c, false); });
    reg("aten::_native_batch_norm_legit.default",
        [](Context& c) { batch_norm(c, c.bool_arg("training", true)); });
    reg("aten::_native_batch_norm_legit.no_stats", [](Context& c) { batch_norm(c, true); });
    reg("aten::native_batch_norm.default",
        [](Context& c) { batch_norm(c, c.bool_arg("training", true)); });
    // Contractions.
    reg("aten::mm.default", matmul("self", "mat2"));
    reg("aten::bmm.default", matmul("self", "mat2"));
    reg("aten::matmul.default", matmul("self", "other"));
    reg("aten::mv.default", matmul("self", "vec"));
    reg("aten::dot.default", matmul("self", "tensor"));
    reg("aten::addmm.default", add_matmul("mat1", "mat2"));
    reg("aten::baddbmm.default", add_matmul("batch1", "batch2"));
    reg("aten::addmv.default", add_matmul("mat", "vec"));
    reg("aten::linear.default", lower_linear);
    reg("aten::convolution.default", lower_convolution);
    for (std::size_t nd : {1, 2, 3}) {
      static const char* const mp[] = {"aten::max_pool1d_with_indices.default",
                                       "aten::max_pool2d_with_indices.default",
                                       "aten::max_pool3d_with_indices.default"};
      static const char* const mpp[] = {"aten::max_pool1d.default", "aten::max_pool2d.default",
                                        "aten::max_pool3d.default"};
      static const char* const ap[] = {"aten::avg_pool1d.default", "aten::avg_pool2d.default",
                                       "aten::avg_pool3d.default"};
      static const char* const aap[] = {"aten::adaptive_avg_pool1d.default",
                                        "aten::_adaptive_avg_pool2d.default",
                                        "aten::_adaptive_avg_pool3d.default"};
      static const char* const amp[] = {"aten::adaptive_max_pool1d.default",
                                        "aten::adaptive_max_pool2d.default",
                                        "aten::adaptive_max_pool3d.default"};
      reg(mp[nd - 1], max_pool(nd));
      reg(mpp[nd - 1], max_pool(nd));
      reg(ap[nd - 1], avg_pool(nd));
      reg(aap[nd - 1], adaptive_pool(nd, false));
      reg(amp[nd - 1], adaptive_pool(nd, true));
    }
    reg("aten::adaptive_avg_pool2d.default", adaptive_pool(2, false));
    reg("aten::constant_pad_nd.default", lower_constant_pad);
    reg("aten::native_group_norm.default", lower_group_norm);
    reg("aten::_convolution.default", lower_convolution);
    for (std::string_view name :
         {"aten::scaled_dot_product_attention.default",
          "aten::_scaled_dot_product_flash_attention_for_cpu.default",
          "aten::_scaled_dot_product_flash_attention.default",
          "aten::_scaled_dot_product_efficient_attention.default",
          "aten::_scaled_dot_product_cudnn_attention.default",
          "aten::_scaled_dot_product_attention_math.default"})
      reg(name, lower_sdpa);
    // Data movement.
    for (std::string_view name :
         {"aten::view.default", "aten::_unsafe_view.default", "aten::reshape.default",
          "aten::expand.default", "aten::squeeze.dim", "aten::squeeze.dims", "aten::squeeze.default",
          "aten::unsqueeze.default", "aten::alias.default", "aten::detach.default",
          "aten::_reshape_alias.default", "aten::lift_fresh.default",
          "aten::flatten.using_ints", "aten::unflatten.int", "aten::expand_as.default",
          "aten::view_as.default", "aten::unsqueeze_.default", "aten::squeeze_.dim",
          "aten::squeeze_.default", "aten::squeeze_.dims", "aten::detach_.default"})
      reg(name, lower_view);
    reg("aten::t.default", lower_t);
    reg("aten::t_.default", lower_t);
    reg("aten::transpose.int", lower_transpose);
    reg("aten::transpose_.default", lower_transpose);
    reg("aten::permute.default", lower_permute);
    reg("aten::numpy_T.default", lower_reverse_dims);
    reg("aten::mT.default", lower_last_two_swapped);
    reg("aten::adjoint.default", lower_last_two_swapped);
    reg("aten::unfold.default", lower_unfold);
    reg("aten::diagonal.default", lower_diagonal);
    reg("aten::as_strided.default", lower_as_strided);
    reg("aten::as_strided_.default", lower_as_strided);
    reg("aten::as_strided_scatter.default", lower_as_strided_scatter);
    reg("aten::slice.Tensor", lower_slice);
    reg("aten::select.int", lower_select);
    reg("aten::split.Tensor", [](Context& c) { lower_split(c, false); });
    reg("aten::split_with_sizes.default", [](Context& c) { lower_split(c, false); });
    reg("aten::chunk.default", [](Context& c) { lower_split(c, false); });
    reg("aten::unbind.int", [](Context& c) { lower_split(c, true); });
    reg("aten::unsafe_split.Tensor", [](Context& c) { lower_split(c, false); });
    reg("aten::unsafe_split_with_sizes.default", [](Context& c) { lower_split(c, false); });
    reg("aten::unsafe_chunk.default", [](Context& c) { lower_split(c, false); });
    reg("aten::stack.default", lower_stack);
    reg("aten::clone.default", [](Context& c) { lower_copy(c, "self"); });
    reg("aten::contiguous.default", [](Context& c) { lower_copy(c, "self"); });
    reg("aten::_to_copy.default", [](Context& c) { lower_copy(c, "self"); });
    reg("aten::copy_.default", [](Context& c) { lower_copy(c, "src"); });
    reg("aten::copy.default", [](Context& c) { lower_copy(c, "src"); });
    reg("aten::repeat.default", [](Context& c) { lower_copy(c, "self"); });
    reg("aten::cat.default", lower_cat);
    reg("aten::embedding.default", [](Context& c) { lower_gather_rows(c, "weight", "indices", 0); });
    reg("aten::index_select.default",
        [](Context& c) { lower_gather_rows(c, "self", "index", norm_dim(c.int_arg("dim", 0), c.shape(c.trace_id("self")).size())); });
    reg("aten::native_dropout.default", lower_dropout);
    reg("aten::cumsum.default", scan("cumsum"));
    reg("aten::mse_loss.default",
        pointwise_loss([](Context&, Expr x, Expr y) { return un(ExprOp::Square, sub(x, y)); }));
    reg("aten::l1_loss.default",
        pointwise_loss([](Context&, Expr x, Expr y) { return un(ExprOp::Abs, sub(x, y)); }));
    reg("aten::huber_loss.default", pointwise_loss([](Context& c, Expr x, Expr y) {
          return huber(c, x, y, c.num_arg("delta", 1.0), false);
        }));
    reg("aten::smooth_l1_loss.default", pointwise_loss([](Context& c, Expr x, Expr y) {
          return huber(c, x, y, c.num_arg("beta", 1.0), true);
        }));
    reg("aten::binary_cross_entropy.default", pointwise_loss([](Context&, Expr x, Expr y) {
          // -(y log x + (1 - y) log(1 - x)); torch clamps each log at -100
          Expr lx = fn(ExprOp::Max, {un(ExprOp::Log, x), num(-100)});
          Expr l1x = fn(ExprOp::Max, {un(ExprOp::Log, sub(num(1), x)), num(-100)});
          return un(ExprOp::Neg, add(mul(y, lx), mul(sub(num(1), y), l1x)));
        }));
    reg("aten::nll_loss_forward.default", lower_nll_loss);
    reg("aten::nll_loss.default", lower_nll_loss);
    reg("aten::nll_loss2d_forward.default", lower_nll_loss);
    reg("aten::nll_loss2d.default", lower_nll_loss);
    reg("aten::nll_loss_nd.default", lower_nll_loss);
    // Logical and bitwise ops on booleans (bitwise_not of integers: -x - 1).
    reg("aten::bitwise_not.default", [](Context& c) {
      TensorId in = c.use_arg("self");
      const bool b = c.t(in).dtype == ir::DType::Bool;
      if (!b && !ir::is_integer(c.t(in).dtype)) throw Unsupported("bitwise_not of a float tensor");
      c.elementwise({in}, c.def(0), b ? fn(ExprOp::Eq, {arg(0), num(0)}) : sub(un(ExprOp::Neg, arg(0)), num(1)));
    });
    reg("aten::logical_not.default", [](Context& c) {
      c.elementwise({c.use_arg("self")}, c.def(0), fn(ExprOp::Eq, {arg(0), num(0)}));
    });
    for (auto [name, logical, op] :
         std::initializer_list<std::tuple<std::string_view, bool, ExprOp>>{
             {"aten::logical_and.default", true, ExprOp::Mul}, {"aten::logical_or.default", true, ExprOp::Max},
             {"aten::logical_xor.default", true, ExprOp::Ne},
             {"aten::bitwise_and.Tensor", false, ExprOp::Mul}, {"aten::bitwise_or.Tensor", false, ExprOp::Max},
             {"aten::bitwise_xor.Tensor", false, ExprOp::Ne}, {"aten::__and__.Tensor", false, ExprOp::Mul},
             {"aten::__or__.Tensor", false, ExprOp::Max}, {"aten::__xor__.Tensor", false, ExprOp::Ne}})
      reg(name, [logical, op](Context& c) {
        std::vector<TensorId> in;
        Expr x = operand(c, "self", in), y = operand(c, "other", in);
        for (TensorId t : in)
          if (!logical && c.t(t).dtype != ir::DType::Bool)
            throw Unsupported("bitwise and/or/xor of integers (not modeled bit by bit)");
        if (in.empty()) throw Unsupported("no tensor operand");
        // as truth values: x != 0
        Expr tx = fn(ExprOp::Ne, {x, num(0)}), ty = fn(ExprOp::Ne, {y, num(0)});
        c.elementwise(in, c.def(0), fn(op, {tx, ty}));
      });
    reg("aten::clamp_min_.default", [](Context& c) { lower_clamp(c, "min", "__none__"); });
    reg("aten::clamp_max_.default", [](Context& c) { lower_clamp(c, "__none__", "max"); });
    reg("aten::clamp_min.Tensor", [](Context& c) { lower_clamp(c, "min", "__none__"); });
    reg("aten::clamp_max.Tensor", [](Context& c) { lower_clamp(c, "__none__", "max"); });
    reg("aten::aminmax.default", [](Context& c) {
      std::int64_t x = c.trace_id("self");
      TensorId in = c.use(x);
      std::vector<std::int64_t> dims;
      if (c.has("dim")) dims = {norm_dim(c.int_arg("dim", 0), c.shape(x).size())};
      else dims = reduce_dims(c, "__all__", c.shape(x).size());
      c.reduce(in, c.def(0), dims, Reduce::Min);
      c.reduce(in, c.def(1), dims, Reduce::Max);
    });
    reg("aten::index.Tensor", lower_index);
    reg("aten::_unsafe_index.Tensor", lower_index);
    reg("aten::index_put.default", lower_index_put);
    reg("aten::index_put_.default", lower_index_put);
    reg("aten::_index_put_impl_.default", lower_index_put);
    reg("aten::_unsafe_index_put.default", lower_index_put);
    reg("aten::index_add.default", [](Context& c) { lower_index_scatter(c, "sum", false); });
    reg("aten::index_add_.default", [](Context& c) { lower_index_scatter(c, "sum", false); });
    reg("aten::index_copy.default", [](Context& c) { lower_index_scatter(c, "none", false); });
    reg("aten::index_copy_.default", [](Context& c) { lower_index_scatter(c, "none", false); });
    for (std::string_view name : {"aten::index_fill.int_Scalar", "aten::index_fill_.int_Scalar",
                                  "aten::index_fill.int_Tensor", "aten::index_fill_.int_Tensor"})
      reg(name, [](Context& c) { lower_index_scatter(c, "none", true); });
    reg("aten::masked_select.default", lower_masked_select);
    reg("aten::nonzero.default", lower_nonzero);
    for (std::string_view name : {"aten::scatter.value", "aten::scatter_.value", "aten::scatter.reduce",
                                  "aten::scatter_.reduce", "aten::scatter.value_reduce",
                                  "aten::scatter_.value_reduce", "aten::scatter_reduce.two",
                                  "aten::scatter_reduce_.two"})
      reg(name, lower_scatter_general);
    reg("aten::arange.default", lower_arange);
    reg("aten::arange.start", lower_arange);
    reg("aten::arange.start_step", lower_arange);
    reg("aten::linspace.default", lower_linspace);
    reg("aten::eye.default", lower_eye);
    reg("aten::eye.m", lower_eye);
    reg("aten::triu.default", triangle(true));
    reg("aten::tril.default", triangle(false));
    reg("aten::triu_.default", triangle(true));
    reg("aten::tril_.default", triangle(false));
    reg("aten::cumprod.default", scan("cumprod"));
    reg("aten::cummax.default", scan("cummax"));
    reg("aten::cummin.default", scan("cummin"));
    reg("aten::sort.default", lower_sort);
    reg("aten::sort.stable", lower_sort);
    reg("aten::topk.default", lower_topk);
    reg("aten::gather.default", lower_gather);
    reg("aten::scatter.src", lower_scatter);
    reg("aten::scatter_.src", lower_scatter);
    reg("aten::scatter_add.default", lower_scatter_add);
    reg("aten::scatter_add_.default", lower_scatter_add);
    reg("aten::dropout.default", lower_dropout);
    reg("aten::flip.default", lower_flip);
    reg("aten::roll.default", lower_roll);
    // Random numbers.
    for (auto [name, dist, reads] :
         std::initializer_list<std::tuple<std::string_view, const char*, std::vector<const char*>>>{
             {"aten::rand.default", "uniform", {}}, {"aten::rand.generator", "uniform", {}},
             {"aten::rand_like.default", "uniform", {}}, {"aten::uniform_.default", "uniform", {}},
             {"aten::randn.default", "normal", {}}, {"aten::randn.generator", "normal", {}},
             {"aten::randn_like.default", "normal", {}}, {"aten::normal_.default", "normal", {}},
             {"aten::normal.Tensor_float", "normal", {"mean"}},
             {"aten::normal.float_Tensor", "normal", {"std"}},
             {"aten::normal.Tensor_Tensor", "normal", {"mean", "std"}},
             {"aten::normal.float_float", "normal", {}},
             {"aten::randint.default", "randint", {}}, {"aten::randint.low", "randint", {}},
             {"aten::randint.generator", "randint", {}}, {"aten::randint.low_generator", "randint", {}},
             {"aten::randint_like.default", "randint", {}}, {"aten::randint_like.low_dtype", "randint", {}},
             {"aten::random_.default", "randint", {}}, {"aten::random_.from", "randint", {}},
             {"aten::random_.to", "randint", {}},
             {"aten::bernoulli.default", "bernoulli", {"self"}}, {"aten::bernoulli.p", "bernoulli", {}},
             {"aten::bernoulli_.float", "bernoulli", {}}, {"aten::bernoulli_.Tensor", "bernoulli", {"p"}},
             {"aten::exponential_.default", "exponential", {}},
         })
      reg(name, random_op(dist, reads));
    // More elementwise functions, as compositions of the combine vocabulary.
    constexpr double kLn2 = 0.69314718055994530942, kLn10 = 2.30258509299404568402;
    for (auto [name, f] : std::initializer_list<std::pair<std::string_view, Expr (*)(Expr)>>{
             {"aten::log1p.default", [](Expr x) { return un(ExprOp::Log, add(num(1), x)); }},
             {"aten::log1p_.default", [](Expr x) { return un(ExprOp::Log, add(num(1), x)); }},
             {"aten::expm1.default", [](Expr x) { return sub(un(ExprOp::Exp, x), num(1)); }},
             {"aten::log2.default", [](Expr x) { return mul(un(ExprOp::Log, x), num(1 / kLn2)); }},
             {"aten::log10.default", [](Expr x) { return mul(un(ExprOp::Log, x), num(1 / kLn10)); }},
             {"aten::exp2.default", [](Expr x) { return un(ExprOp::Exp, mul(x, num(kLn2))); }},
             {"aten::tan.default", [](Expr x) { return fn(ExprOp::Div, {un(ExprOp::Sin, x), un(ExprOp::Cos, x)}); }},
             {"aten::sinh.default", [](Expr x) {
                return mul(num(0.5), sub(un(ExprOp::Exp, x), un(ExprOp::Exp, un(ExprOp::Neg, x))));
              }},
             {"aten::cosh.default", [](Expr x) {
                return mul(num(0.5), add(un(ExprOp::Exp, x), un(ExprOp::Exp, un(ExprOp::Neg, x))));
              }},
             {"aten::asinh.default", [](Expr x) {  // sign(x) log(|x| + sqrt(x^2 + 1))
                Expr a = un(ExprOp::Abs, x);
                Expr v = un(ExprOp::Log, add(a, un(ExprOp::Sqrt, add(un(ExprOp::Square, x), num(1)))));
                return fn(ExprOp::Select, {fn(ExprOp::Lt, {x, num(0)}), un(ExprOp::Neg, v), v});
              }},
             {"aten::acosh.default", [](Expr x) {
                return un(ExprOp::Log, add(x, un(ExprOp::Sqrt, sub(un(ExprOp::Square, x), num(1)))));
              }},
             {"aten::atanh.default", [](Expr x) {
                return mul(num(0.5), un(ExprOp::Log, fn(ExprOp::Div, {add(num(1), x), sub(num(1), x)})));
              }},
             {"aten::isnan.default", [](Expr x) { return fn(ExprOp::Ne, {x, x}); }},
             {"aten::isinf.default", [](Expr x) { return fn(ExprOp::Eq, {un(ExprOp::Abs, x), num(kInf)}); }},
             {"aten::isfinite.default", [](Expr x) { return fn(ExprOp::Lt, {un(ExprOp::Abs, x), num(kInf)}); }},
             {"aten::isposinf.default", [](Expr x) { return fn(ExprOp::Eq, {x, num(kInf)}); }},
             {"aten::isneginf.default", [](Expr x) { return fn(ExprOp::Eq, {x, num(-kInf)}); }},
             {"aten::sign.default", [](Expr x) {
                return sub(fn(ExprOp::Gt, {x, num(0)}), fn(ExprOp::Lt, {x, num(0)}));
              }},
             {"aten::sgn.default", [](Expr x) {
                return sub(fn(ExprOp::Gt, {x, num(0)}), fn(ExprOp::Lt, {x, num(0)}));
              }},
             {"aten::square.default", [](Expr x) { return un(ExprOp::Square, x); }},
             {"aten::relu6.default", [](Expr x) { return fn(ExprOp::Min, {un(ExprOp::Relu, x), num(6)}); }},
             {"aten::softsign.default", [](Expr x) { return fn(ExprOp::Div, {x, add(num(1), un(ExprOp::Abs, x))}); }},
             {"aten::tanhshrink.default", [](Expr x) { return sub(x, un(ExprOp::Tanh, x)); }},
             {"aten::selu.default", [](Expr x) {
                constexpr double alpha = 1.6732632423543772848170429916717,
                                 scale = 1.0507009873554804934193349852946;
                Expr neg = mul(num(alpha), sub(un(ExprOp::Exp, x), num(1)));
                return mul(num(scale), fn(ExprOp::Select, {fn(ExprOp::Gt, {x, num(0)}), x, neg}));
              }},
             {"aten::selu_.default", [](Expr x) {
                constexpr double alpha = 1.6732632423543772848170429916717,
                                 scale = 1.0507009873554804934193349852946;
                Expr neg = mul(num(alpha), sub(un(ExprOp::Exp, x), num(1)));
                return mul(num(scale), fn(ExprOp::Select, {fn(ExprOp::Gt, {x, num(0)}), x, neg}));
              }},
         })
      reg(name, unary([f](Context&, Expr x) { return f(x); }));
    for (std::string_view name : {"aten::celu.default", "aten::celu_.default"})
      reg(name, unary([](Context& c, Expr x) {  // max(0, x) + min(0, alpha (exp(x/alpha) - 1))
            double alpha = c.num_arg("alpha", 1);
            Expr neg = mul(num(alpha), sub(un(ExprOp::Exp, mul(x, num(1 / alpha))), num(1)));
            return add(un(ExprOp::Relu, x), fn(ExprOp::Min, {num(0), neg}));
          }));
    reg("aten::logit.default", unary([](Context& c, Expr x) {
          if (c.has("eps")) {
            double e = c.num_arg("eps", 0);
            x = fn(ExprOp::Max, {fn(ExprOp::Min, {x, num(1 - e)}), num(e)});
          }
          return un(ExprOp::Log, fn(ExprOp::Div, {x, sub(num(1), x)}));
        }));
    reg("aten::nan_to_num.default", unary([](Context& c, Expr x) {
          // NaN -> nan (0); +-inf -> posinf/neginf (the dtype's largest finite values)
          const double big = 3.4028234663852886e38;
          double nan = c.num_arg("nan", 0), pinf = c.num_arg("posinf", big), ninf = c.num_arg("neginf", -big);
          Expr y = fn(ExprOp::Select, {fn(ExprOp::Eq, {x, num(kInf)}), num(pinf), x});
          y = fn(ExprOp::Select, {fn(ExprOp::Eq, {x, num(-kInf)}), num(ninf), y});
          return fn(ExprOp::Select, {fn(ExprOp::Ne, {x, x}), num(nan), y});
        }));
    for (std::string_view name : {"aten::hardshrink.default"})
      reg(name, unary([](Context& c, Expr x) {
            double l = c.num_arg("lambd", 0.5);
            return fn(ExprOp::Select, {fn(ExprOp::Gt, {un(ExprOp::Abs, x), num(l)}), x, num(0)});
          }));
    reg("aten::softshrink.default", unary([](Context& c, Expr x) {
          double l = c.num_arg("lambd", 0.5);
          Expr lo = fn(ExprOp::Select, {fn(ExprOp::Lt, {x, num(-l)}), add(x, num(l)), num(0)});
          return fn(ExprOp::Select, {fn(ExprOp::Gt, {x, num(l)}), sub(x, num(l)), lo});
        }));
    for (std::string_view name : {"aten::threshold.default", "aten::threshold_.default"})
      reg(name, unary([](Context& c, Expr x) {
            return fn(ExprOp::Select, {fn(ExprOp::Gt, {x, num(c.num_arg("threshold", 0))}), x,
                                       num(c.num_arg("value", 0))});
          }));
    for (std::string_view name : {"aten::clamp_min_.Tensor", "aten::clamp_min.Tensor"})
      reg(name, [](Context& c) { lower_clamp(c, "min", "__none__"); });
    for (std::string_view name : {"aten::clamp_max_.Tensor", "aten::clamp_max.Tensor"})
      reg(name, [](Context& c) { lower_clamp(c, "__none__", "max"); });
    reg("aten::clamp_.Tensor", [](Context& c) { lower_clamp(c, "min", "max"); });
    // log_sigmoid_forward: (min(x, 0) - log(1 + z), z) with z = exp(-|x|) (torch's buffer).
    reg("aten::log_sigmoid_forward.default", [](Context& c) {
      TensorId in = c.use_arg("self");
      Expr z = un(ExprOp::Exp, un(ExprOp::Neg, un(ExprOp::Abs, arg(0))));
      c.elementwise({in}, c.def(0), sub(fn(ExprOp::Min, {arg(0), num(0)}), un(ExprOp::Log, add(num(1), z))));
      if (c.out_id(1) && c.tt(*c.out_id(1)).shape == c.t(in).shape) c.elementwise({in}, c.def(1), z);
      else if (c.out_id(1) && numel(c.tt(*c.out_id(1)).shape) == 0) c.elementwise({}, c.def(1), num(0));
    });
    // prelu: x > 0 ? x : w * x, w one value or one per channel (dimension 1).
    reg("aten::_prelu_kernel.default", [](Context& c) {
      TensorId in = c.use_arg("self"), w = c.use_arg("weight");
      Expr y = fn(ExprOp::Select, {fn(ExprOp::Gt, {arg(0), num(0)}), arg(0), mul(arg(1), arg(0))});
      if (numel(c.t(w).shape) > 1 && c.t(w).shape.size() != 1) {  // [C, 1, 1..]: per channel
        TensorId v = c.temp("weight", {numel(c.t(w).shape)}, c.t(w).dtype);
        c.move(MoveKind::View, {w}, v);
        w = v;
      }
      if (numel(c.t(w).shape) == 1 || c.t(in).shape.size() < 2) {
        TensorId one = w;
        if (!c.t(w).shape.empty()) {
          one = c.temp("weight", {}, c.t(w).dtype);
          c.move(MoveKind::View, {w}, one);
        }
        return c.elementwise({in, one}, c.def(0), y);
      }
      c.channelwise({in, w}, c.def(0), y, 1);
    });
    // glu(dim): a * sigmoid(b) with a, b the two halves along dim (free slices).
    reg("aten::glu.default", [](Context& c) {
      std::int64_t x = c.trace_id("self");
      TensorId in = c.use(x);
      const auto is = c.t(in).shape;
      std::int64_t dim = norm_dim(c.int_arg("dim", -1), is.size());
      if (is[dim] % 2 != 0) throw Unsupported("glu of an odd dimension");
      std::vector<std::int64_t> half = is;
      half[dim] /= 2;
      TensorId a = c.temp("first_half", half, c.t(in).dtype), b = c.temp("second_half", half, c.t(in).dtype);
      in = c.materialize(in);
      slice_into(c, in, a, dim, 0, half[dim], 1);
      slice_into(c, in, b, dim, half[dim], is[dim], 1);
      c.elementwise({a, b}, c.def(0), mul(arg(0), un(ExprOp::Sigmoid, arg(1))));
    });
    // any / all / count_nonzero: reductions of x != 0.
    for (auto [name, r] : std::initializer_list<std::pair<std::string_view, Reduce>>{
             {"aten::any.default", Reduce::Any}, {"aten::any.dim", Reduce::Any}, {"aten::any.dims", Reduce::Any},
             {"aten::all.default", Reduce::All}, {"aten::all.dim", Reduce::All}, {"aten::all.dims", Reduce::All},
             {"aten::count_nonzero.default", Reduce::Sum}, {"aten::count_nonzero.dim_IntList", Reduce::Sum}})
      reg(name, [r](Context& c) {
        std::int64_t x = c.trace_id("self");
        auto dims = reduce_dims(c, "dim", c.shape(x).size());
        c.reduce(c.use(x), c.def(0), dims, r, fn(ExprOp::Ne, {arg(0), num(0)}));
      });
    reg("aten::var_mean.correction", variance(false, true));
    reg("aten::std_mean.correction", variance(true, true));
    reg("aten::var_mean.dim", variance(false, true));
    reg("aten::std_mean.dim", variance(true, true));
    reg("aten::_cdist_forward.default", lower_cdist);
    reg("aten::diag_embed.default", lower_diag_embed);
    reg("aten::pixel_shuffle.default", [](Context& c) { lower_pixel_shuffle(c, true); });
    reg("aten::pixel_unshuffle.default", [](Context& c) { lower_pixel_shuffle(c, false); });
    reg("aten::im2col.default", lower_im2col);
    for (std::size_t nd : {1, 2, 3}) {
      static const char* const un_[] = {"aten::upsample_nearest1d.default", "aten::upsample_nearest2d.default",
                                        "aten::upsample_nearest3d.default"};
      reg(un_[nd - 1], [nd](Context& c) { lower_upsample_nearest(c, nd); });
    }
    register_training_ops(reg);
    return m;
  }();
  return t;
}

}  // namespace

bool aten_op_known(std::string_view op) { return table().contains(op); }

LowerResult lower_aten(const OpTrace& trace, const LowerOptions& options) {
  LowerResult r = lower_with_table(trace, options, table(), "aten");
  recognize_masks_in(r);
  return r;
}

}  // namespace solar::lower
