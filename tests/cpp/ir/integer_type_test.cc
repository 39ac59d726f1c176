#include "solar/ir/integer_type.h"

#include <gtest/gtest.h>

namespace solar::ir {
namespace {

TEST(IntegerType, TheWidestIntegerAmongOperandsAndOutput) {
  const IntegerType t = integer_type({DType::I8, DType::I32}, DType::I16);
  EXPECT_EQ(t.bits, 32);
  EXPECT_FALSE(t.is_unsigned);
  EXPECT_FALSE(t.is_bool);
  // At equal width a signed type wins; floats do not count.
  EXPECT_FALSE(integer_type({DType::U8, DType::F32}, DType::I8).is_unsigned);
  EXPECT_TRUE(integer_type({DType::U8, DType::F32}, DType::F32).is_unsigned);
  // All bool: bool (logical not); no integer at all: i64.
  EXPECT_TRUE(integer_type({DType::Bool}, DType::Bool).is_bool);
  EXPECT_TRUE(integer_type({DType::Bool, DType::F32}, DType::F32).is_bool);
  EXPECT_EQ(integer_type({DType::F32}, DType::F32).bits, 64);
  EXPECT_FALSE(integer_type({DType::F32}, DType::F32).is_bool);
}

TEST(IntegerType, ValuesWrapToTheType) {
  EXPECT_EQ(integer_value({8, false, false}, 0xFF), -1);
  EXPECT_EQ(integer_value({8, true, false}, 0xFFFF), 255);
  EXPECT_EQ(integer_value({32, false, false}, 0x80000000u), -2147483648LL);
  EXPECT_EQ(integer_value({64, false, false}, ~std::uint64_t{0}), -1);
}

}  // namespace
}  // namespace solar::ir
