// The aten table's loss functions: pointwise losses (mse, l1, huber, smooth_l1, binary cross
// entropy) and nll_loss.
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
}

}  // namespace solar::lower::detail
