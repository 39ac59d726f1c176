// Tests of the aten table's losses (src/lower/aten_loss.cc): the nll_loss gradient, lowered from hand-written traces; work is checked
// by formula.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lower/lowering_checks.h"

namespace solar::lower {
namespace {

using namespace testing;  // lowering_checks.h
using Trace = TraceBuilder;

TEST(AtenLoss, NllLossBackwardScattersMinusGradAtTheTarget) {
  Trace t;
  int g = t.tensor({}, "input"), x = t.tensor({8, 10}, "input"),
      tg = t.tensor({8}, "input", "int64"), tw = t.tensor({}, "input"),
      o = t.tensor({8, 10}, "output");
  t.op("aten::nll_loss_backward.default",
       {{"grad_output", T(g)},
        {"self", T(x)},
        {"target", T(tg)},
        {"weight", nullptr},
        {"reduction", 1},
        {"ignore_index", -100},
        {"total_weight", T(tw)}},
       {o});
  LowerResult r = lower_ok(t);
  EXPECT_EQ(macs(r.graph), 0);
  int scatters = 0;
  for (const ir::Op& op : r.graph.ops())
    scatters += op.kind() == ir::OpKind::Move && op.move().kind == ir::MoveKind::Scatter;
  EXPECT_EQ(scatters, 1);
}

// The forward's lowering may leave total_weight (nll_loss_forward's output 1) unproduced:
// the mean's divisor is then the count of rows whose target is not ignored, recomputed.
TEST(AtenLoss, NllLossBackwardRecomputesAnUnproducedTotalWeight) {
  Trace t;
  int g = t.tensor({}, "input"), x = t.tensor({8, 10}, "input"),
      tg = t.tensor({8}, "input", "int64"), tw = t.tensor({}), o = t.tensor({8, 10}, "output");
  t.op("aten::nll_loss_backward.default",
       {{"grad_output", T(g)},
        {"self", T(x)},
        {"target", T(tg)},
        {"weight", nullptr},
        {"reduction", 1},
        {"ignore_index", -100},
        {"total_weight", T(tw)}},
       {o});
  LowerResult r = lower_ok(t);
  int full_sums = 0;
  for (const ir::Op& op : r.graph.ops())
    if (op.kind() == ir::OpKind::Einsum && op.einsum().reduce == ir::Reduce::Sum &&
        r.graph.tensor(op.outputs[0]).shape.empty()) {
      ++full_sums;
      EXPECT_EQ(live_points(op.einsum()), 8);  // one term per row
    }
  EXPECT_EQ(full_sums, 1);
}

}  // namespace
}  // namespace solar::lower
