#include "solar/ir/attrs.h"

#include <gtest/gtest.h>

#include <string>

#include "solar/ir/text.h"
#include "testing/graph_lookup.h"

namespace solar::ir {
namespace {

const Attrs kAttrs = {{"axis", std::int64_t{2}},
                      {"value", 0.5},
                      {"mode", std::string("take")},
                      {"perm", std::vector<std::int64_t>{1, 0}}};

TEST(Attrs, FindReadsOnlyItsOwnType) {
  EXPECT_EQ(find_int(kAttrs, "axis"), 2);
  EXPECT_EQ(find_int(kAttrs, "value"), std::nullopt);  // a float is not an integer
  EXPECT_EQ(find_number(kAttrs, "value"), 0.5);
  EXPECT_EQ(find_number(kAttrs, "axis"), 2.0);  // an integer is a number
  EXPECT_EQ(find_number(kAttrs, "mode"), std::nullopt);
  ASSERT_NE(find_string(kAttrs, "mode"), nullptr);
  EXPECT_EQ(*find_string(kAttrs, "mode"), "take");
  EXPECT_EQ(find_string(kAttrs, "axis"), nullptr);
  ASSERT_NE(find_int_list(kAttrs, "perm"), nullptr);
  EXPECT_EQ(*find_int_list(kAttrs, "perm"), (std::vector<std::int64_t>{1, 0}));
  EXPECT_EQ(find_int_list(kAttrs, "axis"), nullptr);
  EXPECT_EQ(find_attr(kAttrs, "missing"), nullptr);
}

TEST(Attrs, ReadsWithAFallbackRefuseAnotherType) {
  EXPECT_EQ(int_attr(kAttrs, "axis", -1), 2);
  EXPECT_EQ(int_attr(kAttrs, "missing", -1), -1);
  EXPECT_EQ(number_attr(kAttrs, "missing", 7.5), 7.5);
  EXPECT_EQ(string_attr(kAttrs, "missing", "none"), "none");
  EXPECT_EQ(int_list_attr(kAttrs, "axis"), (std::vector<std::int64_t>{2}));  // one integer
  EXPECT_TRUE(int_list_attr(kAttrs, "missing").empty());
  try {
    int_attr(kAttrs, "mode", 0, "opaque \"sort\": ");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::InvalidGraph);
    EXPECT_EQ(e.message(), "opaque \"sort\": attribute 'mode' must be an integer");
  }
  EXPECT_THROW(string_attr(kAttrs, "axis", ""), UserError);
  EXPECT_THROW(number_attr(kAttrs, "perm", 0), UserError);
  EXPECT_THROW(int_list_attr(kAttrs, "mode"), UserError);
}

TEST(FreeView, ViewsAndSlicesThatDoNotCopy) {
  const Graph g = parse_graph(R"(
    x = f32[4,8] input
    v = f32[32] move view (x)
    s = f32[2,8] move slice {starts=[0,0], ends=[2,8], steps=[1,1]} (x)
    c = f32[2,8] move slice {starts=[0,0], ends=[2,8], steps=[1,1], copy=1} (x)
    z = f32[2,8] move slice {starts=[0,0], ends=[2,8], steps=[1,1], copy=0.0} (x)
    p = f32[8,4] move permute {perm=[1,0]} (x)
    y = f32[4,8]{output} einsum [i=4,j=8] none $0 (x[i,j]) -> [i,j])");
  auto op = [&](const char* name) -> const Op& { return testing::op_of(g, name); };
  EXPECT_TRUE(is_free_view(op("v")));
  EXPECT_TRUE(is_free_view(op("s")));
  EXPECT_FALSE(is_free_view(op("c")));
  EXPECT_TRUE(slice_copies(op("c")));
  EXPECT_TRUE(is_free_view(op("z")));
  EXPECT_FALSE(is_free_view(op("p")));
  EXPECT_FALSE(is_free_view(op("y")));
}

TEST(FreeView, ACopyFlagThatIsNotANumberNamesTheOp) {
  const Graph g = parse_graph(R"(
    x = f32[4,8] input
    s = f32[2,8]{output} move slice {starts=[0,0], ends=[2,8], steps=[1,1], copy="yes"} (x))");
  try {
    is_free_view(g.ops()[0]);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.message(), "slice attribute 'copy' must be 0 or 1");
    EXPECT_EQ(e.origin().op, "s");
  }
}

}  // namespace
}  // namespace solar::ir
