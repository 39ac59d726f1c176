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

TEST(ContractionClass, AWindowWrittenAsAMaskEqualityIsAConvolution) {
  // A transposed 1-D convolution (stride 2, pad 1, 4 taps) in gather form: every subscript is
  // a plain index; the window is the equality p == 2*i + kh - 1 (two constraints).
  const ir::Graph g = ir::parse_graph(R"(
    x = f32[1,3,8] input
    w = f32[3,2,4] weight
    a = f32[8,4] input
    b = f32[4,6] input
    v = f32[6,4] input
    s = f32[8,8] input
    u = f32[8,4] input
    gather = f32[1,2,16] einsum [n=1,o=2,p=16,c=3,i=8,kh=4] sum mul($0,$1) (x[n,c,i], w[c,o,kh]) -> [n,o,p] where p-i*2-kh+1 >= 0, -p+i*2+kh-1 >= 0
    half = f32[1,2,16] einsum [n=1,o=2,p=16,c=3,i=8,kh=4] sum mul($0,$1) (x[n,c,i], w[c,o,kh]) -> [n,o,p] where p-i*2-kh+1 >= 0
    diag = f32[8,6] einsum [m=8,k=4,n=6] sum mul($0,$1) (a[m,k], b[k,n]) -> [m,n] where k-n >= 0, n-k >= 0
    causal = f32[8,6] einsum [m=8,n=6,k=4] sum mul($0,$1) (a[m,k], v[n,k]) -> [m,n] where m-n >= 0
    band = f32[8,4] einsum [q=8,d=4,k=8] sum mul($0,$1) (s[q,k], u[k,d]) -> [q,d] where q-k >= 0, k-q+2 >= 0)");
  EXPECT_EQ(classify_contraction(op_of(g, "gather").einsum()), ContractionClass::Convolution);
  // One side of the equality alone is a triangle, not a window.
  EXPECT_EQ(classify_contraction(op_of(g, "half").einsum()), ContractionClass::Matmul);
  // An equality of one reduced and one kept index is a diagonal, not a window.
  EXPECT_EQ(classify_contraction(op_of(g, "diag").einsum()), ContractionClass::Matmul);
  // Causal and banded (sliding-window attention) masks are inequalities: still matmuls.
  EXPECT_EQ(classify_contraction(op_of(g, "causal").einsum()), ContractionClass::Matmul);
  EXPECT_EQ(classify_contraction(op_of(g, "band").einsum()), ContractionClass::Matmul);
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
