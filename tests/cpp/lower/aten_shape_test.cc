// Tests of the aten table's data movement (src/lower/aten_shape.cc): the slice gradient, lowered from hand-written traces; work is checked
// by formula.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lower/lowering_checks.h"

namespace solar::lower {
namespace {

using namespace testing;  // lowering_checks.h
using Trace = TraceBuilder;

TEST(AtenShape, StridedSliceBackwardIsAMaskedPlacement) {
  Trace t;
  int g = t.tensor({3, 4}, "input"), o = t.tensor({3, 9}, "output");
  t.op("aten::slice_backward.default",
       {{"grad_output", T(g)},
        {"input_sizes", {3, 9}},
        {"dim", 1},
        {"start", 1},
        {"end", 9},
        {"step", 2}},
       {o});
  LowerResult r = lower_ok(t);
  ASSERT_EQ(r.graph.ops().size(), 1u);
  EXPECT_EQ(live_points(r.graph.ops()[0].einsum()), 3 * 4);  // each grad element placed once
}

}  // namespace
}  // namespace solar::lower
