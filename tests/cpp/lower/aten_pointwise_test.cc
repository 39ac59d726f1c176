// Tests of the aten table's elementwise ops and activations (src/lower/aten_pointwise.cc): activation gradients, lowered from hand-written traces; work is checked
// by formula.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lower/lowering_checks.h"

namespace solar::lower {
namespace {

using namespace testing;  // lowering_checks.h
using Trace = TraceBuilder;

TEST(AtenPointwise, ThresholdBackwardIsOneSelect) {
  Trace t;
  int g = t.tensor({4, 8}), x = t.tensor({4, 8}, "input"), o = t.tensor({4, 8}, "output");
  t.op("aten::threshold_backward.default",
       {{"grad_output", T(g)}, {"self", T(x)}, {"threshold", 0}}, {o});
  t.tensors[g]["role"] = "input";
  LowerResult r = lower_ok(t);
  ASSERT_EQ(r.graph.ops().size(), 1u);
  EXPECT_EQ(r.graph.ops()[0].einsum().combine.op(), ir::ExprOp::Select);
}

TEST(AtenPointwise, GeluTanhBackwardComputesTanhOnce) {
  Trace t;
  int g = t.tensor({4, 8}, "input"), x = t.tensor({4, 8}, "input"), o = t.tensor({4, 8}, "output");
  t.op("aten::gelu_backward.default",
       {{"grad_output", T(g)}, {"self", T(x)}, {"approximate", "tanh"}}, {o});
  LowerResult r = lower_ok(t);
  ASSERT_EQ(r.graph.ops().size(), 2u);  // tanh(inner) once, then the gradient formula
  EXPECT_EQ(r.graph.ops()[0].einsum().combine.op(), ir::ExprOp::Tanh);
}

TEST(AtenPointwise, GluBackwardConcatenatesTheHalvesGradients) {
  Trace t;
  int g = t.tensor({4, 3}, "input"), x = t.tensor({4, 6}, "input"), o = t.tensor({4, 6}, "output");
  t.op("aten::glu_backward.default", {{"grad_output", T(g)}, {"self", T(x)}, {"dim", -1}}, {o});
  LowerResult r = lower_ok(t);
  const ir::Op& cat = producer(r.graph, o, r);
  ASSERT_EQ(cat.kind(), ir::OpKind::Move);
  EXPECT_EQ(cat.move().kind, ir::MoveKind::Concat);
  EXPECT_EQ(std::get<std::int64_t>(cat.move().attrs.at("axis")), 1);
}

}  // namespace
}  // namespace solar::lower
