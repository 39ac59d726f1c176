#include "solar/cost/combine_cost.h"

#include <gtest/gtest.h>

namespace solar::cost {
namespace {

TEST(CombineCost, FunctionTable) {
  using ir::Expr;
  using ir::ExprOp;
  Expr x = Expr::operand(0);
  EXPECT_EQ(combine_cost(x).vector_flops, 0u);
  CombineCost sig = combine_cost(Expr::make(ExprOp::Sigmoid, {x}));
  EXPECT_EQ(sig.special_ops, 2u);  // exp, recip
  EXPECT_EQ(sig.vector_flops, 1u);  // add
  CombineCost pw = combine_cost(Expr::make(ExprOp::Pow, {x, Expr::constant(3)}));
  EXPECT_EQ(pw.special_ops, 2u);  // log, exp
  EXPECT_EQ(pw.vector_flops, 1u);  // mul
  // gelu(tanh form) pieces: mul(x, add(1, tanh(x))) = 2 vector + 1 special.
  Expr one_plus_tanh =
      Expr::make(ExprOp::Add, {Expr::constant(1), Expr::make(ExprOp::Tanh, {x})});
  CombineCost gelu = combine_cost(Expr::make(ExprOp::Mul, {x, one_plus_tanh}));
  EXPECT_EQ(gelu.vector_flops, 2u);
  EXPECT_EQ(gelu.special_ops, 1u);
  CombineCost sel = combine_cost(Expr::make(
      ExprOp::Select, {Expr::make(ExprOp::Gt, {x, Expr::constant(0)}), x, Expr::constant(0)}));
  EXPECT_EQ(sel.vector_flops, 2u);  // gt, select
}

// A subexpression that occurs several times is computed once by any implementation, so it
// is counted once: structurally equal subtrees, whether built twice or shared.

TEST(CombineCost, RepeatedSubexpressionCountsOnce) {
  using ir::Expr;
  using ir::ExprOp;
  Expr x = Expr::operand(0), y = Expr::operand(1);
  auto diff = [&] { return Expr::make(ExprOp::Sub, {x, y}); };  // a fresh tree each call
  // (x - y) * (x - y): one sub, one mul.
  CombineCost sq = combine_cost(Expr::make(ExprOp::Mul, {diff(), diff()}));
  EXPECT_EQ(sq.vector_flops, 2u);
  EXPECT_EQ(sq.special_ops, 0u);
  // exp(x) + exp(x): one exp, one add.
  CombineCost e = combine_cost(Expr::make(
      ExprOp::Add, {Expr::make(ExprOp::Exp, {x}), Expr::make(ExprOp::Exp, {x})}));
  EXPECT_EQ(e.special_ops, 1u);
  EXPECT_EQ(e.vector_flops, 1u);
  // Different operands or constants are different values: sub(x, y) and sub(y, x) both count.
  CombineCost two = combine_cost(
      Expr::make(ExprOp::Mul, {diff(), Expr::make(ExprOp::Sub, {y, x})}));
  EXPECT_EQ(two.vector_flops, 3u);
  CombineCost consts = combine_cost(
      Expr::make(ExprOp::Add, {Expr::make(ExprOp::Mul, {x, Expr::constant(2)}),
                               Expr::make(ExprOp::Mul, {x, Expr::constant(3)})}));
  EXPECT_EQ(consts.vector_flops, 3u);
  // softplus with beta = 2 (as lowered): beta*x in the threshold test and in the exponent.
  Expr bx = Expr::make(ExprOp::Mul, {Expr::constant(2), x});
  Expr soft = Expr::make(
      ExprOp::Mul,
      {Expr::make(ExprOp::Log,
                  {Expr::make(ExprOp::Add, {Expr::constant(1), Expr::make(ExprOp::Exp, {bx})})}),
       Expr::constant(0.5)});
  CombineCost sp = combine_cost(Expr::make(
      ExprOp::Select, {Expr::make(ExprOp::Gt, {bx, Expr::constant(20)}), x, soft}));
  EXPECT_EQ(sp.vector_flops, 5u);  // mul (beta x, once), gt, select, add, mul (1/beta)
  EXPECT_EQ(sp.special_ops, 2u);   // exp, log
  // A tree shared 60 levels deep (d = x - y; d = d * d; ...) unfolds to 2^60 nodes; each
  // distinct one is counted once, and found without walking the unfolded tree.
  Expr d = diff();
  for (int i = 0; i < 60; ++i) d = Expr::make(ExprOp::Mul, {d, d});
  EXPECT_EQ(combine_cost(d).vector_flops, 61u);
}

TEST(CombineCost, RoundingRemainderAndBitFunctions) {
  using ir::Expr;
  using ir::ExprOp;
  Expr x = Expr::operand(0), y = Expr::operand(1);
  // One vector op each: rounding, sign and the integer bit operations.
  for (ExprOp op : {ExprOp::Floor, ExprOp::Ceil, ExprOp::Trunc, ExprOp::RoundEven, ExprOp::RoundAway,
                    ExprOp::Sign, ExprOp::Not, ExprOp::Popcount, ExprOp::Clz}) {
    CombineCost c = combine_cost(Expr::make(op, {x}));
    EXPECT_EQ(c.vector_flops, 1u) << ir::expr_op_name(op);
    EXPECT_EQ(c.special_ops, 0u) << ir::expr_op_name(op);
  }
  for (ExprOp op : {ExprOp::And, ExprOp::Or, ExprOp::Xor, ExprOp::Shl, ExprOp::Ashr, ExprOp::Lshr}) {
    CombineCost c = combine_cost(Expr::make(op, {x, y}));
    EXPECT_EQ(c.vector_flops, 1u) << ir::expr_op_name(op);
  }
  EXPECT_EQ(combine_cost(Expr::make(ExprOp::IDiv, {x, y})).vector_flops, 2u);  // div, trunc
  EXPECT_EQ(combine_cost(Expr::make(ExprOp::Rem, {x, y})).vector_flops, 4u);  // div, trunc, mul, sub
  EXPECT_EQ(combine_cost(Expr::make(ExprOp::Mod, {x, y})).vector_flops, 6u);  // rem + compare, add
  CombineCost a2 = combine_cost(Expr::make(ExprOp::Atan2, {x, y}));
  EXPECT_EQ(a2.special_ops, 1u);   // atan
  EXPECT_EQ(a2.vector_flops, 2u);  // div, quadrant select
  for (ExprOp op : {ExprOp::Atan, ExprOp::Asin, ExprOp::Acos, ExprOp::ErfInv, ExprOp::Lgamma, ExprOp::Digamma})
    EXPECT_EQ(combine_cost(Expr::make(op, {x})).special_ops, 1u) << ir::expr_op_name(op);
  // A bit reinterpretation is free: only the or and the shift of the RNG idiom count.
  CombineCost rng = combine_cost(Expr::make(
      ExprOp::BitsF32, {Expr::make(ExprOp::Or, {Expr::make(ExprOp::Lshr, {x, Expr::constant(9)}),
                                                Expr::constant(1065353216)})}));
  EXPECT_EQ(rng.vector_flops, 2u);
  EXPECT_EQ(rng.special_ops, 0u);
}

}  // namespace
}  // namespace solar::cost
