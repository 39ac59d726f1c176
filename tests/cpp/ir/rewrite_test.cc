#include "solar/ir/rewrite.h"

#include <gtest/gtest.h>

#include "solar/ir/text.h"
#include "solar/ir/verify.h"
#include "testing/graph_lookup.h"

namespace solar::ir {
namespace {

Graph described() {
  Graph g = parse_graph(R"(
    x = f32[4,8] input
    w = f32[8,2] weight
    t = f32[4,8] einsum [i=4,j=8] none exp($0) (x[i,j]) -> [i,j]
    y = f32[4,2]{output} einsum "mk,kn->mn" (t, w))");
  g.name = "model";
  g.frontend = "torch";
  g.source = "model.py";
  g.module_types = {{"", "Model"}, {"attn", "Attn"}};
  return g;
}

TEST(EmptyLike, KeepsEveryGraphLevelFieldAndNoNode) {
  const Graph g = described();
  const Graph e = empty_like(g);
  EXPECT_TRUE(e.tensors().empty());
  EXPECT_TRUE(e.ops().empty());
  // Every field of GraphInfo, compared whole: a field added there is kept without naming it.
  const GraphInfo& a = g;
  const GraphInfo& b = e;
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.frontend, b.frontend);
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.module_types, b.module_types);
}

TEST(Rewriter, KeptTensorsAndOpsMapToTheResult) {
  const Graph g = described();
  Rewriter rw(g);
  // Drop t (exp) and feed x to the contraction instead: x's and w's ids shift.
  const TensorId x = rw.keep(*g.find_tensor("x"));
  rw.keep(*g.find_tensor("w"));
  rw.keep(*g.find_tensor("y"));
  Op mm = testing::op_of(g, "y");
  mm.inputs[0] = *g.find_tensor("x");
  const OpId id = rw.keep(mm);
  EXPECT_EQ(rw.map(*g.find_tensor("y")).value, 2u);
  Graph out = std::move(rw).finish();
  verify(out);
  EXPECT_EQ(out.op(id).inputs[0], x);
  EXPECT_EQ(out.module_types, g.module_types);
  EXPECT_EQ(out.name, "model");
  EXPECT_EQ(print_graph(out).find("exp"), std::string::npos);
}

TEST(Rewriter, AnOpReadingADroppedTensorIsABug) {
  const Graph g = described();
  Rewriter rw(g);
  rw.keep(*g.find_tensor("x"));
  EXPECT_THROW(rw.keep(testing::op_of(g, "t")), InternalError);
  EXPECT_THROW(rw.keep(*g.find_tensor("x")), InternalError);  // kept twice
}

TEST(Rewriter, NewTensorsAndOpsUseTheResultsIds) {
  const Graph g = described();
  Rewriter rw(g);
  const TensorId x = rw.keep(*g.find_tensor("x"));
  Tensor c = g.tensor(*g.find_tensor("x"));
  c.name = "x2";
  c.role = Role::Output;
  const TensorId x2 = rw.add_tensor(c);
  Op copy;
  copy.inputs = {x};
  copy.outputs = {x2};
  copy.body = MoveOp{MoveKind::Copy, {}};
  rw.add_op(copy);
  const Graph out = std::move(rw).finish();
  verify(out);
  EXPECT_EQ(out.ops().size(), 1u);
  EXPECT_EQ(out.source, "model.py");
}

}  // namespace
}  // namespace solar::ir
