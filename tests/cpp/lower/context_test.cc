// The lowering context (src/lower/context.cc), through lower_aten: broadcasting subscripts,
// graph sources by role, staging (a failed op leaves nothing behind), masked elementwise.
#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "solar/lower/aten.h"
#include "solar/util/errors.h"

namespace solar::lower {
namespace {

using nlohmann::json;

json tensor(int id, std::vector<std::int64_t> shape, const char* role, const char* dtype = "float32") {
  return {{"id", id}, {"shape", shape}, {"dtype", dtype}, {"role", role}};
}
json T(int id) { return {{"tensor", id}}; }
OpTrace trace(json tensors, json ops) {
  return optrace_from_json({{"schema", "solar.optrace.v1"}, {"tensors", tensors}, {"ops", ops}});
}

TEST(Context, BroadcastDimensionsAreReadAtIndexZero) {
  OpTrace t = trace({tensor(0, {4, 1, 8}, "input"), tensor(1, {3, 1}, "buffer"),
                     tensor(2, {4, 3, 8}, "output")},
                    {{{"op", "aten::mul.Tensor"}, {"args", {{"self", T(0)}, {"other", T(1)}}}, {"outputs", {2}}}});
  LowerResult r = lower_aten(t);
  const ir::EinsumOp& e = r.graph.ops()[0].einsum();
  ASSERT_EQ(e.indices.size(), 3u);  // one per output dimension: 4, 3, 8
  EXPECT_EQ(e.operands[0].subscript[1], ir::AffineExpr::constant(0));  // size 1 -> 0
  EXPECT_EQ(e.operands[1].subscript[0], ir::AffineExpr::index(1));     // aligned right
  EXPECT_EQ(e.operands[1].subscript[1], ir::AffineExpr::constant(0));
  EXPECT_EQ(r.graph.tensor(*r.graph.find_tensor("t1")).role, ir::Role::Weight);  // buffer
}

TEST(Context, NonFiniteScalarsAreReadFromTheirEncoding) {
  OpTrace t = trace({tensor(0, {4}, "input"), tensor(1, {4}, "input", "bool"), tensor(2, {4}, "output")},
                    {{{"op", "aten::masked_fill.Scalar"},
                      {"args", {{"self", T(0)}, {"mask", T(1)}, {"value", {{"float", "-inf"}}}}},
                      {"outputs", {2}}}});
  LowerResult r = lower_aten(t);
  ASSERT_TRUE(r.warnings.empty());
  const ir::Expr& c = r.graph.ops()[0].einsum().combine;
  ASSERT_EQ(c.op(), ir::ExprOp::Select);
  EXPECT_TRUE(std::isinf(c.children()[1].value()) && c.children()[1].value() < 0);
}

TEST(Context, AFailedOpLeavesOnlyItsUnanalyzedNode) {
  // a view past its storage cannot be modeled: the flat view staged for it does not survive
  OpTrace t = trace({tensor(0, {2, 2}, "input"), tensor(1, {8}, "output")},
                    {{{"op", "aten::as_strided.default"},
                      {"args", {{"self", T(0)}, {"size", {8}}, {"stride", {1}}}},
                      {"outputs", {1}}}});
  LowerResult r = lower_aten(t);
  ASSERT_EQ(r.graph.ops().size(), 1u);
  EXPECT_EQ(r.graph.ops()[0].kind(), ir::OpKind::Unanalyzed);
  EXPECT_EQ(r.graph.tensors().size(), 2u);  // no staged temporaries leaked
  EXPECT_NE(r.warnings[0].find("outside"), std::string::npos);
}

TEST(Context, AnEmptyTensorIsZeroWorkAndZeroBytes) {
  // relu of a [4, 0] tensor: an einsum over an empty iteration space, nothing to read or write
  OpTrace t = trace({tensor(0, {4, 0}, "input"), tensor(1, {4, 0}, "output")},
                    {{{"op", "aten::relu.default"}, {"args", {{"self", T(0)}}}, {"outputs", {1}}}});
  LowerResult r = lower_aten(t);
  ASSERT_TRUE(r.warnings.empty());
  ASSERT_EQ(r.graph.ops().size(), 1u);
  const ir::EinsumOp& e = r.graph.ops()[0].einsum();
  EXPECT_EQ(e.extents(), (std::vector<std::int64_t>{4, 0}));
}

TEST(Context, TriangleIsAMaskedCopy) {
  OpTrace t = trace({tensor(0, {5, 5}, "input"), tensor(1, {5, 5}, "output")},
                    {{{"op", "aten::triu.default"}, {"args", {{"self", T(0)}, {"diagonal", 1}}}, {"outputs", {1}}}});
  LowerResult r = lower_aten(t);
  const ir::EinsumOp& e = r.graph.ops()[0].einsum();
  ASSERT_EQ(e.mask.size(), 1u);
  std::int64_t live = 0, at[2];
  for (at[0] = 0; at[0] < 5; ++at[0])
    for (at[1] = 0; at[1] < 5; ++at[1]) live += e.mask[0].expr.evaluate(at) >= 0;
  EXPECT_EQ(live, 5 * 4 / 2);  // j - i >= 1: n(n-1)/2 points
}

TEST(Context, UsingATensorNoOpProducedMakesTheReaderUnanalyzed) {
  // t1 is an intermediate that no op of the trace writes
  OpTrace t = trace({tensor(0, {4}, "input"), tensor(1, {4}, "intermediate"), tensor(2, {4}, "output")},
                    {{{"op", "aten::relu.default"}, {"args", {{"self", T(1)}}}, {"outputs", {2}}}});
  LowerResult r = lower_aten(t);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("no lowered op produced"), std::string::npos);
  ASSERT_EQ(r.graph.ops().size(), 1u);
  EXPECT_EQ(r.graph.ops()[0].kind(), ir::OpKind::Unanalyzed);
  EXPECT_TRUE(r.graph.ops()[0].inputs.empty());  // the missing tensor is not invented
}

}  // namespace
}  // namespace solar::lower
