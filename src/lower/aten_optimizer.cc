// The aten table's optimizer updates: the ops an optimizer step records per parameter
// (foreach=False), functional and in place: addcmul, addcdiv and lerp (Adam, AdamW, RMSprop,
// SGD with momentum; docs/torch-training.md).
#include <cmath>
#include <vector>

#include "context.h"
#include "families.h"

namespace solar::lower::detail {

namespace {

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

void register_optimizer_ops(const Register& reg) {
  for (std::string_view name : {"aten::addcmul.default", "aten::addcmul_.default"})
    reg(name, addc(ExprOp::Mul));
  for (std::string_view name : {"aten::addcdiv.default", "aten::addcdiv_.default"})
    reg(name, addc(ExprOp::Div));
  for (std::string_view name :
       {"aten::lerp.Scalar", "aten::lerp_.Scalar", "aten::lerp.Tensor", "aten::lerp_.Tensor"})
    reg(name, lower_lerp);
}

}  // namespace solar::lower::detail
