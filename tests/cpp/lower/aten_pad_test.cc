// Tests of the aten table's padding (src/lower/aten_pad.cc): the replication padding gradient, lowered from hand-written traces; work is checked
// by formula.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lower/lowering_checks.h"

namespace solar::lower {
namespace {

using namespace testing;  // lowering_checks.h
using Trace = TraceBuilder;

// Replication padding's gradient adds each edge region into the edge position: per dim, the
// centre, plus one masked reduction per padded side.
TEST(AtenPad, ReplicationPadBackwardSumsTheEdges) {
  const std::int64_t N = 2, C = 3, L = 4, I = 5, R = 2;
  Trace t;
  int g = t.tensor({N, C, L + I + R}, "input"), x = t.tensor({N, C, I}, "input"),
      o = t.tensor({N, C, I}, "output");
  t.op("aten::replication_pad1d_backward.default",
       {{"grad_output", T(g)}, {"self", T(x)}, {"padding", {L, R}}}, {o});
  LowerResult r = lower_ok(t);
  std::vector<std::int64_t> sums;
  for (const ir::Op& op : r.graph.ops())
    if (op.kind() == ir::OpKind::Einsum && op.einsum().reduce == ir::Reduce::Sum)
      sums.push_back(live_points(op.einsum()));
  EXPECT_EQ(sums, (std::vector<std::int64_t>{N * C * L, N * C * R}));  // every edge element once
}

}  // namespace
}  // namespace solar::lower
