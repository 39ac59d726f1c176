// The aten dialect table: one entry per aten op (name with overload), a small function per
// family. Composite ops are decomposed into primitives (DESIGN.md §2).
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

constexpr double kInf = std::numeric_limits<double>::infinity();

std::int64_t numel(const std::vector<std::int64_t>& s) {
  std::int64_t n = 1;
  for (std::int64_t x : s) n *= x;
  return n;
}


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

// f(self) for a unary function given as a combine builder.
Fn unary(std::function<Expr(Context&, Expr)> f) {
  return [f](Context& c) {
    std::vector<TensorId> in;
    Expr x = operand(c, "self", in);
    if (in.empty()) throw Unsupported("no tensor operand");
    c.elementwise(in, c.def(0), f(c, x));
  };
}
Fn unary(ExprOp op) { return unary([op](Context&, Expr x) { return un(op, x); }); }

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

// An argmax/argmin over one dimension (or all): not an einsum; compares every element once.
void arg_reduce(Context& c, TensorId in, TensorId out, const char* what) {
  const ir::Tensor& t = c.t(in);
  std::int64_t n = numel(t.shape);
  ir::OpaqueOp o;
  o.function = what;
  o.vector_flops = Count(n);
  o.special_ops = Count(0);
  o.bytes = t.size_bytes() + c.t(out).size_bytes();
  o.assumption = "one compare per input element; reads the input once, writes the indices once";
  c.opaque({in}, {out}, std::move(o));
}

// max.dim / min.dim: values (an einsum) and indices (an arg-reduction).
Fn reduce_with_indices(Reduce r) {
  return [=](Context& c) {
    std::int64_t x = c.trace_id("self");
    std::vector<std::int64_t> dims{norm_dim(c.int_arg("dim", 0), c.shape(x).size())};
    TensorId in = c.use(x);
    c.reduce(in, c.def(0), dims, r);
    if (c.out_id(1)) arg_reduce(c, in, c.def(1), r == Reduce::Max ? "argmax" : "argmin");
  };
}

Fn arg_reduction(const char* what) {
  return [=](Context& c) { arg_reduce(c, c.use_arg("self"), c.def(0), what); };
}

// var/std (correction overloads): mean, centred square sum, divide by N - correction.
Fn variance(bool is_std) {
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
// mode computes them over every other dimension (running-stat updates are not modeled:
// they are C-element updates).
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

// Transposed convolution: every input point scatters into out[i*stride + r*dilation - pad].
// As an einsum over output position o, kernel tap r and input position i with the mask
// o + pad - r*dilation - i*stride == 0 (two constraints), i summed: exact live points, so
// the MACs are N * Cin * Kg * (input positions x taps that land inside the output).
//   out[n, g*Kg+k, o..] = sum_{c, r.., i..} in[n, g*Cg+c, i..] * w[g*Cg+c, k, r..]
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
  const std::int64_t Cg = Cin / G;
  TensorId y = c.has("bias") ? c.temp("convt", os, c.t(out).dtype) : out;
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
  for (std::size_t d = 0; d < nd; ++d) {
    ir::IndexPos o = s.add(fmt::format("o{}", d), os[2 + d]);
    ir::IndexPos r = s.add(fmt::format("r{}", d), ws[2 + d]);
    ir::IndexPos i = s.add(fmt::format("i{}", d), xs[2 + d]);
    sx.push_back(ix(i));
    sw.push_back(ix(r));
    so.push_back(ix(o));
    AffineExpr eq = AffineExpr::make(
        {AffineTerm{o, 1}, AffineTerm{r, -dil[d]}, AffineTerm{i, -stride[d]}}, pad[d]);
    AffineExpr neg = AffineExpr::make(
        {AffineTerm{o, -1}, AffineTerm{r, dil[d]}, AffineTerm{i, stride[d]}}, -pad[d]);
    mask.push_back({eq});
    mask.push_back({neg});
  }
  c.einsum({x, w}, y, std::move(s), {sx, sw}, so, mul(arg(0), arg(1)), Reduce::Sum, mask);
  if (c.has("bias")) c.channelwise({y, c.use_arg("bias")}, out, add(arg(0), arg(1)), 1);
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
    if (c.out_id(1)) arg_reduce(c, in, c.def(1), "argmax");
  };
}

