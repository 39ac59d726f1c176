#include "solar/ir/affine.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

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

TEST(AffineArithmetic, OperatorsAreExactAndCanonical) {
  const AffineExpr i = AffineExpr::index(0), j = AffineExpr::index(1);
  // (2i + j + 3) - (j - 1) = 2i + 4: the j terms cancel and drop out.
  EXPECT_EQ((2 * i + j + 3) - (j - 1), AffineExpr::make({{0, 2}}, 4));
  EXPECT_EQ(-(i - j), AffineExpr::make({{0, -1}, {1, 1}}, 0));
  EXPECT_EQ((j + i) * 3, AffineExpr::make({{0, 3}, {1, 3}}, 0));
  EXPECT_EQ(0 * (i + 5), AffineExpr());
  // Intermediates wider than 64 bits are fine when the result fits: i*2^62 - i*2^62.
  const std::int64_t big = std::int64_t{1} << 62;
  EXPECT_EQ(big * i + (-big) * i, AffineExpr());
  EXPECT_EQ(AffineExpr::constant(-1) - INT64_MIN, AffineExpr::constant(INT64_MAX));
}

TEST(AffineArithmetic, OverflowIsAnAffineOverflow) {
  const AffineExpr i = AffineExpr::index(0);
  EXPECT_THROW((std::int64_t{1} << 62) * (4 * i), AffineOverflow);
  EXPECT_THROW(AffineExpr::constant(INT64_MAX) + 1, AffineOverflow);
  EXPECT_THROW(-AffineExpr::make({{0, INT64_MIN}}, 0), AffineOverflow);
  try {
    (void)(AffineExpr::constant(INT64_MIN) - 1);
    FAIL();
  } catch (const UserError& e) {  // a graph whose index arithmetic cannot be represented
    EXPECT_EQ(e.kind(), UserError::Kind::InvalidGraph);
    EXPECT_NE(e.message().find("64-bit"), std::string::npos);
  }
}

TEST(AffineArithmetic, SubstituteReplacesEveryIndex) {
  // 2*i0 - i1 + 1 with i0 -> k + 3, i1 -> 2k: 2k + 6 - 2k + 1 = 7.
  const std::vector<std::optional<AffineExpr>> repl = {AffineExpr::index(0) + 3,
                                                       2 * AffineExpr::index(0)};
  EXPECT_EQ(substitute(AffineExpr::make({{0, 2}, {1, -1}}, 1), repl), AffineExpr::constant(7));
  // An index without an image: no expression.
  EXPECT_EQ(substitute(AffineExpr::index(1), {AffineExpr(), std::nullopt}), std::nullopt);
  EXPECT_EQ(substitute(AffineExpr::index(2), repl), std::nullopt);
  EXPECT_EQ(substitute(AffineExpr::constant(5), {}), AffineExpr::constant(5));
}

}  // namespace
}  // namespace solar::ir
