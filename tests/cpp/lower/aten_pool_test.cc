// Tests of the aten table's pooling and nearest upsampling (src/lower/aten_pool.cc): their gradients, lowered from hand-written traces; work is checked
// by formula.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lower/lowering_checks.h"
#include "solar/util/errors.h"

namespace solar::lower {
namespace {

using namespace testing;  // lowering_checks.h
using Shape = std::vector<std::int64_t>;
using Trace = TraceBuilder;

TEST(AtenPool, MaxPoolBackwardScattersIntoThePlane) {
  Trace t;
  int g = t.tensor({2, 3, 4, 4}, "input"), x = t.tensor({2, 3, 8, 8}, "input"),
      idx = t.tensor({2, 3, 4, 4}, "input", "int64"), o = t.tensor({2, 3, 8, 8}, "output");
  t.op("aten::max_pool2d_with_indices_backward.default",
       {{"grad_output", T(g)},
        {"self", T(x)},
        {"kernel_size", {2, 2}},
        {"stride", {2, 2}},
        {"padding", {0, 0}},
        {"dilation", {1, 1}},
        {"ceil_mode", false},
        {"indices", T(idx)}},
       {o});
  LowerResult r = lower_ok(t);
  int scatters = 0;
  for (const ir::Op& op : r.graph.ops())
    if (op.kind() == ir::OpKind::Move && op.move().kind == ir::MoveKind::Scatter) {
      ++scatters;
      EXPECT_EQ(std::get<std::string>(op.move().attrs.at("reduce")), "sum");
      EXPECT_EQ(std::get<std::int64_t>(op.move().attrs.at("axis")), 2);
      EXPECT_EQ(r.graph.tensor(op.outputs[0]).shape, (Shape{2, 3, 64}));
    }
  EXPECT_EQ(scatters, 1);
}

// Each output window spreads to its kernel taps: live (i, p) pairs = outputs x taps when
// no window reaches padding.
TEST(AtenPool, AvgPoolBackwardSpreadsEachWindow) {
  const std::int64_t N = 2, C = 3, H = 9, W = 8, k = 3, s = 2;
  const std::int64_t Ho = (H - k) / s + 1, Wo = (W - k) / s + 1;
  Trace t;
  int g = t.tensor({N, C, Ho, Wo}, "input"), x = t.tensor({N, C, H, W}, "input"),
      o = t.tensor({N, C, H, W}, "output");
  t.op("aten::avg_pool2d_backward.default",
       {{"grad_output", T(g)},
        {"self", T(x)},
        {"kernel_size", {k, k}},
        {"stride", {s, s}},
        {"padding", {0, 0}},
        {"ceil_mode", false},
        {"count_include_pad", true},
        {"divisor_override", nullptr}},
       {o});
  LowerResult r = lower_ok(t);
  ASSERT_EQ(r.graph.ops().size(), 1u);
  EXPECT_EQ(live_points(r.graph.ops()[0].einsum()), N * C * Ho * Wo * k * k);
}

TEST(AtenPool, AvgPoolBackwardExcludingPaddingIsUnanalyzed) {
  Trace t;
  int g = t.tensor({1, 1, 4, 4}, "input"), x = t.tensor({1, 1, 8, 8}, "input"),
      o = t.tensor({1, 1, 8, 8}, "output");
  t.op("aten::avg_pool2d_backward.default",
       {{"grad_output", T(g)},
        {"self", T(x)},
        {"kernel_size", {3, 3}},
        {"stride", {2, 2}},
        {"padding", {1, 1}},
        {"ceil_mode", false},
        {"count_include_pad", false},
        {"divisor_override", nullptr}},
       {o});
  LowerResult r = lower_aten(t.build());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("excludes padding"), std::string::npos);
  EXPECT_EQ(count_kind(r.graph, ir::OpKind::Unanalyzed), 1);
  try {
    lower_aten(t.build(), {.strict = true});
    FAIL() << "strict lowering accepted an unmodeled divisor";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("excludes padding"), std::string::npos);
  }
}

TEST(AtenPool, AdaptiveAvgPoolBackwardIsABroadcast) {
  Trace t;
  int g = t.tensor({2, 3, 2, 3}, "input"), x = t.tensor({2, 3, 8, 9}, "input"),
      o = t.tensor({2, 3, 8, 9}, "output");
  t.op("aten::_adaptive_avg_pool2d_backward.default", {{"grad_output", T(g)}, {"self", T(x)}}, {o});
  LowerResult r = lower_ok(t);
  EXPECT_EQ(macs(r.graph), 0);
  const ir::EinsumOp* spread = nullptr;
  for (const ir::Op& op : r.graph.ops())
    if (op.kind() == ir::OpKind::Einsum) spread = &op.einsum();
  ASSERT_NE(spread, nullptr);
  EXPECT_EQ(live_points(*spread), 2 * 3 * 8 * 9);  // one multiply per input element
}

// Nearest upsampling by 2: the gradient sums each 2x2 block of grad_output, one reduction
// over [N, C, H, 2, W, 2].
TEST(AtenPool, NearestUpsampleBackwardSumsBlocks) {
  Trace t;
  int g = t.tensor({2, 3, 8, 6}, "input"), o = t.tensor({2, 3, 4, 3}, "output");
  t.op("aten::upsample_nearest2d_backward.default",
       {{"grad_output", T(g)},
        {"output_size", {8, 6}},
        {"input_size", {2, 3, 4, 3}},
        {"scales_h", 2.0},
        {"scales_w", 2.0}},
       {o});
  LowerResult r = lower_ok(t);
  const ir::EinsumOp& e = producer(r.graph, o, r).einsum();
  EXPECT_EQ(e.reduce, ir::Reduce::Sum);
  EXPECT_EQ(e.reduced_indices().size(), 2u);
  EXPECT_EQ(live_points(e), 2 * 3 * 8 * 6);  // every grad element read once
}

TEST(AtenPool, NearestUpsampleByThreeIsUnanalyzed) {
  Trace t;
  int g = t.tensor({1, 1, 9}, "input"), o = t.tensor({1, 1, 3}, "output");
  t.op(
      "aten::upsample_nearest1d_backward.default",
      {{"grad_output", T(g)}, {"output_size", {9}}, {"input_size", {1, 1, 3}}, {"scales", nullptr}},
      {o});
  LowerResult r = lower_aten(t.build());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("not a power-of-two factor"), std::string::npos);
}

}  // namespace
}  // namespace solar::lower
