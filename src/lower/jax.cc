// The jax dialect table: one entry per lax primitive (`jax::NAME`), a small function per
// family, over the ops the JAX recorder writes (python/solar/frontends/jax/capture.py):
// `args.operands` is the positional operand list (`{"tensor": id}` with an optional known
// `value`, or a number for a literal) and every primitive parameter is an argument by name.
#include "solar/lower/jax.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "context.h"
#include "families.h"
#include "solar/ir/verify.h"
#include "solar/util/errors.h"

namespace solar::lower {
namespace {

using namespace detail;  // the families' shared vocabulary (families.h)

// ---------------------------------------------------------------- operands and params

const nlohmann::json& operands(Context& c) {
  const auto& v = c.a("operands");
  if (!v.is_array()) throw Unsupported("the op has no operand list");
  return v;
}
std::size_t n_operands(Context& c) { return operands(c).size(); }

bool is_tensor(const nlohmann::json& v) { return v.is_object() && v.contains("tensor"); }

// Operand k as a graph tensor (a literal there is an error of the recorder: Unsupported).
TensorId in(Context& c, std::size_t k) {
  const auto& ops = operands(c);
  if (k >= ops.size() || !is_tensor(ops[k]))
    throw Unsupported(fmt::format("operand {} is not a tensor", k));
  return c.use(ops[k]["tensor"].get<std::int64_t>());
}

// Operand k as a combine term: a tensor joins `inputs`, a literal is a constant.
Expr term(Context& c, std::size_t k, std::vector<TensorId>& inputs) {
  const auto& ops = operands(c);
  if (k >= ops.size()) throw Unsupported(fmt::format("operand {} is missing", k));
  if (is_tensor(ops[k])) {
    inputs.push_back(c.use(ops[k]["tensor"].get<std::int64_t>()));
    return arg(static_cast<int>(inputs.size() - 1));
  }
  if (std::optional<double> x = number_value(ops[k])) return num(*x);
  throw Unsupported(fmt::format("operand {} is neither a tensor nor a number", k));
}

// The value of a scalar operand when the recorder knew it (a literal or a folded tensor).
std::optional<double> known(Context& c, std::size_t k) {
  const auto& ops = operands(c);
  if (k >= ops.size()) return std::nullopt;
  if (is_tensor(ops[k])) {
    if (ops[k].contains("value")) return number_value(ops[k]["value"]);
    return std::nullopt;
  }
  return number_value(ops[k]);
}

// A list parameter of integers (null or absent: empty).
Shape ints(Context& c, const char* name) { return c.ints(name); }

Shape int_list(const nlohmann::json& v, const char* what) {
  Shape out;
  if (v.is_null()) return out;
  if (!v.is_array()) throw Unsupported(fmt::format("'{}' is not a list", what));
  for (const auto& x : v) {
    if (!x.is_number_integer()) throw Unsupported(fmt::format("'{}' holds a non-integer", what));
    out.push_back(x.get<std::int64_t>());
  }
  return out;
}

// A list field of a dimension-numbers object (absent: empty).
Shape field(const nlohmann::json& dn, const char* key) {
  return int_list(dn.value(key, nlohmann::json()), key);
}

// [[lo, hi], ...] padding pairs.
using Pads = std::vector<std::pair<std::int64_t, std::int64_t>>;
Pads pad_pairs(const nlohmann::json& v, std::size_t n) {
  Pads out;
  if (v.is_null()) return Pads(n, {0, 0});
  if (!v.is_array()) throw Unsupported("padding is not a list of (low, high) pairs");
  for (const auto& p : v) {
    if (!p.is_array() || p.size() < 2 || !p[0].is_number_integer() || !p[1].is_number_integer())
      throw Unsupported("padding is not a list of (low, high) pairs");
    out.emplace_back(p[0].get<std::int64_t>(), p[1].get<std::int64_t>());
  }
  if (out.size() != n) throw Unsupported("padding has the wrong number of dimensions");
  return out;
}

Shape or_ones(Shape v, std::size_t n) {
  if (v.empty()) v.assign(n, 1);
  if (v.size() != n) throw Unsupported("a per-dimension parameter has the wrong length");
  return v;
}

// ---------------------------------------------------------------- elementwise

Fn nary(std::function<Expr(std::vector<Expr>)> f, std::size_t arity) {
  return [=](Context& c) {
    if (n_operands(c) != arity) throw Unsupported(fmt::format("expects {} operands", arity));
    std::vector<TensorId> ins;
    std::vector<Expr> xs;
    for (std::size_t k = 0; k < arity; ++k) xs.push_back(term(c, k, ins));
    c.elementwise(ins, c.def(0), f(xs));
  };
}
// The width of an unsigned operand held as the signed type of its width (uint16, uint32:
// the IR has no such types), 0 for any other operand.
int unsigned_bits(Context& c, std::size_t k) {
  const auto& o = operands(c);
  if (k >= o.size() || !is_tensor(o[k])) return 0;
  const std::string& d = c.tt(o[k]["tensor"].get<std::int64_t>()).dtype;
  return d == "uint32" ? 32 : d == "uint16" ? 16 : 0;
}

// x (held signed) as i64 holding its unsigned value: x + 2^bits where x reads negative.
TensorId unsigned_wide(Context& c, TensorId x, int bits) {
  TensorId w = c.temp("unsigned", c.t(x).shape, ir::DType::I64);
  c.elementwise({x}, w, fn(ExprOp::Select, {fn(ExprOp::Lt, {arg(0), num(0)}),
                                            add(arg(0), num(std::ldexp(1.0, bits))), arg(0)}));
  return w;
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
  return nary([f](std::vector<Expr> x) { return f(x[0]); }, 1);
}
Fn unary(ExprOp op) {
  return unary([op](Expr x) { return un(op, x); });
}

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

// ---------------------------------------------------------------- reductions

Fn reduction(Reduce r) {
  return [=](Context& c) {
    TensorId x = in(c, 0);
    Shape axes = ints(c, "axes");
    TensorId out = c.def(0);
    if (axes.empty()) return c.move(MoveKind::View, {x}, out);  // reduces nothing
    c.reduce(x, out, axes, r);
  };
}

// argmax/argmin over one axis: one compare per element (as the aten table states).
Fn arg_reduction(const char* what) {
  return [=](Context& c) {
    TensorId x = in(c, 0);
    Shape axes = ints(c, "axes");
    if (axes.size() != 1) throw Unsupported("arg-reduction over other than one axis");
    TensorId out = c.def(0);
    ir::OpaqueOp o;
    o.function = what;
    o.vector_flops = c.t(x).num_elements();
    o.special_ops = Count(0);
    o.bytes = c.t(x).size_bytes() + c.t(out).size_bytes();
    o.assumption = "one compare per input element; reads the input once, writes the indices once";
    o.attrs["axis"] = norm_dim(axes[0], c.t(x).shape.size());
    c.opaque({x}, {out}, std::move(o));
  };
}

// out[.., i, ..] = in[.., n-1-i, ..] along `axis`: a copy with an affine subscript.
void reverse_into(Context& c, TensorId x, TensorId out, std::int64_t axis) {
  const Shape xs = c.t(x).shape;
  Space s;
  std::vector<AffineExpr> sx, so;
  for (std::size_t d = 0; d < xs.size(); ++d) {
    ir::IndexPos i = s.add(fmt::format("i{}", d), xs[d]);
    so.push_back(ix(i));
    sx.push_back(static_cast<std::int64_t>(d) == axis
                     ? AffineExpr::make({AffineTerm{i, -1}}, xs[d] - 1) : ix(i));
  }
  c.einsum({x}, out, std::move(s), {sx}, so, arg(0), Reduce::None);
}

// cumsum/cumprod/cummax/cummin along `axis`: one combine per element; reverse=True is the
// forward scan between two reversals.
Fn cumulative(const char* what) {
  return [=](Context& c) {
    TensorId x = in(c, 0);
    TensorId out = c.def(0);
    const std::int64_t axis = norm_dim(c.int_arg("axis", 0), c.t(x).shape.size());
    const bool reverse = c.bool_arg("reverse", false);
    TensorId src = x, dst = out;
    if (reverse) {
      src = c.temp("reversed", c.t(x).shape, c.t(x).dtype);
      reverse_into(c, x, src, axis);
      dst = c.temp("scanned", c.t(out).shape, c.t(out).dtype);
    }
    ir::OpaqueOp o;
    o.function = what;
    o.vector_flops = c.t(x).num_elements();
    o.special_ops = Count(0);
    o.bytes = c.t(x).size_bytes() + c.t(out).size_bytes();
    o.assumption = "sequential scan: one combine per element; reads the input once, writes each "
                   "output once";
    o.attrs["axis"] = axis;
    c.opaque({src}, {dst}, std::move(o));
    if (reverse) reverse_into(c, dst, out, axis);
  };
}

// ---------------------------------------------------------------- contractions

// dot_general with any dimension numbers ((lhs_contract, rhs_contract), (lhs_batch,
// rhs_batch)): out[batch..., lhs free..., rhs free...] = sum_k lhs * rhs.
void lower_dot_general(Context& c) {
  TensorId a = in(c, 0), b = in(c, 1);
  TensorId out = c.def(0);
  const Shape as = c.t(a).shape, bs = c.t(b).shape;
  const auto& dn = c.a("dimension_numbers");
  if (!dn.is_array() || dn.size() != 2 || !dn[0].is_array() || !dn[1].is_array() ||
      dn[0].size() != 2 || dn[1].size() != 2)
    throw Unsupported("dot_general without ((contract), (batch)) dimension numbers");
  Shape lc = int_list(dn[0][0], "lhs_contract"), rc = int_list(dn[0][1], "rhs_contract"),
        lb = int_list(dn[1][0], "lhs_batch"), rb = int_list(dn[1][1], "rhs_batch");
  if (lc.size() != rc.size() || lb.size() != rb.size())
    throw Unsupported("dot_general dimension numbers of different lengths");
  Space s;
  std::vector<AffineExpr> sa(as.size()), sb(bs.size()), so;
  std::vector<bool> used_a(as.size(), false), used_b(bs.size(), false);
  for (std::size_t k = 0; k < lb.size(); ++k) {
    std::int64_t da = norm_dim(lb[k], as.size()), db = norm_dim(rb[k], bs.size());
    if (as[da] != bs[db]) throw Unsupported("dot_general batch extents differ");
    AffineExpr i = ix(s.add(fmt::format("b{}", k), as[da]));
    sa[da] = i, sb[db] = i, used_a[da] = used_b[db] = true;
    so.push_back(i);
  }
  for (std::size_t d = 0; d < as.size(); ++d) {
    if (used_a[d] || std::count(lc.begin(), lc.end(), static_cast<std::int64_t>(d))) continue;
    AffineExpr i = ix(s.add(fmt::format("m{}", d), as[d]));
    sa[d] = i;
    so.push_back(i);
  }
  for (std::size_t d = 0; d < bs.size(); ++d) {
    if (used_b[d] || std::count(rc.begin(), rc.end(), static_cast<std::int64_t>(d))) continue;
    AffineExpr i = ix(s.add(fmt::format("n{}", d), bs[d]));
    sb[d] = i;
    so.push_back(i);
  }
  for (std::size_t k = 0; k < lc.size(); ++k) {
    std::int64_t da = norm_dim(lc[k], as.size()), db = norm_dim(rc[k], bs.size());
    if (as[da] != bs[db]) throw Unsupported("dot_general contracted extents differ");
    AffineExpr i = ix(s.add(fmt::format("k{}", k), as[da]));
    sa[da] = i, sb[db] = i;
  }
  if (so.size() != c.t(out).shape.size()) throw Unsupported("dot_general output rank mismatch");
  c.einsum({a, b}, out, std::move(s), {sa, sb}, so, mul(arg(0), arg(1)), Reduce::Sum);
}

// conv_general_dilated with dimension numbers, strides, padding, lhs/rhs dilation, feature
// and batch groups:
//   out[n, G*Kg + k, p..] = sum_{c, r..} lhs[n, g*I + c, q..] * rhs[g*Kg + k, c, r..]
//   q = p*stride + r*rhs_dilation - pad_lo; with lhs dilation the input element i sits at
//   q = i*lhs_dilation, expressed with an input index i and the mask q - i*ld == 0.
//   batch_group_count B instead splits lhs's batch: lhs[bg*N + n, c, ...], out feature bg*Kb + k.
void lower_conv(Context& c) {
  TensorId x = in(c, 0), w = in(c, 1);
  TensorId out = c.def(0);
  const Shape xs = c.t(x).shape, ws = c.t(w).shape, os = c.t(out).shape;
  const std::size_t rank = xs.size();
  if (rank < 3 || ws.size() != rank || os.size() != rank)
    throw Unsupported("convolution needs operands of equal rank >= 3");
  const std::size_t nd = rank - 2;
  Shape lhs_spec, rhs_spec, out_spec;
  const auto& dn = c.a("dimension_numbers");
  if (dn.is_object()) {
    lhs_spec = field(dn, "lhs_spec");
    rhs_spec = field(dn, "rhs_spec");
    out_spec = field(dn, "out_spec");
  } else if (dn.is_array() && dn.size() == 3) {
    lhs_spec = int_list(dn[0], "lhs_spec");
    rhs_spec = int_list(dn[1], "rhs_spec");
    out_spec = int_list(dn[2], "out_spec");
  } else if (dn.is_null()) {
    for (std::size_t d = 0; d < rank; ++d) {
      lhs_spec.push_back(static_cast<std::int64_t>(d));
      rhs_spec.push_back(static_cast<std::int64_t>(d));
      out_spec.push_back(static_cast<std::int64_t>(d));
    }
  } else {
    throw Unsupported("unreadable convolution dimension numbers");
  }
  if (lhs_spec.size() != rank || rhs_spec.size() != rank || out_spec.size() != rank)
    throw Unsupported("convolution dimension numbers of the wrong rank");
  Shape stride = or_ones(ints(c, "window_strides"), nd), ld = or_ones(ints(c, "lhs_dilation"), nd),
        rd = or_ones(ints(c, "rhs_dilation"), nd);
  auto pad = pad_pairs(c.a("padding"), nd);
  const std::int64_t G = c.int_arg("feature_group_count", 1), B = c.int_arg("batch_group_count", 1);
  const std::int64_t N = xs[lhs_spec[0]], C = xs[lhs_spec[1]], O = ws[rhs_spec[0]],
                     I = ws[rhs_spec[1]], No = os[out_spec[0]];
  if (G < 1 || B < 1 || (G > 1 && B > 1)) throw Unsupported("inconsistent convolution groups");
  if (C != G * I || O % (G * B) != 0 || N != B * No || os[out_spec[1]] != O)
    throw Unsupported("convolution extents do not match the groups");
  const std::int64_t Kg = O / (G * B);
  Space s;
  ir::IndexPos n = s.add("n", No);
  std::optional<ir::IndexPos> g, bg;
  if (G > 1) g = s.add("g", G);
  if (B > 1) bg = s.add("bg", B);
  ir::IndexPos k = s.add("k", Kg), ci = s.add("c", I);
  AffineExpr feat = ix(k);
  if (g) feat = AffineExpr::make({AffineTerm{*g, Kg}, AffineTerm{k, 1}}, 0);
  if (bg) feat = AffineExpr::make({AffineTerm{*bg, Kg}, AffineTerm{k, 1}}, 0);
  AffineExpr in_feat = g ? AffineExpr::make({AffineTerm{*g, I}, AffineTerm{ci, 1}}, 0) : ix(ci);
  AffineExpr in_batch = bg ? AffineExpr::make({AffineTerm{*bg, No}, AffineTerm{n, 1}}, 0) : ix(n);
  std::vector<AffineExpr> sx(rank), sw(rank), so(rank);
  sx[lhs_spec[0]] = in_batch;
  sx[lhs_spec[1]] = in_feat;
  sw[rhs_spec[0]] = feat;
  sw[rhs_spec[1]] = ix(ci);
  so[out_spec[0]] = ix(n);
  so[out_spec[1]] = feat;
  std::vector<ir::IndexPos> ps, rs;
  for (std::size_t d = 0; d < nd; ++d)
    ps.push_back(s.add(fmt::format("p{}", d), os[out_spec[2 + d]]));
  for (std::size_t d = 0; d < nd; ++d)
    rs.push_back(s.add(fmt::format("r{}", d), ws[rhs_spec[2 + d]]));
  std::vector<ir::AffineConstraint> mask;
  bool padded = false;
  for (std::size_t d = 0; d < nd; ++d) {
    AffineExpr q = AffineExpr::make({AffineTerm{ps[d], stride[d]}, AffineTerm{rs[d], rd[d]}},
                                    -pad[d].first);
    sw[rhs_spec[2 + d]] = ix(rs[d]);
    so[out_spec[2 + d]] = ix(ps[d]);
    const std::int64_t extent = xs[lhs_spec[2 + d]];
    if (ld[d] == 1) {
      sx[lhs_spec[2 + d]] = q;
      std::vector<std::int64_t> ext;
      for (const auto& dim : s.dims) ext.push_back(dim.extent);
      padded = padded || q.min_value(ext) < 0 || q.max_value(ext) >= extent;
    } else {
      ir::IndexPos i = s.add(fmt::format("i{}", d), extent);
      sx[lhs_spec[2 + d]] = ix(i);
      std::vector<AffineTerm> t{{ps[d], stride[d]}, {rs[d], rd[d]}, {i, -ld[d]}};
      AffineExpr eq = AffineExpr::make(t, -pad[d].first);
      for (auto& x : t) x.coef = -x.coef;
      mask.push_back({eq});
      mask.push_back({AffineExpr::make(t, pad[d].first)});
    }
  }
  c.einsum({x, w}, out, std::move(s), {sx, sw}, so, mul(arg(0), arg(1)), Reduce::Sum, mask,
           {padded ? std::optional<double>(0.0) : std::nullopt, std::nullopt});
}

TensorId interior_pad(Context& c, TensorId x, std::size_t d, std::int64_t interior, double value);

// reduce_window_{sum,max,min} (pooling): out[p..] = REDUCE_r in[p*stride + r*dilation - lo],
// reads outside the input yield the reduction's identity. Base dilation bd (the input seen
// with bd - 1 holes between neighbours) is first made explicit: the input is spread with the
// identity in the holes (interior_pad, copies), so every window tap is counted, as for the
// padding; the window einsum then reads the dilated input.
Fn reduce_window(Reduce r) {
  return [=](Context& c) {
    TensorId x = in(c, 0);
    TensorId out = c.def(0);
    const Shape os = c.t(out).shape;
    const std::size_t rank = c.t(x).shape.size();
    Shape win = ints(c, "window_dimensions");
    Shape stride = or_ones(ints(c, "window_strides"), rank),
          bd = or_ones(ints(c, "base_dilation"), rank),
          wd = or_ones(ints(c, "window_dilation"), rank);
    auto pad = pad_pairs(c.a("padding"), rank);
    if (win.size() != rank || os.size() != rank) throw Unsupported("window of the wrong rank");
    const double identity = r == Reduce::Max ? -kInf : r == Reduce::Min ? kInf : 0;
    for (std::size_t d = 0; d < rank; ++d) {
      if (bd[d] < 1) throw Unsupported("reduce_window with base dilation below 1");
      if (bd[d] > 1 && c.t(x).shape[d] > 1) x = interior_pad(c, x, d, bd[d] - 1, identity);
    }
    const Shape xs = c.t(x).shape;
    Space s;
    std::vector<AffineExpr> sx, so;
    std::vector<ir::IndexPos> ps, rs;
    for (std::size_t d = 0; d < rank; ++d) ps.push_back(s.add(fmt::format("p{}", d), os[d]));
    for (std::size_t d = 0; d < rank; ++d)
      if (win[d] != 1) rs.push_back(s.add(fmt::format("r{}", d), win[d]));
      else rs.push_back(-1);
    bool needs_pad = false;
    std::vector<std::int64_t> ext;
    for (const auto& dim : s.dims) ext.push_back(dim.extent);
    for (std::size_t d = 0; d < rank; ++d) {
      std::vector<AffineTerm> t{{ps[d], stride[d]}};
      if (rs[d] >= 0) t.push_back({rs[d], wd[d]});
      AffineExpr a = AffineExpr::make(t, -pad[d].first);
      needs_pad = needs_pad || a.min_value(ext) < 0 || a.max_value(ext) >= xs[d];
      sx.push_back(a);
      so.push_back(ix(ps[d]));
    }
    c.einsum({x}, out, std::move(s), {sx}, so, arg(0), r, {},
             {needs_pad ? std::optional<double>(identity) : std::nullopt});
  };
}

// ---------------------------------------------------------------- shapes and movement

// broadcast_in_dim: the operand's dims land at broadcast_dimensions; a free view (first a
// reshape inserting the new size-1 dims, then a numpy broadcast).
void lower_broadcast_in_dim(Context& c) {
  TensorId out = c.def(0);
  const auto& o = operands(c);
  if (!o.empty() && !is_tensor(o[0])) {
    std::vector<TensorId> ins;
    return c.elementwise(ins, out, term(c, 0, ins));
  }
  TensorId x = in(c, 0);
  const Shape xs = c.t(x).shape, os = c.t(out).shape;
  Shape dims = ints(c, "broadcast_dimensions");
  if (dims.size() != xs.size()) throw Unsupported("broadcast_dimensions of the wrong length");
  Shape aligned(os.size(), 1);
  for (std::size_t k = 0; k < dims.size(); ++k) aligned[norm_dim(dims[k], os.size())] = xs[k];
  // Trailing dimensions (numpy's right alignment) broadcast in one view.
  bool trailing = true;
  for (std::size_t k = 0; k < dims.size(); ++k)
    trailing = trailing && dims[k] == static_cast<std::int64_t>(os.size() - xs.size() + k);
  TensorId v = x;
  if (aligned != xs && !trailing) {
    if (aligned == os) return c.move(MoveKind::View, {x}, out);
    v = c.temp("aligned", aligned, c.t(x).dtype);
    c.move(MoveKind::View, {x}, v);
  }
  c.move(MoveKind::View, {v}, out);
}

// reshape/squeeze/expand_dims: a free view; of a literal (a scalar the recorder folded), the
// constant written out.
void lower_view(Context& c) {
  const auto& o = operands(c);
  if (!o.empty() && !is_tensor(o[0])) {
    std::vector<TensorId> ins;
    TensorId out = c.def(0);
    return c.elementwise(ins, out, term(c, 0, ins));
  }
  c.move(MoveKind::View, {in(c, 0)}, c.def(0));
}

void lower_reshape(Context& c) {
  if (!c.a("dimensions").is_null()) throw Unsupported("reshape with a dimension order");
  lower_view(c);
}

void lower_transpose(Context& c) {
  c.move(MoveKind::Permute, {in(c, 0)}, c.def(0), {{"perm", ints(c, "permutation")}});
}

// rev: a copy reading in[n-1-i] along the reversed dimensions.
void lower_rev(Context& c) {
  TensorId x = in(c, 0);
  TensorId out = c.def(0);
  const Shape xs = c.t(x).shape;
  Shape dims = ints(c, "dimensions");
  Space s;
  std::vector<AffineExpr> sx, so;
  for (std::size_t d = 0; d < xs.size(); ++d) {
    ir::IndexPos i = s.add(fmt::format("i{}", d), xs[d]);
    so.push_back(ix(i));
    bool rev = false;
    for (std::int64_t r : dims) rev = rev || norm_dim(r, xs.size()) == static_cast<std::int64_t>(d);
    sx.push_back(rev ? AffineExpr::make({AffineTerm{i, -1}}, xs[d] - 1) : ix(i));
  }
  c.einsum({x}, out, std::move(s), {sx}, so, arg(0), Reduce::None);
}

void slice_move(Context& c, TensorId x, TensorId out, Shape starts, Shape ends, Shape steps) {
  c.move(MoveKind::Slice, {x}, out, {{"starts", starts}, {"ends", ends}, {"steps", steps}});
}

void lower_slice(Context& c) {
  TensorId x = in(c, 0);
  const Shape xs = c.t(x).shape;
  Shape starts = ints(c, "start_indices"), ends = ints(c, "limit_indices"),
        steps = or_ones(ints(c, "strides"), xs.size());
  if (starts.size() != xs.size() || ends.size() != xs.size())
    throw Unsupported("slice of the wrong rank");
  slice_move(c, x, c.def(0), starts, ends, steps);
}

// The start of a dynamic slice along each dimension, clamped as XLA clamps it (the slice
// stays inside the operand); the recorder must have known every start.
Shape dynamic_starts(Context& c, std::size_t first, const Shape& xs, const Shape& sizes) {
  Shape starts;
  for (std::size_t d = 0; d < xs.size(); ++d) {
    std::optional<double> v = known(c, first + d);
    if (!v)
      throw Unsupported(fmt::format("the start of dimension {} is known only at run time "
                                    "(analyze with real inputs)", d));
    std::int64_t s = static_cast<std::int64_t>(*v);
    starts.push_back(std::clamp<std::int64_t>(s, 0, xs[d] - sizes[d]));
  }
  return starts;
}

void lower_dynamic_slice(Context& c) {
  TensorId x = in(c, 0);
  const Shape xs = c.t(x).shape;
  Shape sizes = ints(c, "slice_sizes");
  if (sizes.size() != xs.size()) throw Unsupported("slice_sizes of the wrong rank");
  Shape starts = dynamic_starts(c, 1, xs, sizes), ends;
  for (std::size_t d = 0; d < xs.size(); ++d) ends.push_back(starts[d] + sizes[d]);
  slice_move(c, x, c.def(0), starts, ends, Shape(xs.size(), 1));
}

// dynamic_update_slice: the operand with the update written over a box. Built as slices of
// the operand around the box and a concat per dimension the box does not cover (XLA updates
// in place; this copies the untouched part once more, which is stated in docs/jax-frontend.md).
TensorId update_box(Context& c, TensorId x, TensorId u, const Shape& starts, std::size_t d,
                    TensorId out) {
  const Shape xs = c.t(x).shape, us = c.t(u).shape;
  while (d < xs.size() && starts[d] == 0 && us[d] == xs[d]) ++d;
  if (d == xs.size()) throw Unsupported("dynamic_update_slice: no dimension left to split");
  if (!out.valid()) out = c.temp("updated", xs, c.t(x).dtype);
  std::vector<TensorId> parts;
  auto piece = [&](std::int64_t lo, std::int64_t hi) {
    Shape st(xs.size(), 0), en = xs, sh = xs;
    st[d] = lo, en[d] = hi, sh[d] = hi - lo;
    TensorId p = c.temp("part", sh, c.t(x).dtype);
    slice_move(c, x, p, st, en, Shape(xs.size(), 1));
    return p;
  };
  if (starts[d] > 0) parts.push_back(piece(0, starts[d]));
  // The middle: the operand's band along d with the rest of the box written into it.
  TensorId mid = u;
  bool more = false;
  for (std::size_t e = d + 1; e < xs.size(); ++e) more = more || starts[e] != 0 || us[e] != xs[e];
  if (more) {
    TensorId band = piece(starts[d], starts[d] + us[d]);
    mid = c.temp("band", c.t(band).shape, c.t(x).dtype);
    update_box(c, band, u, starts, d + 1, mid);
  }
  parts.push_back(mid);
  if (starts[d] + us[d] < xs[d]) parts.push_back(piece(starts[d] + us[d], xs[d]));
  if (parts.size() == 1) c.move(MoveKind::View, {parts[0]}, out);
  else c.move(MoveKind::Concat, parts, out, {{"axis", static_cast<std::int64_t>(d)}});
  return out;
}

void lower_dynamic_update_slice(Context& c) {
  TensorId x = in(c, 0), u = in(c, 1);
  const Shape xs = c.t(x).shape, us = c.t(u).shape;
  if (us.size() != xs.size()) throw Unsupported("update of another rank");
  Shape starts = dynamic_starts(c, 2, xs, us);
  TensorId out = c.def(0);
  bool whole = true;
  for (std::size_t d = 0; d < xs.size(); ++d) whole = whole && us[d] == xs[d];
  if (whole) return c.move(MoveKind::Copy, {u}, out);
  update_box(c, x, u, starts, 0, out);
}

void lower_concatenate(Context& c) {
  std::vector<TensorId> ins;
  for (std::size_t k = 0; k < n_operands(c); ++k) ins.push_back(in(c, k));
  TensorId out = c.def(0);
  if (ins.size() == 1) return c.move(MoveKind::Copy, ins, out);
  c.move(MoveKind::Concat, ins, out,
         {{"axis", norm_dim(c.int_arg("dimension", 0), c.t(out).shape.size())}});
}

// stack(operands, axis): each operand viewed with a size-1 dimension at `axis`, concatenated.
void lower_stack(Context& c) {
  TensorId out = c.def(0);
  const Shape os = c.t(out).shape;
  const std::int64_t axis = norm_dim(c.int_arg("axis", 0), os.size());
  std::vector<TensorId> rows;
  for (std::size_t k = 0; k < n_operands(c); ++k) {
    TensorId x = in(c, k);
    Shape s = c.t(x).shape;
    s.insert(s.begin() + axis, 1);
    TensorId v = c.temp("row", s, c.t(x).dtype);
    c.move(MoveKind::View, {x}, v);
    rows.push_back(v);
  }
  if (rows.size() == 1) return c.move(MoveKind::Copy, rows, out);
  c.move(MoveKind::Concat, rows, out, {{"axis", axis}});
}

void lower_split(Context& c) {
  TensorId x = in(c, 0);
  const Shape xs = c.t(x).shape;
  std::int64_t axis = norm_dim(c.int_arg("axis", 0), xs.size());
  std::int64_t at = 0;
  for (std::size_t k = 0; k < c.op().outputs.size(); ++k) {
    if (!c.out_id(k)) continue;
    TensorId o = c.def(k);
    std::int64_t len = c.t(o).shape[axis];
    Shape st(xs.size(), 0), en = xs;
    st[axis] = at, en[axis] = at + len;
    slice_move(c, x, o, st, en, Shape(xs.size(), 1));
    at += len;
  }
}

// x with `interior` copies of `value` between neighbours along dimension d: x viewed with a
// new size-1 dimension after d, padded there to interior + 1, viewed back (n * (interior + 1)
// along d) and sliced to (n - 1) * (interior + 1) + 1: a pad and a slice (copies) between
// free views, plain moves that execute, whose bytes are those of the two copies.
TensorId interior_pad(Context& c, TensorId x, std::size_t d, std::int64_t interior, double value) {
  const Shape xs = c.t(x).shape;
  const ir::DType dt = c.t(x).dtype;
  const std::int64_t n = xs[d], step = interior + 1;
  Shape split = xs;
  split.insert(split.begin() + static_cast<std::ptrdiff_t>(d) + 1, 1);
  TensorId v = c.temp("split", split, dt);
  c.move(MoveKind::View, {x}, v);
  Shape pads(2 * split.size(), 0), padded = split;
  pads[2 * (d + 1) + 1] = interior;
  padded[d + 1] = step;
  TensorId p = c.temp("spread", padded, dt);
  c.move(MoveKind::Pad, {v}, p, {{"pads", pads}, {"value", value}});
  Shape flat = xs;
  flat[d] = n * step;
  TensorId f = c.temp("interleaved", flat, dt);
  c.move(MoveKind::View, {p}, f);
  Shape dilated = xs, starts(xs.size(), 0), ends = flat;
  dilated[d] = ends[d] = (n - 1) * step + 1;
  TensorId out = c.temp("dilated", dilated, dt);
  slice_move(c, f, out, starts, ends, Shape(xs.size(), 1));
  return out;
}

// pad(x, value) with (low, high, interior) per dimension; negative low/high crop; interior
// padding first spreads the elements (interior_pad), then the edges are padded.
void lower_pad(Context& c) {
  TensorId x = in(c, 0);
  std::optional<double> value = known(c, 1);
  if (!value) throw Unsupported("a padding value known only at run time");
  const auto& cfg = c.a("padding_config");
  const Shape xs = c.t(x).shape;
  const std::size_t r = xs.size();
  if (!cfg.is_array() || cfg.size() != r) throw Unsupported("padding_config of the wrong rank");
  Shape pads;
  TensorId cur = x;
  bool edges = false;
  for (std::size_t d = 0; d < r; ++d) {
    Shape t = int_list(cfg[d], "padding_config");
    if (t.size() != 3) throw Unsupported("padding_config entries are (low, high, interior)");
    if (t[2] < 0) throw Unsupported("negative interior padding");
    if (t[2] > 0 && xs[d] > 1) cur = interior_pad(c, cur, d, t[2], *value);
    pads.push_back(t[0]);
    pads.push_back(t[1]);
    edges = edges || t[0] != 0 || t[1] != 0;
  }
  TensorId out = c.def(0);
  if (!edges) return c.move(cur == x ? MoveKind::Copy : MoveKind::View, {cur}, out);
  c.move(MoveKind::Pad, {cur}, out, {{"pads", pads}, {"value", *value}});
}

// ---------------------------------------------------------------- gather / scatter

// The one axis of a gather/scatter that selects rows "take"-style (index_select, embedding,
// x[idx], .at[idx]) or element-wise (take_along_axis), when the dimension numbers have one
// of these two forms; nullopt otherwise.
struct IndexPattern {
  std::int64_t axis;
  bool elements;
};

std::optional<IndexPattern> gather_pattern(Context& c, const Shape& xs, const Shape& is,
                                           const Shape& os) {
  const auto& dn = c.a("dimension_numbers");
  if (!dn.is_object()) return std::nullopt;
  Shape offset = field(dn, "offset_dims"),
        collapsed = field(dn, "collapsed_slice_dims"),
        smap = field(dn, "start_index_map"),
        obatch = field(dn, "operand_batching_dims"),
        ibatch = int_list(dn.value("start_indices_batching_dims", nlohmann::json()),
                          "start_indices_batching_dims");
  Shape sizes = ints(c, "slice_sizes");
  if (smap.size() != 1 || collapsed != smap || is.empty() || is.back() != 1 ||
      sizes.size() != xs.size())
    return std::nullopt;
  const std::int64_t a = smap[0];
  const std::size_t R = xs.size(), nb = is.size() - 1;
  if (obatch.empty()) {
    for (std::size_t d = 0; d < R; ++d)
      if (sizes[d] != (static_cast<std::int64_t>(d) == a ? 1 : xs[d])) return std::nullopt;
    Shape want;
    for (std::int64_t d = 0; d < a; ++d) want.push_back(d);
    for (std::size_t d = a + 1; d < R; ++d) want.push_back(static_cast<std::int64_t>(d - 1 + nb));
    if (offset != want) return std::nullopt;
    return IndexPattern{a, false};
  }
  Shape others;
  for (std::size_t d = 0; d < R; ++d)
    if (static_cast<std::int64_t>(d) != a) others.push_back(static_cast<std::int64_t>(d));
  if (obatch != others || ibatch != others || !offset.empty() || nb != R) return std::nullopt;
  for (std::int64_t s : sizes)
    if (s != 1) return std::nullopt;
  if (Shape(is.begin(), is.end() - 1) != os) return std::nullopt;
  return IndexPattern{a, true};
}

// The index operand without its trailing index-vector dimension of 1 (a free view).
TensorId index_view(Context& c, TensorId idx) {
  Shape s = c.t(idx).shape;
  s.pop_back();
  TensorId v = c.temp("index", s, c.t(idx).dtype);
  c.move(MoveKind::View, {idx}, v);
  return v;
}

// A gather/scatter with general dimension numbers: the executor's "xla_gather" /
// "xla_scatter" kernel (src/exec/opaque_gather.h) with the dimension numbers, slice sizes
// and mode as attributes; bytes are what it touches.
void opaque_indexing(Context& c, const char* what, std::vector<TensorId> ins, TensorId out,
                     Count bytes, ir::Attrs attrs) {
  ir::OpaqueOp o;
  o.function = what;
  o.vector_flops = Count(0);
  o.special_ops = Count(0);
  o.bytes = bytes;
  o.assumption = fmt::format("{} with general dimension numbers: reads the indices and the "
                             "elements it moves, writes its output once", what);
  o.attrs = std::move(attrs);
  c.opaque(std::move(ins), {out}, std::move(o));
}

// JAX's GatherScatterMode by name (CLIP, FILL_OR_DROP, PROMISE_IN_BOUNDS) in lower case;
// ONE_HOT has no kernel.
std::string index_mode(Context& c, const char* dflt) {
  const auto& m = c.a("mode");
  std::string name = m.is_string() ? m.get<std::string>() : dflt;
  if (auto dot = name.rfind('.'); dot != std::string::npos) name = name.substr(dot + 1);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  if (name != "clip" && name != "fill_or_drop" && name != "promise_in_bounds")
    throw Unsupported(fmt::format("gather/scatter mode {}", name));
  return name;
}

void lower_gather(Context& c) {
  TensorId x = in(c, 0), idx = in(c, 1);
  TensorId out = c.def(0);
  const Shape xs = c.t(x).shape, is = c.t(idx).shape, os = c.t(out).shape;
  // The gather move has PyTorch's index semantics (an index out of range is an error at run
  // time, never a silent value): right for in-range indices, which promise_in_bounds and
  // fill_or_drop programs have as a rule; "clip" asks for clamping, which the kernel does.
  if (auto p = index_mode(c, "clip") != "clip" ? gather_pattern(c, xs, is, os) : std::nullopt) {
    TensorId i = index_view(c, idx);
    return c.move(MoveKind::Gather, {x, i}, out,
                  {{"axis", p->axis}, {"mode", std::string(p->elements ? "elements" : "take")}});
  }
  const auto& dn = c.a("dimension_numbers");
  if (!dn.is_object()) throw Unsupported("gather without dimension numbers");
  ir::Attrs attrs;
  for (const char* k : {"offset_dims", "collapsed_slice_dims", "start_index_map",
                        "operand_batching_dims", "start_indices_batching_dims"})
    attrs[k] = field(dn, k);
  attrs["slice_sizes"] = ints(c, "slice_sizes");
  attrs["mode"] = index_mode(c, "clip");
  if (std::get<std::string>(attrs["mode"]) == "fill_or_drop") {
    std::optional<double> fill = number_value(c.a("fill_value"));
    if (!fill) throw Unsupported("fill_or_drop gather without a fill value");
    attrs["fill_value"] = *fill;
  }
  Count gathered = c.t(out).size_bytes();
  opaque_indexing(c, "xla_gather", {x, idx}, out, gathered + c.t(idx).size_bytes() + gathered,
                  std::move(attrs));
}

// A scatter of one window at indices the recorder knew (`x.at[1:3, 2:5].set(u)`): the
// update of a box, as dynamic_update_slice (reduce "sum": the box read, added, written).
bool box_scatter(Context& c, TensorId x, TensorId u, TensorId out, const std::string& reduce) {
  const auto& dn = c.a("dimension_numbers");
  const auto& iv = operands(c)[1];
  if (!dn.is_object() || !iv.contains("values") || (reduce != "none" && reduce != "sum"))
    return false;
  const Shape xs = c.t(x).shape, us = c.t(u).shape;
  Shape window = field(dn, "update_window_dims"), smap = field(dn, "scatter_dims_to_operand_dims");
  if (!field(dn, "inserted_window_dims").empty() || !field(dn, "operand_batching_dims").empty() ||
      us.size() != xs.size())
    return false;
  for (std::size_t d = 0; d < window.size(); ++d)
    if (window[d] != static_cast<std::int64_t>(d)) return false;
  if (window.size() != xs.size()) return false;
  Shape vals = int_list(iv["values"], "indices");
  if (vals.size() != smap.size()) return false;
  Shape starts(xs.size(), 0);
  for (std::size_t k = 0; k < smap.size(); ++k) starts[norm_dim(smap[k], xs.size())] = vals[k];
  for (std::size_t d = 0; d < xs.size(); ++d)
    if (starts[d] < 0 || starts[d] + us[d] > xs[d]) return false;  // dropped, not clamped
  TensorId src = u;
  if (reduce == "sum") {
    Shape ends;
    for (std::size_t d = 0; d < xs.size(); ++d) ends.push_back(starts[d] + us[d]);
    TensorId box = c.temp("box", us, c.t(x).dtype);
    slice_move(c, x, box, starts, ends, Shape(xs.size(), 1));
    src = c.temp("summed", us, c.t(x).dtype);
    c.elementwise({box, u}, src, add(arg(0), arg(1)));
  }
  bool whole = true;
  for (std::size_t d = 0; d < xs.size(); ++d) whole = whole && us[d] == xs[d];
  if (whole) c.move(MoveKind::Copy, {src}, out);
  else update_box(c, x, src, starts, 0, out);
  return true;
}

Fn scatter(const char* reduce) {
  return [=](Context& c) {
    TensorId x = in(c, 0), idx = in(c, 1), u = in(c, 2);
    TensorId out = c.def(0);
    const Shape xs = c.t(x).shape, is = c.t(idx).shape, us = c.t(u).shape;
    const auto& dn = c.a("dimension_numbers");
    std::optional<IndexPattern> p;
    if (dn.is_object() && index_mode(c, "fill_or_drop") != "clip") {
      Shape window = field(dn, "update_window_dims"),
            inserted = field(dn, "inserted_window_dims"),
            smap = field(dn, "scatter_dims_to_operand_dims"),
            obatch = field(dn, "operand_batching_dims"),
            ibatch = field(dn, "scatter_indices_batching_dims");
      if (smap.size() == 1 && inserted == smap && !is.empty() && is.back() == 1) {
        const std::int64_t a = smap[0];
        const std::size_t R = xs.size(), nb = is.size() - 1;
        if (obatch.empty()) {
          Shape want, ushape;
          for (std::int64_t d = 0; d < a; ++d) want.push_back(d), ushape.push_back(xs[d]);
          for (std::size_t d = 0; d < nb; ++d) ushape.push_back(is[d]);
          for (std::size_t d = a + 1; d < R; ++d)
            want.push_back(static_cast<std::int64_t>(d - 1 + nb)), ushape.push_back(xs[d]);
          if (window == want && us == ushape) p = IndexPattern{a, false};
        } else {
          Shape others;
          for (std::size_t d = 0; d < R; ++d)
            if (static_cast<std::int64_t>(d) != a) others.push_back(static_cast<std::int64_t>(d));
          if (obatch == others && ibatch == others && window.empty() && nb == R &&
              Shape(is.begin(), is.end() - 1) == us)
            p = IndexPattern{a, true};
        }
      }
    }
    if (!p && box_scatter(c, x, u, out, reduce)) return;
    if (p) {
      TensorId i = index_view(c, idx);
      return c.move(MoveKind::Scatter, {x, i, u}, out,
                    {{"axis", p->axis}, {"mode", std::string(p->elements ? "elements" : "take")},
                     {"reduce", std::string(reduce)}});
    }
    if (!dn.is_object()) throw Unsupported("scatter without dimension numbers");
    ir::Attrs attrs;
    for (const char* k : {"update_window_dims", "inserted_window_dims",
                          "scatter_dims_to_operand_dims", "operand_batching_dims",
                          "scatter_indices_batching_dims"})
      attrs[k] = field(dn, k);
    attrs["mode"] = index_mode(c, "fill_or_drop");
    attrs["combine"] = std::string(reduce);
    Count moved = c.t(u).size_bytes();
    opaque_indexing(c, "xla_scatter", {x, idx, u}, out,
                    c.t(x).size_bytes() + c.t(idx).size_bytes() + moved + c.t(out).size_bytes(),
                    std::move(attrs));
  };
}

// ---------------------------------------------------------------- index-valued, sorting, RNG

std::int64_t ceil_log2(std::int64_t n) {
  std::int64_t k = 0;
  while ((std::int64_t{1} << k) < n) ++k;
  return k;
}

// iota: the executor's "arange" (0, 1, 2, ... along `dimension`) over that dimension alone,
// broadcast to the output's shape by free views; one integer add per element of the line.
void lower_iota(Context& c) {
  TensorId out = c.def(0);
  const Shape os = c.t(out).shape;
  if (os.empty()) throw Unsupported("iota of rank 0");
  const std::int64_t dim = norm_dim(c.int_arg("dimension", 0), os.size());
  TensorId line = out;
  if (os.size() > 1) line = c.temp("line", {os[dim]}, c.t(out).dtype);
  ir::OpaqueOp o;
  o.function = "arange";
  o.vector_flops = Count(os[dim]);
  o.special_ops = Count(0);
  o.bytes = c.t(line).size_bytes();
  o.assumption = "one integer add per element of the index line (0, 1, ..., n-1); writes it "
                 "once; the broadcast to the output's shape is a free view";
  o.attrs["start"] = std::int64_t{0};
  o.attrs["step"] = std::int64_t{1};
  c.opaque({}, {line}, std::move(o));
  if (line == out) return;
  Shape aligned(os.size(), 1);
  aligned[dim] = os[dim];
  TensorId v = c.temp("aligned", aligned, c.t(out).dtype);
  c.move(MoveKind::View, {line}, v);
  c.move(MoveKind::View, {v}, out);
}

// sort of one operand (values), or of (keys, iota) with one key (values and the argsort).
void lower_sort(Context& c) {
  const std::size_t n = n_operands(c);
  const auto& iota = c.a("iota_operands");
  if (n == 2 && !(c.int_arg("num_keys", 1) == 1 && iota.is_array() && iota.size() == 2 &&
                  iota[1].is_boolean() && iota[1].get<bool>()))
    throw Unsupported("sort of several operands other than (keys, iota)");
  if (n != 1 && n != 2) throw Unsupported("sort of more than two operands");
  TensorId x = in(c, 0);
  const Shape xs = c.t(x).shape;
  std::int64_t axis = norm_dim(c.int_arg("dimension", -1), xs.size());
  std::vector<TensorId> outs;
  Count bytes = c.t(x).size_bytes();
  for (std::size_t k = 0; k < n; ++k) {
    outs.push_back(c.def(k));
    bytes = bytes + c.t(outs.back()).size_bytes();
  }
  // Unsigned keys (random bits in jax.random.permutation) sort by their unsigned values:
  // sorted widened, the values cast back to the held type.
  TensorId values_out = outs[0];
  if (int bits = unsigned_bits(c, 0)) {
    x = unsigned_wide(c, x, bits);
    outs[0] = c.temp("sorted", xs, ir::DType::I64);
  }
  std::int64_t len = xs.empty() ? 1 : xs[axis];
  ir::OpaqueOp o;
  o.function = "sort";
  o.vector_flops = Count(numel(xs) / std::max<std::int64_t>(len, 1)) *
                   Count(len * std::max<std::int64_t>(ceil_log2(len), 1));
  o.special_ops = Count(0);
  o.bytes = bytes;
  o.assumption = "comparison sort: n*ceil(log2 n) compares per row; reads the input once, writes "
                 "values (and indices) once";
  o.attrs["axis"] = axis;
  c.opaque({x}, outs, std::move(o));
  if (outs[0] != values_out) c.move(MoveKind::Cast, {outs[0]}, values_out);
}

void lower_top_k(Context& c) {
  TensorId x = in(c, 0);
  const Shape xs = c.t(x).shape;
  std::int64_t k = c.int_arg("k", 1);
  std::int64_t axis = c.has("axis") ? norm_dim(c.int_arg("axis", -1), xs.size())
                                    : static_cast<std::int64_t>(xs.size()) - 1;
  std::vector<TensorId> outs;
  Count bytes = c.t(x).size_bytes();
  for (std::size_t j = 0; j < c.op().outputs.size(); ++j)
    if (c.out_id(j)) outs.push_back(c.def(j)), bytes = bytes + c.t(outs.back()).size_bytes();
  std::int64_t len = xs.empty() ? 1 : xs[axis];
  ir::OpaqueOp o;
  o.function = "topk";
  o.vector_flops = Count(numel(xs) / std::max<std::int64_t>(len, 1)) *
                   Count(len * std::max<std::int64_t>(ceil_log2(std::max<std::int64_t>(k, 2)), 1));
  o.special_ops = Count(0);
  o.bytes = bytes;
  o.assumption = "heap selection: n*ceil(log2 k) compares per row; reads the input once, writes k "
                 "values and indices per row";
  o.attrs["k"] = k;
  o.attrs["axis"] = axis;
  o.attrs["largest"] = std::int64_t{1};
  c.opaque({x}, outs, std::move(o));
}

// Random-number primitives: counter-based generators (threefry) are integer arithmetic; the
// stated cost is the Threefry-2x32 round count. Validation is given the framework's draws.
void lower_random(Context& c) {
  std::vector<TensorId> ins, outs;
  for (std::size_t k = 0; k < n_operands(c); ++k)
    if (is_tensor(operands(c)[k])) ins.push_back(in(c, k));
  Count bytes(0), elems(0);
  for (TensorId t : ins) bytes = bytes + c.t(t).size_bytes();
  for (std::size_t k = 0; k < c.op().outputs.size(); ++k)
    if (c.out_id(k)) {
      outs.push_back(c.def(k));
      bytes = bytes + c.t(outs.back()).size_bytes();
      elems = elems + c.t(outs.back()).num_elements();
    }
  ir::OpaqueOp o;
  o.function = c.op().op.substr(5);
  o.vector_flops = elems * Count(20 * 4 / 2);
  o.special_ops = Count(0);
  o.bytes = bytes;
  o.assumption = "Threefry-2x32: 20 rounds of 4 integer ops per pair of 32-bit words; reads the "
                 "key, writes the bits once";
  c.opaque(ins, outs, std::move(o));
}

// Loops and branches the recorder could not unroll (it says why in `reason`).
void lower_control_flow(Context& c) {
  const auto& r = c.a("reason");
  throw Unsupported(r.is_string() ? r.get<std::string>()
                                  : "control flow the recorder did not unroll");
}

// ---------------------------------------------------------------- loops kept as loops

const Table& table();

// A scan or while_loop the recorder kept as a loop (`jax::scan_repeat`, docs/jax-frontend.md
// "Loops"): `args.body` is a nested trace (its own `tensors` and `ops`, ids of its own)
// lowered with this same table into the body graph of one repeat op; `args.inputs` binds
// each operand to a body param (invariant, carried with its `next`, sliced along `axis`),
// `args.outputs` makes each result from a body tensor (the last value, or stacked along
// `axis`); `trips` and `reverse` as ir::RepeatOp.
void lower_scan_repeat(Context& c) {
  const nlohmann::json& body = c.a("body");
  const nlohmann::json& bin = c.a("inputs");
  const nlohmann::json& bout = c.a("outputs");
  if (!body.is_object() || !bin.is_array() || !bout.is_array())
    throw Unsupported("a loop without its body, input bindings or output bindings");
  if (bin.size() != n_operands(c)) throw Unsupported("a loop with one binding per operand missing");
  if (bout.size() != c.op().outputs.size())
    throw Unsupported("a loop with one binding per output missing");
  OpTrace bt;
  LowerResult br;
  try {
    nlohmann::json tj = {{"schema", kOpTraceSchema}, {"name", "body"}, {"frontend", "jax"},
                         {"tensors", body.value("tensors", nlohmann::json::array())},
                         {"ops", body.value("ops", nlohmann::json::array())}};
    bt = optrace_from_json(tj, "<loop body>");
    br = lower_with_table(bt, {}, table(), "jax");
  } catch (const UserError& e) {
    throw Unsupported(fmt::format("its body: {}", e.message()));
  }
  if (!br.warnings.empty()) throw Unsupported(fmt::format("its body op {}", br.warnings[0]));
  // Trace id -> body tensor, before masks (which forget the ids of the tensors they change).
  std::vector<TensorId> of;
  for (std::size_t k = 0; k < br.trace_ids.size(); ++k) {
    const std::int64_t id = br.trace_ids[k];
    if (id < 0) continue;
    if (static_cast<std::size_t>(id) >= of.size()) of.resize(id + 1);
    of[id] = TensorId{static_cast<std::uint32_t>(k)};
  }
  recognize_masks_in(br);
  ir::Graph& g = br.graph;
  auto body_tensor = [&](const nlohmann::json& v) -> TensorId {
    if (!v.is_number_integer()) throw Unsupported("a loop binding names no body tensor");
    const std::int64_t id = v.get<std::int64_t>();
    if (static_cast<std::size_t>(id) < of.size() && of[id].valid()) return of[id];
    const TraceTensor& x = bt.tensor(id);
    if (x.role != TraceRole::Input)
      throw Unsupported(fmt::format("a loop binding names body tensor t{}, which no op produced",
                                    id));
    // A param the body never reads (a carry passed through, an unused invariant).
    ir::Tensor t;
    t.name = fmt::format("t{}", id);
    t.shape = x.shape;
    t.dtype = Context::dtype_of(x.dtype);
    t.role = ir::Role::Input;
    if (static_cast<std::size_t>(id) >= of.size()) of.resize(id + 1);
    return of[id] = g.add_tensor(std::move(t));
  };
  ir::RepeatOp r;
  r.trips = c.int_arg("trips", 0);
  r.reverse = c.bool_arg("reverse", false);
  std::vector<TensorId> ins;
  for (std::size_t k = 0; k < bin.size(); ++k) {
    const nlohmann::json& b = bin[k];
    std::optional<ir::LoopInput> how =
        b.is_object() ? ir::parse_loop_input(b.value("how", "")) : std::nullopt;
    if (!how) throw Unsupported(fmt::format("loop input {}: not invariant, carried or sliced", k));
    ir::RepeatInput x;
    x.how = *how;
    x.param = body_tensor(b.value("param", nlohmann::json()));
    if (x.how == ir::LoopInput::Carried) x.next = body_tensor(b.value("next", nlohmann::json()));
    if (x.how == ir::LoopInput::Sliced) x.axis = b.value("axis", std::int64_t{0});
    r.inputs.push_back(x);
    ins.push_back(in(c, k));
  }
  for (std::size_t k = 0; k < bout.size(); ++k) {
    const nlohmann::json& b = bout[k];
    std::optional<ir::LoopOutput> how =
        b.is_object() ? ir::parse_loop_output(b.value("how", "")) : std::nullopt;
    if (!how) throw Unsupported(fmt::format("loop output {}: not last or stacked", k));
    ir::RepeatOutput x;
    x.how = *how;
    x.value = body_tensor(b.value("value", nlohmann::json()));
    if (x.how == ir::LoopOutput::Stacked) x.axis = b.value("axis", std::int64_t{0});
    r.outputs.push_back(x);
  }
  r.body = std::make_shared<const ir::Graph>(std::move(g));
  std::vector<TensorId> outs;
  for (std::size_t k = 0; k < bout.size(); ++k) outs.push_back(c.def(k));
  c.repeat(std::move(ins), std::move(outs), std::move(r));
}

// ---------------------------------------------------------------- the table

void register_jax_ops(const Register& reg) {
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
  reg("jax::stack", lower_stack);
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
  // Reductions.
  reg("jax::reduce_sum", reduction(Reduce::Sum));
  reg("jax::reduce_max", reduction(Reduce::Max));
  reg("jax::reduce_min", reduction(Reduce::Min));
  reg("jax::reduce_prod", reduction(Reduce::Prod));
  reg("jax::reduce_and", reduction(Reduce::All));
  reg("jax::reduce_or", reduction(Reduce::Any));
  reg("jax::argmax", arg_reduction("argmax"));
  reg("jax::argmin", arg_reduction("argmin"));
  reg("jax::cumsum", cumulative("cumsum"));
  reg("jax::cumprod", cumulative("cumprod"));
  reg("jax::cummax", cumulative("cummax"));
  reg("jax::cummin", cumulative("cummin"));
  // Contractions and windows.
  reg("jax::dot_general", lower_dot_general);
  reg("jax::conv_general_dilated", lower_conv);
  reg("jax::reduce_window_sum", reduce_window(Reduce::Sum));
  reg("jax::reduce_window_max", reduce_window(Reduce::Max));
  reg("jax::reduce_window_min", reduce_window(Reduce::Min));
  // Shapes and data movement.
  reg("jax::broadcast_in_dim", lower_broadcast_in_dim);
  reg("jax::reshape", lower_reshape);
  reg("jax::squeeze", lower_view);
  reg("jax::expand_dims", lower_view);
  reg("jax::transpose", lower_transpose);
  reg("jax::rev", lower_rev);
  reg("jax::slice", lower_slice);
  reg("jax::dynamic_slice", lower_dynamic_slice);
  reg("jax::dynamic_update_slice", lower_dynamic_update_slice);
  reg("jax::concatenate", lower_concatenate);
  reg("jax::split", lower_split);
  reg("jax::pad", lower_pad);
  reg("jax::gather", lower_gather);
  reg("jax::scatter", scatter("none"));
  reg("jax::scatter-add", scatter("sum"));
  reg("jax::scatter_add", scatter("sum"));
  reg("jax::scatter-mul", scatter("prod"));
  reg("jax::scatter_mul", scatter("prod"));
  reg("jax::scatter-min", scatter("min"));
  reg("jax::scatter_min", scatter("min"));
  reg("jax::scatter-max", scatter("max"));
  reg("jax::scatter_max", scatter("max"));
  // Index-valued, sorting, random.
  reg("jax::iota", lower_iota);
  reg("jax::sort", lower_sort);
  reg("jax::top_k", lower_top_k);
  reg("jax::scan_repeat", lower_scan_repeat);
  for (std::string_view name : {"jax::random_bits", "jax::random_seed", "jax::random_wrap",
                                "jax::random_unwrap", "jax::random_fold_in", "jax::random_split",
                                "jax::threefry2x32", "jax::rng_bit_generator",
                                "jax::rng_uniform"})
    reg(name, lower_random);
  // Loops, branches and equations the recorder could not record faithfully (it says why).
  for (std::string_view name :
       {"jax::scan", "jax::while", "jax::cond", "jax::shard_map", "jax::unsupported"})
    reg(name, lower_control_flow);
}

const Table& table() {
  static const Table t = [] {
    TableBuilder b("jax");
    b.add("jax.cc", register_jax_ops);
    return b.take();
  }();
  return t;
}

}  // namespace

bool jax_op_known(std::string_view op) {
  auto it = table().find(op);
  return it != table().end() && op != "jax::scan" && op != "jax::while" && op != "jax::cond" &&
         op != "jax::shard_map" && op != "jax::unsupported";
}

LowerResult lower_jax(const OpTrace& trace, const LowerOptions& options) {
  LowerResult r = lower_with_table(trace, options, table(), "jax");
  recognize_masks_in(r);
  return r;
}

}  // namespace solar::lower
