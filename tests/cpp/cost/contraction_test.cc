#include "solar/cost/contraction.h"

#include <gtest/gtest.h>

#include <string_view>

#include "solar/ir/text.h"
#include "testing/graph_lookup.h"

namespace solar::cost {
namespace {

using testing::op_of;

TEST(ContractionClass, FromTheEinsumsStructure) {
  const ir::Graph g = ir::parse_graph(R"(
    a = f32[8,4] input
    b = f32[4,6] input
    x = f32[1,3,10] input
    w = f32[2,3,3] weight
    mm = f32[8,6] einsum "mk,kn->mn" (a, b)
    outer = f32[8,4,6] einsum [m=8,k=4,n=6] none mul($0,$1) (a[m,k], b[k,n]) -> [m,k,n]
    conv = f32[1,2,8] einsum [n=1,o=2,p=8,c=3,r=3] sum mul($0,$1) (x[n,c,p+r], w[o,c,r]) -> [n,o,p]
    sums = f32[8] einsum [m=8,k=4] sum $0 (a[m,k]) -> [m]
    y = f32[8,6]{output} einsum [m=8,n=6] none add($0,$1) (mm[m,n], mm[m,n]) -> [m,n])");
  EXPECT_EQ(classify_contraction(op_of(g, "mm").einsum()), ContractionClass::Matmul);
  EXPECT_EQ(classify_contraction(op_of(g, "outer").einsum()), ContractionClass::None);  // no sum
  EXPECT_EQ(classify_contraction(op_of(g, "conv").einsum()), ContractionClass::Convolution);
  EXPECT_EQ(classify_contraction(op_of(g, "sums").einsum()), ContractionClass::None);
  EXPECT_EQ(classify_contraction(g, op_of(g, "mm")), ContractionClass::Matmul);
  EXPECT_EQ(classify_contraction(g, op_of(g, "y")), ContractionClass::None);
}

TEST(ContractionClass, BoolProductsAndAttentionHints) {
  const ir::Graph g = ir::parse_graph(R"(
    a = bool[8,4] input
    b = bool[4,6] input
    q = f32[8,4] input
    k = f32[6,4] input
    and = bool[8,6] einsum "mk,kn->mn" (a, b)
    s = f32[8,6]{output} einsum [m=8,n=6,e=4] sum mul($0,$1) (q[m,e], k[n,e]) -> [m,n] hint "attention")");
  // A bool product is a logical and, not tensor-unit work.
  EXPECT_EQ(classify_contraction(op_of(g, "and").einsum()), ContractionClass::Matmul);
  EXPECT_EQ(classify_contraction(g, op_of(g, "and")), ContractionClass::None);
  EXPECT_EQ(classify_contraction(g, op_of(g, "s")), ContractionClass::Attention);
}

}  // namespace
}  // namespace solar::cost
