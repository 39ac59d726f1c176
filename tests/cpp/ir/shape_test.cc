#include "solar/ir/shape.h"

#include <gtest/gtest.h>

namespace solar::ir {
namespace {

TEST(Shape, NumelIsTheProductOfExtents) {
  EXPECT_EQ(numel({}), 1);  // a scalar
  EXPECT_EQ(numel({2, 3, 4}), 2 * 3 * 4);
  EXPECT_EQ(numel({5, 0}), 0);
}

TEST(Shape, RowMajorStrides) {
  EXPECT_EQ(row_major_strides({2, 3, 4}), (Shape{3 * 4, 4, 1}));
  EXPECT_EQ(row_major_strides({}), Shape{});
}

TEST(Shape, BroadcastAndTiling) {
  EXPECT_TRUE(broadcasts_to({3, 1}, {2, 3, 5}));
  EXPECT_FALSE(broadcasts_to({2}, {4}));
  EXPECT_TRUE(tiles({2}, {4}));     // a repeat
  EXPECT_TRUE(tiles({1, 3}, {5, 3}));  // a broadcast is a tiling
  EXPECT_FALSE(tiles({3}, {4}));
  EXPECT_TRUE(tiles({0}, {0}));
  EXPECT_FALSE(tiles({2, 2}, {4}));  // more input dimensions than output ones
}

TEST(Shape, MessagesWriteShapesAndPositions) {
  EXPECT_EQ(shape_str({2, 3}), "[2,3]");
  EXPECT_EQ(shape_str({}), "[]");
  EXPECT_EQ(type_str(DType::F32, {2, 3}), "f32[2,3]");
  EXPECT_EQ(position_str(5, {2, 3}), "[1,2]");  // 5 = 1*3 + 2
  EXPECT_EQ(position_str(0, {}), "[]");
}

}  // namespace
}  // namespace solar::ir
