// The aten table's elementwise ops: arithmetic and comparisons with their Scalar and in-place
// overloads, activations and their gradients (torch's CPU formulas), clamps, where/masked_fill,
// logical ops, and the constant factories (zeros, ones, full, fill_, empty, and the new_*
// gradient buffers autograd makes).
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

// Uninitialized memory (empty): no op writes it; a reader reads whatever is there.
void lower_empty(Context& c) { c.mark_uninitialized(0); }

// ---------------------------------------------------------------- activation gradients

// grad_output * f(x) style gradients: `f` gets the combine terms of grad_output and of the
// tensor argument `x_name` (self, output or self_or_result).
Fn grad_pointwise(const char* x_name, std::function<Expr(Context&, Expr g, Expr x)> f) {
  return [=](Context& c) {
    std::vector<TensorId> in;
    Expr g = operand(c, "grad_output", in);
    Expr x = operand(c, x_name, in);
    c.elementwise(in, c.def(0), f(c, g, x));
  };
}

// Gradients whose formula uses a special function of x twice: the function is one temp, so
// it is counted (and computed) once.
Fn grad_with_temp(const char* x_name, std::function<Expr(Expr)> temp_fn,
                  std::function<Expr(Expr g, Expr x, Expr t)> f) {
  return [=](Context& c) {
    TensorId g = c.use_arg("grad_output"), x = c.use_arg(x_name);
    TensorId t = c.temp("act", c.t(x).shape, c.t(x).dtype);
    c.elementwise({x}, t, temp_fn(arg(0)));
    c.elementwise({g, x, t}, c.def(0), f(arg(0), arg(1), arg(2)));
  };
}

Expr gelu_grad_erf(Expr g, Expr x) {
  // dy * (cdf + x * pdf): cdf = 0.5 (1 + erf(x / sqrt 2)), pdf = exp(-x^2 / 2) / sqrt(2 pi)
  Expr cdf = mul(num(0.5), add(num(1), un(ExprOp::Erf, mul(x, num(M_SQRT1_2)))));
  Expr pdf = mul(num(0.5 * M_2_SQRTPI * M_SQRT1_2),
                 un(ExprOp::Exp, mul(un(ExprOp::Square, x), num(-0.5))));
  return mul(g, add(cdf, mul(x, pdf)));
}

void lower_gelu_backward(Context& c) {
  const auto& approx = c.a("approximate");
  if (!(approx.is_string() && approx.get<std::string>() == "tanh"))
    return grad_pointwise("self", [](Context&, Expr g, Expr x) { return gelu_grad_erf(g, x); })(c);
  // torch's tanh form: t = tanh(b (x + k x^3)), b = sqrt(2/pi), k = 0.044715;
  // dy * (0.5 (1 + t) + 0.5 x (1 - t^2) b (1 + 3 k x^2))
  const double b = M_SQRT2 * M_2_SQRTPI * 0.5, k = 0.044715;
  grad_with_temp(
      "self",
      [=](Expr x) {
        return un(ExprOp::Tanh, mul(num(b), add(x, mul(num(k), mul(x, un(ExprOp::Square, x))))));
      },
      [=](Expr g, Expr x, Expr t) {
        Expr left = mul(num(0.5), add(num(1), t));
        Expr right = mul(mul(mul(num(0.5), x), sub(num(1), un(ExprOp::Square, t))),
                         mul(num(b), add(num(1), mul(num(3 * k), un(ExprOp::Square, x)))));
        return mul(g, add(left, right));
      })(c);
}

