// The training half of the aten table: backward ops recorded by autograd and the update
// ops of optimizer steps (captured by `solar analyze --train`), plus the few forward ops
// that only training captures produce. Each lowering is exact (the executor reproduces
// PyTorch's CPU result) or throws Unsupported; docs/torch-training.md lists them.
//
// The forward ops are the other aten_*.cc families'; an op name registered twice is an
// internal error (op_table.h).
#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>

#include "families.h"
#include "solar/util/errors.h"

namespace solar::lower::detail {
namespace {

using ir::AffineConstraint;

Expr sel(Expr c, Expr a, Expr b) {
  return fn(ExprOp::Select, {std::move(c), std::move(a), std::move(b)});
}
Expr cmp(ExprOp op, Expr a, Expr b) { return fn(op, {std::move(a), std::move(b)}); }
Expr divide(Expr a, Expr b) { return fn(ExprOp::Div, {std::move(a), std::move(b)}); }

// `expr >= 0` and `expr <= hi` as mask constraints.
void within(std::vector<AffineConstraint>& mask, const AffineExpr& e, std::int64_t hi) {
  mask.push_back({e});
  std::vector<AffineTerm> neg;
  for (const AffineTerm& t : e.terms()) neg.push_back({t.index, -t.coef});
  mask.push_back({AffineExpr::make(neg, hi - e.constant_term())});
}

// A general broadcasting einsum over the iteration space `full`: each input is aligned
// right against `full` (size-1 dimensions broadcast), dimensions with red[d] are reduced
// (the output drops them, or keeps them as size 1 when its rank is full's rank). `mask`
// uses full's dimension positions.
void bcast(Context& c, std::vector<TensorId> ins, TensorId out, const Shape& full,
           const std::vector<bool>& red, Expr combine, Reduce r,
           std::vector<AffineConstraint> mask = {}) {
  Space s;
  std::vector<AffineExpr> pos;
  for (std::size_t d = 0; d < full.size(); ++d) {
    pos.push_back(ix(s.add(fmt::format("{}{}", red[d] ? "r" : "i", d), full[d])));
  }
  std::vector<std::vector<AffineExpr>> subs;
  for (TensorId in : ins) {
    const Shape& sh = c.t(in).shape;
    if (sh.size() > full.size())
      throw Unsupported(
          fmt::format("operand of rank {} does not broadcast to rank {}", sh.size(), full.size()));
    std::vector<AffineExpr> sub;
    for (std::size_t d = 0; d < sh.size(); ++d) {
      std::size_t fd = d + full.size() - sh.size();
      if (sh[d] == full[fd])
        sub.push_back(pos[fd]);
      else if (sh[d] == 1)
        sub.push_back(zero());
      else
        throw Unsupported(fmt::format("operand dimension {} of size {} does not broadcast to {}", d,
                                      sh[d], full[fd]));
    }
    subs.push_back(std::move(sub));
  }
  const Shape& os = c.t(out).shape;
  std::vector<AffineExpr> osub;
  const bool keep = os.size() == full.size();
  for (std::size_t d = 0; d < full.size(); ++d) {
    if (!red[d])
      osub.push_back(pos[d]);
    else if (keep)
      osub.push_back(zero());
  }
  if (osub.size() != os.size()) throw Unsupported("reduction output rank does not match");
  c.einsum(std::move(ins), out, std::move(s), std::move(subs), std::move(osub), std::move(combine),
           r, std::move(mask));
}

std::vector<bool> all_but(std::size_t rank, std::size_t keep_dim) {
  std::vector<bool> red(rank, true);
  red[keep_dim] = false;
  return red;
}

// A view of `t` with another shape of the same element count (or `t` when it has it).
TensorId reshaped(Context& c, TensorId t, Shape shape, const char* what) {
  if (c.t(t).shape == shape) return t;
  if (numel(c.t(t).shape) != numel(shape))
    throw Unsupported(fmt::format("{} has an unexpected shape", what));
  TensorId v = c.temp(what, std::move(shape), c.t(t).dtype);
  c.move(MoveKind::View, {t}, v);
  return v;
}

// A zero-filled tensor (a constant-writing einsum, as torch's zeros).
TensorId zeros(Context& c, Shape shape, ir::DType dt, const char* what = "zeros") {
  TensorId z = c.temp(what, std::move(shape), dt);
  c.elementwise({}, z, num(0));
  return z;
}

// Whether the trace asks for output k (output_mask false: the output is None).
bool wants(Context& c, std::size_t k) { return c.out_id(k).has_value(); }

// Whether a trace tensor is available: a graph source, or the output of a lowered op (an
// output the forward's lowering left undefined is not).
bool produced(Context& c, std::int64_t id) {
  const auto& done = c.tensor_map();
  if (static_cast<std::size_t>(id) < done.size() && done[id].valid()) return true;
  switch (c.tt(id).role) {
    case TraceRole::Input:
    case TraceRole::Parameter:
    case TraceRole::Buffer:
    case TraceRole::Constant:
      return true;
    case TraceRole::Intermediate:
    case TraceRole::Output:
      return false;
  }
  return false;
}

// ---------------------------------------------------------------- activations

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

// ---------------------------------------------------------------- softmax

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

// softmax into `out` over `dim`; rows whose every element is -inf give 0 when `safe`.
void safe_softmax_into(Context& c, TensorId in, TensorId out, std::int64_t dim, bool safe,
                  const std::vector<AffineConstraint>& mask = {}) {
  const Shape shape = c.t(in).shape;
  ir::DType dt = c.t(out).dtype;
  Shape keep = shape;
  keep[dim] = 1;
  std::vector<bool> red(shape.size(), false);
  red[dim] = true;
  TensorId m = c.temp("max", keep, dt);
  bcast(c, {in}, m, shape, red, arg(0), Reduce::Max, mask);
  TensorId e = c.temp("exp", shape, dt);
  c.elementwise({in, m}, e, un(ExprOp::Exp, sub(arg(0), arg(1))), mask);
  TensorId s = c.temp("sum", keep, dt);
  bcast(c, {e}, s, shape, red, arg(0), Reduce::Sum, mask);
  if (safe)
    c.elementwise({e, s, m}, out,
                  sel(cmp(ExprOp::Eq, arg(2), num(-kInf)), num(0), divide(arg(0), arg(1))), mask);
  else
    c.elementwise({e, s}, out, divide(arg(0), arg(1)), mask);
}

// ---------------------------------------------------------------- norms

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

// ---------------------------------------------------------------- convolution

// convolution_backward. With the forward
//   y[n, g*Kg+k, p] = sum_{c, r} x[n, g*Cg+c, p*s + r*d - pad] * w[g*Kg+k, c, r]
// (transposed: y[n, g*Kg+k, o] = sum_{c, r, i : o = i*s + r*d - pad} x[n, g*Cg+c, i] * w[g*Cg+c, k,
// r]):
//   grad_input  = the transposed (resp. direct) convolution of grad_output with the weight,
//   grad_weight = the correlation of the input with grad_output,
//   grad_bias   = grad_output summed over batch and space.
// Work: grad_input counts exactly the taps that land inside the input (a mask, as the
// transposed forward): a tap whose input position padding crops has no element to add to.
// grad_weight of a convolution reads the zero padding of the input as the forward does (its
// MACs equal the forward's); of a transposed convolution it counts the taps landing inside
// grad_output, as the transposed forward counts those landing inside its output.
void lower_convolution_backward(Context& c) {
  TensorId gy = c.use_arg("grad_output"), x = c.use_arg("input"), w = c.use_arg("weight");
  const Shape ys = c.t(gy).shape, xs = c.t(x).shape, ws = c.t(w).shape;
  if (xs.size() < 3 || ws.size() != xs.size() || ys.size() != xs.size())
    throw Unsupported("convolution backward needs batched input [N, C, spatial...]");
  const std::size_t nd = xs.size() - 2;
  const bool transposed = c.bool_arg("transposed", false);
  const std::int64_t G = c.int_arg("groups", 1);
  auto stride = per_dim(c, "stride", nd, 1), pad = per_dim(c, "padding", nd, 0),
       dil = per_dim(c, "dilation", nd, 1);
  // Channels: the "small" side (the einsum operand with the c index) and the "big" side.
  const std::int64_t Cin = xs[1], K = ys[1];
  if (G < 1 || Cin % G != 0 || K % G != 0) throw Unsupported("inconsistent convolution groups");
  const std::int64_t Cg = Cin / G, Kg = K / G;
  if (transposed ? (ws[0] != Cin || ws[1] != Kg) : (ws[0] != K || ws[1] != Cg))
    throw Unsupported("convolution weight shape does not match its channels");
  for (std::size_t d = 0; d < nd; ++d)
    if (stride[d] < 1 || dil[d] < 1) throw Unsupported("non-positive stride or dilation");

  // The index space shared by the three contractions: n, (g), k, c, and per spatial dim the
  // position of the tensor that is read through a plain index.
  struct Builder {
    Space s;
    ir::IndexPos n = -1, k = -1, ci = -1;
    std::optional<ir::IndexPos> g;
    AffineExpr grouped(ir::IndexPos i, std::int64_t per) const {
      if (!g) return ix(i);
      return AffineExpr::make({AffineTerm{*g, per}, AffineTerm{i, 1}}, 0);
    }
  };
  auto start = [&](bool with_n) {
    Builder b;
    if (with_n) b.n = b.s.add("n", xs[0]);
    if (G > 1) b.g = b.s.add("g", G);
    b.k = b.s.add("k", Kg);
    b.ci = b.s.add("c", Cg);
    return b;
  };
  // The weight's subscript in channel dims.
  auto wsub = [&](const Builder& b) {
    return transposed ? std::vector<AffineExpr>{b.grouped(b.ci, Cg), ix(b.k)}
                      : std::vector<AffineExpr>{b.grouped(b.k, Kg), ix(b.ci)};
  };
  // The "direct" relation: big[q] is read at small position q*s + r*d - pad where (small,
  // big) is (x, y) for a forward conv and (y, x) for a transposed one.
  const Shape& small_sp = transposed ? ys : xs;  // read through the affine subscript
  const Shape& big_sp = transposed ? xs : ys;    // iterated by a plain index

  if (wants(c, 0)) {
    TensorId out = c.def(0);
    Builder b = start(true);
    std::vector<AffineExpr> sg{ix(b.n), b.grouped(b.k, Kg)}, sw = wsub(b),
                                                             so{ix(b.n), b.grouped(b.ci, Cg)};
    std::vector<AffineConstraint> mask;
    bool padded = false;
    for (std::size_t d = 0; d < nd; ++d) {
      if (transposed) {
        // dx[i] = sum_{k, r} dy[i*s + r*d - pad] * w[r]
        ir::IndexPos i = b.s.add(fmt::format("i{}", d), xs[2 + d]);
        ir::IndexPos r = b.s.add(fmt::format("r{}", d), ws[2 + d]);
        AffineExpr at =
            AffineExpr::make({AffineTerm{i, stride[d]}, AffineTerm{r, dil[d]}}, -pad[d]);
        within(mask, at, ys[2 + d] - 1);
        sg.push_back(at);
        sw.push_back(ix(r));
        so.push_back(ix(i));
        padded = true;
      } else if (stride[d] == 1) {
        // dx[i] = sum_{k, r} dy[i + pad - r*d] * w[r]: no division, so a direct subscript
        ir::IndexPos i = b.s.add(fmt::format("i{}", d), xs[2 + d]);
        ir::IndexPos r = b.s.add(fmt::format("r{}", d), ws[2 + d]);
        AffineExpr at = AffineExpr::make({AffineTerm{i, 1}, AffineTerm{r, -dil[d]}}, pad[d]);
        within(mask, at, ys[2 + d] - 1);
        sg.push_back(at);
        sw.push_back(ix(r));
        so.push_back(ix(i));
        padded = true;
      } else {
        // dx[i] = sum_{k, r, p : p*s + r*d - pad == i} dy[p] * w[r] (two inequalities)
        ir::IndexPos i = b.s.add(fmt::format("i{}", d), xs[2 + d]);
        ir::IndexPos r = b.s.add(fmt::format("r{}", d), ws[2 + d]);
        ir::IndexPos p = b.s.add(fmt::format("p{}", d), ys[2 + d]);
        AffineExpr eq = AffineExpr::make(
            {AffineTerm{i, 1}, AffineTerm{r, -dil[d]}, AffineTerm{p, -stride[d]}}, pad[d]);
        within(mask, eq, 0);
        sg.push_back(ix(p));
        sw.push_back(ix(r));
        so.push_back(ix(i));
      }
    }
    c.einsum({gy, w}, out, std::move(b.s), {sg, sw}, so, mul(arg(0), arg(1)), Reduce::Sum, mask,
             {padded ? std::optional<double>(0.0) : std::nullopt, std::nullopt});
  }
  if (wants(c, 1)) {
    // dw[r] = sum_{n, q} small[q*s + r*d - pad] * big[q]
    TensorId out = c.def(1);
    Builder b = start(true);
    std::vector<AffineExpr> sx{ix(b.n), b.grouped(b.ci, Cg)}, sg{ix(b.n), b.grouped(b.k, Kg)};
    std::vector<AffineExpr> so = wsub(b);
    std::vector<AffineConstraint> mask;
    for (std::size_t d = 0; d < nd; ++d) {
      ir::IndexPos q = b.s.add(fmt::format("q{}", d), big_sp[2 + d]);
      ir::IndexPos r = b.s.add(fmt::format("r{}", d), ws[2 + d]);
      AffineExpr at = AffineExpr::make({AffineTerm{q, stride[d]}, AffineTerm{r, dil[d]}}, -pad[d]);
      if (transposed) within(mask, at, small_sp[2 + d] - 1);
      (transposed ? sg : sx).push_back(at);
      (transposed ? sx : sg).push_back(ix(q));
      so.push_back(ix(r));
    }
    // operand 0 is the input, operand 1 grad_output; the affine one reads with pad 0
    c.einsum({x, gy}, out, std::move(b.s), {sx, sg}, so, mul(arg(0), arg(1)), Reduce::Sum, mask,
             {transposed ? std::nullopt : std::optional<double>(0.0),
              transposed ? std::optional<double>(0.0) : std::nullopt});
  }
  if (wants(c, 2)) {
    TensorId out = c.def(2);
    if (c.t(out).shape != Shape{K}) throw Unsupported("bias gradient is not a per-channel vector");
    bcast(c, {gy}, out, ys, all_but(ys.size(), 1), arg(0), Reduce::Sum);
  }
}

// ---------------------------------------------------------------- pooling

// The input plane's gradient as zeros scattered with grad_output at flat plane indices
// (max pooling and adaptive max pooling: torch's indices are flat within each plane).
void scatter_to_plane(Context& c, std::size_t nd) {
  TensorId gy = c.use_arg("grad_output"), x = c.use_arg("self"), idx = c.use_arg("indices");
  const Shape xs = c.t(x).shape, ys = c.t(gy).shape;
  if (xs.size() < nd || ys.size() != xs.size() || c.t(idx).shape != ys)
    throw Unsupported("pooling gradient shapes do not match");
  const std::size_t lead = xs.size() - nd;
  Shape plane(xs.begin(), xs.begin() + lead), flat_y = plane;
  std::int64_t in_plane = 1, out_plane = 1;
  for (std::size_t d = lead; d < xs.size(); ++d) in_plane *= xs[d], out_plane *= ys[d];
  plane.push_back(in_plane);
  flat_y.push_back(out_plane);
  TensorId z = zeros(c, plane, c.t(gy).dtype);
  TensorId gv = reshaped(c, gy, flat_y, "grad_flat"), iv = reshaped(c, idx, flat_y, "indices_flat");
  TensorId out = c.def(0);
  TensorId s = c.temp("scattered", plane, c.t(out).dtype);
  c.move(MoveKind::Scatter, {z, iv, gv}, s,
         {{"axis", static_cast<std::int64_t>(lead)},
          {"mode", std::string("elements")},
          {"reduce", std::string("sum")}});
  c.move(MoveKind::View, {s}, out);
}

// avg_pool{1,2,3}d_backward: dx[i] = sum over the windows p holding i of dy[p] / divisor;
// per spatial dim the live (i, p) pairs are 0 <= i + pad - p*s <= kernel - 1.
Fn avg_pool_backward(std::size_t nd) {
  return [=](Context& c) {
    TensorId gy = c.use_arg("grad_output"), x = c.use_arg("self");
    const Shape xs = c.t(x).shape, ys = c.t(gy).shape;
    if (xs.size() < nd || ys.size() != xs.size())
      throw Unsupported("pooling gradient rank mismatch");
    auto kernel = per_dim(c, "kernel_size", nd, 1);
    auto stride = c.ints("stride").empty() ? kernel : per_dim(c, "stride", nd, 1);
    auto pad = per_dim(c, "padding", nd, 0);
    const std::size_t lead = xs.size() - nd;
    bool padded = false;
    for (std::size_t d = 0; d < nd; ++d) {
      padded = padded || pad[d] != 0;
      if ((xs[lead + d] + 2 * pad[d] - kernel[d]) / stride[d] + 1 != ys[lead + d])
        throw Unsupported("average pooling with ceil_mode windows (divisor varies per window)");
    }
    if (padded && !c.bool_arg("count_include_pad", true))
      throw Unsupported("average pooling that excludes padding from the divisor");
    double divisor = static_cast<double>(numel(kernel));
    if (c.has("divisor_override")) divisor = c.num_arg("divisor_override", divisor);
    Space s;
    std::vector<AffineExpr> sg, so;
    for (std::size_t d = 0; d < lead; ++d) {
      AffineExpr b = ix(s.add(fmt::format("b{}", d), xs[d]));
      sg.push_back(b);
      so.push_back(b);
    }
    std::vector<AffineConstraint> mask;
    for (std::size_t d = 0; d < nd; ++d) {
      ir::IndexPos i = s.add(fmt::format("i{}", d), xs[lead + d]);
      ir::IndexPos p = s.add(fmt::format("p{}", d), ys[lead + d]);
      within(mask, AffineExpr::make({AffineTerm{i, 1}, AffineTerm{p, -stride[d]}}, pad[d]),
             kernel[d] - 1);
      sg.push_back(ix(p));
      so.push_back(ix(i));
    }
    c.einsum({gy}, c.def(0), std::move(s), {sg}, so, mul(arg(0), num(1 / divisor)), Reduce::Sum,
             mask);
  };
}

// _adaptive_avg_pool{2,3}d_backward with windows that divide the input: each input element
// gets its window's gradient / window size, a broadcast over [.., O, k, ..] viewed back.
Fn adaptive_avg_pool_backward(std::size_t nd) {
  return [=](Context& c) {
    TensorId gy = c.use_arg("grad_output"), x = c.use_arg("self");
    const Shape xs = c.t(x).shape, ys = c.t(gy).shape;
    if (xs.size() < nd || ys.size() != xs.size())
      throw Unsupported("pooling gradient rank mismatch");
    const std::size_t lead = xs.size() - nd;
    Shape split(xs.begin(), xs.begin() + lead), gshape = split;
    std::int64_t window = 1;
    for (std::size_t d = lead; d < xs.size(); ++d) {
      if (ys[d] < 1 || xs[d] % ys[d] != 0)
        throw Unsupported(
            fmt::format("adaptive pooling from {} to {} (uneven windows)", xs[d], ys[d]));
      split.insert(split.end(), {ys[d], xs[d] / ys[d]});
      gshape.insert(gshape.end(), {ys[d], 1});
      window *= xs[d] / ys[d];
    }
    TensorId gv = reshaped(c, gy, gshape, "grad_windows");
    TensorId out = c.def(0);
    TensorId spread = c.temp("spread", split, c.t(out).dtype);
    c.elementwise({gv}, spread, mul(arg(0), num(1 / static_cast<double>(window))));
    c.move(MoveKind::View, {spread}, out);
  };
}

// ---------------------------------------------------------------- embedding, losses

// embedding_dense_backward: zeros [num_weights, D] with each grad row added at its index
// (a take-mode scatter-add); rows of padding_idx get nothing; scale_grad_by_freq divides
// each row by its index's count.
void lower_embedding_backward(Context& c) {
  TensorId gy = c.use_arg("grad_output"), idx = c.use_arg("indices");
  const Shape is = c.t(idx).shape, gs = c.t(gy).shape;
  if (gs.size() != is.size() + 1)
    throw Unsupported("embedding gradient rank does not match its indices");
  const std::int64_t W = c.int_arg("num_weights", 0), D = gs.back(),
                     pidx = c.int_arg("padding_idx", -1);
  TensorId out = c.def(0);
  ir::DType dt = c.t(out).dtype;
  Shape col = is;
  col.push_back(1);
  TensorId src = gy;
  if (pidx >= 0 || c.bool_arg("scale_grad_by_freq", false)) {
    TensorId ic = reshaped(c, idx, col, "indices_col");
    std::vector<TensorId> ins{gy, ic};
    Expr e = arg(0);
    if (c.bool_arg("scale_grad_by_freq", false)) {
      TensorId ones = c.temp("ones", is, dt);
      c.elementwise({}, ones, num(1));
      TensorId counts = c.temp("counts", {W}, dt);
      c.move(MoveKind::Scatter, {zeros(c, {W}, dt), idx, ones}, counts,
             {{"axis", std::int64_t{0}},
              {"mode", std::string("take")},
              {"reduce", std::string("sum")}});
      TensorId per = c.temp("count_of", is, dt);
      c.move(MoveKind::Gather, {counts, idx}, per, {{"axis", std::int64_t{0}}});
      ins.push_back(reshaped(c, per, col, "count_col"));
      e = divide(e, arg(2));
    }
    if (pidx >= 0) e = sel(cmp(ExprOp::Eq, arg(1), num(static_cast<double>(pidx))), num(0), e);
    src = c.temp("rows", gs, dt);
    c.elementwise(ins, src, e);
  }
  if (c.t(out).shape != Shape{W, D})
    throw Unsupported("embedding gradient is not [num_weights, D]");
  c.move(
      MoveKind::Scatter, {zeros(c, {W, D}, dt), idx, src}, out,
      {{"axis", std::int64_t{0}}, {"mode", std::string("take")}, {"reduce", std::string("sum")}});
}

// Reduction enum of aten losses: 0 none, 1 mean, 2 sum. The factor grad_output carries per
// element: 1/numel for mean.
double loss_norm(Context& c, TensorId x) {
  return c.int_arg("reduction", 1) == 1
             ? 1 / static_cast<double>(std::max<std::int64_t>(numel(c.t(x).shape), 1))
             : 1;
}

// Pointwise loss gradients: f(grad_output, self, target) * norm, elementwise over self.
Fn pointwise_loss_backward(std::function<Expr(Context&, Expr g, Expr x, Expr y)> f) {
  return [f](Context& c) {
    std::vector<TensorId> in;
    Expr g = operand(c, "grad_output", in);
    TensorId xt = c.use_arg("self");
    Expr x = operand(c, "self", in);
    Expr y = operand(c, "target", in);
    Expr e = f(c, g, x, y);
    if (c.has("weight")) e = mul(e, operand(c, "weight", in));
    double norm = loss_norm(c, xt);
    c.elementwise(in, c.def(0), scaled(norm, e));
  };
}

// nll_loss_backward / nll_loss2d_backward (input [N, C, d...] or [C], target [N, d...]):
// zeros with -grad * weight[target] (/ total_weight for mean) at each position's target
// class; positions whose target is ignore_index get 0 (and scatter into class 0, a
// harmless add of 0, since ignore_index is usually out of range).
void lower_nll_loss_backward(Context& c) {
  TensorId gy = c.use_arg("grad_output"), x = c.use_arg("self"), tgt = c.use_arg("target");
  Shape xs = c.t(x).shape;
  if (xs.empty()) throw Unsupported("nll_loss backward of a scalar input");
  if (xs.size() == 1) xs.insert(xs.begin(), 1);
  Shape col = xs;  // [N, 1, d...]: one entry per position
  col[1] = 1;
  Shape tshape = col;
  tshape.erase(tshape.begin() + 1);
  const std::int64_t mode = c.int_arg("reduction", 1);
  const double ignore = static_cast<double>(c.int_arg("ignore_index", -100));
  ir::DType dt = c.t(x).dtype;
  TensorId tcol = reshaped(c, tgt, col, "target_col");
  std::vector<TensorId> ins{tcol};
  Expr val = un(ExprOp::Neg, arg(static_cast<int>(ins.size())));
  ins.push_back(mode == 0 ? reshaped(c, gy, col, "grad_col") : gy);
  if (c.has("weight")) {
    TensorId tflat = reshaped(c, tgt, tshape, "target_flat");
    // an ignored target may be out of range: clamp it for the gather (its entry gets 0 anyway)
    TensorId tsafe = c.temp("target_safe", tshape, c.t(tgt).dtype);
    c.elementwise({tflat}, tsafe, sel(cmp(ExprOp::Eq, arg(0), num(ignore)), num(0), arg(0)));
    TensorId wt = c.temp("weight_of", tshape, dt);
    c.move(MoveKind::Gather, {c.use_arg("weight"), tsafe}, wt, {{"axis", std::int64_t{0}}});
    val = mul(val, arg(static_cast<int>(ins.size())));
    ins.push_back(reshaped(c, wt, col, "weight_col"));
  }
  if (mode == 1) {
    val = divide(val, arg(static_cast<int>(ins.size())));
    const std::int64_t tw = c.trace_id("total_weight");
    if (produced(c, tw)) {
      ins.push_back(c.use(tw));
    } else {
      // the forward's lowering left total_weight unproduced: the sum of the weights of the
      // positions whose target is not ignored (their count without class weights)
      TensorId total = c.temp("total_weight", {}, dt);
      std::vector<TensorId> tin{tcol};
      Expr wn = num(1);
      if (c.has("weight")) {
        tin.push_back(ins[2]);
        wn = arg(1);
      }
      bcast(c, tin, total, col, std::vector<bool>(col.size(), true),
            sel(cmp(ExprOp::Eq, arg(0), num(ignore)), num(0), wn), Reduce::Sum);
      ins.push_back(total);
    }
  }
  TensorId src = c.temp("src", col, dt);
  c.elementwise(ins, src, sel(cmp(ExprOp::Eq, arg(0), num(ignore)), num(0), val));
  TensorId isafe = c.temp("index", col, c.t(tgt).dtype);
  c.elementwise({tcol}, isafe, sel(cmp(ExprOp::Eq, arg(0), num(ignore)), num(0), arg(0)));
  TensorId out = c.def(0);
  TensorId s = c.temp("scattered", xs, dt);
  c.move(MoveKind::Scatter, {zeros(c, xs, dt), isafe, src}, s,
         {{"axis", std::int64_t{1}},
          {"mode", std::string("elements")},
          {"reduce", std::string("sum")}});
  c.move(MoveKind::View, {s}, out);
}

// ---------------------------------------------------------------- attention

// Scaled-dot-product attention backward (every backend's op; [..., H, L, E] operands, GQA:
// query head hk*grp + j reads key head hk). With P recomputed from Q, K (and logsumexp when
// the forward's lowering produced it):
//   dV = Pᵀ dO,  dP = dO Vᵀ,  D = rowsum(dO ∘ O),  dS = scale · P ∘ (dP − D),
//   dQ = dS K,   dK = dSᵀ Q   (and d(bias) = dS / scale for an additive mask).
// A causal mask (key s <= query l, torch's top-left alignment) masks every step, so the
// MACs are the live (l, s) pairs only.
void lower_sdpa_backward(Context& c) {
  c.set_contraction_hint(ir::ContractionHint::Attention);  // the framework's attention kernels
  const char* gname = c.has("grad_out") ? "grad_out" : "grad_out_";
  TensorId dO = c.use_arg(gname), q = c.use_arg("query"), k = c.use_arg("key"),
           v = c.use_arg("value"), o = c.use_arg("out");
  if (c.num_arg("dropout_p", 0) != 0) throw Unsupported("dropout inside attention (random mask)");
  const Shape qs = c.t(q).shape, ks = c.t(k).shape, vs = c.t(v).shape;
  const std::size_t r = qs.size();
  if (r < 3 || ks.size() != r || vs.size() != r)
    throw Unsupported("attention needs [..., H, L, E] operands");
  const std::int64_t Hq = qs[r - 3], Hk = ks[r - 3], L = qs[r - 2], S = ks[r - 2], E = qs[r - 1],
                     Ev = vs[r - 1];
  if (Hk < 1 || Hq % Hk != 0) throw Unsupported("query heads are not a multiple of key heads");
  for (std::size_t d = 0; d + 3 < r; ++d)
    if (ks[d] != qs[d] || vs[d] != qs[d]) throw Unsupported("attention batch dimensions differ");
  const std::int64_t grp = Hq / Hk;
  const bool causal = c.bool_arg("is_causal", false);
  const double scale =
      c.has("scale") ? c.num_arg("scale", 1) : 1 / std::sqrt(static_cast<double>(E));
  ir::DType dt = c.t(q).dtype;
  Shape sshape(qs.begin(), qs.end() - 1);
  sshape.push_back(S);

  // Named-index contraction: each operand and the output list index names; "h" is the
  // query head hk*grp + j.
  std::map<std::string, std::int64_t> extent{{"hk", Hk}, {"j", grp}, {"l", L},
                                             {"s", S},   {"e", E},   {"ev", Ev}};
  auto contract = [&](std::vector<TensorId> ins, std::vector<std::vector<std::string>> subs_n,
                      TensorId out, std::vector<std::string> out_n, Expr combine) {
    Space s;
    std::map<std::string, ir::IndexPos> at;
    std::vector<AffineExpr> batch;
    for (std::size_t d = 0; d + 3 < r; ++d)
      batch.push_back(ix(s.add(fmt::format("b{}", d), qs[d])));
    auto sub_of = [&](const std::vector<std::string>& names) {
      std::vector<AffineExpr> sub = batch;
      for (const std::string& nm : names) {
        if (nm == "h") {
          for (const char* part : {"hk", "j"})
            if (!at.count(part)) at[part] = s.add(part, extent[part]);
          sub.push_back(AffineExpr::make({AffineTerm{at["hk"], grp}, AffineTerm{at["j"], 1}}, 0));
        } else {
          if (!at.count(nm)) at[nm] = s.add(nm, extent[nm]);
          sub.push_back(ix(at[nm]));
        }
      }
      return sub;
    };
    std::vector<std::vector<AffineExpr>> subs;
    for (const auto& names : subs_n) subs.push_back(sub_of(names));
    std::vector<AffineExpr> so = sub_of(out_n);
    std::vector<AffineConstraint> mask;
    if (causal)
      mask.push_back({AffineExpr::make({AffineTerm{at["l"], 1}, AffineTerm{at["s"], -1}}, 0)});
    c.einsum(std::move(ins), out, std::move(s), std::move(subs), std::move(so), std::move(combine),
             Reduce::Sum, mask);
  };
  // Causal mask over a [..., L, S] elementwise space.
  std::vector<AffineConstraint> emask;
  if (causal)
    emask.push_back({AffineExpr::make({AffineTerm{static_cast<ir::IndexPos>(r - 2), 1},
                                       AffineTerm{static_cast<ir::IndexPos>(r - 1), -1}},
                                      0)});

  // Scores and probabilities.
  TensorId scores = c.temp("scores", sshape, dt);
  contract({q, k}, {{"h", "l", "e"}, {"hk", "s", "e"}}, scores, {"h", "l", "s"},
           mul(arg(0), arg(1)));
  const char* mask_arg = c.has("attn_mask")   ? "attn_mask"
                         : c.has("attn_bias") ? "attn_bias"
                                              : nullptr;
  std::vector<TensorId> sins{scores};
  Expr logits = mul(arg(0), num(scale));
  if (mask_arg) {
    TensorId m = c.use_arg(mask_arg);
    sins.push_back(m);
    logits =
        c.t(m).dtype == ir::DType::Bool ? sel(arg(1), logits, num(-kInf)) : add(logits, arg(1));
  }
  TensorId probs = c.temp("probs", sshape, dt);
  const std::int64_t lse_id = c.trace_id("logsumexp");
  const bool have_lse = produced(c, lse_id) && c.shape(lse_id) == Shape(qs.begin(), qs.end() - 1);
  if (have_lse) {
    Shape lshape(qs.begin(), qs.end() - 1);
    lshape.push_back(1);
    sins.push_back(reshaped(c, c.use(lse_id), lshape, "lse"));
    c.elementwise(sins, probs, un(ExprOp::Exp, sub(logits, arg(static_cast<int>(sins.size() - 1)))),
                  emask);
  } else {
    // the forward's lowering left logsumexp unproduced: recompute the softmax
    TensorId sc = c.temp("logits", sshape, dt);
    c.elementwise(sins, sc, logits, emask);
    safe_softmax_into(c, sc, probs, static_cast<std::int64_t>(r - 1), false, emask);
  }
  // dV = Pᵀ dO (summed over the query heads of a group)
  if (wants(c, 2))
    contract({probs, dO}, {{"h", "l", "s"}, {"h", "l", "ev"}}, c.def(2), {"hk", "s", "ev"},
             mul(arg(0), arg(1)));
  if (!wants(c, 0) && !wants(c, 1) && !wants(c, 3)) return;
  TensorId dP = c.temp("dprobs", sshape, dt);
  contract({dO, v}, {{"h", "l", "ev"}, {"hk", "s", "ev"}}, dP, {"h", "l", "s"},
           mul(arg(0), arg(1)));
  Shape dshape(qs.begin(), qs.end() - 1);
  dshape.push_back(1);
  TensorId D = c.temp("rowdot", dshape, dt);
  Shape oshape(qs.begin(), qs.end() - 1);
  oshape.push_back(Ev);
  std::vector<bool> red(r, false);
  red[r - 1] = true;
  bcast(c, {dO, o}, D, oshape, red, mul(arg(0), arg(1)), Reduce::Sum);
  TensorId dS = c.temp("dscores", sshape, dt);
  c.elementwise({probs, dP, D}, dS, mul(num(scale), mul(arg(0), sub(arg(1), arg(2)))), emask);
  if (wants(c, 0))
    contract({dS, k}, {{"h", "l", "s"}, {"hk", "s", "e"}}, c.def(0), {"h", "l", "e"},
             mul(arg(0), arg(1)));
  if (wants(c, 1))
    contract({dS, q}, {{"h", "l", "s"}, {"h", "l", "e"}}, c.def(1), {"hk", "s", "e"},
             mul(arg(0), arg(1)));
  if (wants(c, 3)) {
    TensorId out = c.def(3);
    if (c.t(out).shape != sshape) throw Unsupported("a broadcast attention-bias gradient");
    c.elementwise({dS}, out, mul(arg(0), num(1 / scale)), emask);
  }
}

// ---------------------------------------------------------------- misc gradients

// slice_backward: zeros of the input's size with grad placed at start::step along dim.
void lower_slice_backward(Context& c) {
  TensorId g = c.use_arg("grad_output");
  const Shape sizes = c.ints("input_sizes");
  const std::int64_t dim = norm_dim(c.int_arg("dim", 0), sizes.size());
  const std::int64_t step = c.int_arg("step", 1), size = sizes[dim];
  std::int64_t start = c.int_arg("start", 0), end = c.int_arg("end", size);
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<std::int64_t>(start, 0, size);
  end = std::clamp<std::int64_t>(end, start, size);
  if (step < 1) throw Unsupported("slice with a non-positive step");
  const Shape gs = c.t(g).shape;
  if (gs.size() != sizes.size() || gs[dim] != (end - start + step - 1) / step)
    throw Unsupported("slice gradient does not match the slice");
  TensorId out = c.def(0);
  if (step == 1) {
    std::vector<std::int64_t> pads(2 * sizes.size(), 0);
    pads[2 * dim] = start;
    pads[2 * dim + 1] = size - end;
    return c.move(MoveKind::Pad, {g}, out, {{"pads", pads}, {"value", 0.0}});
  }
  // out[.., i, ..] = sum_q g[.., q, ..] where i == start + q*step: masked, so the points no
  // q reaches hold the sum's identity 0
  Space s;
  std::vector<AffineExpr> sg, so;
  std::vector<AffineConstraint> mask;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (static_cast<std::int64_t>(d) != dim) {
      AffineExpr a = ix(s.add(fmt::format("d{}", d), sizes[d]));
      sg.push_back(a);
      so.push_back(a);
      continue;
    }
    ir::IndexPos i = s.add("i", size), q = s.add("q", gs[d]);
    within(mask, AffineExpr::make({AffineTerm{i, 1}, AffineTerm{q, -step}}, -start), 0);
    sg.push_back(ix(q));
    so.push_back(ix(i));
  }
  c.einsum({g}, out, std::move(s), {sg}, so, arg(0), Reduce::Sum, mask);
}

// select_backward: grad viewed with the selected dim of size 1, padded to the input size.
void lower_select_backward(Context& c) {
  TensorId g = c.use_arg("grad_output");
  const Shape sizes = c.ints("input_sizes");
  const std::int64_t dim = norm_dim(c.int_arg("dim", 0), sizes.size());
  std::int64_t index = c.int_arg("index", 0);
  if (index < 0) index += sizes[dim];
  Shape one = sizes;
  one[dim] = 1;
  TensorId gv = reshaped(c, g, one, "grad_row");
  std::vector<std::int64_t> pads(2 * sizes.size(), 0);
  pads[2 * dim] = index;
  pads[2 * dim + 1] = sizes[dim] - 1 - index;
  c.move(MoveKind::Pad, {gv}, c.def(0), {{"pads", pads}, {"value", 0.0}});
}

// binary_cross_entropy_with_logits: (1 - y) x - log_weight · log_sigmoid(x), as torch with
// log_sigmoid(x) = min(x, 0) - log(1 + exp(-|x|)) and log_weight = (pos_weight - 1) y + 1.
void lower_bce_with_logits(Context& c) {
  std::vector<TensorId> in;
  TensorId xt = c.use_arg("self");
  Expr x = operand(c, "self", in), y = operand(c, "target", in);
  Expr logsig =
      sub(fn(ExprOp::Min, {x, num(0)}),
          un(ExprOp::Log, add(num(1), un(ExprOp::Exp, un(ExprOp::Neg, un(ExprOp::Abs, x))))));
  Expr lw = num(1);
  if (c.has("pos_weight")) lw = add(mul(sub(operand(c, "pos_weight", in), num(1)), y), num(1));
  Expr e = sub(mul(sub(num(1), y), x), mul(lw, logsig));
  if (c.has("weight")) e = mul(e, operand(c, "weight", in));
  TensorId out = c.def(0);
  const std::int64_t mode = c.int_arg("reduction", 1);
  if (mode == 0) return c.elementwise(in, out, e);
  const Shape xs = c.t(xt).shape;
  TensorId per = c.temp("loss", xs, c.t(out).dtype);
  c.elementwise(in, per, e);
  TensorId s = mode == 2 ? out : c.temp("sum", c.t(out).shape, c.t(out).dtype);
  bcast(c, {per}, s, xs, std::vector<bool>(xs.size(), true), arg(0), Reduce::Sum);
  if (mode == 1)
    c.elementwise({s}, out,
                  mul(arg(0), num(1 / static_cast<double>(std::max<std::int64_t>(numel(xs), 1)))));
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
// the k dims; the gradient sums grad_output over them. Other factors: unanalyzed.
struct Upsample {
  Shape split;           // [lead.., in0, k0, in1, k1, ..]
  Shape narrow;          // [lead.., in0, 1, in1, 1, ..]
  std::vector<bool> ks;  // the k dims of split
};
Upsample nearest_split(Context& c, const Shape& in, const Shape& out, std::size_t nd,
                       const std::vector<const char*>& scale_args) {
  if (in.size() != out.size() || in.size() < nd) throw Unsupported("upsampling rank mismatch");
  const std::size_t lead = in.size() - nd;
  Upsample u;
  u.split.assign(in.begin(), in.begin() + lead);
  u.narrow = u.split;
  u.ks.assign(lead, false);
  std::vector<double> given =
      c.has("scale_factors") ? std::vector<double>() : std::vector<double>(nd, 0);
  if (c.has("scale_factors"))
    for (const auto& v : c.a("scale_factors")) given.push_back(number_value(v).value_or(0));
  else
    for (std::size_t d = 0; d < nd && d < scale_args.size(); ++d)
      given[d] = c.num_arg(scale_args[d], 0);
  for (std::size_t d = 0; d < nd; ++d) {
    const std::int64_t i = in[lead + d], o = out[lead + d];
    const std::int64_t k = i > 0 && o % i == 0 ? o / i : 0;
    if (k < 1 || (k & (k - 1)) != 0 ||
        (d < given.size() && given[d] != 0 && given[d] != static_cast<double>(k)))
      throw Unsupported(
          fmt::format("nearest upsampling from {} to {} (not a power-of-two factor)", i, o));
    u.split.insert(u.split.end(), {i, k});
    u.narrow.insert(u.narrow.end(), {i, 1});
    u.ks.insert(u.ks.end(), {false, true});
  }
  return u;
}

const std::vector<const char*>& scale_names(std::size_t nd) {
  static const std::vector<const char*> n1{"scales"}, n2{"scales_h", "scales_w"},
      n3{"scales_d", "scales_h", "scales_w"};
  return nd == 1 ? n1 : nd == 2 ? n2 : n3;
}

Fn upsample_nearest(std::size_t nd) {
  return [=](Context& c) {
    TensorId x = c.use_arg(c.has("self") ? "self" : "input");
    TensorId out = c.def(0);
    Upsample u = nearest_split(c, c.t(x).shape, c.t(out).shape, nd, scale_names(nd));
    TensorId spread = c.temp("spread", u.split, c.t(out).dtype);
    c.elementwise({reshaped(c, x, u.narrow, "narrow")}, spread, arg(0));
    c.move(MoveKind::View, {spread}, out);
  };
}

Fn upsample_nearest_backward(std::size_t nd) {
  return [=](Context& c) {
    TensorId g = c.use_arg("grad_output");
    TensorId out = c.def(0);
    Upsample u = nearest_split(c, c.t(out).shape, c.t(g).shape, nd, scale_names(nd));
    bcast(c, {reshaped(c, g, u.split, "grad_blocks")}, out, u.split, u.ks, arg(0), Reduce::Sum);
  };
}

// col2im (nn.Fold, and the gradient of im2col / nn.Unfold): columns [N, C*kh*kw, L] with
// L = OH*OW block positions, viewed as [N, C, kh, kw, OH, OW], summed into the image:
//   out[n, c, y, x] = sum over (tap, block) pairs with y = oh*s + kh*d - pad (and for x),
// as a convolution's input gradient without the weight: stride 1 reads the block directly
// at y + pad - kh*d, other strides mask (y, kh, oh) to the equality.
void lower_col2im(Context& c) {
  TensorId cols = c.use_arg("self");
  TensorId out = c.def(0);
  const Shape cs = c.t(cols).shape, os = c.t(out).shape;
  const bool batched = cs.size() == 3;
  if (!batched && cs.size() != 2) throw Unsupported("col2im of other than [N, C*kh*kw, L] columns");
  auto size = per_dim(c, "output_size", 2, 1), kernel = per_dim(c, "kernel_size", 2, 1),
       dil = per_dim(c, "dilation", 2, 1), pad = per_dim(c, "padding", 2, 0),
       stride = per_dim(c, "stride", 2, 1);
  const std::int64_t N = batched ? cs[0] : 1, CK = cs[cs.size() - 2], L = cs.back();
  const std::int64_t K = kernel[0] * kernel[1];
  Shape blocks(2);
  for (std::size_t d = 0; d < 2; ++d) {
    if (stride[d] < 1 || dil[d] < 1)
      throw Unsupported("col2im with a non-positive stride or dilation");
    blocks[d] = (size[d] + 2 * pad[d] - dil[d] * (kernel[d] - 1) - 1) / stride[d] + 1;
  }
  if (K < 1 || CK % K != 0 || blocks[0] * blocks[1] != L)
    throw Unsupported("col2im sizes do not match its columns");
  const std::int64_t C = CK / K;
  TensorId cv = reshaped(c, cols, {N, C, kernel[0], kernel[1], blocks[0], blocks[1]}, "columns");
  const Shape ishape{N, C, size[0], size[1]};
  if (numel(os) != numel(ishape)) throw Unsupported("col2im output does not match its sizes");
  TensorId img = os == ishape ? out : c.temp("image", ishape, c.t(out).dtype);
  Space s;
  ir::IndexPos n = s.add("n", N), ci = s.add("c", C);
  std::vector<AffineExpr> sub_cols{ix(n), ix(ci)}, sub_taps, sub_blocks, so{ix(n), ix(ci)};
  std::vector<AffineConstraint> mask;
  bool padded = false;
  for (std::size_t d = 0; d < 2; ++d) {
    ir::IndexPos y = s.add(fmt::format("y{}", d), size[d]);
    ir::IndexPos k = s.add(fmt::format("k{}", d), kernel[d]);
    sub_taps.push_back(ix(k));
    so.push_back(ix(y));
    if (stride[d] == 1) {
      AffineExpr at = AffineExpr::make({AffineTerm{y, 1}, AffineTerm{k, -dil[d]}}, pad[d]);
      within(mask, at, blocks[d] - 1);
      sub_blocks.push_back(at);
      padded = true;
    } else {
      ir::IndexPos b = s.add(fmt::format("b{}", d), blocks[d]);
      within(mask,
             AffineExpr::make({AffineTerm{y, 1}, AffineTerm{k, -dil[d]}, AffineTerm{b, -stride[d]}},
                              pad[d]),
             0);
      sub_blocks.push_back(ix(b));
    }
  }
  sub_cols.insert(sub_cols.end(), sub_taps.begin(), sub_taps.end());
  sub_cols.insert(sub_cols.end(), sub_blocks.begin(), sub_blocks.end());
  c.einsum({cv}, img, std::move(s), {sub_cols}, so, arg(0), Reduce::Sum, mask,
           {padded ? std::optional<double>(0.0) : std::nullopt});
  if (img != out) c.move(MoveKind::View, {img}, out);
}

// Reflection and replication padding over the trailing dims (`padding` lists (before,
// after) pairs from the last dim backwards), one dim at a time. Along a dim of input size I
// with pads (L, R), output position o reads, left of the input, L - o (reflection) or 0
// (replication); right of it, I - 2 - o' (reflection) or I - 1 (replication) for o' = o - L - I.
enum class EdgePad { Reflect, Replicate };

// An einsum over `out`'s shape (plus `extra` summed indices) reading `in` plainly except
// along `dim`, where `sub(i, extra)` gives the position; `mask` over i (and extra).
void along(Context& c, TensorId in, TensorId out, std::size_t dim,
           const std::function<AffineExpr(ir::IndexPos i, std::optional<ir::IndexPos> extra)>& sub,
           std::int64_t extra_extent,
           const std::function<std::vector<AffineConstraint>(ir::IndexPos,
                                                             std::optional<ir::IndexPos>)>& mask,
           Reduce r, std::optional<double> pad) {
  const Shape os = c.t(out).shape;
  Space s;
  std::vector<AffineExpr> so, si;
  ir::IndexPos i = -1;
  for (std::size_t d = 0; d < os.size(); ++d) {
    ir::IndexPos p = s.add(fmt::format("i{}", d), os[d]);
    if (d == dim) i = p;
    so.push_back(ix(p));
  }
  std::optional<ir::IndexPos> extra;
  if (extra_extent > 0) extra = s.add("e", extra_extent);
  si = so;
  si[dim] = sub(i, extra);
  c.einsum({in}, out, std::move(s), {si}, so, arg(0), r, mask(i, extra), {pad});
}

std::vector<std::int64_t> edge_pads(Context& c, std::size_t nd, std::size_t rank) {
  std::vector<std::int64_t> p = c.ints("padding");
  if (p.size() != 2 * nd || rank < nd) throw Unsupported("padding list does not match the dims");
  for (std::int64_t x : p)
    if (x < 0) throw Unsupported("negative edge padding (cropping)");
  return p;
}

Fn edge_pad(std::size_t nd, EdgePad mode) {
  return [=](Context& c) {
    TensorId cur = c.use_arg("self");
    const std::size_t rank = c.t(cur).shape.size();
    auto pads = edge_pads(c, nd, rank);
    TensorId out = c.def(0);
    const bool reflect = mode == EdgePad::Reflect;
    for (std::size_t k = 0; k < nd; ++k) {
      const std::size_t dim = rank - 1 - k;
      const std::int64_t L = pads[2 * k], R = pads[2 * k + 1], I = c.t(cur).shape[dim];
      if (L == 0 && R == 0) continue;
      if (reflect && (L >= I || R >= I))
        throw Unsupported("reflection padding as wide as the input");
      std::vector<TensorId> parts;
      auto part = [&](std::int64_t n, bool left) {
        Shape sh = c.t(cur).shape;
        sh[dim] = n;
        TensorId t = c.temp(left ? "left" : "right", sh, c.t(cur).dtype);
        along(
            c, cur, t, dim,
            [&](ir::IndexPos i, std::optional<ir::IndexPos>) {
              if (!reflect) return AffineExpr::constant(left ? 0 : I - 1);
              return left ? AffineExpr::make({AffineTerm{i, -1}}, L)
                          : AffineExpr::make({AffineTerm{i, -1}}, I - 2);
            },
            0,
            [](ir::IndexPos, std::optional<ir::IndexPos>) {
              return std::vector<AffineConstraint>{};
            },
            Reduce::None, std::nullopt);
        parts.push_back(t);
      };
      if (L > 0) part(L, true);
      parts.push_back(cur);
      if (R > 0) part(R, false);
      Shape sh = c.t(cur).shape;
      sh[dim] = L + I + R;
      bool last = true;
      for (std::size_t j = k + 1; j < nd; ++j)
        last = last && pads[2 * j] == 0 && pads[2 * j + 1] == 0;
      TensorId next = last ? out : c.temp("padded", sh, c.t(cur).dtype);
      c.move(MoveKind::Concat, parts, next, {{"axis", static_cast<std::int64_t>(dim)}});
      cur = next;
    }
    if (cur != out) c.move(MoveKind::Copy, {cur}, out);  // no padding at all
  };
}

// The gradient: per dim, grad_input = grad's centre + the mirrored (or summed) edge parts.
Fn edge_pad_backward(std::size_t nd, EdgePad mode) {
  return [=](Context& c) {
    TensorId cur = c.use_arg("grad_output");
    const std::size_t rank = c.t(cur).shape.size();
    auto pads = edge_pads(c, nd, rank);
    TensorId out = c.def(0);
    const Shape xs = c.t(out).shape;
    const bool reflect = mode == EdgePad::Reflect;
    ir::DType dt = c.t(cur).dtype;
    for (std::size_t k = 0; k < nd; ++k) {
      const std::size_t dim = rank - 1 - k;
      const std::int64_t L = pads[2 * k], R = pads[2 * k + 1], I = xs[dim];
      if (L == 0 && R == 0) continue;
      if (c.t(cur).shape[dim] != L + I + R)
        throw Unsupported("padding gradient of an unexpected size");
      auto slice = [&](std::int64_t from, std::int64_t n, const char* what) {
        Shape sh = c.t(cur).shape;
        std::vector<std::int64_t> starts(rank, 0), ends = sh, steps(rank, 1);
        starts[dim] = from;
        ends[dim] = from + n;
        sh[dim] = n;
        TensorId t = c.temp(what, sh, dt);
        c.move(MoveKind::Slice, {cur}, t, {{"starts", starts}, {"ends", ends}, {"steps", steps}});
        return t;
      };
      Shape sh = c.t(cur).shape;
      sh[dim] = I;
      std::vector<TensorId> terms{slice(L, I, "centre")};
      auto edge = [&](std::int64_t n, bool left) {
        TensorId g = slice(left ? 0 : L + I, n, left ? "left" : "right");
        TensorId t = c.temp(left ? "from_left" : "from_right", sh, dt);
        if (reflect) {
          // left: i in [1, L] reads g[L - i]; right: i in [I-1-R, I-2] reads g[I - 2 - i]
          const std::int64_t lo = left ? 1 : I - 1 - R, hi = left ? L : I - 2,
                             off = left ? L : I - 2;
          along(
              c, g, t, dim,
              [&](ir::IndexPos i, std::optional<ir::IndexPos>) {
                return AffineExpr::make({AffineTerm{i, -1}}, off);
              },
              0,
              [&](ir::IndexPos i, std::optional<ir::IndexPos>) {
                std::vector<AffineConstraint> m;
                within(m, AffineExpr::make({AffineTerm{i, 1}}, -lo), hi - lo);
                return m;
              },
              Reduce::None, 0.0);
        } else {
          // the whole edge adds into position 0 (left) or I - 1 (right)
          const std::int64_t at = left ? 0 : I - 1;
          along(
              c, g, t, dim, [&](ir::IndexPos, std::optional<ir::IndexPos> e) { return ix(*e); }, n,
              [&](ir::IndexPos i, std::optional<ir::IndexPos>) {
                std::vector<AffineConstraint> m;
                within(m, AffineExpr::make({AffineTerm{i, 1}}, -at), 0);
                return m;
              },
              Reduce::Sum, std::nullopt);
        }
        terms.push_back(t);
      };
      if (L > 0) edge(L, true);
      if (R > 0) edge(R, false);
      bool last = true;
      for (std::size_t j = k + 1; j < nd; ++j)
        last = last && pads[2 * j] == 0 && pads[2 * j + 1] == 0;
      TensorId next = last ? out : c.temp("grad", sh, dt);
      Expr sum = arg(0);
      for (std::size_t t = 1; t < terms.size(); ++t) sum = add(sum, arg(static_cast<int>(t)));
      c.elementwise(terms, next, sum);
      cur = next;
    }
    if (cur != out) c.move(MoveKind::Copy, {cur}, out);
  };
}

// A factory op that writes a constant.
Fn fill_with(std::optional<double> value, const char* value_arg = nullptr) {
  return [=](Context& c) {
    c.elementwise({}, c.def(0), num(value ? *value : c.num_arg(value_arg, 0)));
  };
}

// ---------------------------------------------------------------- optimizer updates

// lerp: self + w (end - self) for |w| < 0.5, else end - (end - self)(1 - w), as torch
// (the second form is exact at w = 1).
Expr lerp(Expr a, Expr b, Expr w) {
  return sel(cmp(ExprOp::Lt, un(ExprOp::Abs, w), num(0.5)), add(a, mul(w, sub(b, a))),
             sub(b, mul(sub(b, a), sub(num(1), w))));
}

void lower_lerp(Context& c) {
  std::vector<TensorId> in;
  Expr a = operand(c, "self", in), b = operand(c, "end", in);
  const auto& wv = c.a("weight");
  Expr e;
  if (auto w = number_value(wv)) {
    e = std::abs(*w) < 0.5 ? add(a, mul(num(*w), sub(b, a))) : sub(b, mul(sub(b, a), num(1 - *w)));
  } else {
    e = lerp(a, b, operand(c, "weight", in));
  }
  c.elementwise(in, c.def(0), e);
}

// addcmul: self + value * t1 * t2; addcdiv: self + value * t1 / t2.
Fn addc(ExprOp op) {
  return [=](Context& c) {
    std::vector<TensorId> in;
    Expr a = operand(c, "self", in), t1 = operand(c, "tensor1", in), t2 = operand(c, "tensor2", in);
    c.elementwise(in, c.def(0), add(a, scaled(c.num_arg("value", 1), fn(op, {t1, t2}))));
  };
}

}  // namespace

void register_training_ops(const Register& reg) {
  // Activation gradients (torch's CPU formulas).
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
  reg("aten::native_dropout_backward.default", [](Context& c) {
    std::vector<TensorId> in;
    Expr g = operand(c, "grad_output", in), m = operand(c, "mask", in);
    c.elementwise(in, c.def(0), mul(mul(g, m), num(c.num_arg("scale", 1))));
  });
  // Softmax, norms, convolution, pooling.
  reg("aten::_softmax_backward_data.default", softmax_backward(false));
  reg("aten::_log_softmax_backward_data.default", softmax_backward(true));
  reg("aten::native_layer_norm_backward.default", lower_layer_norm_backward);
  reg("aten::native_batch_norm_backward.default", lower_batch_norm_backward);
  reg("aten::native_group_norm_backward.default", lower_group_norm_backward);
  reg("aten::convolution_backward.default", lower_convolution_backward);
  reg("aten::max_pool2d_with_indices_backward.default", [](Context& c) { scatter_to_plane(c, 2); });
  reg("aten::max_pool3d_with_indices_backward.default", [](Context& c) { scatter_to_plane(c, 3); });
  reg("aten::adaptive_max_pool2d_backward.default", [](Context& c) { scatter_to_plane(c, 2); });
  reg("aten::adaptive_max_pool3d_backward.default", [](Context& c) { scatter_to_plane(c, 3); });
  reg("aten::avg_pool2d_backward.default", avg_pool_backward(2));
  reg("aten::avg_pool3d_backward.default", avg_pool_backward(3));
  reg("aten::_adaptive_avg_pool2d_backward.default", adaptive_avg_pool_backward(2));
  reg("aten::_adaptive_avg_pool3d_backward.default", adaptive_avg_pool_backward(3));
  // Embedding and losses.
  reg("aten::embedding_dense_backward.default", lower_embedding_backward);
  reg("aten::nll_loss_backward.default", lower_nll_loss_backward);
  reg("aten::nll_loss2d_backward.default", lower_nll_loss_backward);
  reg("aten::mse_loss_backward.default",
      pointwise_loss_backward(
          [](Context&, Expr g, Expr x, Expr y) { return mul(mul(num(2), sub(x, y)), g); }));
  reg("aten::smooth_l1_loss_backward.default",
      pointwise_loss_backward([](Context& c, Expr g, Expr x, Expr y) {
        const double beta = c.num_arg("beta", 1);
        Expr d = sub(x, y);
        if (beta == 0)
          return mul(sel(cmp(ExprOp::Gt, d, num(0)), num(1),
                         sel(cmp(ExprOp::Lt, d, num(0)), num(-1), num(0))),
                     g);
        return sel(cmp(ExprOp::Lt, d, num(-beta)), un(ExprOp::Neg, g),
                   sel(cmp(ExprOp::Gt, d, num(beta)), g, mul(mul(d, g), num(1 / beta))));
      }));
  reg("aten::huber_loss_backward.default",
      pointwise_loss_backward([](Context& c, Expr g, Expr x, Expr y) {
        const double delta = c.num_arg("delta", 1);
        Expr d = sub(x, y);
        return sel(cmp(ExprOp::Le, d, num(-delta)), mul(g, num(-delta)),
                   sel(cmp(ExprOp::Ge, d, num(delta)), mul(g, num(delta)), mul(d, g)));
      }));
  reg("aten::binary_cross_entropy_backward.default",
      pointwise_loss_backward([](Context&, Expr g, Expr x, Expr y) {
        // (x - y) / max((1 - x) x, 1e-12) * g, as torch
        return mul(divide(sub(x, y), fn(ExprOp::Max, {mul(sub(num(1), x), x), num(1e-12)})), g);
      }));
  // Attention.
  for (std::string_view name :
       {"aten::_scaled_dot_product_flash_attention_for_cpu_backward.default",
        "aten::_scaled_dot_product_flash_attention_backward.default",
        "aten::_scaled_dot_product_efficient_attention_backward.default",
        "aten::_scaled_dot_product_cudnn_attention_backward.default"})
    reg(name, lower_sdpa_backward);
  // View and indexing gradients, and forward ops that training captures bring.
  reg("aten::slice_backward.default", lower_slice_backward);
  reg("aten::select_backward.default", lower_select_backward);
  reg("aten::_safe_softmax.default", [](Context& c) {
    std::int64_t x = c.trace_id("self");
    safe_softmax_into(c, c.use(x), c.def(0), norm_dim(c.int_arg("dim", -1), c.shape(x).size()),
                      true);
  });
  reg("aten::binary_cross_entropy_with_logits.default", lower_bce_with_logits);
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
  reg("aten::col2im.default", lower_col2im);
  // Reflection and replication padding and their gradients.
  static const char* const edge_names[2][3][2] = {
      {{"aten::reflection_pad1d.default", "aten::reflection_pad1d_backward.default"},
       {"aten::reflection_pad2d.default", "aten::reflection_pad2d_backward.default"},
       {"aten::reflection_pad3d.default", "aten::reflection_pad3d_backward.default"}},
      {{"aten::replication_pad1d.default", "aten::replication_pad1d_backward.default"},
       {"aten::replication_pad2d.default", "aten::replication_pad2d_backward.default"},
       {"aten::replication_pad3d.default", "aten::replication_pad3d_backward.default"}}};
  for (int m = 0; m < 2; ++m)
    for (std::size_t nd = 1; nd <= 3; ++nd) {
      const EdgePad mode = m == 0 ? EdgePad::Reflect : EdgePad::Replicate;
      reg(edge_names[m][nd - 1][0], edge_pad(nd, mode));
      reg(edge_names[m][nd - 1][1], edge_pad_backward(nd, mode));
    }
  // Nearest upsampling (integer power-of-two factors) and its gradient.
  // (the table keys are string_views: the names are literals)
  static const char* const up[3][2][3] = {
      {{"aten::upsample_nearest1d.default", "aten::upsample_nearest1d.vec",
        "aten::upsample_nearest1d_backward.default"},
       {"aten::_upsample_nearest_exact1d.default", "aten::_upsample_nearest_exact1d.vec",
        "aten::_upsample_nearest_exact1d_backward.default"}},
      {{"aten::upsample_nearest2d.default", "aten::upsample_nearest2d.vec",
        "aten::upsample_nearest2d_backward.default"},
       {"aten::_upsample_nearest_exact2d.default", "aten::_upsample_nearest_exact2d.vec",
        "aten::_upsample_nearest_exact2d_backward.default"}},
      {{"aten::upsample_nearest3d.default", "aten::upsample_nearest3d.vec",
        "aten::upsample_nearest3d_backward.default"},
       {"aten::_upsample_nearest_exact3d.default", "aten::_upsample_nearest_exact3d.vec",
        "aten::_upsample_nearest_exact3d_backward.default"}}};
  for (std::size_t nd = 1; nd <= 3; ++nd)
    for (std::size_t exact = 0; exact < 2; ++exact) {
      const auto& names = up[nd - 1][exact];
      // upsample_nearest{1,2,3}d.default (any size ratio) is aten_pool.cc's
      if (exact) reg(names[0], upsample_nearest(nd));
      reg(names[1], upsample_nearest(nd));
      reg(names[2], upsample_nearest_backward(nd));
    }
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
  // (bitwise_not, logical_not, logical_and/or and the bitwise and/or of the functional forms
  // are aten_pointwise.cc's and aten_math.cc's)
  for (std::string_view name : {"aten::logical_not_.default"})
    reg(name, boolean(1, [](Expr a, Expr) { return cmp(ExprOp::Eq, a, num(0)); }));
  for (std::string_view name : {"aten::logical_and_.default"})
    reg(name, boolean(2, [](Expr a, Expr b) { return mul(a, b); }));
  for (std::string_view name : {"aten::logical_or_.default"})
    reg(name, boolean(2, [](Expr a, Expr b) { return fn(ExprOp::Max, {a, b}); }));
  // Autograd's gradient buffers: new_empty_strided is uninitialized memory that copy_ fills
  // (nothing to lower, as empty); new_zeros/new_ones write a constant.
  reg("aten::new_empty_strided.default", [](Context& c) { c.mark_uninitialized(0); });
  reg("aten::new_empty.default", [](Context& c) { c.mark_uninitialized(0); });
  reg("aten::new_zeros.default", fill_with(0.0));
  reg("aten::new_ones.default", fill_with(1.0));
  reg("aten::new_full.default", fill_with(std::nullopt, "fill_value"));
  // Optimizer updates (foreach=False: one op per parameter), functional and in place.
  for (std::string_view name : {"aten::addcmul.default", "aten::addcmul_.default"})
    reg(name, addc(ExprOp::Mul));
  for (std::string_view name : {"aten::addcdiv.default", "aten::addcdiv_.default"})
    reg(name, addc(ExprOp::Div));
  for (std::string_view name :
       {"aten::lerp.Scalar", "aten::lerp_.Scalar", "aten::lerp.Tensor", "aten::lerp_.Tensor"})
    reg(name, lower_lerp);
}

}  // namespace solar::lower::detail
