#include "solar/ir/view_map.h"

#include <gtest/gtest.h>

#include "solar/ir/text.h"
#include "testing/graph_lookup.h"

namespace solar::ir {
namespace {

TEST(ViewMap, AReshapeKeepsTheDimensionsOfEqualExtentAndStride) {
  // [2,3,8,8] -> [6,8,8]: the last two dimensions walk the same elements; 2 and 3 merge.
  const DimMap m = view_map({2, 3, 8, 8}, {6, 8, 8});
  EXPECT_EQ(m.out_of_in, (std::vector<int>{-1, -1, 1, 2}));
  EXPECT_EQ(m.in_of_out, (std::vector<int>{-1, 2, 3}));
}

TEST(ViewMap, ABroadcastAlignsRight) {
  const DimMap m = view_map({8, 1}, {4, 8, 8});
  EXPECT_EQ(m.out_of_in, (std::vector<int>{1, -1}));
  EXPECT_EQ(m.in_of_out, (std::vector<int>{-1, 0, -1}));
}

TEST(MovePaths, PermuteSliceAndWhatMixesElements) {
  const Graph g = parse_graph(R"(
    x = f32[4,8] input
    p = f32[8,4] move permute {perm=[1,0]} (x)
    s = f32[2,4] move slice {starts=[1,2], ends=[3,6], steps=[1,1]} (x)
    t = f32[2,4] move slice {starts=[0,0], ends=[4,8], steps=[2,2]} (x)
    c = f32[8,8] move concat {axis=0} (x, x)
    y = f32[4,8]{output} einsum [i=4,j=8] none $0 (x[i,j]) -> [i,j])");
  auto op = [&](const char* name) -> const Op& { return testing::op_of(g, name); };
  const AffineExpr d0 = AffineExpr::index(0), d1 = AffineExpr::index(1);
  const std::optional<MovePaths> p = move_paths(g, op("p"));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->forward, (Substitution{d1, d0}));  // input dim 0 is output dim 1
  EXPECT_EQ(p->backward, (Substitution{d1, d0}));
  // out[o] = in[start + step * o]: forward maps input positions to output ones' formulas.
  const std::optional<MovePaths> s = move_paths(g, op("s"));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->forward, (Substitution{d0 + 1, d1 + 2}));
  EXPECT_EQ(s->backward, (Substitution{d0 - 1, d1 - 2}));
  const std::optional<MovePaths> t = move_paths(g, op("t"));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->backward, (Substitution{std::nullopt, std::nullopt}));  // steps of 2: no inverse
  EXPECT_EQ(move_paths(g, op("c")), std::nullopt);
  EXPECT_EQ(move_paths(g, op("y")), std::nullopt);  // not a move
}

}  // namespace
}  // namespace solar::ir