// glu: a * sigmoid(b) with (a, b) the halves of `dim`; its gradient is the concatenation
// of g sigmoid(b) and g a sigmoid(b) (1 - sigmoid(b)).
struct Halves {
  TensorId a, b;
  std::int64_t dim;
};
Halves glu_halves(Context& c, TensorId x) {
  const Shape xs = c.t(x).shape;
  const std::int64_t dim = norm_dim(c.int_arg("dim", -1), xs.size());
  if (xs[dim] % 2 != 0) throw Unsupported("glu over an odd-sized dimension");
  Shape half = xs;
  half[dim] /= 2;
  Halves h{c.temp("a", half, c.t(x).dtype), c.temp("b", half, c.t(x).dtype), dim};
  for (int k = 0; k < 2; ++k) {
    std::vector<std::int64_t> starts(xs.size(), 0), ends = xs, steps(xs.size(), 1);
    starts[dim] = k * half[dim];
    ends[dim] = (k + 1) * half[dim];
    c.move(MoveKind::Slice, {x}, k == 0 ? h.a : h.b,
           {{"starts", starts}, {"ends", ends}, {"steps", steps}});
  }
  return h;
}

void lower_glu_backward(Context& c) {
  TensorId g = c.use_arg("grad_output");
  Halves h = glu_halves(c, c.use_arg("self"));
  const Shape half = c.t(h.a).shape;
  ir::DType dt = c.t(g).dtype;
  TensorId sb = c.temp("sigmoid_b", half, dt), ga = c.temp("grad_a", half, dt),
           gb = c.temp("grad_b", half, dt);
  c.elementwise({h.b}, sb, un(ExprOp::Sigmoid, arg(0)));
  c.elementwise({g, sb}, ga, mul(arg(0), arg(1)));
  c.elementwise({g, h.a, sb}, gb, mul(mul(mul(arg(0), arg(1)), arg(2)), sub(num(1), arg(2))));
  c.move(MoveKind::Concat, {ga, gb}, c.def(0), {{"axis", h.dim}});
}

// Nearest upsampling by a power-of-two factor k per dim (torch's source index floor(o / k)
// is then exact in its float arithmetic): out viewed as [.., in, k, ..] is x broadcast over

}  // namespace

Fn fill(std::optional<double> value, const char* value_arg) {
  return [=](Context& c) {
    double v = value ? *value : c.num_arg(value_arg, 0);
    TensorId out = c.def(0);
    c.elementwise({}, out, num(v));
  };
}

