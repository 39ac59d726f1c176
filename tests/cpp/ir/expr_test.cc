#include "solar/ir/expr.h"

#include <gtest/gtest.h>

#include <cmath>

#include "solar/util/errors.h"

namespace solar::ir {
namespace {

TEST(Expr, NamesRoundTrip) {
  for (int i = static_cast<int>(ExprOp::Add); i <= static_cast<int>(kLastExprOp); ++i) {
    auto op = static_cast<ExprOp>(i);
    EXPECT_EQ(parse_expr_op(expr_op_name(op)), op) << expr_op_name(op);
  }
  EXPECT_EQ(parse_expr_op("operand"), std::nullopt);  // leaves are not functions
  EXPECT_EQ(parse_expr_op("frob"), std::nullopt);
}

TEST(Expr, TheFunctionTableHasOneRowPerOpWithDistinctNames) {
  ASSERT_EQ(std::size(kExprOps), static_cast<std::size_t>(kLastExprOp) + 1);
  for (std::size_t i = 0; i < std::size(kExprOps); ++i) {
    EXPECT_EQ(kExprOps[i].op, static_cast<ExprOp>(i)) << kExprOps[i].name;
    for (std::size_t j = 0; j < i; ++j) EXPECT_NE(kExprOps[i].name, kExprOps[j].name);
    // leaves are the only ops without children, and cost nothing
    const bool leaf = kExprOps[i].op == ExprOp::Operand || kExprOps[i].op == ExprOp::Const;
    EXPECT_EQ(kExprOps[i].arity == 0, leaf) << kExprOps[i].name;
  }
  EXPECT_EQ(expr_op_info(ExprOp::Sigmoid).special_ops, 2);  // exp, recip
  EXPECT_EQ(expr_op_info(ExprOp::Sigmoid).vector_flops, 1);  // add
}

TEST(Expr, Arity) {
  EXPECT_EQ(expr_arity(ExprOp::Mul), 2);
  EXPECT_EQ(expr_arity(ExprOp::Select), 3);
  EXPECT_EQ(expr_arity(ExprOp::Exp), 1);
  EXPECT_EQ(expr_arity(ExprOp::Const), 0);
  // A wrong count is a bug of the code that built it (the parsers check arity first).
  EXPECT_THROW(Expr::make(ExprOp::Add, {Expr::operand(0)}), InternalError);
  EXPECT_THROW(Expr::make(ExprOp::Const, {}), InternalError);
}

TEST(Expr, SpecialFunctions) {
  EXPECT_TRUE(is_special_function(ExprOp::Exp));
  EXPECT_TRUE(is_special_function(ExprOp::Rsqrt));
  EXPECT_FALSE(is_special_function(ExprOp::Mul));
  EXPECT_FALSE(is_special_function(ExprOp::Relu));
}

TEST(Expr, RoundingRemainderBitFunctions) {
  // Names as the text form writes them, and their arity.
  const std::pair<const char*, int> fns[] = {
      {"floor", 1}, {"ceil", 1}, {"trunc", 1}, {"round_even", 1}, {"round_away", 1}, {"sign", 1},
      {"rem", 2}, {"mod", 2}, {"atan2", 2}, {"atan", 1}, {"asin", 1}, {"acos", 1},
      {"and", 2}, {"or", 2}, {"xor", 2}, {"not", 1}, {"shl", 2}, {"ashr", 2}, {"lshr", 2},
      {"popcount", 1}, {"clz", 1}, {"f32_bits", 1}, {"bits_f32", 1}, {"erfinv", 1}, {"lgamma", 1},
      {"digamma", 1}, {"idiv", 2}};
  for (const auto& [name, arity] : fns) {
    std::optional<ExprOp> op = parse_expr_op(name);
    ASSERT_TRUE(op.has_value()) << name;
    EXPECT_EQ(expr_op_name(*op), name);
    EXPECT_EQ(expr_arity(*op), arity) << name;
  }
  EXPECT_TRUE(is_special_function(ExprOp::Atan2));
  EXPECT_TRUE(is_special_function(ExprOp::Atan));
  EXPECT_TRUE(is_special_function(ExprOp::ErfInv));
  EXPECT_TRUE(is_special_function(ExprOp::Digamma));
  EXPECT_FALSE(is_special_function(ExprOp::Floor));
  EXPECT_FALSE(is_special_function(ExprOp::Shl));
  EXPECT_TRUE(is_bitwise(ExprOp::Lshr));
  EXPECT_TRUE(is_bitwise(ExprOp::Not));
  EXPECT_FALSE(is_bitwise(ExprOp::Rem));
  EXPECT_FALSE(is_bitwise(ExprOp::F32Bits));
  EXPECT_THROW(Expr::make(ExprOp::Shl, {Expr::operand(0)}), InternalError);
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
