// Tests of the aten table's normalization layers (src/lower/aten_norm.cc): their gradients, lowered from hand-written traces; work is checked
// by formula.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lower/lowering_checks.h"

namespace solar::lower {
namespace {

using namespace testing;  // lowering_checks.h
using Trace = TraceBuilder;

TEST(AtenNorm, TrainingBatchNormBackwardSharesItsChannelSums) {
  const std::int64_t N = 3, C = 4, H = 5;
  Trace t;
  int g = t.tensor({N, C, H}, "input"), x = t.tensor({N, C, H}, "input"),
      w = t.tensor({C}, "parameter"), m = t.tensor({C}, "input"), is = t.tensor({C}, "input");
  int gx = t.tensor({N, C, H}, "output"), gw = t.tensor({C}, "output"),
      gb = t.tensor({C}, "output");
  t.op("aten::native_batch_norm_backward.default",
       {{"grad_out", T(g)},
        {"input", T(x)},
        {"weight", T(w)},
        {"running_mean", nullptr},
        {"running_var", nullptr},
        {"save_mean", T(m)},
        {"save_invstd", T(is)},
        {"train", true},
        {"eps", 1e-5},
        {"output_mask", {true, true, true}}},
       {gx, gw, gb});
  LowerResult r = lower_ok(t);
  // x̂, sum(g), sum(g x̂), dx: the weight and bias gradients are the sums dx uses
  EXPECT_EQ(r.graph.ops().size(), 4u);
  EXPECT_EQ(live_points(producer(r.graph, gw, r).einsum()), N * C * H);
}

TEST(AtenNorm, EvalBatchNormBackwardUsesRunningVariance) {
  Trace t;
  int g = t.tensor({2, 3, 4}, "input"), x = t.tensor({2, 3, 4}, "input"),
      rm = t.tensor({3}, "buffer"), rv = t.tensor({3}, "buffer"), e = t.tensor({0}, "input");
  int gx = t.tensor({2, 3, 4}, "output");
  t.op("aten::native_batch_norm_backward.default",
       {{"grad_out", T(g)},
        {"input", T(x)},
        {"weight", nullptr},
        {"running_mean", T(rm)},
        {"running_var", T(rv)},
        {"save_mean", T(e)},
        {"save_invstd", T(e)},
        {"train", false},
        {"eps", 1e-5},
        {"output_mask", {true, false, false}}},
       {gx, nullptr, nullptr});
  LowerResult r = lower_ok(t);
  // rsqrt(var + eps) and dx = g * invstd: no x̂ when no weight gradient is asked for
  ASSERT_EQ(r.graph.ops().size(), 2u);
  EXPECT_EQ(r.graph.ops().back().einsum().combine.op(), ir::ExprOp::Mul);
}

TEST(AtenNorm, LayerNormBackwardReducesOverNormalizedAndBatchDims) {
  const std::int64_t B = 3, T_ = 5, D = 8;
  Trace t;
  int g = t.tensor({B, T_, D}, "input"), x = t.tensor({B, T_, D}, "input"),
      m = t.tensor({B, T_, 1}, "input"), rs = t.tensor({B, T_, 1}, "input"),
      w = t.tensor({D}, "parameter"), b = t.tensor({D}, "parameter");
  int gx = t.tensor({B, T_, D}, "output"), gw = t.tensor({D}, "output"),
      gb = t.tensor({D}, "output");
  t.op("aten::native_layer_norm_backward.default",
       {{"grad_out", T(g)},
        {"input", T(x)},
        {"normalized_shape", {D}},
        {"mean", T(m)},
        {"rstd", T(rs)},
        {"weight", T(w)},
        {"bias", T(b)},
        {"output_mask", {true, true, true}}},
       {gx, gw, gb});
  LowerResult r = lower_ok(t);
  const ir::EinsumOp& dw = producer(r.graph, gw, r).einsum();
  EXPECT_EQ(dw.reduced_indices().size(), 2u);  // batch and time
  EXPECT_EQ(live_points(dw), B * T_ * D);
  EXPECT_EQ(count_kind(r.graph, ir::OpKind::Einsum), 7);  // x̂, g·w, two sums, dx, dw, db
}

TEST(AtenNorm, GroupNormBackwardGivesPerChannelGradients) {
  Trace t;
  int g = t.tensor({2, 6, 4}, "input"), x = t.tensor({2, 6, 4}, "input"),
      m = t.tensor({2, 3}, "input"), rs = t.tensor({2, 3}, "input"), w = t.tensor({6}, "parameter");
  int gx = t.tensor({2, 6, 4}, "output"), gw = t.tensor({6}, "output"),
      gb = t.tensor({6}, "output");
  t.op("aten::native_group_norm_backward.default",
       {{"grad_out", T(g)},
        {"input", T(x)},
        {"mean", T(m)},
        {"rstd", T(rs)},
        {"weight", T(w)},
        {"N", 2},
        {"C", 6},
        {"HxW", 4},
        {"group", 3},
        {"output_mask", {true, true, true}}},
       {gx, gw, gb});
  LowerResult r = lower_ok(t);
  EXPECT_EQ(producer(r.graph, gw, r).kind(), ir::OpKind::Move);  // [G, Cg] viewed as [C]
}

}  // namespace
}  // namespace solar::lower