void register_pointwise_ops(const Register& reg) {
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
  // (the bitwise and/or/xor ops of booleans and integers are aten_math.cc's)
  for (auto [name, op] : std::initializer_list<std::pair<std::string_view, ExprOp>>{
           {"aten::logical_and.default", ExprOp::Mul},
           {"aten::logical_or.default", ExprOp::Max},
           {"aten::logical_xor.default", ExprOp::Ne}})
    reg(name, [op = op](Context& c) {  // init-capture: clang 14 captures no structured binding
      std::vector<TensorId> in;
      Expr x = operand(c, "self", in), y = operand(c, "other", in);
      if (in.empty()) throw Unsupported("no tensor operand");
      // as truth values: x != 0
      Expr tx = fn(ExprOp::Ne, {x, num(0)}), ty = fn(ExprOp::Ne, {y, num(0)});
      c.elementwise(in, c.def(0), fn(op, {tx, ty}));
    });
  reg("aten::clamp_min_.default", [](Context& c) { lower_clamp(c, "min", "__none__"); });
  reg("aten::clamp_max_.default", [](Context& c) { lower_clamp(c, "__none__", "max"); });
  reg("aten::clamp_min.Tensor", [](Context& c) { lower_clamp(c, "min", "__none__"); });
  reg("aten::clamp_max.Tensor", [](Context& c) { lower_clamp(c, "__none__", "max"); });
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
    reg(name, unary([f = f](Context&, Expr x) { return f(x); }));  // (as above)
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
  for (std::string_view name : {"aten::clamp_min_.Tensor"})
    reg(name, [](Context& c) { lower_clamp(c, "min", "__none__"); });
  for (std::string_view name : {"aten::clamp_max_.Tensor"})
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
  // Activation gradients.
  reg("aten::threshold_backward.default", grad_pointwise("self", [](Context& c, Expr g, Expr x) {
        return sel(cmp(ExprOp::Le, x, num(c.num_arg("threshold", 0))), num(0), g);
      }));
  reg("aten::gelu_backward.default", lower_gelu_backward);
  reg("aten::silu_backward.default", grad_with_temp(
                                         "self", [](Expr x) { return un(ExprOp::Sigmoid, x); },
                                         [](Expr g, Expr x, Expr s) {
                                           return mul(mul(g, s),
                                                      add(num(1), mul(x, sub(num(1), s))));
                                         }));
  reg("aten::mish_backward.default",
      grad_with_temp(
          "self",
          [](Expr x) { return un(ExprOp::Tanh, un(ExprOp::Log, add(num(1), un(ExprOp::Exp, x)))); },
          [](Expr g, Expr x, Expr t) {
            return mul(
                g, add(t, mul(mul(x, un(ExprOp::Sigmoid, x)), sub(num(1), un(ExprOp::Square, t)))));
          }));
  reg("aten::sigmoid_backward.default", grad_pointwise("output", [](Context&, Expr g, Expr y) {
        return mul(mul(g, sub(num(1), y)), y);
      }));
  reg("aten::tanh_backward.default", grad_pointwise("output", [](Context&, Expr g, Expr y) {
        return mul(g, sub(num(1), un(ExprOp::Square, y)));
      }));
  reg("aten::hardtanh_backward.default", grad_pointwise("self", [](Context& c, Expr g, Expr x) {
        Expr out = add(cmp(ExprOp::Le, x, num(c.num_arg("min_val", -1))),
                       cmp(ExprOp::Ge, x, num(c.num_arg("max_val", 1))));
        return sel(out, num(0), g);
      }));
  reg("aten::leaky_relu_backward.default", grad_pointwise("self", [](Context& c, Expr g, Expr x) {
        return sel(cmp(ExprOp::Gt, x, num(0)), g, mul(g, num(c.num_arg("negative_slope", 0.01))));
      }));
  reg("aten::elu_backward.default",
      grad_pointwise("self_or_result", [](Context& c, Expr g, Expr x) {
        const double alpha = c.num_arg("alpha", 1), scale = c.num_arg("scale", 1),
                     in_scale = c.num_arg("input_scale", 1);
        Expr neg = c.bool_arg("is_result", false)
                       ? mul(mul(g, num(in_scale)), add(x, num(alpha * scale)))
                       : mul(mul(g, num(in_scale * alpha * scale)),
                             un(ExprOp::Exp, mul(x, num(in_scale))));
        return sel(cmp(ExprOp::Le, x, num(0)), neg, mul(g, num(scale)));
      }));
  reg("aten::softplus_backward.default", grad_pointwise("self", [](Context& c, Expr g, Expr x) {
        // z / (z + 1) with z = exp(beta x) is sigmoid(beta x)
        const double beta = c.num_arg("beta", 1);
        Expr bx = scaled(beta, x);
        return sel(cmp(ExprOp::Gt, bx, num(c.num_arg("threshold", 20))), g,
                   mul(g, un(ExprOp::Sigmoid, bx)));
      }));
  reg("aten::hardswish_backward.default", grad_pointwise("self", [](Context&, Expr g, Expr x) {
        return sel(cmp(ExprOp::Lt, x, num(-3)), num(0),
                   sel(cmp(ExprOp::Le, x, num(3)), mul(g, add(mul(x, num(1.0 / 3)), num(0.5))), g));
      }));
  reg("aten::hardsigmoid_backward.default", grad_pointwise("self", [](Context&, Expr g, Expr x) {
        return sel(mul(cmp(ExprOp::Gt, x, num(-3)), cmp(ExprOp::Lt, x, num(3))),
                   mul(g, num(1.0 / 6)), num(0));
      }));
  // Activations whose forward and backward are both their own aten ops.
  reg("aten::log_sigmoid_backward.default", grad_pointwise("self", [](Context&, Expr g, Expr x) {
        // g (neg - sign sigmoid(-|x|)), neg = [x < 0], sign = neg ? 1 : -1, as torch's CPU kernel
        Expr neg = cmp(ExprOp::Lt, x, num(0));
        Expr z = un(ExprOp::Sigmoid, un(ExprOp::Neg, un(ExprOp::Abs, x)));
        return mul(g, sub(neg, mul(sel(neg, num(1), num(-1)), z)));
      }));
  reg("aten::glu_backward.default", lower_glu_backward);
  reg("aten::_prelu_kernel_backward.default", [](Context& c) {
    // per element: dx = x > 0 ? g : w g, dw = x > 0 ? 0 : x g (autograd sums dw afterwards)
    std::vector<TensorId> in;
    Expr g = operand(c, "grad_output", in), x = operand(c, "self", in),
         w = operand(c, "weight", in);
    if (wants(c, 0)) c.elementwise(in, c.def(0), sel(cmp(ExprOp::Gt, x, num(0)), g, mul(w, g)));
    if (wants(c, 1)) {
      std::vector<TensorId> in2{in[0], in[1]};
      c.elementwise(in2, c.def(1),
                    sel(cmp(ExprOp::Gt, arg(1), num(0)), num(0), mul(arg(1), arg(0))));
    }
  });
  auto inside = [](Expr x, double l) {
    return mul(cmp(ExprOp::Ge, x, num(-l)), cmp(ExprOp::Le, x, num(l)));
  };
  reg("aten::hardshrink_backward.default", [=](Context& c) {
    std::vector<TensorId> in;
    Expr g = operand(c, "grad_out", in), x = operand(c, "self", in);
    c.elementwise(in, c.def(0), sel(inside(x, c.num_arg("lambd", 0.5)), num(0), g));
  });
  reg("aten::softshrink_backward.default", grad_pointwise("self", [=](Context& c, Expr g, Expr x) {
        return sel(inside(x, c.num_arg("lambd", 0.5)), num(0), g);
      }));
  reg("aten::logit_backward.default", grad_pointwise("self", [](Context& c, Expr g, Expr x) {
        Expr d = divide(g, mul(x, sub(num(1), x)));
        if (!c.has("eps")) return d;
        const double eps = c.num_arg("eps", 0);
        return sel(add(cmp(ExprOp::Lt, x, num(eps)), cmp(ExprOp::Gt, x, num(1 - eps))), num(0), d);
      }));
  // Boolean algebra of autograd's masks (cummax/cummin and prod gradients); on bool tensors
  // only, where it is exact as comparisons (integer bitwise ops have no combine form).
  auto boolean = [](int arity, std::function<Expr(Expr, Expr)> f) -> Fn {
    return [=](Context& c) {
      std::vector<TensorId> in;
      Expr a = operand(c, "self", in);
      Expr b = arity == 2 ? operand(c, "other", in) : Expr();
      for (TensorId t : in)
        if (c.t(t).dtype != ir::DType::Bool) throw Unsupported("a bitwise op on a non-bool tensor");
      if (in.empty()) throw Unsupported("no tensor operand");
      c.elementwise(
          in, c.def(0),
          f(cmp(ExprOp::Ne, a, num(0)), arity == 2 ? cmp(ExprOp::Ne, b, num(0)) : Expr()));
    };
  };
  // (bitwise_not, logical_not, logical_and/or above, the bitwise and/or in aten_math.cc)
  for (std::string_view name : {"aten::logical_not_.default"})
    reg(name, boolean(1, [](Expr a, Expr) { return cmp(ExprOp::Eq, a, num(0)); }));
  for (std::string_view name : {"aten::logical_and_.default"})
    reg(name, boolean(2, [](Expr a, Expr b) { return mul(a, b); }));
  for (std::string_view name : {"aten::logical_or_.default"})
    reg(name, boolean(2, [](Expr a, Expr b) { return fn(ExprOp::Max, {a, b}); }));
  // Autograd's gradient buffers: new_empty_strided is uninitialized memory that copy_ fills
  // (nothing to lower, as empty); new_zeros/new_ones write a constant.
  reg("aten::new_empty_strided.default", lower_empty);
  reg("aten::new_empty.default", lower_empty);
  reg("aten::new_zeros.default", fill(0.0));
  reg("aten::new_ones.default", fill(1.0));
  reg("aten::new_full.default", fill(std::nullopt, "fill_value"));
}

}  // namespace solar::lower::detail
