// A naive einsum evaluator for the executor's tests: direct loops over every point of the
// iteration box, every value in double, written for obviousness rather than speed; plus the
// random-input and comparison helpers the einsum tests share.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "solar/exec/buffer.h"
#include "solar/exec/kernels.h"
#include "solar/ir/graph.h"
#include "solar/ir/text.h"

namespace solar::exec::testing {

inline double ref_expr(const ir::Expr& e, const std::vector<double>& v) {
  using ir::ExprOp;
  auto c = [&](int i) { return ref_expr(e.children()[static_cast<std::size_t>(i)], v); };
  switch (e.op()) {
    case ExprOp::Operand: return v[static_cast<std::size_t>(e.operand_index())];
    case ExprOp::Const: return e.value();
    case ExprOp::Add: return c(0) + c(1);
    case ExprOp::Sub: return c(0) - c(1);
    case ExprOp::Mul: return c(0) * c(1);
    case ExprOp::Div: return c(0) / c(1);
    case ExprOp::Max: { double a = c(0), b = c(1); return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
    case ExprOp::Min: { double a = c(0), b = c(1); return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }
    case ExprOp::Pow: return std::pow(c(0), c(1));
    case ExprOp::Lt: return c(0) < c(1) ? 1 : 0;
    case ExprOp::Le: return c(0) <= c(1) ? 1 : 0;
    case ExprOp::Gt: return c(0) > c(1) ? 1 : 0;
    case ExprOp::Ge: return c(0) >= c(1) ? 1 : 0;
    case ExprOp::Eq: return c(0) == c(1) ? 1 : 0;
    case ExprOp::Ne: return c(0) != c(1) ? 1 : 0;
    case ExprOp::Select: return c(0) != 0 ? c(1) : c(2);
    case ExprOp::Neg: return -c(0);
    case ExprOp::Abs: return std::fabs(c(0));
    case ExprOp::Square: return c(0) * c(0);
    case ExprOp::Relu: { double a = c(0); return a < 0 ? 0 : a; }
    case ExprOp::Exp: return std::exp(c(0));
    case ExprOp::Log: return std::log(c(0));
    case ExprOp::Tanh: return std::tanh(c(0));
    case ExprOp::Erf: return std::erf(c(0));
    case ExprOp::Rsqrt: return 1 / std::sqrt(c(0));
    case ExprOp::Sqrt: return std::sqrt(c(0));
    case ExprOp::Recip: return 1 / c(0);
    case ExprOp::Sigmoid: return 1 / (1 + std::exp(-c(0)));
    case ExprOp::Sin: return std::sin(c(0));
    case ExprOp::Cos: return std::cos(c(0));
  }
  return NAN;
}

// The identity of each reduction as graph.h states it (integer dtypes: their range ends).
inline double ref_identity(ir::Reduce r, ir::DType d) {
  const bool integer = !ir::is_float(d);
  double lo = -INFINITY, hi = INFINITY;
  if (integer) {
    const int bits = ir::dtype_bits(d);
    if (d == ir::DType::Bool) { lo = 0; hi = 1; }
    else if (d == ir::DType::U8) { lo = 0; hi = 255; }
    else { lo = -std::ldexp(1.0, bits - 1); hi = std::ldexp(1.0, bits - 1) - 1; }
  }
  switch (r) {
    case ir::Reduce::None: case ir::Reduce::Sum: case ir::Reduce::Any: return 0;
    case ir::Reduce::Prod: case ir::Reduce::All: return 1;
    case ir::Reduce::Max: return lo;
    case ir::Reduce::Min: return hi;
  }
  return 0;
}

inline double ref_reduce(ir::Reduce r, double acc, double v) {
  switch (r) {
    case ir::Reduce::None: return v;
    case ir::Reduce::Sum: return acc + v;
    case ir::Reduce::Prod: return acc * v;
    case ir::Reduce::Max: return std::isnan(acc) || std::isnan(v) ? NAN : std::max(acc, v);
    case ir::Reduce::Min: return std::isnan(acc) || std::isnan(v) ? NAN : std::min(acc, v);
    case ir::Reduce::Any: return (acc != 0 || v != 0) ? 1 : 0;
    case ir::Reduce::All: return (acc != 0 && v != 0) ? 1 : 0;
  }
  return NAN;
}

struct RefResult {
  std::vector<double> value;      // rounded to the output dtype as a store would
  std::vector<double> magnitude;  // sum of |combine value| reaching each element (error scale)
};

// Direct evaluation: out[o] = REDUCE over live points reaching o of COMBINE(operands).
inline RefResult reference(const ir::EinsumOp& e, const std::vector<const Buffer*>& in,
                           ir::DType out_dtype, const std::vector<std::int64_t>& out_shape) {
  const std::vector<std::int64_t> ext = e.extents();
  std::int64_t n_out = 1;
  for (std::int64_t d : out_shape) n_out *= d;
  RefResult r;
  r.value.assign(static_cast<std::size_t>(n_out), ref_identity(e.reduce, out_dtype));
  r.magnitude.assign(static_cast<std::size_t>(n_out), 0);
  std::vector<std::int64_t> idx(ext.size(), 0);
  std::vector<double> vals(in.size());
  auto flat = [&](const std::vector<ir::AffineExpr>& sub, const std::vector<std::int64_t>& shape,
                  bool& inside) {
    std::int64_t f = 0;
    inside = true;
    for (std::size_t d = 0; d < sub.size(); ++d) {
      const std::int64_t x = sub[d].evaluate(idx.data());
      if (x < 0 || x >= shape[d]) inside = false;
      f = f * shape[d] + x;
    }
    return f;
  };
  auto next = [&] {
    for (std::size_t j = ext.size(); j-- > 0;) {
      if (++idx[j] < ext[j]) return true;
      idx[j] = 0;
    }
    return false;
  };
  do {
    bool live = true;
    for (const ir::AffineConstraint& c : e.mask) live = live && c.expr.evaluate(idx.data()) >= 0;
    if (!live) continue;
    for (std::size_t k = 0; k < in.size(); ++k) {
      bool inside;
      const std::int64_t f = flat(e.operands[k].subscript, in[k]->shape(), inside);
      vals[k] = inside ? in[k]->value(f) : e.operands[k].pad.value();
    }
    const double v = ref_expr(e.combine, vals);
    bool inside;
    const std::int64_t o = flat(e.output, out_shape, inside);
    EXPECT_TRUE(inside) << "reference: output subscript out of range";
    r.value[static_cast<std::size_t>(o)] = ref_reduce(e.reduce, r.value[static_cast<std::size_t>(o)], v);
    r.magnitude[static_cast<std::size_t>(o)] += std::fabs(v);
  } while (next());
  for (double& v : r.value) {
    if (ir::is_float(out_dtype)) {
      if (out_dtype != ir::DType::F64) v = round_to_dtype(out_dtype, static_cast<float>(v));
    } else if (out_dtype == ir::DType::Bool) {
      v = v != 0;
    } else {
      const std::int64_t q = std::isnan(v) ? 0 : static_cast<std::int64_t>(std::trunc(v));
      v = static_cast<double>(wrap_to_dtype(out_dtype, q));
    }
  }
  return r;
}

// The op in the text form, for failure messages.
inline std::string describe(const ir::EinsumOp& e, const std::vector<const Buffer*>& in,
                            ir::DType out_dtype, const std::vector<std::int64_t>& out_shape) {
  ir::Graph g;
  ir::Op op;
  for (std::size_t k = 0; k < in.size(); ++k) {
    ir::Tensor t;
    t.name = "x" + std::to_string(k);
    t.shape = in[k]->shape();
    t.dtype = in[k]->dtype();
    t.role = ir::Role::Input;
    op.inputs.push_back(g.add_tensor(t));
  }
  ir::Tensor o;
  o.name = "y";
  o.shape = out_shape;
  o.dtype = out_dtype;
  o.role = ir::Role::Output;
  op.outputs.push_back(g.add_tensor(o));
  op.body = e;
  g.add_op(std::move(op));
  return ir::print_graph(g);
}

// Relative precision of a float dtype's stored values (2^-mantissa bits); 0 for others.
inline double dtype_eps(ir::DType d) {
  switch (d) {
    case ir::DType::F64: return 0;
    case ir::DType::F32: return 0;
    case ir::DType::TF32: return std::ldexp(1.0, -10);
    case ir::DType::BF16: return std::ldexp(1.0, -7);
    case ir::DType::F16: return std::ldexp(1.0, -10);
    case ir::DType::F8E4M3: return std::ldexp(1.0, -3);
    case ir::DType::F8E5M2: return std::ldexp(1.0, -2);
    case ir::DType::F6: return std::ldexp(1.0, -3);
    case ir::DType::F4: return std::ldexp(1.0, -1);
    case ir::DType::I64: case ir::DType::I32: case ir::DType::I16: case ir::DType::I8:
    case ir::DType::I4: case ir::DType::U8: case ir::DType::Bool:
      return 0;
  }
  return 0;
}

// Counts elements outside tolerance; reports the first few. `compute_eps` is the relative
// error of the kernel's arithmetic (f32: a few ulp times the magnitude of what was summed).
inline int compare(const Buffer& got, const RefResult& want, double compute_eps,
                   const std::string& what) {
  int bad = 0;
  const double eps = dtype_eps(got.dtype());
  for (std::int64_t i = 0; i < got.num_elements(); ++i) {
    const double g = got.value(i), w = want.value[static_cast<std::size_t>(i)];
    if (g == w || (std::isnan(w) && std::isnan(g))) continue;
    const double mag = want.magnitude[static_cast<std::size_t>(i)];
    // A narrow output may round the kernel's value one step away from the reference's.
    const double tol = compute_eps * (mag + std::fabs(w) + 1) + 1.01 * eps * std::fabs(w) +
                       (eps > 0 ? std::ldexp(eps, -6) : 0);
    if (!(std::fabs(g - w) <= tol)) {
      if (++bad <= 3)
        ADD_FAILURE() << what << ": element " << i << " = " << g << ", reference " << w
                      << " (tolerance " << tol << ")";
    }
  }
  return bad;
}

// Random values for a tensor of `dtype`, already representable in it.
inline Buffer random_buffer(ir::DType dtype, const std::vector<std::int64_t>& shape,
                            std::mt19937& rng, double lo = -2, double hi = 2) {
  Buffer b = Buffer::zeros(dtype, shape);
  std::uniform_real_distribution<double> u(lo, hi);
  std::uniform_int_distribution<int> ui(-5, 5);
  for (std::int64_t i = 0; i < b.num_elements(); ++i) {
    switch (b.storage()) {
      case Storage::F32: b.data<float>()[i] = round_to_dtype(dtype, static_cast<float>(u(rng))); break;
      case Storage::F64: b.data<double>()[i] = u(rng); break;
      case Storage::I64: b.data<std::int64_t>()[i] = wrap_to_dtype(dtype, ui(rng)); break;
    }
  }
  return b;
}

// Runs run_einsum into a fresh output buffer.
inline Buffer run(const ir::EinsumOp& e, const std::vector<const Buffer*>& in, ir::DType out_dtype,
                  const std::vector<std::int64_t>& out_shape, int threads = 0) {
  Buffer out = Buffer::zeros(out_dtype, out_shape);
  // Poison the output: the kernel must write every element itself.
  for (std::int64_t i = 0; i < out.num_elements(); ++i) {
    switch (out.storage()) {
      case Storage::F32: out.data<float>()[i] = 12345.0f; break;
      case Storage::F64: out.data<double>()[i] = 12345.0; break;
      case Storage::I64: out.data<std::int64_t>()[i] = 77; break;
    }
  }
  ExecContext ctx;
  ctx.threads = threads;
  run_einsum(e, in, out, ctx);
  return out;
}

}  // namespace solar::exec::testing
