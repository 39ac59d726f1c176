#include "solar/ir/graph.h"

#include <gtest/gtest.h>

#include <cmath>

namespace solar::ir {
namespace {

Tensor tensor(std::string name, std::vector<std::int64_t> shape, DType d, Role r) {
  Tensor t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.dtype = d;
  t.role = r;
  return t;
}

TEST(Tensor, ElementsAndBytes) {
  Tensor t = tensor("x", {2, 3, 5}, DType::BF16, Role::Input);
  EXPECT_EQ(t.num_elements(), Count(2 * 3 * 5));
  EXPECT_EQ(t.size_bytes(), Count(2 * 3 * 5 * 2));  // bf16: 2 bytes
  Tensor q = tensor("q", {3, 3}, DType::I4, Role::Weight);
  EXPECT_EQ(q.size_bytes(), Count((9 * 4 + 7) / 8));  // 36 bits round up to 5 bytes
  Tensor s = tensor("s", {}, DType::F32, Role::Input);
  EXPECT_EQ(s.num_elements(), Count(1));  // a scalar
  Tensor z = tensor("z", {4, 0}, DType::F32, Role::Input);
  EXPECT_EQ(z.size_bytes(), Count(0));
}

TEST(Graph, AddAndFind) {
  Graph g;
  TensorId a = g.add_tensor(tensor("a", {4}, DType::F32, Role::Input));
  TensorId b = g.add_tensor(tensor("b", {4}, DType::F32, Role::Output));
  EXPECT_EQ(a.value, 0u);
  EXPECT_EQ(b.value, 1u);
  EXPECT_EQ(g.find_tensor("b"), b);
  EXPECT_EQ(g.find_tensor("c"), std::nullopt);
  EXPECT_THROW(g.add_tensor(tensor("a", {1}, DType::F32, Role::Input)), UserError);
  Op op;
  op.inputs = {a};
  op.outputs = {b};
  op.body = MoveOp{MoveKind::Copy, {}};
  OpId id = g.add_op(op);
  EXPECT_EQ(g.op(id).name, "b");  // defaults to the first output's name
  EXPECT_EQ(g.producer(b), id);
  EXPECT_EQ(g.producer(a), std::nullopt);
  EXPECT_EQ(g.op(id).kind(), OpKind::Move);
  EXPECT_THROW(g.op(OpId{7}), InternalError);
  EXPECT_THROW(g.tensor(TensorId{7}), InternalError);
}

TEST(Graph, FirstProducerWins) {
  Graph g;
  TensorId a = g.add_tensor(tensor("a", {4}, DType::F32, Role::Input));
  TensorId b = g.add_tensor(tensor("b", {4}, DType::F32, Role::Output));
  Op op;
  op.inputs = {a};
  op.outputs = {b};
  op.body = MoveOp{MoveKind::Copy, {}};
  OpId first = g.add_op(op);
  op.name = "again";
  g.add_op(op);  // invalid (the verifier says so); producer() keeps the first
  EXPECT_EQ(g.producer(b), first);
}

TEST(EinsumOp, ReducedIndicesAndLookup) {
  EinsumOp e;
  e.indices = {{"m", 4}, {"n", 5}, {"k", 3}};
  e.output = {AffineExpr::index(0), AffineExpr::index(1)};
  EXPECT_EQ(e.reduced_indices(), std::vector<IndexPos>{2});
  EXPECT_EQ(e.extents(), (std::vector<std::int64_t>{4, 5, 3}));
  EXPECT_EQ(e.find_index("n"), 1);
  EXPECT_EQ(e.find_index("z"), std::nullopt);
}

TEST(Names, RoundTrip) {
  for (Role r : {Role::Input, Role::Weight, Role::Constant, Role::Intermediate, Role::Output})
    EXPECT_EQ(parse_role(role_name(r)), r);
  for (Reduce r : {Reduce::None, Reduce::Sum, Reduce::Max, Reduce::Min, Reduce::Prod, Reduce::Any,
                   Reduce::All})
    EXPECT_EQ(parse_reduce(reduce_name(r)), r);
  for (MoveKind k : {MoveKind::View, MoveKind::Copy, MoveKind::Permute, MoveKind::Slice,
                     MoveKind::Concat, MoveKind::Pad, MoveKind::Gather, MoveKind::Scatter,
                     MoveKind::Cast})
    EXPECT_EQ(parse_move_kind(move_kind_name(k)), k);
  EXPECT_EQ(op_kind_name(OpKind::Unanalyzed), "unanalyzed");
  EXPECT_TRUE(is_graph_source(Role::Constant));
  EXPECT_FALSE(is_graph_source(Role::Output));
}

TEST(Equality, NaNValuesCompareEqual) {
  Operand a{{AffineExpr::index(0)}, NAN};
  Operand b{{AffineExpr::index(0)}, NAN};
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a == (Operand{{AffineExpr::index(0)}, 0.0}));
  EXPECT_FALSE(a == (Operand{{AffineExpr::index(0)}, std::nullopt}));
  MoveOp m{MoveKind::Pad, {{"value", NAN}, {"pads", std::vector<std::int64_t>{1, 1}}}};
  EXPECT_EQ(m, m);
  MoveOp m2 = m;
  m2.attrs["value"] = 0.0;
  EXPECT_FALSE(m == m2);
  m2.attrs["value"] = std::int64_t{0};  // an integer 0 is not the float 0.0
  EXPECT_FALSE(m == m2);
}

}  // namespace
}  // namespace solar::ir
