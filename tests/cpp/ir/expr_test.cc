#include "solar/ir/expr.h"

#include <gtest/gtest.h>

#include <cmath>

#include "solar/util/errors.h"

namespace solar::ir {
namespace {

TEST(Expr, NamesRoundTrip) {
  for (int i = static_cast<int>(ExprOp::Add); i <= static_cast<int>(ExprOp::Cos); ++i) {
    auto op = static_cast<ExprOp>(i);
    EXPECT_EQ(parse_expr_op(expr_op_name(op)), op) << expr_op_name(op);
  }
  EXPECT_EQ(parse_expr_op("operand"), std::nullopt);  // leaves are not functions
  EXPECT_EQ(parse_expr_op("frob"), std::nullopt);
}

TEST(Expr, Arity) {
  EXPECT_EQ(expr_arity(ExprOp::Mul), 2);
  EXPECT_EQ(expr_arity(ExprOp::Select), 3);
  EXPECT_EQ(expr_arity(ExprOp::Exp), 1);
  EXPECT_EQ(expr_arity(ExprOp::Const), 0);
  EXPECT_THROW(Expr::make(ExprOp::Add, {Expr::operand(0)}), UserError);
  EXPECT_THROW(Expr::make(ExprOp::Const, {}), InternalError);
}

TEST(Expr, SpecialFunctions) {
  EXPECT_TRUE(is_special_function(ExprOp::Exp));
  EXPECT_TRUE(is_special_function(ExprOp::Rsqrt));
  EXPECT_FALSE(is_special_function(ExprOp::Mul));
  EXPECT_FALSE(is_special_function(ExprOp::Relu));
}

TEST(Expr, ProductOfTwoOperands) {
  EXPECT_TRUE(Expr::make(ExprOp::Mul, {Expr::operand(0), Expr::operand(1)})
                  .is_product_of_two_operands());
  EXPECT_FALSE(Expr::make(ExprOp::Mul, {Expr::operand(0), Expr::operand(0)})
                   .is_product_of_two_operands());  // a square, not a contraction
  EXPECT_FALSE(Expr::make(ExprOp::Mul, {Expr::operand(0), Expr::constant(2)})
                   .is_product_of_two_operands());
  EXPECT_FALSE(Expr::make(ExprOp::Add, {Expr::operand(0), Expr::operand(1)})
                   .is_product_of_two_operands());
  EXPECT_FALSE(Expr().is_product_of_two_operands());
}

TEST(Expr, StructuralEquality) {
  Expr a = Expr::make(ExprOp::Exp, {Expr::make(ExprOp::Sub, {Expr::operand(0), Expr::operand(1)})});
  Expr b = Expr::make(ExprOp::Exp, {Expr::make(ExprOp::Sub, {Expr::operand(0), Expr::operand(1)})});
  Expr c = Expr::make(ExprOp::Exp, {Expr::make(ExprOp::Sub, {Expr::operand(1), Expr::operand(0)})});
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a == c);
  EXPECT_EQ(Expr::constant(NAN), Expr::constant(NAN));  // NaN constants compare equal
  EXPECT_FALSE(Expr::constant(1) == Expr::constant(2));
  EXPECT_FALSE(Expr() == Expr::constant(0));
  EXPECT_EQ(Expr(), Expr());
}

}  // namespace
}  // namespace solar::ir
