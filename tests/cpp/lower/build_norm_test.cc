// The normalization builders (src/lower/build_norm.cc): softmax as max, exp, sum and divide;
// log-softmax and the safe softmax differ only in the last step.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lower/lowering_checks.h"

namespace solar::lower {
namespace {

using namespace testing;  // lowering_checks.h

std::vector<ir::Op> softmax_ops(const char* op) {
  TraceBuilder t;
  int x = t.tensor({4, 7}, "input"), y = t.tensor({4, 7}, "output");
  t.op(op, {{"self", T(x)}, {"dim", 1}}, {y});
  return lower_ok(t).graph.ops();
}

TEST(BuildNorm, SoftmaxIsMaxExpSumDivide) {
  std::vector<ir::Op> ops = softmax_ops("aten::_softmax.default");
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[0].einsum().reduce, ir::Reduce::Max);
  EXPECT_EQ(ops[1].einsum().combine.op(), ir::ExprOp::Exp);
  EXPECT_EQ(ops[2].einsum().reduce, ir::Reduce::Sum);
  EXPECT_EQ(ops[3].einsum().combine.op(), ir::ExprOp::Div);
}

TEST(BuildNorm, LogAndSafeSoftmaxChangeOnlyTheLastStep) {
  std::vector<ir::Op> plain = softmax_ops("aten::_softmax.default");
  for (const char* op : {"aten::_log_softmax.default", "aten::_safe_softmax.default"}) {
    std::vector<ir::Op> other = softmax_ops(op);
    ASSERT_EQ(other.size(), 4u) << op;
    for (std::size_t k = 0; k < 3; ++k) EXPECT_EQ(other[k].einsum(), plain[k].einsum()) << op;
  }
  // log: x - max - log(sum); safe: a row whose max is -inf gives 0
  EXPECT_EQ(softmax_ops("aten::_log_softmax.default")[3].einsum().combine.op(), ir::ExprOp::Sub);
  EXPECT_EQ(softmax_ops("aten::_safe_softmax.default")[3].einsum().combine.op(),
            ir::ExprOp::Select);
}

}  // namespace
}  // namespace solar::lower
