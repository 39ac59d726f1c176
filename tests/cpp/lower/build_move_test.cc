// The data-movement builders (src/lower/build_move.cc): aten's flip and jax's rev are one
// einsum, a copy reading n-1-i along the flipped dimensions.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lower/lowering_checks.h"
#include "solar/lower/jax.h"

namespace solar::lower {
namespace {

using namespace testing;  // lowering_checks.h

TEST(BuildMove, AtenFlipAndJaxRevAreOneEinsum) {
  TraceBuilder a;
  int x = a.tensor({3, 4, 5}, "input"), y = a.tensor({3, 4, 5}, "output");
  TraceBuilder j = a;
  j.frontend = "jax";
  a.op("aten::flip.default", {{"self", T(x)}, {"dims", {0, -1}}}, {y});
  j.op("jax::rev", {{"operands", {T(x)}}, {"dimensions", {0, 2}}}, {y});
  LowerResult ra = lower_ok(a), rj = lower_jax(j.build());
  ASSERT_TRUE(rj.warnings.empty()) << rj.warnings[0];
  const ir::EinsumOp& e = ra.graph.ops().back().einsum();
  EXPECT_EQ(e, rj.graph.ops().back().einsum());
  EXPECT_EQ(e.operands[0].subscript[0], ir::AffineExpr::make({{0, -1}}, 2));  // 2 - i0
  EXPECT_EQ(e.operands[0].subscript[1], ir::AffineExpr::index(1));            // kept
}

}  // namespace
}  // namespace solar::lower
