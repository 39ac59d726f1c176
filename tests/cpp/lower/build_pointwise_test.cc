// The elementwise builders (src/lower/build_pointwise.cc): aten's and jax's unary ops are one
// einsum, each dialect reading its operands its own way; a combine of the wrong arity is a
// bug of the code that built it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "context.h"
#include "lower/lowering_checks.h"
#include "solar/lower/jax.h"
#include "solar/util/errors.h"

namespace solar::lower {
namespace {

using nlohmann::json;
using namespace testing;  // lowering_checks.h

TEST(BuildPointwise, AtenAndJaxExpAreOneEinsum) {
  TraceBuilder a;
  int x = a.tensor({3, 5}, "input"), y = a.tensor({3, 5}, "output");
  TraceBuilder j = a;
  j.frontend = "jax";
  a.op("aten::exp.default", {{"self", T(x)}}, {y});
  j.op("jax::exp", {{"operands", {T(x)}}}, {y});
  LowerResult ra = lower_ok(a), rj = lower_jax(j.build());
  ASSERT_TRUE(rj.warnings.empty()) << rj.warnings[0];
  EXPECT_EQ(ra.graph.ops().back().einsum(), rj.graph.ops().back().einsum());
}

TEST(BuildPointwise, EachDialectChecksItsOwnOperands) {
  TraceBuilder j;
  j.frontend = "jax";
  int x = j.tensor({3}, "input"), y = j.tensor({3}, "output");
  j.op("jax::exp", {{"operands", {T(x), T(x)}}}, {y});
  LowerResult r = lower_jax(j.build());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("expects 1 operands"), std::string::npos);
  TraceBuilder a;  // aten: `self` must be a tensor
  y = a.tensor({3}, "output");
  a.op("aten::exp.default", {{"self", 2.0}}, {y});
  r = lower_aten(a.build());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("no tensor operand"), std::string::npos);
}

TEST(BuildPointwise, ACombineOfTheWrongArityIsAnInternalError) {
  try {
    detail::fn(ir::ExprOp::Add, {detail::arg(0)});
    FAIL() << "add of one operand";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("add takes 2 arguments, got 1"), std::string::npos);
  }
}

}  // namespace
}  // namespace solar::lower
