#include "solar/ir/dtype.h"

#include <gtest/gtest.h>

namespace solar::ir {
namespace {

TEST(DType, Bits) {
  EXPECT_EQ(dtype_bits(DType::F64), 64);
  EXPECT_EQ(dtype_bits(DType::TF32), 32);  // stored in 32 bits
  EXPECT_EQ(dtype_bits(DType::BF16), 16);
  EXPECT_EQ(dtype_bits(DType::F8E4M3), 8);
  EXPECT_EQ(dtype_bits(DType::F6), 6);
  EXPECT_EQ(dtype_bits(DType::F4), 4);
  EXPECT_EQ(dtype_bits(DType::I4), 4);
  EXPECT_EQ(dtype_bits(DType::Bool), 8);  // one byte per element, as frameworks store it
}

TEST(DType, NamesRoundTrip) {
  for (DType d : kAllDTypes) EXPECT_EQ(parse_dtype(dtype_name(d)), d) << dtype_name(d);
  EXPECT_EQ(dtype_name(DType::F8E5M2), "f8e5m2");
  EXPECT_EQ(parse_dtype("f33"), std::nullopt);
  EXPECT_EQ(parse_dtype(""), std::nullopt);
}

TEST(DType, Aliases) {
  EXPECT_EQ(parse_dtype("float32"), DType::F32);
  EXPECT_EQ(parse_dtype("half"), DType::F16);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::BF16);
  EXPECT_EQ(parse_dtype("float8_e4m3fn"), DType::F8E4M3);
  EXPECT_EQ(parse_dtype("int8"), DType::I8);
  EXPECT_EQ(parse_dtype("uint8"), DType::U8);
  EXPECT_EQ(parse_dtype("long"), DType::I64);
}

TEST(DType, Classes) {
  EXPECT_TRUE(is_float(DType::TF32));
  EXPECT_TRUE(is_float(DType::F4));
  EXPECT_FALSE(is_float(DType::I8));
  EXPECT_TRUE(is_integer(DType::U8));
  EXPECT_TRUE(is_integer(DType::I4));
  EXPECT_FALSE(is_integer(DType::Bool));
  EXPECT_FALSE(is_float(DType::Bool));
}

}  // namespace
}  // namespace solar::ir
