#include "solar/ir/value_domain.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace solar::ir {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
using V = AbstractValue;
const V data{V::Finite};
const V anything{V::Any};

TEST(ValueDomain, ConstantsFoldAsTheExecutorComputes) {
  const IntegerType i64{};
  EXPECT_EQ(abstract_binary(ExprOp::Add, V::constant(2), V::constant(3)), V::constant(5));
  EXPECT_EQ(abstract_binary(ExprOp::Le, V::constant(2), V::constant(3)), V::constant(1));
  EXPECT_EQ(abstract_unary(ExprOp::Exp, V::constant(-kInf), i64), V::constant(0));
  // A NaN is anything.
  EXPECT_EQ(abstract_binary(ExprOp::Sub, V::constant(kInf), V::constant(kInf)), anything);
  // A function the domain does not fold: finite data for finite constants.
  EXPECT_EQ(abstract_binary(ExprOp::Pow, V::constant(2), V::constant(3)), data);
}

TEST(ValueDomain, NotIsBitwiseOnIntegersAndLogicalOnBool) {
  // ir/expr.h: not(x) works in the einsum's integer type; in a bool-only einsum it is logical.
  EXPECT_EQ(fold(ExprOp::Not, 0, IntegerType{1, true, true}), 1);
  EXPECT_EQ(fold(ExprOp::Not, 1, IntegerType{1, true, true}), 0);
  EXPECT_EQ(fold(ExprOp::Not, 0, IntegerType{32, false, false}), -1);
  EXPECT_EQ(fold(ExprOp::Not, 5, IntegerType{32, false, false}), -6);
  EXPECT_EQ(fold(ExprOp::Not, 0, IntegerType{8, true, false}), 255);
  EXPECT_EQ(fold(ExprOp::Not, 1.7, IntegerType{}), -2);  // a float truncates first
}

TEST(ValueDomain, FiniteDataAgainstInfinities) {
  // The softmax of a masked row: -inf - max = -inf, exp(-inf) = 0, 0 / sum = 0, 0 * v = 0.
  EXPECT_EQ(abstract_binary(ExprOp::Sub, V::constant(-kInf), data), V::constant(-kInf));
  EXPECT_EQ(abstract_binary(ExprOp::Mul, V::constant(0), data), V::constant(0));
  EXPECT_EQ(abstract_binary(ExprOp::Max, V::constant(-kInf), data), data);
  EXPECT_EQ(abstract_binary(ExprOp::Lt, data, V::constant(kInf)), V::constant(1));
  // An infinity times data of unknown sign: anything.
  EXPECT_EQ(abstract_binary(ExprOp::Mul, V::constant(kInf), data), anything);
  EXPECT_EQ(join(V::constant(0), V::constant(1)), data);
  EXPECT_EQ(join(V::constant(-kInf), data), anything);
  EXPECT_EQ(join(V::constant(2), V::constant(2)), V::constant(2));
}

TEST(ValueDomain, AMaskConstantAbsorbsData) {
  // finfo(f32).min * 0.7, JAX's mask fill: fill - max is the fill (data of magnitude under
  // 2^99 rounds away in f32), so exp of it is 0 as for -inf.
  const V fill = V::constant(-2.381976325057654e+38);
  EXPECT_EQ(abstract_binary(ExprOp::Sub, fill, data), fill);
  EXPECT_EQ(abstract_binary(ExprOp::Add, data, fill), fill);
  EXPECT_EQ(abstract_unary(ExprOp::Exp, abstract_binary(ExprOp::Sub, fill, data), IntegerType{}),
            V::constant(0));
  // -1e9 is data-sized: the difference is data.
  EXPECT_EQ(abstract_binary(ExprOp::Sub, V::constant(-1e9), data), data);
  // Under a max the data wins; a product with data may be anything.
  EXPECT_EQ(abstract_binary(ExprOp::Max, fill, data), data);
  EXPECT_EQ(abstract_binary(ExprOp::Min, fill, data), fill);
  EXPECT_EQ(abstract_binary(ExprOp::Mul, fill, data), anything);
  // What may be the fill or data (a row whose keys may all be masked) is not data: its
  // difference with the fill is not the fill.
  EXPECT_EQ(join(fill, data), anything);
  EXPECT_EQ(join(fill, V::constant(0)), anything);
}

TEST(ValueDomain, IndexValuesAndTheRegionsOfTheirComparisons) {
  // Operand 0 holds index i0 (an arange along the rows), operand 1 holds i1.
  const std::vector<std::optional<AffineExpr>> idx = {AffineExpr::index(0), AffineExpr::index(1)};
  const Expr row = Expr::operand(0), col = Expr::operand(1);
  const Expr shifted = Expr::make(ExprOp::Sub, {Expr::make(ExprOp::Mul, {Expr::constant(2), row}),
                                                Expr::constant(1)});
  EXPECT_EQ(index_value(shifted, idx), 2 * AffineExpr::index(0) - 1);
  EXPECT_EQ(index_value(Expr::make(ExprOp::Mul, {row, col}), idx), std::nullopt);  // not affine
  EXPECT_EQ(index_value(Expr::constant(0.5), idx), std::nullopt);
  // col <= row: the causal region i0 - i1 >= 0 over an 8x8 box.
  const std::optional<Truth> t = comparison_truth(Expr::make(ExprOp::Le, {col, row}), idx, {8, 8});
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->inside);
  EXPECT_EQ(t->region, (Region{{AffineExpr::index(0) - AffineExpr::index(1)}}));
  // ne holds outside the region of eq.
  const std::optional<Truth> ne = comparison_truth(Expr::make(ExprOp::Ne, {col, row}), idx, {8, 8});
  ASSERT_TRUE(ne);
  EXPECT_FALSE(ne->inside);
  EXPECT_EQ(ne->region.size(), 2u);
}

TEST(ValueDomain, AnIndexPast64BitsIsNoIndex) {
  const std::vector<std::optional<AffineExpr>> idx = {(std::int64_t{1} << 62) * AffineExpr::index(0)};
  const Expr e = Expr::make(ExprOp::Mul, {Expr::constant(8), Expr::operand(0)});
  EXPECT_EQ(index_value(e, idx), std::nullopt);
}

}  // namespace
}  // namespace solar::ir
