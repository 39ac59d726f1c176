// The aten table's loss functions: pointwise losses (mse, l1, huber, smooth_l1, binary cross
// entropy, with logits too) and nll_loss, and their gradients.
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

// Reduction enum of aten losses: 0 none, 1 mean, 2 sum.
void loss_reduce(Context& c, TensorId per_element, TensorId out) {
  std::int64_t mode = c.int_arg("reduction", 1);
  SOLAR_CHECK(mode != 0, "loss_reduce with reduction none");
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
  gather(c, x, idx, picked, 1, IndexMode::Elements);
  TensorId pv = c.temp("picked_flat", ts, dt);
  c.move(MoveKind::View, {picked}, pv);
  // weight of each sample: w[t] (0 where ignored)
  TensorId wt = c.temp("weight_of", ts, dt);
  if (c.has("weight")) {
    TensorId wg = c.temp("class_weight", ts, dt);
    gather(c, c.use_arg("weight"), safe, wg, 0, IndexMode::Take);
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

// ---------------------------------------------------------------- gradients

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
    gather(c, c.use_arg("weight"), tsafe, wt, 0, IndexMode::Take);
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
  scatter(c, zeros(c, xs, dt), isafe, src, s, 1, IndexMode::Elements, ScatterReduce::Sum);
  c.move(MoveKind::View, {s}, out);
}

// binary_cross_entropy_with_logits: (1 - y) x - log_weight · log_sigmoid(x), as torch with
// log_sigmoid(x) = min(x, 0) - log(1 + exp(-|x|)) and log_weight = (pos_weight - 1) y + 1.
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

}  // namespace

void register_loss_ops(const Register& reg) {
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
  reg("aten::binary_cross_entropy_with_logits.default", lower_bce_with_logits);
}

}  // namespace solar::lower::detail
