// Tests of the aten table's indexing ops (src/lower/aten_index.cc): the embedding gradient, lowered from hand-written traces; work is checked
// by formula.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lower/lowering_checks.h"

namespace solar::lower {
namespace {

using namespace testing;  // lowering_checks.h
using Trace = TraceBuilder;

TEST(AtenIndex, EmbeddingBackwardIsATakeScatterAdd) {
  Trace t;
  int g = t.tensor({2, 5, 16}, "input"), idx = t.tensor({2, 5}, "input", "int64"),
      o = t.tensor({50, 16}, "output");
  t.op("aten::embedding_dense_backward.default",
       {{"grad_output", T(g)},
        {"indices", T(idx)},
        {"num_weights", 50},
        {"padding_idx", 3},
        {"scale_grad_by_freq", false}},
       {o});
  LowerResult r = lower_ok(t);
  const ir::Op& s = producer(r.graph, o, r);
  ASSERT_EQ(s.kind(), ir::OpKind::Move);
  EXPECT_EQ(s.move().kind, ir::MoveKind::Scatter);
  EXPECT_EQ(std::get<std::string>(s.move().attrs.at("mode")), "take");
}

}  // namespace
}  // namespace solar::lower
