#include "solar/ir/value_domain.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace solar::ir {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The least magnitude of a mask constant, 2^123 (about 1.06e37): JAX's masks are
// finfo(f32).min * 0.7 = -2.38e38, PyTorch's and Hugging Face's finfo(f32 or bf16).min,
// about -3.4e38. Every float of this magnitude in f32 or bf16 has a unit in the last place of
// at least 2^100, so data below 2^99 in magnitude added to it rounds back to it.
constexpr double kMaskConstant = 0x1p123;

// A value as the executor's bit operations read it: truncated toward zero, NaN as 0, values
// past the int64 range saturated.
std::int64_t as_int(double a) {
  if (!(a == a)) return 0;
  if (a >= 9.2233720368547758e18) return std::numeric_limits<std::int64_t>::max();
  if (a <= -9.2233720368547758e18) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(a);
}

std::optional<AffineExpr> index_of(const Expr& e, const std::vector<std::optional<AffineExpr>>& idx) {
  // The functions below are the index arithmetic; any other function's value is not known to
  // be an index (a `default:` here loses knowledge, never soundness).
  switch (e.op()) {
    case ExprOp::Operand: return idx[e.operand_index()];
    case ExprOp::Const: {
      const double v = e.value();
      if (v != std::floor(v) || std::fabs(v) > 9007199254740992.0) return std::nullopt;
      return AffineExpr::constant(static_cast<std::int64_t>(v));
    }
    case ExprOp::Add: case ExprOp::Sub: {
      auto a = index_of(e.children()[0], idx);
      auto b = a ? index_of(e.children()[1], idx) : std::nullopt;
      if (!b) return std::nullopt;
      return e.op() == ExprOp::Add ? *a + *b : *a - *b;
    }
    case ExprOp::Neg: {
      auto a = index_of(e.children()[0], idx);
      return a ? std::optional<AffineExpr>(-*a) : std::nullopt;
    }
    case ExprOp::Mul: {
      auto a = index_of(e.children()[0], idx);
      auto b = a ? index_of(e.children()[1], idx) : std::nullopt;
      if (!b) return std::nullopt;
      if (a->is_constant()) return a->constant_term() * *b;
      if (b->is_constant()) return b->constant_term() * *a;
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

}  // namespace

AbstractValue AbstractValue::constant(double v) {
  return std::isnan(v) ? AbstractValue{Any} : AbstractValue{Const, v};
}

bool AbstractValue::finite() const { return kind == Finite || (kind == Const && std::isfinite(c)); }

bool AbstractValue::positive() const { return kind == Const && c > 0 && std::isfinite(c); }

bool AbstractValue::mask_constant() const {
  return kind == Const && std::isfinite(c) && std::fabs(c) >= kMaskConstant;
}

AbstractValue join(AbstractValue a, AbstractValue b) {
  if (a == b) return a;
  // A mask constant or data: neither absorbs nor is absorbed (see Semantics).
  if (a.mask_constant() || b.mask_constant()) return {AbstractValue::Any};
  if (a.finite() && b.finite()) return {AbstractValue::Finite};
  return {AbstractValue::Any};
}

bool is_comparison(ExprOp op) {
  return op == ExprOp::Lt || op == ExprOp::Le || op == ExprOp::Gt || op == ExprOp::Ge ||
         op == ExprOp::Eq || op == ExprOp::Ne;
}

double compare(ExprOp op, double a, double b) {
  switch (op) {
    case ExprOp::Lt: return a < b;
    case ExprOp::Le: return a <= b;
    case ExprOp::Gt: return a > b;
    case ExprOp::Ge: return a >= b;
    case ExprOp::Eq: return a == b;
    default: return a != b;  // ne (the callers pass comparisons only)
  }
}

// The functions folded below are those the mask patterns meet; any other gives nullopt (a
// `default:` here loses knowledge, never soundness).
std::optional<double> fold(ExprOp op, double a, double b) {
  switch (op) {
    case ExprOp::Add: return a + b;
    case ExprOp::Sub: return a - b;
    case ExprOp::Mul: return a * b;
    case ExprOp::Div: return a / b;
    case ExprOp::Max: return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
    case ExprOp::Min: return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
    default: return is_comparison(op) ? std::optional<double>(compare(op, a, b)) : std::nullopt;
  }
}

std::optional<double> fold(ExprOp op, double a, const IntegerType& t) {
  switch (op) {
    case ExprOp::Neg: return -a;
    case ExprOp::Abs: return std::fabs(a);
    case ExprOp::Square: return a * a;
    case ExprOp::Relu: return std::isnan(a) ? a : std::max(a, 0.0);
    case ExprOp::Exp: return std::exp(a);
    case ExprOp::Log: return std::log(a);
    case ExprOp::Sqrt: return std::sqrt(a);
    case ExprOp::Rsqrt: return 1 / std::sqrt(a);
    case ExprOp::Recip: return 1 / a;
    case ExprOp::Tanh: return std::tanh(a);
    case ExprOp::Sigmoid: return 1 / (1 + std::exp(-a));
    case ExprOp::Floor: return std::floor(a);
    case ExprOp::Ceil: return std::ceil(a);
    case ExprOp::Trunc: return std::trunc(a);
    case ExprOp::Not:
      if (t.is_bool) return as_int(a) == 0 ? 1 : 0;
      return static_cast<double>(integer_value(t, ~static_cast<std::uint64_t>(as_int(a))));
    default: return std::nullopt;
  }
}

AbstractValue abstract_binary(ExprOp op, AbstractValue a, AbstractValue b) {
  using V = AbstractValue;
  if (a.kind == V::Const && b.kind == V::Const) {
    if (std::optional<double> v = fold(op, a.c, b.c)) return V::constant(*v);
    return a.finite() && b.finite() ? V{V::Finite} : V{V::Any};
  }
  if (a.kind == V::Any || b.kind == V::Any) return {V::Any};
  // One side is finite data, the other finite data or a constant (maybe infinite).
  const bool inf_a = a.kind == V::Const && std::isinf(a.c);
  const bool inf_b = b.kind == V::Const && std::isinf(b.c);
  // A mask constant absorbs finite data in a sum (see Semantics): `finfo.min + x` is
  // `finfo.min`, so exp of it is 0 as exp(-inf) is.
  const bool huge_a = a.mask_constant(), huge_b = b.mask_constant();
  switch (op) {
    case ExprOp::Add:
      if (inf_a || huge_a) return a;
      if (inf_b || huge_b) return b;
      return {V::Finite};
    case ExprOp::Sub:
      if (inf_a || huge_a) return a;
      if (inf_b || huge_b) return V::constant(-b.c);
      return {V::Finite};
    case ExprOp::Mul:
      if (a.is(0) || b.is(0)) return V::constant(0);  // 0 times finite data
      if (inf_a || inf_b || huge_a || huge_b) return {V::Any};  // the data decides
      return {V::Finite};
    case ExprOp::Div:
      if (inf_a && b.positive()) return a;
      if (inf_b) return V::constant(0);  // finite data over an infinity
      if (inf_a || huge_a) return {V::Any};
      // 0 / data: the caller decides (the divisor is known nonzero only at some points).
      return {V::Finite};
    case ExprOp::Max:
      if (a.is(kInf) || b.is(kInf)) return V::constant(kInf);
      if (a.is(-kInf)) return b;
      if (b.is(-kInf)) return a;
      if (huge_a) return a.c > 0 ? a : b;  // a mask constant against data
      if (huge_b) return b.c > 0 ? b : a;
      return {V::Finite};
    case ExprOp::Min:
      if (a.is(-kInf) || b.is(-kInf)) return V::constant(-kInf);
      if (a.is(kInf)) return b;
      if (b.is(kInf)) return a;
      if (huge_a) return a.c < 0 ? a : b;
      if (huge_b) return b.c < 0 ? b : a;
      return {V::Finite};
    default:
      if (is_comparison(op)) {
        // An infinity against finite data compares the same way whatever the data.
        if (inf_a || huge_a) return V::constant(compare(op, a.c, 0));
        if (inf_b || huge_b) return V::constant(compare(op, 0, b.c));
        return {V::Finite};
      }
      return inf_a || inf_b ? V{V::Any} : V{V::Finite};
  }
}

AbstractValue abstract_unary(ExprOp op, AbstractValue a, const IntegerType& t) {
  if (a.kind == AbstractValue::Const) {
    if (std::optional<double> v = fold(op, a.c, t)) return AbstractValue::constant(*v);
    return a.finite() ? AbstractValue{AbstractValue::Finite} : AbstractValue{AbstractValue::Any};
  }
  return a;  // data in, data out (finite by the assumption), or anything
}

std::optional<AffineExpr> index_value(const Expr& e,
                                      const std::vector<std::optional<AffineExpr>>& operands) {
  try {
    return index_of(e, operands);
  } catch (const AffineOverflow&) {
    return std::nullopt;
  }
}

std::optional<Truth> comparison_truth(const Expr& e,
                                      const std::vector<std::optional<AffineExpr>>& operands,
                                      const std::vector<std::int64_t>& extents) {
  if (!is_comparison(e.op())) return std::nullopt;
  auto a = index_value(e.children()[0], operands);
  auto b = a ? index_value(e.children()[1], operands) : std::nullopt;
  if (!b) return std::nullopt;
  try {
    const AffineExpr d = *a - *b;
    Truth t;
    switch (e.op()) {
      case ExprOp::Ge: t.region = {{d}}; break;
      case ExprOp::Gt: t.region = {{d - 1}}; break;
      case ExprOp::Le: t.region = {{-d}}; break;
      case ExprOp::Lt: t.region = {{-d - 1}}; break;
      case ExprOp::Eq: case ExprOp::Ne:
        t.region = {{d}, {-d}};
        t.inside = e.op() == ExprOp::Eq;
        break;
      default: return std::nullopt;
    }
    t.region = canonical_region(std::move(t.region), extents);
    return t;
  } catch (const AffineOverflow&) {
    return std::nullopt;
  }
}

}  // namespace solar::ir
