#include "solar/ir/affine.h"

#include <gtest/gtest.h>

#include "solar/util/errors.h"

namespace solar::ir {
namespace {

TEST(AffineExpr, MakeCanonicalizes) {
  // 3*i2 + i0 - i2*3 + 2*i0 + 5: terms sorted by index, like terms merged, zeros dropped.
  AffineExpr e = AffineExpr::make({{2, 3}, {0, 1}, {2, -3}, {0, 2}}, 5);
  ASSERT_EQ(e.terms().size(), 1u);
  EXPECT_EQ(e.terms()[0], (AffineTerm{0, 3}));
  EXPECT_EQ(e.constant_term(), 5);
  EXPECT_EQ(e, AffineExpr::make({{0, 3}}, 5));
  EXPECT_TRUE(AffineExpr::make({{1, 2}, {1, -2}}, 0).is_constant());
  EXPECT_EQ(AffineExpr::make({{1, 2}, {1, -2}}, 0), AffineExpr());
}

TEST(AffineExpr, PlainIndex) {
  EXPECT_EQ(AffineExpr::index(3).as_plain_index(), 3);
  EXPECT_EQ(AffineExpr::make({{3, 1}}, 1).as_plain_index(), std::nullopt);  // offset
  EXPECT_EQ(AffineExpr::make({{3, 2}}, 0).as_plain_index(), std::nullopt);  // stride
  EXPECT_EQ(AffineExpr::constant(0).as_plain_index(), std::nullopt);
}

TEST(AffineExpr, MinMaxOverTheBox) {
  // Convolution input row p*2 + r - 1 with p in [0,16), r in [0,3): [-1, 2*15 + 2 - 1].
  AffineExpr e = AffineExpr::make({{0, 2}, {1, 1}}, -1);
  std::vector<std::int64_t> ext = {16, 3};
  EXPECT_EQ(e.min_value(ext), -1);
  EXPECT_EQ(e.max_value(ext), 2 * 15 + 2 - 1);
  // Negative coefficients: q - k with q, k in [0,128): [-127, 127].
  AffineExpr d = AffineExpr::make({{0, 1}, {1, -1}}, 0);
  EXPECT_EQ(d.min_value({128, 128}), -127);
  EXPECT_EQ(d.max_value({128, 128}), 127);
}

TEST(AffineExpr, BoundsSaturateInsteadOfOverflowing) {
  AffineExpr e = AffineExpr::make({{0, INT64_MAX}}, INT64_MAX);
  EXPECT_EQ(e.max_value({INT64_MAX}), INT64_MAX);
  EXPECT_EQ(AffineExpr::make({{0, INT64_MIN}}, -1).min_value({3}), INT64_MIN);
}

TEST(AffineExpr, Evaluate) {
  AffineExpr e = AffineExpr::make({{0, 2}, {1, 1}}, -1);
  std::int64_t at[] = {5, 2};
  EXPECT_EQ(e.evaluate(at), 5 * 2 + 2 - 1);
}

TEST(AffineExpr, MergeOverflowIsABug) {
  EXPECT_THROW(AffineExpr::make({{0, INT64_MAX}, {0, 1}}, 0), InternalError);
}

}  // namespace
}  // namespace solar::ir
