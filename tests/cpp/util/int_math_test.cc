#include "solar/util/int_math.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace solar {
namespace {

TEST(IntMath, FloorAndCeilForEverySign) {
  EXPECT_EQ(floor_div(7, 2), 3);
  EXPECT_EQ(floor_div(-7, 2), -4);
  EXPECT_EQ(floor_div(7, -2), -4);
  EXPECT_EQ(floor_div(-7, -2), 3);
  EXPECT_EQ(floor_div(-8, 2), -4);
  EXPECT_EQ(ceil_div(7, 2), 4);
  EXPECT_EQ(ceil_div(-7, 2), -3);
  EXPECT_EQ(ceil_div(7, -2), -3);
  EXPECT_EQ(ceil_div(-7, -2), 4);
  EXPECT_EQ(ceil_div(0, 5), 0);
  EXPECT_EQ(ceil_div(-1, 5), 0);
  EXPECT_EQ(ceil_div(-6, 5), -1);  // (a + b - 1) / b gives 0: right only for a >= 0
}

TEST(IntMath, WideAndUnsignedTypes) {
  using I128 = __int128;
  const I128 big = I128{1} << 100;
  EXPECT_TRUE(floor_div(-big - 1, I128{2}) == -(big / 2) - 1);
  EXPECT_TRUE(ceil_div(big + 1, I128{2}) == big / 2 + 1);
  using U128 = unsigned __int128;
  EXPECT_TRUE(ceil_div(U128{9}, U128{8}) == 2);
  EXPECT_TRUE(floor_div(U128{9}, U128{8}) == 1);
  EXPECT_EQ(ceil_div(std::uint64_t{UINT64_MAX}, std::uint64_t{2}), std::uint64_t{1} << 63);
  // No intermediate a + b - 1: the largest value divides without overflowing.
  EXPECT_EQ(ceil_div(INT64_MAX, std::int64_t{2}), (std::int64_t{1} << 62));
}

}  // namespace
}  // namespace solar
