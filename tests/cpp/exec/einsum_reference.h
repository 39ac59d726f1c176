// A naive einsum evaluator for the executor's tests: direct loops over every point of the
// iteration box, every value in double, written for obviousness rather than speed; plus the
// random-input and comparison helpers the einsum tests share.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "solar/exec/buffer.h"
#include "solar/exec/kernels.h"
#include "solar/ir/graph.h"
#include "solar/ir/text.h"

namespace solar::exec::testing {

// The integer type the reference evaluates bit operations and wrap-around in (ir/expr.h,
// "Integer semantics"), written independently of the executor's: `wrap` is false for
// einsums that do not compute in integers (results are then exact).
struct RefInt {
  bool wrap = false;
  int bits = 64;
  bool is_unsigned = false;
  bool is_bool = false;
  // x as the value of the type: x mod 2^bits, shifted into the signed range when signed.
  double canon128(__int128 x) const {
    const __int128 m = static_cast<__int128>(1) << bits;
    __int128 r = x % m;
    if (r < 0) r += m;
    if (!is_unsigned && r >= m / 2) r -= m;
    return static_cast<double>(r);
  }
  double canon(double x) const { return canon128(static_cast<__int128>(x)); }
  static __int128 i128(double x) { return static_cast<__int128>(x); }
  double wrapped(double x) const { return wrap && !is_bool ? canon(x) : x; }
  double wrapped128(__int128 x) const {
    return wrap && !is_bool ? canon128(x) : static_cast<double>(x);
  }
  // The bit pattern as a non-negative number below 2^bits.
  unsigned __int128 pattern(double x) const {
    const __int128 m = static_cast<__int128>(1) << bits;
    __int128 r = static_cast<__int128>(x) % m;
    if (r < 0) r += m;
    return static_cast<unsigned __int128>(r);
  }
};

inline double ref_expr(const ir::Expr& e, const std::vector<double>& v, const RefInt& t = {}) {
  using ir::ExprOp;
  auto c = [&](int i) { return ref_expr(e.children()[static_cast<std::size_t>(i)], v, t); };
  auto w = [&](double x) { return t.wrapped(x); };
  switch (e.op()) {
    case ExprOp::Operand: return v[static_cast<std::size_t>(e.operand_index())];
    case ExprOp::Const: return e.value();
    // In integer einsums, sums and products are exact (in __int128) before they wrap.
    case ExprOp::Add: return t.wrap ? t.wrapped128(t.i128(c(0)) + t.i128(c(1))) : c(0) + c(1);
    case ExprOp::Sub: return t.wrap ? t.wrapped128(t.i128(c(0)) - t.i128(c(1))) : c(0) - c(1);
    case ExprOp::Mul: return t.wrap ? t.wrapped128(t.i128(c(0)) * t.i128(c(1))) : c(0) * c(1);
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
    case ExprOp::Neg: return w(-c(0));
    case ExprOp::Abs: return w(std::fabs(c(0)));
    case ExprOp::Square: return t.wrap ? t.wrapped128(t.i128(c(0)) * t.i128(c(0))) : c(0) * c(0);
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
    case ExprOp::Atan: return std::atan(c(0));
    case ExprOp::Asin: return std::asin(c(0));
    case ExprOp::Acos: return std::acos(c(0));
    case ExprOp::Atan2: return std::atan2(c(0), c(1));
    case ExprOp::Floor: return std::floor(c(0));
    case ExprOp::Ceil: return std::ceil(c(0));
    case ExprOp::Trunc: return std::trunc(c(0));
    case ExprOp::RoundEven: {  // half to even, written out (not nearbyint)
      const double a = c(0), f = std::floor(a), d = a - f;
      if (d < 0.5) return f;
      if (d > 0.5) return f + 1;
      return std::fmod(f, 2) == 0 ? f : f + 1;
    }
    case ExprOp::RoundAway: { double a = c(0); return a < 0 ? -std::floor(-a + 0.5) : std::floor(a + 0.5); }
    case ExprOp::Sign: { double a = c(0); return a > 0 ? 1 : a < 0 ? -1 : a; }
    case ExprOp::Rem: {
      const double a = c(0), b = c(1);
      if (t.wrap && b == 0) return a;
      return std::fmod(a, b);
    }
    case ExprOp::Mod: {
      const double a = c(0), b = c(1);
      if (t.wrap && b == 0) return a;
      if (t.wrap) return w(a - b * std::floor(a / b));  // exact for small integers
      const double r = std::fmod(a, b);
      return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    }
    // Bit operations on the bit patterns in the integer type.
    case ExprOp::And: return t.canon(static_cast<double>(t.pattern(c(0)) & t.pattern(c(1))));
    case ExprOp::Or: return t.canon(static_cast<double>(t.pattern(c(0)) | t.pattern(c(1))));
    case ExprOp::Xor: return t.canon(static_cast<double>(t.pattern(c(0)) ^ t.pattern(c(1))));
    case ExprOp::Not: return t.is_bool ? (c(0) == 0 ? 1 : 0) : t.canon(-c(0) - 1);
    case ExprOp::Shl: {
      const double a = c(0), n = c(1);
      if (n < 0 || n >= t.bits) return 0;
      return t.canon(static_cast<double>(t.pattern(a) << static_cast<int>(n)));
    }
    case ExprOp::Ashr: {
      double n = c(1);
      if (n < 0 || n >= t.bits) n = t.bits - 1;
      RefInt s = t;
      s.is_unsigned = false;
      const double signed_value = s.canon(c(0));
      return t.canon(std::floor(signed_value / std::ldexp(1.0, static_cast<int>(n))));
    }
    case ExprOp::Lshr: {
      const double n = c(1);
      if (n < 0 || n >= t.bits) return 0;
      return t.canon(static_cast<double>(t.pattern(c(0)) >> static_cast<int>(n)));
    }
    case ExprOp::Popcount: {
      int n = 0;
      for (unsigned __int128 u = t.pattern(c(0)); u != 0; u >>= 1) n += static_cast<int>(u & 1);
      return n;
    }
    case ExprOp::Clz: {
      int width = 0;
      for (unsigned __int128 u = t.pattern(c(0)); u != 0; u >>= 1) ++width;
      return t.bits - width;
    }
    case ExprOp::F32Bits: {
      const float f = static_cast<float>(c(0));
      std::int32_t i;
      std::memcpy(&i, &f, 4);
      return i;
    }
    case ExprOp::BitsF32: {
      const std::uint32_t u = static_cast<std::uint32_t>(static_cast<std::int64_t>(c(0)));
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
    case ExprOp::ErfInv: {  // bisection on erf: slow and certain
      const double y = c(0);
      if (!(std::fabs(y) < 1)) return y == 1 ? INFINITY : y == -1 ? -INFINITY : NAN;
      double lo = -10, hi = 10;
      for (int i = 0; i < 200; ++i) {
        const double mid = 0.5 * (lo + hi);
        (std::erf(mid) < y ? lo : hi) = mid;
      }
      return 0.5 * (lo + hi);
    }
    case ExprOp::Lgamma: return std::lgamma(c(0));
    case ExprOp::IDiv: {
      const double a = c(0), b = c(1);
      if (t.wrap && b == 0) return -1;
      return t.wrap ? w(std::trunc(a / b)) : std::trunc(a / b);
    }
    case ExprOp::Digamma: {  // the derivative of lgamma by a central difference (x > 0)
      const double x = c(0), h = 1e-5 * std::max(1.0, std::fabs(x));
      return (std::lgamma(x + h) - std::lgamma(x - h)) / (2 * h);
    }
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

// Whether the einsum computes in integers (every operand and the output integer or bool, the
// pads integers, and no division, power, special function or bit reinterpretation), and in
// which integer type: the widest integer dtype (signed at equal width), bool if all are bool.
inline RefInt ref_int_type(const ir::EinsumOp& e, const std::vector<const Buffer*>& in,
                           ir::DType out_dtype) {
  using ir::ExprOp;
  RefInt t;
  std::vector<ir::DType> dts{out_dtype};
  for (const Buffer* b : in) dts.push_back(b->dtype());
  bool any_int = false, any_bool = false, any_float = false;
  for (ir::DType d : dts) {
    if (ir::is_float(d)) {
      any_float = true;
      continue;
    }
    if (d == ir::DType::Bool) {
      any_bool = true;
      continue;
    }
    const int bits = ir::dtype_bits(d);
    const bool uns = d == ir::DType::U8;
    if (!any_int || bits > t.bits || (bits == t.bits && !uns)) {
      t.bits = bits;
      t.is_unsigned = uns;
    }
    any_int = true;
  }
  if (!any_int && any_bool) {
    t.bits = 1;
    t.is_unsigned = true;
    t.is_bool = true;
  }
  std::function<bool(const ir::Expr&)> closed = [&](const ir::Expr& x) {
    const ExprOp op = x.op();
    if (ir::is_special_function(op) || op == ExprOp::Div || op == ExprOp::Pow ||
        op == ExprOp::F32Bits || op == ExprOp::BitsF32)
      return false;
    if (op == ExprOp::Const) return x.value() == std::trunc(x.value());
    for (const ir::Expr& ch : x.children())
      if (!closed(ch)) return false;
    return true;
  };
  bool pads_integral = true;
  for (const ir::Operand& o : e.operands)
    if (o.pad && *o.pad != std::trunc(*o.pad)) pads_integral = false;
  t.wrap = !any_float && pads_integral && closed(e.combine);
  return t;
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
  const RefInt ints = ref_int_type(e, in, out_dtype);
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
    const double v = ref_expr(e.combine, vals, ints);
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
