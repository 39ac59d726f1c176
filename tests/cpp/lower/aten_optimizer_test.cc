// Tests of the aten table's optimizer updates (src/lower/aten_optimizer.cc), lowered from hand-written traces; work is checked
// by formula.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lower/lowering_checks.h"

namespace solar::lower {
namespace {

using namespace testing;  // lowering_checks.h
using Trace = TraceBuilder;

TEST(AtenOptimizer, AdamUpdateOpsLower) {
  Trace t;
  int p = t.tensor({10}, "parameter"), m = t.tensor({10}, "input"), v = t.tensor({10}, "input"),
      g = t.tensor({10}, "input"), d = t.tensor({10}, "input");
  int m2 = t.tensor({10}), v2 = t.tensor({10}), p2 = t.tensor({10}, "output");
  t.op("aten::lerp_.Scalar", {{"self", T(m)}, {"end", T(g)}, {"weight", 0.1}}, {m2});
  t.op("aten::addcmul_.default",
       {{"self", T(v)}, {"tensor1", T(g)}, {"tensor2", T(g)}, {"value", 0.001}}, {v2});
  t.op("aten::addcdiv_.default",
       {{"self", T(p)}, {"tensor1", T(m2)}, {"tensor2", T(d)}, {"value", -0.001}}, {p2});
  LowerResult r = lower_ok(t);
  EXPECT_EQ(count_kind(r.graph, ir::OpKind::Einsum), 3);
  EXPECT_TRUE(r.warnings.empty());
}

}  // namespace
}  // namespace solar::lower