Fn avg_pool(std::size_t nd) {
  return [=](Context& c) {
    TensorId in = c.use_arg("self");
    auto kernel = per_dim(c, "kernel_size", nd, 1);
    auto stride = c.ints("stride").empty() ? kernel : per_dim(c, "stride", nd, 1);
    auto pad = per_dim(c, "padding", nd, 0);
    bool padded = false;
    for (std::int64_t p : pad) padded = padded || p != 0;
    if (c.bool_arg("ceil_mode", false)) throw Unsupported("average pooling with ceil_mode");
    if (padded && !c.bool_arg("count_include_pad", true))
      throw Unsupported("average pooling that excludes padding from the divisor");
    double divisor = static_cast<double>(numel(kernel));
    if (c.has("divisor_override")) divisor = c.num_arg("divisor_override", divisor);
    TensorId out = c.def(0);
    TensorId sum = c.temp("sum", c.t(out).shape, c.t(out).dtype);
    pool_into(c, in, sum, nd, kernel, stride, pad, std::vector<std::int64_t>(nd, 1), Reduce::Sum, 0);
    c.elementwise({sum}, out, mul(arg(0), num(1 / divisor)));
  };
}

// Adaptive pooling whose output divides the input: a plain pooling window.
Fn adaptive_pool(std::size_t nd, bool is_max) {
  return [=](Context& c) {
    TensorId in = c.use_arg("self");
    const auto is = c.t(in).shape;
    auto osz = per_dim(c, "output_size", nd, 1);
    std::vector<std::int64_t> kernel(nd);
    for (std::size_t d = 0; d < nd; ++d) {
      std::int64_t x = is[is.size() - nd + d];
      if (osz[d] < 1 || x % osz[d] != 0)
        throw Unsupported(fmt::format("adaptive pooling from {} to {} (uneven windows)", x, osz[d]));
      kernel[d] = x / osz[d];
    }
    std::vector<std::int64_t> zeros(nd, 0), ones(nd, 1);
    TensorId out = c.def(0);
    if (is_max) {
      pool_into(c, in, out, nd, kernel, kernel, zeros, ones, Reduce::Max, -kInf);
      if (c.out_id(1)) arg_reduce(c, in, c.def(1), "argmax");
      return;
    }
    TensorId sum = c.temp("sum", c.t(out).shape, c.t(out).dtype);
    pool_into(c, in, sum, nd, kernel, kernel, zeros, ones, Reduce::Sum, 0);
    c.elementwise({sum}, out, mul(arg(0), num(1 / static_cast<double>(numel(kernel)))));
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
    ir::IndexPos hk = s.add("hk", Hk), j = s.add("j", grp), l = s.add("l", L);
    ir::IndexPos red = s.add(qk ? "e" : "s", inner), col = s.add(qk ? "s" : "ev", last);
    AffineExpr h = AffineExpr::make({AffineTerm{hk, grp}, AffineTerm{j, 1}}, 0);
    if (grp == 1) h = AffineExpr::make({AffineTerm{hk, 1}, AffineTerm{j, 1}}, 0);
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

// An aliasing view (view, reshape, expand, permute, transpose, squeeze...): free.
void lower_view(Context& c) {
  TensorId in = c.use_arg("self");
  TensorId out = c.def(0);
  std::int64_t a = numel(c.t(in).shape), b = numel(c.t(out).shape);
  if (a != b && a != 1) {
    // expand broadcasts; anything else (an as_strided window) is not a plain view
    const auto& is = c.t(in).shape;
    const auto& os = c.t(out).shape;
    bool bcast = is.size() <= os.size();
    for (std::size_t d = 0; bcast && d < is.size(); ++d) {
      std::int64_t o = os[d + os.size() - is.size()];
      bcast = is[d] == o || is[d] == 1;
    }
    if (!bcast) throw Unsupported("a view that selects a window of its input (as_strided)");
  }
  c.move(MoveKind::View, {in}, out);
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

void lower_slice(Context& c) {
  std::int64_t x = c.trace_id("self");
  std::int64_t dim = norm_dim(c.int_arg("dim", 0), c.shape(x).size());
  std::int64_t big = std::numeric_limits<std::int64_t>::max();
  slice_into(c, c.use(x), c.def(0), dim, c.int_arg("start", 0), c.int_arg("end", big),
             c.int_arg("step", 1));
}

void lower_select(Context& c) {
  std::int64_t x = c.trace_id("self");
  const auto shape = c.shape(x);
  std::int64_t dim = norm_dim(c.int_arg("dim", 0), shape.size());
  std::int64_t i = c.int_arg("index", 0);
  if (i < 0) i += shape[dim];
  TensorId in = c.use(x);
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
  std::int64_t at = 0;
  for (std::size_t k = 0; k < c.op().outputs.size(); ++k) {
    if (!c.out_id(k)) continue;
    const auto& os = c.tt(*c.out_id(k)).shape;
    std::int64_t len = unbind ? 1 : os[dim];
    if (unbind) {
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

void lower_dropout(Context& c) {
  if (c.bool_arg("train", true) && c.num_arg("p", 0) != 0)
    throw Unsupported("dropout in training mode (random mask) is not lowered yet");
  c.move(MoveKind::View, {c.use_arg("input")}, c.def(0));
}

// Uninitialized memory (empty): no op writes it; a reader reads whatever is there.
void lower_empty(Context&) {}

// ---------------------------------------------------------------- scans, sorting, scatter

std::int64_t ceil_log2(std::int64_t n) {
  std::int64_t k = 0;
  while ((std::int64_t{1} << k) < n) ++k;
  return k;
}

// Opaque ops over one dimension: the work formula and its assumption are stated.
void opaque_over_dim(Context& c, const char* function, std::int64_t flops_per_row,
                     std::int64_t row, const std::string& assumption) {
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
  c.opaque({in}, outs, std::move(o));
}

std::int64_t dim_size(Context& c, const char* dim_arg, std::int64_t dflt) {
  const auto& shape = c.shape(c.trace_id("self"));
  if (shape.empty()) return 1;
  return shape[norm_dim(c.int_arg(dim_arg, dflt), shape.size())];
}

Fn scan(const char* function) {
  return [=](Context& c) {
    std::int64_t n = dim_size(c, "dim", 0);
    opaque_over_dim(c, function, n, n,
                    "sequential scan: one combine per element; reads the input once, writes "
                    "each output once");
  };
}

void lower_sort(Context& c) {
  std::int64_t n = dim_size(c, "dim", -1);
  opaque_over_dim(c, "sort", n * std::max<std::int64_t>(ceil_log2(n), 1), n,
                  "comparison sort: n*ceil(log2 n) compares per row; reads the input once, "
                  "writes values and indices once");
}

void lower_topk(Context& c) {
  std::int64_t n = dim_size(c, "dim", -1);
  std::int64_t k = c.int_arg("k", 1);
  opaque_over_dim(c, "topk", n * std::max<std::int64_t>(ceil_log2(std::max<std::int64_t>(k, 2)), 1), n,
                  "heap selection: n*ceil(log2 k) compares per row; reads the input once, "
                  "writes k values and indices per row");
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
void lower_scatter_add(Context& c) { lower_scatter_with(c, "sum"); }

// ---------------------------------------------------------------- index-valued factories, triangles

// arange and friends: their values are index arithmetic, not an einsum over data.
void lower_arange(Context& c) {
  TensorId out = c.def(0);
  ir::OpaqueOp o;
  o.function = "arange";
  o.vector_flops = c.t(out).num_elements();
  o.special_ops = Count(0);
  o.bytes = c.t(out).size_bytes();
  o.assumption = "one multiply-add per element (start + i*step); writes the output once";
  c.opaque({}, {out}, std::move(o));
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
    if (c.has("weight")) throw Unsupported("a weighted loss");
    TensorId x = c.use_arg("self"), y = c.use_arg("target");
    TensorId out = c.def(0);
    Expr e = f(c, arg(0), arg(1));
    if (c.int_arg("reduction", 1) == 0) return c.elementwise({x, y}, out, e);
    TensorId per = c.temp("loss", c.t(x).shape, c.t(out).dtype);
    c.elementwise({x, y}, per, e);
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

// nll_loss_forward: -input[n, target[n]] reduced; assumes no target equals ignore_index (a
// data-dependent count) and no class weights.
void lower_nll_loss(Context& c) {
  if (c.has("weight")) throw Unsupported("nll_loss with class weights");
  TensorId x = c.use_arg("self"), tgt = c.use_arg("target");
  const auto xs = c.t(x).shape;
  if (xs.size() != 2) throw Unsupported("nll_loss over other than [N, C] input");
  TensorId idx = c.temp("target", {xs[0], 1}, c.t(tgt).dtype);
  c.move(MoveKind::View, {tgt}, idx);
  TensorId picked = c.temp("picked", {xs[0], 1}, c.t(x).dtype);
  c.move(MoveKind::Gather, {x, idx}, picked, {{"axis", std::int64_t{1}}, {"mode", std::string("elements")}});
  TensorId out = c.def(0);
  if (c.int_arg("reduction", 1) == 0) {
    TensorId neg = c.temp("neg", {xs[0], 1}, c.t(x).dtype);
    c.elementwise({picked}, neg, un(ExprOp::Neg, arg(0)));
    return c.move(MoveKind::View, {neg}, out);
  }
  TensorId neg = c.temp("neg", {xs[0], 1}, c.t(x).dtype);
  c.elementwise({picked}, neg, un(ExprOp::Neg, arg(0)));
  loss_reduce(c, neg, out);
}

// index.Tensor with one index tensor (the others None): a take-mode gather on that axis.
void lower_index(Context& c) {
  const auto& list = c.a("indices");
  if (!list.is_array()) throw Unsupported("index without an index list");
  std::optional<std::int64_t> axis, id;
  for (std::size_t k = 0; k < list.size(); ++k) {
    if (list[k].is_null()) continue;
    if (axis) throw Unsupported("advanced indexing with several index tensors");
    if (!list[k].is_object() || !list[k].contains("tensor")) throw Unsupported("non-tensor index");
    axis = static_cast<std::int64_t>(k);
    id = list[k]["tensor"].get<std::int64_t>();
  }
  if (!axis) throw Unsupported("index without an index tensor");
  if (c.tt(*id).dtype == "bool") throw Unsupported("boolean-mask indexing (data-dependent shape)");
  TensorId d = c.use_arg("self"), i = c.use(*id);
  c.move(MoveKind::Gather, {d, i}, c.def(0), {{"axis", *axis}});
}

// ---------------------------------------------------------------- the table

using Table = std::unordered_map<std::string_view, Fn>;

const Table& table() {
  static const Table t = [] {
    Table m;
    auto reg = [&m](std::string_view name, Fn f) { m.emplace(name, std::move(f)); };
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
          "aten::unsqueeze.default", "aten::t.default", "aten::transpose.int", "aten::permute.default",
          "aten::as_strided.default", "aten::alias.default", "aten::detach.default",
          "aten::_reshape_alias.default", "aten::lift_fresh.default", "aten::numpy_T.default",
          "aten::flatten.using_ints", "aten::unflatten.int", "aten::expand_as.default",
          "aten::view_as.default", "aten::unsqueeze_.default", "aten::squeeze_.dim"})
      reg(name, lower_view);
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
    reg("aten::index.Tensor", lower_index);
    reg("aten::arange.default", lower_arange);
    reg("aten::arange.start", lower_arange);
    reg("aten::arange.start_step", lower_arange);
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
    register_training_ops(reg);
    return m;
  }();
  return t;
}

}  // namespace

bool aten_op_known(std::string_view op) { return table().contains(op); }

LowerResult lower_aten(const OpTrace& trace, const LowerOptions& options) {
  LowerResult result;
  ir::Graph& g = result.graph;
  g.name = trace.name;
  g.frontend = trace.frontend;
  g.source = trace.source;
  Context c(trace, g);
  for (const TraceOp& op : trace.ops) {
    c.begin(op);
    std::string reason;
    auto it = table().find(op.op);
    if (it == table().end()) {
      reason = "no lowering in the aten table";
    } else {
      try {
        it->second(c);
        c.commit();
        continue;
      } catch (const Unsupported& e) {
        c.rollback();
        reason = e.message();
      }
    }
    std::string where = op.file.empty() ? "" : fmt::format(" ({}:{})", op.file, op.line);
    if (options.strict)
      throw Unsupported(fmt::format("{}{} cannot be analyzed: {} (--strict)", op.op, where, reason),
                        c.origin());
    result.warnings.push_back(fmt::format("{}{}: {}", op.op, where, reason));
    c.unanalyzed(reason);
    c.commit();  // an unanalyzed op produces every output it stages
  }
  // Program outputs that are program inputs or parameters returned as they are stay sources.
  ir::verify(g);
  result.trace_ids.assign(g.tensors().size(), -1);
  const std::vector<TensorId>& map = c.tensor_map();
  for (std::size_t id = 0; id < map.size(); ++id)
    if (map[id].valid()) result.trace_ids[map[id].value] = static_cast<std::int64_t>(id);
  return result;
}

}  // namespace solar::lower
