// The jax table's elementwise primitives: arithmetic, comparisons (unsigned operands read as
// unsigned), transcendentals, integer and bit operations, logical ops, select, clamp, and
// conversions (convert_element_type, bitcast, copies).
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "jax_families.h"
#include "solar/util/errors.h"

namespace solar::lower::detail::jax {

namespace {

// f of the op's `arity` operands, elementwise (the op library's pointwise builder over jax's
// positional operands).
Fn nary(std::function<Expr(std::vector<Expr>)> f, std::size_t arity) {
  return pointwise(positional(arity), arity,
                   [f = std::move(f)](Context&, const std::vector<Expr>& x) { return f(x); });
}


// Ops whose result depends on reading the bits as unsigned (comparisons, min/max, division,
// remainder): on uint16/uint32 operands they run on the widened (i64) values, and an integer
// result is cast back (wrapping to the output's width). Other binary ops are the same on
// the signed reading (add, sub, mul and the bit ops wrap to the same bits).
Fn binary(ExprOp op) {
  Fn plain = nary([op](std::vector<Expr> x) { return fn(op, {x[0], x[1]}); }, 2);
  const bool order = op == ExprOp::Lt || op == ExprOp::Le || op == ExprOp::Gt ||
                     op == ExprOp::Ge || op == ExprOp::Max || op == ExprOp::Min ||
                     op == ExprOp::Div || op == ExprOp::Rem;
  if (!order) return plain;
  return [=](Context& c) {
    if (n_operands(c) != 2) throw Unsupported("expects 2 operands");
    if (!unsigned_bits(c, 0) && !unsigned_bits(c, 1)) return plain(c);
    std::vector<TensorId> ins;
    std::vector<Expr> xs;
    for (std::size_t k = 0; k < 2; ++k) {
      if (int bits = unsigned_bits(c, k)) {
        ins.push_back(unsigned_wide(c, in(c, k), bits));
        xs.push_back(arg(static_cast<int>(ins.size() - 1)));
      } else {
        xs.push_back(term(c, k, ins));
      }
    }
    TensorId out = c.def(0);
    if (c.t(out).dtype == ir::DType::Bool) return c.elementwise(ins, out, fn(op, {xs[0], xs[1]}));
    TensorId wide = c.temp("wide", c.t(out).shape, ir::DType::I64);
    c.elementwise(ins, wide, fn(op, {xs[0], xs[1]}));
    c.move(MoveKind::Cast, {wide}, out);
  };
}
Fn unary(std::function<Expr(Expr)> f) {
  return detail::unary(positional(1), [f = std::move(f)](Context&, Expr x) { return f(x); });
}
Fn unary(ExprOp op) { return detail::unary(positional(1), op); }

// Logical ops: on bool (0/1) values `and` is min, `or` max, `not` x == 0, `xor` x != y; on
// integers they are the bitwise ops, evaluated in the einsum's integer type (wrapping to its
// width: docs/ir-text.md, "Integer arithmetic").
Fn logical(ExprOp on_bool, ExprOp on_int, bool negate = false) {
  return [=](Context& c) {
    TensorId out = c.def(0);
    const bool boolean = c.t(out).dtype == ir::DType::Bool;
    if (!boolean && !ir::is_integer(c.t(out).dtype))
      throw Unsupported("a bitwise op on a floating-point tensor");
    std::vector<TensorId> ins;
    if (negate) {
      Expr x = term(c, 0, ins);
      return c.elementwise(ins, out, boolean ? fn(ExprOp::Eq, {x, num(0)}) : un(on_int, x));
    }
    Expr x = term(c, 0, ins), y = term(c, 1, ins);
    c.elementwise(ins, out, fn(boolean ? on_bool : on_int, {x, y}));
  };
}

// An integer-only function (shifts, population_count, clz).
Fn integer_op(std::function<Expr(std::vector<Expr>)> f, std::size_t arity) {
  Fn inner = nary(std::move(f), arity);
  return [inner](Context& c) {
    for (std::size_t k = 0; k < c.op().outputs.size(); ++k)
      if (c.out_id(k) && !ir::is_integer(Context::dtype_of(c.tt(*c.out_id(k)).dtype)))
        throw Unsupported("an integer bit operation on a non-integer tensor");
    inner(c);
  };
}

// erf_inv as XLA computes it for f32 (chlo.erf_inv: Giles' single-precision approximation,
// "Approximating the erfinv function", GPU Computing Gems, 2011), since the IR has no erf_inv:
//   w = -log(1 - x^2); v = w < 5 ? w - 2.5 : sqrt(w) - 3;
//   out = |x| == 1 ? x * inf : P(v) * x, P the degree-8 polynomial of w's range.
// Three einsums (w, v, the rest) so that the cost counts each node once per element: one log
// and one sqrt (special ops) and both polynomials (XLA selects each coefficient instead).
void lower_erf_inv(Context& c) {
  static constexpr double kLow[9] = {2.81022636e-08,  3.43273939e-07, -3.5233877e-06,
                                     -4.39150654e-06, 0.00021858087,  -0.00125372503,
                                     -0.00417768164,  0.246640727,    1.50140941};
  static constexpr double kHigh[9] = {-0.000200214257, 0.000100950558, 0.00134934322,
                                      -0.00367342844,  0.00573950773,  -0.0076224613,
                                      0.00943887047,   1.00167406,     2.83297682};
  TensorId x = in(c, 0);
  TensorId out = c.def(0);
  const ir::DType dt = c.t(out).dtype;
  if (!ir::is_float(dt)) throw Unsupported("erf_inv of a non-float tensor");
  const Shape xs = c.t(x).shape;
  TensorId w = c.temp("w", xs, dt), v = c.temp("v", xs, dt);
  c.elementwise({x}, w, un(ExprOp::Neg, un(ExprOp::Log, sub(num(1), mul(arg(0), arg(0))))));
  c.elementwise({w}, v, fn(ExprOp::Select, {fn(ExprOp::Lt, {arg(0), num(5)}),
                                            sub(arg(0), num(2.5)),
                                            sub(un(ExprOp::Sqrt, arg(0)), num(3))}));
  auto horner = [](const double (&k)[9]) {
    Expr p = num(k[0]);
    for (int i = 1; i < 9; ++i) p = add(num(k[i]), mul(p, arg(2)));
    return p;
  };
  Expr p = fn(ExprOp::Select, {fn(ExprOp::Lt, {arg(1), num(5)}), horner(kLow), horner(kHigh)});
  c.elementwise({x, w, v}, out,
                fn(ExprOp::Select, {fn(ExprOp::Eq, {un(ExprOp::Abs, arg(0)), num(1)}),
                                    mul(arg(0), num(kInf)), mul(p, arg(0))}));
}

// lax.round: rounding_method AWAY_FROM_ZERO (0, lax's default) or TO_NEAREST_EVEN (1,
// jnp.round).
void lower_round(Context& c) {
  const auto& m = c.a("rounding_method");
  bool even = false;
  if (m.is_number_integer()) even = m.get<std::int64_t>() == 1;
  else if (m.is_string()) even = m.get<std::string>().find("EVEN") != std::string::npos;
  std::vector<TensorId> ins;
  Expr x = term(c, 0, ins);
  c.elementwise(ins, c.def(0), un(even ? ExprOp::RoundEven : ExprOp::RoundAway, x));
}

// bitcast_convert_type between types of one width: the same bits seen as another dtype (a
// free view that reinterprets; uint32 random bits -> float32 in jax.random.uniform).
void lower_bitcast(Context& c) {
  TensorId x = in(c, 0);
  TensorId out = c.def(0);
  if (c.t(x).shape != c.t(out).shape ||
      ir::dtype_bits(c.t(x).dtype) != ir::dtype_bits(c.t(out).dtype))
    throw Unsupported("bitcast_convert_type between types of different widths");
  c.move(MoveKind::View, {x}, out);
}

void lower_integer_pow(Context& c) {
  std::vector<TensorId> ins;
  Expr x = term(c, 0, ins);
  std::int64_t y = c.int_arg("y", 2);
  Expr e;
  if (y == 0) e = num(1);
  else if (y == 1) e = x;
  else if (y == 2) e = un(ExprOp::Square, x);
  else if (y == 3) e = mul(x, un(ExprOp::Square, x));
  else if (y == 4) e = un(ExprOp::Square, un(ExprOp::Square, x));
  else if (y == -1) e = un(ExprOp::Recip, x);
  else if (y == -2) e = un(ExprOp::Recip, un(ExprOp::Square, x));
  else e = fn(ExprOp::Pow, {x, num(static_cast<double>(y))});
  c.elementwise(ins, c.def(0), e);
}

// select_n(which, case0, case1, ...): which picks a case (bool: false -> case0).
void lower_select_n(Context& c) {
  const std::size_t n = n_operands(c);
  if (n < 2) throw Unsupported("select_n without cases");
  std::vector<TensorId> ins;
  Expr which = term(c, 0, ins);
  std::vector<Expr> cases;
  for (std::size_t k = 1; k < n; ++k) cases.push_back(term(c, k, ins));
  Expr e = cases.back();
  if (cases.size() == 2) {
    e = fn(ExprOp::Select, {which, cases[1], cases[0]});
  } else {
    for (std::size_t k = cases.size() - 1; k-- > 0;)
      e = fn(ExprOp::Select, {fn(ExprOp::Eq, {which, num(static_cast<double>(k))}), cases[k], e});
  }
  c.elementwise(ins, c.def(0), e);
}

// clamp(min, x, max)
void lower_clamp(Context& c) {
  std::vector<TensorId> ins;
  Expr lo = term(c, 0, ins), x = term(c, 1, ins), hi = term(c, 2, ins);
  c.elementwise(ins, c.def(0), fn(ExprOp::Min, {fn(ExprOp::Max, {x, lo}), hi}));
}

// convert_element_type: a cast; the same storage type (weak-type changes) is a free view.
void lower_convert(Context& c) {
  const auto& o = operands(c);
  TensorId out = c.def(0);
  if (!o.empty() && !is_tensor(o[0])) {
    std::vector<TensorId> ins;
    return c.elementwise(ins, out, term(c, 0, ins));
  }
  TensorId x = in(c, 0);
  // uint16/uint32 are held as the signed type of their width (the same bits): converting
  // one to a float or a wider integer adds 2^bits to the values that read as negative. For
  // floats the fix-up is exact in f64 and rounded once, as JAX converts.
  const std::string& src = c.tt(o[0]["tensor"].get<std::int64_t>()).dtype;
  const ir::DType dt = c.t(out).dtype;
  const int bits = src == "uint32" ? 32 : src == "uint16" ? 16 : 0;
  if (bits && (ir::is_float(dt) || (ir::is_integer(dt) && ir::dtype_bits(dt) > bits))) {
    const Expr fix = fn(ExprOp::Select, {fn(ExprOp::Lt, {arg(0), num(0)}),
                                         add(arg(0), num(std::ldexp(1.0, bits))), arg(0)});
    if (!ir::is_float(dt)) return c.elementwise({x}, out, fix);
    TensorId wide = c.temp("wide", c.t(x).shape, ir::DType::F64);
    c.move(MoveKind::Cast, {x}, wide);
    TensorId unsigned_value = out;
    if (dt != ir::DType::F64) unsigned_value = c.temp("unsigned", c.t(x).shape, ir::DType::F64);
    c.elementwise({wide}, unsigned_value, fix);
    if (unsigned_value != out) c.move(MoveKind::Cast, {unsigned_value}, out);
    return;
  }
  c.move(c.t(x).dtype == dt ? MoveKind::View : MoveKind::Cast, {x}, out);
}

void lower_copy(Context& c) { c.move(MoveKind::Copy, {in(c, 0)}, c.def(0)); }

}  // namespace

void register_pointwise_ops(const Register& reg) {
  for (auto [name, op] : std::initializer_list<std::pair<std::string_view, ExprOp>>{
           {"jax::add", ExprOp::Add}, {"jax::sub", ExprOp::Sub}, {"jax::mul", ExprOp::Mul},
           {"jax::div", ExprOp::Div}, {"jax::max", ExprOp::Max}, {"jax::min", ExprOp::Min},
           {"jax::pow", ExprOp::Pow}, {"jax::eq", ExprOp::Eq}, {"jax::ne", ExprOp::Ne},
           {"jax::lt", ExprOp::Lt}, {"jax::le", ExprOp::Le}, {"jax::gt", ExprOp::Gt},
           {"jax::ge", ExprOp::Ge}, {"jax::add_any", ExprOp::Add}})
    reg(name, binary(op));
  for (auto [name, op] : std::initializer_list<std::pair<std::string_view, ExprOp>>{
           {"jax::neg", ExprOp::Neg}, {"jax::abs", ExprOp::Abs}, {"jax::exp", ExprOp::Exp},
           {"jax::log", ExprOp::Log}, {"jax::tanh", ExprOp::Tanh},
           {"jax::logistic", ExprOp::Sigmoid},
           {"jax::erf", ExprOp::Erf}, {"jax::rsqrt", ExprOp::Rsqrt}, {"jax::sqrt", ExprOp::Sqrt},
           {"jax::sin", ExprOp::Sin}, {"jax::cos", ExprOp::Cos}, {"jax::square", ExprOp::Square}})
    reg(name, unary(op));
  reg("jax::exp2", unary([](Expr x) { return un(ExprOp::Exp, mul(x, num(M_LN2))); }));
  reg("jax::log1p", unary([](Expr x) { return un(ExprOp::Log, add(num(1), x)); }));
  reg("jax::expm1", unary([](Expr x) { return sub(un(ExprOp::Exp, x), num(1)); }));
  reg("jax::tan", unary([](Expr x) {
        return fn(ExprOp::Div, {un(ExprOp::Sin, x), un(ExprOp::Cos, x)});
      }));
  reg("jax::erfc", unary([](Expr x) { return sub(num(1), un(ExprOp::Erf, x)); }));
  reg("jax::sign", unary(ExprOp::Sign));
  reg("jax::cbrt", unary([](Expr x) {
        return mul(un(ExprOp::Sign, x), fn(ExprOp::Pow, {un(ExprOp::Abs, x), num(1.0 / 3)}));
      }));
  reg("jax::erf_inv", lower_erf_inv);
  reg("jax::floor", unary(ExprOp::Floor));
  reg("jax::ceil", unary(ExprOp::Ceil));
  reg("jax::round", lower_round);
  reg("jax::rem", binary(ExprOp::Rem));
  reg("jax::atan2", binary(ExprOp::Atan2));
  reg("jax::atan", unary(ExprOp::Atan));
  reg("jax::asin", unary(ExprOp::Asin));
  reg("jax::acos", unary(ExprOp::Acos));
  reg("jax::shift_left", integer_op([](std::vector<Expr> x) {
        return fn(ExprOp::Shl, {x[0], x[1]});
      }, 2));
  reg("jax::shift_right_logical", integer_op([](std::vector<Expr> x) {
        return fn(ExprOp::Lshr, {x[0], x[1]});
      }, 2));
  reg("jax::shift_right_arithmetic", integer_op([](std::vector<Expr> x) {
        return fn(ExprOp::Ashr, {x[0], x[1]});
      }, 2));
  reg("jax::population_count", integer_op([](std::vector<Expr> x) {
        return un(ExprOp::Popcount, x[0]);
      }, 1));
  reg("jax::clz", integer_op([](std::vector<Expr> x) { return un(ExprOp::Clz, x[0]); }, 1));
  reg("jax::bitcast_convert_type", lower_bitcast);
  // x - x is 0 for finite x and NaN for inf and NaN.
  reg("jax::is_finite", unary([](Expr x) { return fn(ExprOp::Eq, {sub(x, x), num(0)}); }));
  reg("jax::integer_pow", lower_integer_pow);
  reg("jax::and", logical(ExprOp::Min, ExprOp::And));
  reg("jax::or", logical(ExprOp::Max, ExprOp::Or));
  reg("jax::not", logical(ExprOp::Eq, ExprOp::Not, true));
  reg("jax::xor", logical(ExprOp::Ne, ExprOp::Xor));
  reg("jax::select_n", lower_select_n);
  reg("jax::clamp", lower_clamp);
  reg("jax::convert_element_type", lower_convert);
  reg("jax::copy", lower_copy);
  reg("jax::copy_p", lower_copy);
  reg("jax::reduce_precision", lower_copy);
}

}  // namespace solar::lower::detail::jax
