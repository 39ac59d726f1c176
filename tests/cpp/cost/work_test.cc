#include "solar/cost/work.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string_view>

#include "solar/cost/graph_cost.h"
#include "solar/ir/text.h"
#include "testing/graph_lookup.h"

namespace solar::cost {
namespace {

using ir::DType;
using ir::Graph;
using ir::parse_graph;

// The work of the op that produces tensor `name`.
Work work_of(const Graph& g, std::string_view name) {
  auto id = g.find_tensor(name);
  EXPECT_TRUE(id.has_value()) << name;
  auto op = g.producer(*id);
  EXPECT_TRUE(op.has_value()) << name;
  return op_work(g, g.op(*op));
}

using testing::op_of;

Count at(const std::map<DType, Count>& m, DType d) {
  auto it = m.find(d);
  return it == m.end() ? Count(0) : it->second;
}

// ---- contractions ----------------------------------------------------------------------

TEST(EinsumWork, MatmulIsTwoMNK) {
  Graph g = parse_graph(R"(
    a = f32[10,5] input
    b = f32[5,30] input
    c = f32[10,30] einsum "mk,kn->mn" (a, b))");
  Work w = work_of(g, "c");
  EXPECT_EQ(w.contraction, ContractionClass::Matmul);
  EXPECT_EQ(at(w.macs, DType::F32), Count(10 * 30 * 5));  // M*N*K
  EXPECT_EQ(w.flops(), Count(2 * 10 * 30 * 5));           // one MAC = 2 FLOP
  EXPECT_EQ(w.total_vector_flops(), Count(0));            // the product/sum is tensor work
  EXPECT_EQ(w.bytes_read, Count(4 * (10 * 5 + 5 * 30)));  // A + B, fp32
  EXPECT_EQ(w.bytes_written, Count(4 * 10 * 30));         // C
  EXPECT_EQ(w.bytes(), Count(4 * (10 * 5 + 5 * 30 + 10 * 30)));
  EXPECT_EQ(w.live_points, Count(10 * 30 * 5));
}

TEST(EinsumWork, AnEmptyIterationSpaceIsZeroWorkAndWritesOnlyItsOutput) {
  Graph g = parse_graph(R"(
    a = f32[10,0] input
    b = f32[0,30] input
    c = f32[10,30] einsum "mk,kn->mn" (a, b)
    e = f32[10,0] einsum [m=10,k=0] none exp($0) (a[m,k]) -> [m,k])");
  Work w = work_of(g, "c");  // a matmul over K = 0: every element is the sum of nothing
  EXPECT_EQ(at(w.macs, DType::F32), Count(0));
  EXPECT_EQ(w.flops(), Count(0));
  EXPECT_EQ(w.bytes_read, Count(0));
  EXPECT_EQ(w.bytes_written, Count(4 * 10 * 30));  // C, written once (zeros)
  Work e = work_of(g, "e");  // an empty tensor: nothing at all
  EXPECT_EQ(e.special_ops, Count(0));
  EXPECT_EQ(e.bytes(), Count(0));
}

TEST(EinsumWork, BatchedMatmulWithBroadcastOperandUsesIterationExtents) {
  // The first operand has no batch index: it is read once at its own size, and the MACs
  // still count every batch (B*M*N*K), not the first operand's extents.
  Graph g = parse_graph(R"(
    a = bf16[64,32] input
    b = bf16[8,32,16] input
    c = bf16[8,64,16] einsum "mk,bkn->bmn" (a, b))");
  Work w = work_of(g, "c");
  EXPECT_EQ(at(w.macs, DType::BF16), Count(8 * 64 * 16 * 32));     // B*M*N*K
  EXPECT_EQ(w.bytes_read, Count(2 * (64 * 32 + 8 * 32 * 16)));    // A at its own size + B
  EXPECT_EQ(w.bytes_written, Count(2 * 8 * 64 * 16));
}

TEST(EinsumWork, OuterProductIsElementwise) {
  Graph g = parse_graph(R"(
    a = f32[16] input
    b = f32[32] input
    c = f32[16,32] einsum "i,j->ij" (a, b))");
  Work w = work_of(g, "c");
  EXPECT_EQ(w.contraction, ContractionClass::None);
  EXPECT_EQ(w.total_macs(), Count(0));
  EXPECT_EQ(at(w.vector_flops, DType::F32), Count(16 * 32));  // one mul per point
}

TEST(EinsumWork, BoolProductIsNotTensorWork) {
  Graph g = parse_graph(R"(
    a = bool[8,4] input
    b = bool[4,8] input
    c = bool[8,8] einsum [m=8,k=4,n=8] sum mul($0,$1) (a[m,k], b[k,n]) -> [m,n])");
  Work w = work_of(g, "c");
  EXPECT_EQ(classify_contraction(op_of(g, "c").einsum()), ContractionClass::Matmul);
  EXPECT_EQ(classify_contraction(g, op_of(g, "c")), ContractionClass::None);
  EXPECT_EQ(w.total_macs(), Count(0));
  // mul per point + (points - outputs) adds of the sum.
  EXPECT_EQ(at(w.vector_flops, DType::Bool), Count(8 * 8 * 4 + (8 * 8 * 4 - 8 * 8)));
}

// ---- convolutions --------------------------------------------------------------------

TEST(EinsumWork, GroupedConv2dCountsChannelsPerGroup) {
  // N=2, C=8, K=16, G=4 (C/G=2, K/G=4), 16x16, 3x3, pad 1.
  Graph g = parse_graph(R"(
    x = f32[2,8,16,16] input
    w = f32[16,2,3,3] weight
    y = f32[2,4,4,16,16] einsum [n=2,g=4,k=4,p=16,q=16,c=2,r=3,s=3] sum mul($0,$1) (x[n,g*2+c,p+r-1,q+s-1] pad 0, w[g*4+k,c,r,s]) -> [n,g,k,p,q])");
  Work w = work_of(g, "y");
  EXPECT_EQ(w.contraction, ContractionClass::Convolution);
  EXPECT_EQ(w.total_macs(), Count(2 * 16 * 16 * 16 * (8 / 4) * 3 * 3));  // N*K*P*Q*(C/G)*R*S
  // x is read once (every channel, every pixel: the 1-pixel halo is padding), w once.
  EXPECT_EQ(w.bytes_read, Count(4 * (2 * 8 * 16 * 16 + 16 * 2 * 3 * 3)));
  EXPECT_EQ(w.bytes_written, Count(4 * 2 * 16 * 16 * 16));
}

TEST(EinsumWork, DepthwiseConv) {
  Graph g = parse_graph(R"(
    x = bf16[4,32,28,28] input
    w = bf16[32,3,3] weight
    y = bf16[4,32,28,28] einsum [n=4,c=32,p=28,q=28,r=3,s=3] sum mul($0,$1) (x[n,c,p+r-1,q+s-1] pad 0, w[c,r,s]) -> [n,c,p,q])");
  Work w = work_of(g, "y");
  EXPECT_EQ(w.contraction, ContractionClass::Convolution);
  EXPECT_EQ(at(w.macs, DType::BF16), Count(4 * 32 * 28 * 28 * 3 * 3));  // N*C*P*Q*R*S
  EXPECT_EQ(w.bytes_read, Count(2 * (4 * 32 * 28 * 28 + 32 * 3 * 3)));
}

TEST(EinsumWork, PointwiseConvIsAConvolutionGroupedHeadsAreAMatmul) {
  // A 1x1 convolution still slides its (unit) tap r against the output position p.
  Graph conv = parse_graph(R"(
    x = f32[2,8,16] input
    w = f32[4,8,1] weight
    y = f32[2,4,16] einsum [n=2,k=4,p=16,c=8,r=1] sum mul($0,$1) (x[n,c,p+r], w[k,c,r]) -> [n,k,p])");
  EXPECT_EQ(work_of(conv, "y").contraction, ContractionClass::Convolution);
  // Grouped-query attention scores: query head hk*grp+j reads key head hk. The affine head
  // subscript holds no reduced index (both are kept in the output): a reshape, so a matmul,
  // with grp = 2 and with grp = 1 (where j has extent 1).
  for (int grp : {2, 1}) {
    Graph gqa = parse_graph(fmt::format(R"(
      q = f32[2,{0},16,8] input
      k = f32[2,2,16,8] input
      s = f32[2,2,{1},16,16] einsum [b=2,hk=2,j={1},l=16,m=16,e=8] sum mul($0,$1) (q[b,hk*{1}+j,l,e], k[b,hk,m,e]) -> [b,hk,j,l,m])",
                                        2 * grp, grp));
    EXPECT_EQ(work_of(gqa, "s").contraction, ContractionClass::Matmul) << "grp " << grp;
  }
}

TEST(EinsumWork, ContractionsOfAFusedAttentionOpAreAttention) {
  // The same batched product: a matmul from bmm, attention where the lowering hints a fused
  // attention op's; the origin alone decides nothing.
  Graph g = parse_graph(R"(
    q = f32[2,16,8] input
    k = f32[2,16,8] input
    m = f32[2,16,16] einsum "bld,bmd->blm" (q, k) from "aten::bmm.default"
    s = f32[2,16,16] einsum "bld,bmd->blm" (q, k) hint "attention" from "aten::_scaled_dot_product_flash_attention_for_cpu.default"
    u = f32[2,16,16] einsum "bld,bmd->blm" (q, k) from "aten::_scaled_dot_product_flash_attention_for_cpu.default"
    e = f32[2,16,8] einsum [b=2,l=16,d=8] none add($0,$1) (q[b,l,d], k[b,l,d]) -> [b,l,d] hint "attention")");
  EXPECT_EQ(classify_contraction(g, op_of(g, "m")), ContractionClass::Matmul);
  EXPECT_EQ(classify_contraction(g, op_of(g, "s")), ContractionClass::Attention);
  EXPECT_EQ(classify_contraction(g, op_of(g, "u")), ContractionClass::Matmul);
  EXPECT_EQ(classify_contraction(g, op_of(g, "e")), ContractionClass::None);  // not a contraction
}

TEST(EinsumWork, StridedConv2d) {
  // 32x32 input, 3x3, stride 2, pad 1 -> 16x16.
  Graph g = parse_graph(R"(
    x = f16[1,8,32,32] input
    w = f16[16,8,3,3] weight
    y = f16[1,16,16,16] einsum [n=1,k=16,p=16,q=16,c=8,r=3,s=3] sum mul($0,$1) (x[n,c,p*2+r-1,q*2+s-1] pad 0, w[k,c,r,s]) -> [n,k,p,q])");
  Work w = work_of(g, "y");
  EXPECT_EQ(at(w.macs, DType::F16), Count(1 * 16 * 16 * 16 * 8 * 3 * 3));  // N*K*P*Q*C*R*S
  // rows p*2+r-1 cover -1..31: all 32 rows of x are read.
  EXPECT_EQ(w.bytes_read, Count(2 * (8 * 32 * 32 + 16 * 8 * 3 * 3)));
}

TEST(EinsumWork, StrideLargerThanKernelSkipsRows) {
  // Conv 1-D with stride 4 and kernel 2 reads positions {4p, 4p+1}: half of x.
  Graph g = parse_graph(R"(
    x = f32[1,1,32] input
    w = f32[1,1,2] weight
    y = f32[1,1,8] einsum [n=1,k=1,p=8,c=1,r=2] sum mul($0,$1) (x[n,c,p*4+r], w[k,c,r]) -> [n,k,p])");
  Work w = work_of(g, "y");
  EXPECT_EQ(w.total_macs(), Count(8 * 2));                   // P*R
  EXPECT_EQ(w.bytes_read, Count(4 * (8 * 2 + 2)));           // P*R distinct x elements + w
  const ir::EinsumOp& e = op_of(g, "y").einsum();
  EXPECT_EQ(operand_footprint(e, e.operands[0], g.tensor(*g.find_tensor("x"))), Count(8 * 2));
}

TEST(EinsumWork, DilatedConv2d) {
  // 3x3 kernel with dilation 2 and pad 2 keeps 16x16.
  Graph g = parse_graph(R"(
    x = f32[2,4,16,16] input
    w = f32[8,4,3,3] weight
    y = f32[2,8,16,16] einsum [n=2,k=8,p=16,q=16,c=4,r=3,s=3] sum mul($0,$1) (x[n,c,p+r*2-2,q+s*2-2] pad 0, w[k,c,r,s]) -> [n,k,p,q])");
  Work w = work_of(g, "y");
  EXPECT_EQ(w.contraction, ContractionClass::Convolution);
  EXPECT_EQ(w.total_macs(), Count(2 * 8 * 16 * 16 * 4 * 3 * 3));  // N*K*P*Q*C*R*S
  EXPECT_EQ(w.bytes_read, Count(4 * (2 * 4 * 16 * 16 + 8 * 4 * 3 * 3)));
}

TEST(EinsumWork, Conv1dAndConv3d) {
  Graph g = parse_graph(R"(
    x1 = f32[4,16,100] input
    w1 = f32[32,16,5] weight
    y1 = f32[4,32,96] einsum [n=4,k=32,p=96,c=16,r=5] sum mul($0,$1) (x1[n,c,p+r], w1[k,c,r]) -> [n,k,p]
    x3 = bf16[1,8,10,10,10] input
    w3 = bf16[16,8,3,3,3] weight
    y3 = bf16[1,16,8,8,8] einsum [n=1,k=16,d=8,p=8,q=8,c=8,t=3,r=3,s=3] sum mul($0,$1) (x3[n,c,d+t,p+r,q+s], w3[k,c,t,r,s]) -> [n,k,d,p,q])");
  Work w1 = work_of(g, "y1");
  EXPECT_EQ(w1.total_macs(), Count(4 * 32 * 96 * 16 * 5));  // N*K*P*C*R
  EXPECT_EQ(w1.bytes_read, Count(4 * (4 * 16 * 100 + 32 * 16 * 5)));
  Work w3 = work_of(g, "y3");
  // N*K*D*P*Q*C*T*R*S
  EXPECT_EQ(at(w3.macs, DType::BF16), Count(1 * 16 * 8 * 8 * 8 * 8 * 3 * 3 * 3));
  EXPECT_EQ(w3.bytes_read, Count(2 * (8 * 10 * 10 * 10 + 16 * 8 * 3 * 3 * 3)));
}

TEST(EinsumWork, TransposedConvScatterForm) {
  // ConvTranspose2d: Cin=8, Cout=6, G=2, 4x4 kernel, stride 2, no pad: 8x8 -> 18x18.
  // Each input pixel scatters a kernel-sized patch into the output: y[h*2+r, w*2+s].
  Graph g = parse_graph(R"(
    x = f32[2,8,8,8] input
    w = f32[8,3,4,4] weight
    y = f32[2,2,3,18,18] einsum [n=2,g=2,o=3,h=8,v=8,c=4,r=4,s=4] sum mul($0,$1) (x[n,g*4+c,h,v], w[g*4+c,o,r,s]) -> [n,g,o,h*2+r,v*2+s])");
  Work w = work_of(g, "y");
  EXPECT_EQ(w.contraction, ContractionClass::Convolution);
  EXPECT_EQ(w.total_macs(), Count(2 * 8 * 8 * 8 * (6 / 2) * 4 * 4));  // N*Cin*H*W*Cout/G*R*S
  EXPECT_EQ(w.bytes_read, Count(4 * (2 * 8 * 8 * 8 + 8 * 3 * 4 * 4)));
}

// ---- masks ---------------------------------------------------------------------------

TEST(EinsumWork, CausalAttentionScores) {
  constexpr std::uint64_t B = 2, H = 4, S = 128, D = 64;
  Graph g = parse_graph(R"(
    qt = bf16[2,4,128,64] input
    kt = bf16[2,4,128,64] input
    s = f32[2,4,128,128] einsum [b=2,h=4,i=128,j=128,d=64] sum mul($0,$1) (qt[b,h,i,d], kt[b,h,j,d]) -> [b,h,i,j] where i >= j)");
  Work w = work_of(g, "s");
  EXPECT_EQ(w.live_points, Count(B * H * S * (S + 1) / 2 * D));  // lower triangle + diagonal
  EXPECT_EQ(at(w.macs, DType::BF16), Count(B * H * S * (S + 1) / 2 * D));
  EXPECT_EQ(w.bytes_read, Count(2 * 2 * B * H * S * D));  // the mask does not shrink Q/K reads
  EXPECT_EQ(w.bytes_written, Count(4 * B * H * S * S));
}

TEST(EinsumWork, MaskedElementwiseCountsLivePoints) {
  // Causal with a window of W keys: row i keeps j in [max(0, i-W+1), i], min(i+1, W) keys.
  constexpr std::uint64_t S = 1000, W = 256;
  Graph g = parse_graph(R"(
    a = f32[1000,1000] input
    m = f32[1000,1000] einsum [i=1000,j=1000] none mul($0,2) (a[i,j]) -> [i,j] where i >= j, j + 255 >= i)");
  Work w = work_of(g, "m");
  EXPECT_EQ(at(w.vector_flops, DType::F32), Count(W * (W + 1) / 2 + (S - W) * W));  // 1 mul/point
}

// ---- broadcast and footprints --------------------------------------------------------

TEST(EinsumWork, BroadcastMaskTensorReadAtItsOwnSize) {
  Graph g = parse_graph(R"(
    s = f32[4,8,64,64] input
    mask = f32[1,1,64,64] constant
    y = f32[4,8,64,64] einsum [b=4,h=8,i=64,j=64] none add($0,$1) (s[b,h,i,j], mask[0,0,i,j]) -> [b,h,i,j])");
  Work w = work_of(g, "y");
  EXPECT_EQ(w.bytes_read, Count(4 * (4 * 8 * 64 * 64 + 1 * 1 * 64 * 64)));  // mask once
  EXPECT_EQ(at(w.vector_flops, DType::F32), Count(4 * 8 * 64 * 64));        // one add per point
}

// ---- dtypes and sparsity -------------------------------------------------------------

TEST(EinsumWork, MixedDtypesChargeEachOperandAtItsWidth) {
  constexpr std::uint64_t M = 16, K = 64, N = 32;
  Graph g = parse_graph(R"(
    a = bf16[16,64] input
    w8 = i8[64,32] weight
    w4 = i4[64,32] weight
    f4 = f4[64,32] weight
    f8 = f8e4m3[64,32] weight
    a8 = f8e4m3[16,64] input
    i8a = i8[16,64] input
    y8 = bf16[16,32] einsum "mk,kn->mn" (a, w8)
    y4 = bf16[16,32] einsum "mk,kn->mn" (a, w4)
    yf4 = bf16[16,32] einsum "mk,kn->mn" (a, f4)
    yf8 = bf16[16,32] einsum "mk,kn->mn" (a, f8)
    z8 = bf16[16,32] einsum "mk,kn->mn" (a8, f8)
    zi = bf16[16,32] einsum "mk,kn->mn" (i8a, f8))");
  // int8 weights x bf16 activations: MACs at the wider dtype, weights at 1 byte each.
  Work w8 = work_of(g, "y8");
  EXPECT_EQ(at(w8.macs, DType::BF16), Count(M * N * K));
  EXPECT_EQ(w8.bytes_read, Count(2 * M * K + 1 * K * N));
  EXPECT_EQ(at(work_of(g, "y4").macs, DType::BF16), Count(M * N * K));
  EXPECT_EQ(work_of(g, "y4").bytes_read, Count(2 * M * K + K * N / 2));  // int4: half a byte
  EXPECT_EQ(work_of(g, "yf4").bytes_read, Count(2 * M * K + K * N / 2));  // fp4: half a byte
  EXPECT_EQ(work_of(g, "yf8").bytes_read, Count(2 * M * K + K * N));      // fp8: one byte
  EXPECT_EQ(at(work_of(g, "z8").macs, DType::F8E4M3), Count(M * N * K));  // fp8 x fp8
  // int8 x fp8 at equal width: the float type keys the MACs.
  EXPECT_EQ(at(work_of(g, "zi").macs, DType::F8E4M3), Count(M * N * K));
}

TEST(EinsumWork, TwoFourSparseWeightKeepsDenseMacsAndMarksThem) {
  constexpr std::uint64_t M = 16, K = 64, N = 32;
  Graph g = parse_graph(R"(
    a = f16[16,64] input
    w = f16[64,32]{sparsity="2:4"} weight
    y = f16[16,32] einsum "mk,kn->mn" (a, w))");
  Work w = work_of(g, "y");
  // The contraction as written: every product, the structured zeros included.
  EXPECT_EQ(at(w.macs, DType::F16), Count(M * N * K));
  // All of them may run at a 2:4 sparse peak (the bound decides whether zeros are skipped).
  EXPECT_EQ(at(w.macs_2_4, DType::F16), Count(M * N * K));
  EXPECT_EQ(w.total_macs_2_4(), w.total_macs());
  EXPECT_EQ(w.flops(), Count(2 * M * N * K));  // dense FLOPs: 1 MAC = 2 FLOP
  // w stores K*N/2 values of 16 bits + a 2-bit index each.
  EXPECT_EQ(w.bytes_read, Count(2 * M * K + (K * N / 2) * (16 + 2) / 8));
}

TEST(EinsumWork, TwoFourOnEitherOperandAndMixedDtypes) {
  constexpr std::uint64_t M = 16, K = 64, N = 32;
  Graph g = parse_graph(R"(
    a = bf16[16,64]{sparsity="2:4"} input
    w = i8[64,32] weight
    y = bf16[16,32] einsum "mk,kn->mn" (a, w))");
  Work w = work_of(g, "y");
  // Keyed like macs: at the wider operand dtype.
  EXPECT_EQ(at(w.macs, DType::BF16), Count(M * N * K));
  EXPECT_EQ(at(w.macs_2_4, DType::BF16), Count(M * N * K));
  EXPECT_EQ(w.macs_2_4.size(), 1u);
}

TEST(EinsumWork, UnstructuredSparsityIsNotSkippedWork) {
  constexpr std::uint64_t M = 16, K = 64, N = 32;
  Graph g = parse_graph(R"(
    a = bf16[16,64] input
    w = bf16[64,32]{zeros=0.75} weight
    y = bf16[16,32] einsum "mk,kn->mn" (a, w))");
  Work w = work_of(g, "y");
  EXPECT_EQ(at(w.macs, DType::BF16), Count(M * N * K));  // no dense unit skips unstructured zeros
  EXPECT_TRUE(w.macs_2_4.empty());
  // w in the bitmap format: one bit per element + the K*N/4 nonzeros at 16 bits.
  EXPECT_EQ(w.bytes_read, Count(2 * M * K + (K * N) / 8 + (K * N / 4) * 16 / 8));
}

// ---- elementwise and reductions ------------------------------------------------------

TEST(EinsumWork, RepeatedSubexpressionIsComputedOncePerPoint) {
  constexpr std::uint64_t B = 4, C = 256;
  Graph g = parse_graph(R"(
    x = f32[4,256] input
    m = f32[4] input
    v = f32[4]{output} einsum [b=4,c=256] sum mul(sub($0,$1),sub($0,$1)) (x[b,c], m[b]) -> [b])");
  Work v = work_of(g, "v");
  // Per point one sub and one mul; the sum reduces B*C products into B values.
  EXPECT_EQ(at(v.vector_flops, DType::F32), Count(B * C * 2 + (B * C - B)));
}

TEST(EinsumWork, IntegerBitOpsCountAsVectorWorkOfTheOutputType) {
  constexpr std::uint64_t N = 1000;
  Graph g = parse_graph(R"(
    k = i32[1000] input
    r = i32[1000]{output} einsum [i=1000] none xor($0,lshr($0,13)) (k[i]) -> [i])");
  Work r = work_of(g, "r");
  EXPECT_EQ(at(r.vector_flops, DType::I32), Count(2 * N));  // lshr, xor per element
  EXPECT_EQ(r.bytes_read, Count(4 * N));
  EXPECT_EQ(r.bytes_written, Count(4 * N));
}

TEST(EinsumWork, SoftmaxDecomposition) {
  constexpr std::uint64_t R = 4 * 8 * 64, C = 64;  // rows = B*H*Q, columns = K
  Graph g = parse_graph(R"(
    s = f32[4,8,64,64] input
    mx = f32[4,8,64] einsum [b=4,h=8,i=64,j=64] max $0 (s[b,h,i,j]) -> [b,h,i]
    e = f32[4,8,64,64] einsum [b=4,h=8,i=64,j=64] none exp(sub($0,$1)) (s[b,h,i,j], mx[b,h,i]) -> [b,h,i,j]
    z = f32[4,8,64] einsum [b=4,h=8,i=64,j=64] sum $0 (e[b,h,i,j]) -> [b,h,i]
    p = f32[4,8,64,64]{output} einsum [b=4,h=8,i=64,j=64] none div($0,$1) (e[b,h,i,j], z[b,h,i]) -> [b,h,i,j])");
  Work mx = work_of(g, "mx");
  EXPECT_EQ(at(mx.vector_flops, DType::F32), Count(R * C - R));  // C-1 max per row
  EXPECT_EQ(mx.special_ops, Count(0));
  EXPECT_EQ(mx.bytes_read, Count(4 * R * C));
  EXPECT_EQ(mx.bytes_written, Count(4 * R));
  Work e = work_of(g, "e");
  EXPECT_EQ(at(e.vector_flops, DType::F32), Count(R * C));  // sub
  EXPECT_EQ(e.special_ops, Count(R * C));                   // exp
  EXPECT_EQ(e.bytes_read, Count(4 * (R * C + R)));           // s + the row max
  Work z = work_of(g, "z");
  EXPECT_EQ(at(z.vector_flops, DType::F32), Count(R * C - R));  // C-1 adds per row
  Work p = work_of(g, "p");
  EXPECT_EQ(at(p.vector_flops, DType::F32), Count(R * C));  // div
  EXPECT_EQ(p.special_ops, Count(0));
}

TEST(EinsumWork, LayerNorm) {
  constexpr std::uint64_t T = 128, D = 256;  // tokens, hidden
  Graph g = parse_graph(R"(
    x = bf16[128,256] input
    gamma = bf16[256] weight
    beta = bf16[256] weight
    mean = f32[128] einsum [t=128,d=256] sum mul($0,0.00390625) (x[t,d]) -> [t]
    var = f32[128] einsum [t=128,d=256] sum mul(square(sub($0,$1)),0.00390625) (x[t,d], mean[t]) -> [t]
    xhat = bf16[128,256] einsum [t=128,d=256] none mul(sub($0,$1),rsqrt(add($2,0.00001))) (x[t,d], mean[t], var[t]) -> [t,d]
    y = bf16[128,256]{output} einsum [t=128,d=256] none add(mul($0,$1),$2) (xhat[t,d], gamma[d], beta[d]) -> [t,d])");
  EXPECT_EQ(at(work_of(g, "mean").vector_flops, DType::F32),
            Count(T * D + (T * D - T)));  // mul + sum
  EXPECT_EQ(at(work_of(g, "var").vector_flops, DType::F32),
            Count(3 * T * D + (T * D - T)));  // sub, square, mul + sum
  Work xhat = work_of(g, "xhat");
  EXPECT_EQ(at(xhat.vector_flops, DType::BF16), Count(3 * T * D));  // sub, add, mul
  EXPECT_EQ(xhat.special_ops, Count(T * D));                        // rsqrt
  EXPECT_EQ(xhat.bytes_read, Count(2 * T * D + 4 * T + 4 * T));      // x, mean, var
  Work y = work_of(g, "y");
  EXPECT_EQ(at(y.vector_flops, DType::BF16), Count(2 * T * D));     // mul, add
  EXPECT_EQ(y.bytes_read, Count(2 * (T * D + D + D)));              // gamma/beta once each
}

TEST(EinsumWork, ExactBeyondTwoTo53) {
  // B*M*N*K = 1023 * 65537 * 65535 * 65536 ~ 2.9e17 MACs: past 2^53, so a double would round.
  Graph g = parse_graph(R"(
    a = bf16[1023,65537,65536] input
    b = bf16[1023,65536,65535] input
    c = bf16[1023,65537,65535] einsum "bmk,bkn->bmn" (a, b))");
  Work w = work_of(g, "c");
  const unsigned __int128 macs = static_cast<unsigned __int128>(1023) * 65537 * 65535 * 65536;
  EXPECT_EQ(w.total_macs().raw(), macs);
  EXPECT_EQ(w.flops().raw(), 2 * macs);
  EXPECT_GT(w.total_macs(), Count(std::uint64_t{1} << 53));
  EXPECT_EQ(w.bytes_read.raw(),
            static_cast<unsigned __int128>(2) * 1023 * (65537ull * 65536 + 65536ull * 65535));
}

// ---- data movement, opaque, unanalyzed -----------------------------------------------

TEST(MoveWork, ViewIsFreePermuteCopies) {
  Graph g = parse_graph(R"(
    x = bf16[2,8,128,64] input
    v = bf16[16,128,64] move view (x)
    t = bf16[2,128,8,64] move permute {perm=[0,2,1,3]} (x))");
  Work v = work_of(g, "v");
  EXPECT_EQ(v.bytes(), Count(0));
  EXPECT_EQ(v.note, "view: no copy");
  Work t = work_of(g, "t");
  EXPECT_EQ(t.bytes_read, Count(2 * 2 * 8 * 128 * 64));
  EXPECT_EQ(t.bytes_written, Count(2 * 2 * 8 * 128 * 64));
  EXPECT_EQ(t.flops(), Count(0));
}

TEST(MoveWork, SliceViewIsFreeSliceCopyReadsTheSlice) {
  Graph g = parse_graph(R"(
    x = f32[64,32] input
    s = f32[16,32] move slice {starts=[0,0], ends=[16,32], steps=[1,1]} (x)
    c = f32[16,32] move slice {starts=[0,0], ends=[16,32], steps=[1,1], copy=1} (x))");
  EXPECT_EQ(work_of(g, "s").bytes(), Count(0));
  Work c = work_of(g, "c");
  EXPECT_EQ(c.bytes_read, Count(4 * 16 * 32));  // the slice, not the whole of x
  EXPECT_EQ(c.bytes_written, Count(4 * 16 * 32));
}

TEST(MoveWork, GatherReadsWhatItGathers) {
  constexpr std::uint64_t V = 50000, D = 512, T = 256;
  Graph g = parse_graph(R"(
    emb = bf16[50000,512] weight
    ids = i64[256] input
    h = bf16[256,512] move gather {axis=0} (emb, ids))");
  Work w = work_of(g, "h");
  EXPECT_EQ(w.bytes_read, Count(2 * T * D + 8 * T));  // gathered rows + the index
  EXPECT_LT(w.bytes_read, Count(2 * V * D));          // never the whole table
  EXPECT_EQ(w.bytes_written, Count(2 * T * D));
  EXPECT_NE(w.note.find("distinct"), std::string::npos);
}

TEST(MoveWork, ScatterWritesInPlace) {
  Graph g = parse_graph(R"(
    d = f32[1000,64] input
    idx = i64[10,64] input
    src = f32[10,64] input
    o = f32[1000,64] move scatter {axis=0} (d, idx, src))");
  Work w = work_of(g, "o");
  EXPECT_EQ(w.bytes_read, Count(8 * 10 * 64 + 4 * 10 * 64));  // index + src
  EXPECT_EQ(w.bytes_written, Count(4 * 10 * 64));             // only the src elements
  EXPECT_NE(w.note.find("in place"), std::string::npos);
}

TEST(MoveWork, ReducingScatterReadsWhatItUpdates) {
  Graph g = parse_graph(R"(
    d = f32[1000,64] input
    idx = i64[10,64] input
    src = f32[10,64] input
    o = f32[1000,64] move scatter {axis=0, reduce="sum"} (d, idx, src))");
  Work w = work_of(g, "o");
  EXPECT_EQ(w.bytes_read, Count(8 * 10 * 64 + 4 * 10 * 64 + 4 * 10 * 64));  // index + src + updated data
  EXPECT_EQ(w.bytes_written, Count(4 * 10 * 64));
  EXPECT_EQ(w.total_vector_flops(), Count(10 * 64));  // one add per src element
}

TEST(MoveWork, CastConcatPad) {
  Graph g = parse_graph(R"(
    x = f32[8,16] input
    y = f32[8,16] input
    c = bf16[8,16] move cast (x)
    k = f32[16,16] move concat {axis=0} (x, y)
    p = f32[10,18] move pad {pads=[1,1,1,1], value=0} (x))");
  Work c = work_of(g, "c");
  EXPECT_EQ(c.bytes_read, Count(4 * 8 * 16));
  EXPECT_EQ(c.bytes_written, Count(2 * 8 * 16));
  EXPECT_EQ(work_of(g, "k").bytes(), Count(4 * (8 * 16 * 2 + 16 * 16)));
  EXPECT_EQ(work_of(g, "p").bytes(), Count(4 * (8 * 16 + 10 * 18)));
}

TEST(OpaqueWork, UsesTheStatedCost) {
  Graph g = parse_graph(R"(
    x = f32[2,1024] input
    v, i = f32[2,8], i64[2,8] opaque "topk" {vector_flops=20480, special_ops=0, bytes=8320, assumption="bitonic: n log2 n compares", k=8} (x))");
  Work w = work_of(g, "v");
  EXPECT_EQ(at(w.vector_flops, DType::F32), Count(20480));
  EXPECT_EQ(w.bytes_read, Count(8320));
  EXPECT_EQ(w.note, "bitonic: n log2 n compares");
  EXPECT_TRUE(w.analyzed);
}

TEST(UnanalyzedWork, IsMarkedNotZero) {
  Graph g = parse_graph(R"(
    x = f32[2,128] input
    f = f32[2,65] unanalyzed "aten::_fft_r2c" {reason="no lowering for FFT"} (x))");
  Work w = work_of(g, "f");
  EXPECT_FALSE(w.analyzed);
  EXPECT_EQ(w.note, "no lowering for FFT");
  EXPECT_EQ(w.flops(), Count(0));
  EXPECT_EQ(w.bytes(), Count(0));
}

TEST(WorkSum, AddsEveryField) {
  Work a, b;
  a.contraction = b.contraction = ContractionClass::Matmul;
  a.macs[DType::BF16] = 10;
  b.macs[DType::BF16] = 5;
  b.macs[DType::F32] = 1;
  a.vector_flops[DType::F32] = 3;
  b.special_ops = 7;
  a.bytes_read = 100;
  b.bytes_written = 50;
  a += b;
  EXPECT_EQ(a.contraction, ContractionClass::Matmul);
  EXPECT_EQ(a.macs[DType::BF16], Count(15));
  EXPECT_EQ(a.total_macs(), Count(16));
  EXPECT_EQ(a.flops(), Count(2 * 16 + 3));
  EXPECT_EQ(a.special_ops, Count(7));
  EXPECT_EQ(a.bytes(), Count(150));
  Work conv;
  conv.contraction = ContractionClass::Convolution;
  a += conv;
  EXPECT_EQ(a.contraction, ContractionClass::None);  // mixed classes
}

TEST(WorkSum, AddsTwoFourMacsByDtype) {
  Work a, b;
  a.macs[DType::BF16] = 100;
  a.macs_2_4[DType::BF16] = 100;
  b.macs[DType::BF16] = 50;
  b.macs[DType::F8E4M3] = 7;
  b.macs_2_4[DType::F8E4M3] = 7;
  a += b;
  EXPECT_EQ(at(a.macs, DType::BF16), Count(150));
  EXPECT_EQ(at(a.macs_2_4, DType::BF16), Count(100));  // b's bf16 MACs are dense
  EXPECT_EQ(at(a.macs_2_4, DType::F8E4M3), Count(7));
  EXPECT_EQ(a.total_macs_2_4(), Count(100 + 7));
}


// ---- collectives -----------------------------------------------------------------------

namespace collectives {

// Every kind on 8 ranks over bf16 x[64,32]: E = 2048 elements, 2 bytes each.
constexpr std::uint64_t kE = 64 * 32, kBytes = 2 * kE, kN = 8;

Graph every_kind() {
  return parse_graph(R"(
    x = bf16[64,32] input
    ar = bf16[64,32] collective all_reduce sum {size=8} (x)
    av = bf16[64,32] collective all_reduce avg {size=8} (x)
    ag = bf16[512,32] collective all_gather {size=8, axis=0} (x)
    rs = bf16[8,32] collective reduce_scatter max {size=8, axis=0} (x)
    aa = bf16[64,32] collective all_to_all {size=8, split_axis=0, concat_axis=0} (x)
    sd = bf16[64,32]{output} collective send {peer=1} (x)
    rv = bf16[64,32] collective recv {peer=1} ()
    bc = bf16[64,32] collective broadcast {size=8, root=0} (x))");
}

Count comm(const Work& w, ir::CollectiveKind k) {
  auto it = w.comm_bytes.find(k);
  return it == w.comm_bytes.end() ? Count(0) : it->second;
}

TEST(CollectiveWork, PayloadIsTheNcclTestsSize) {
  Graph g = every_kind();
  using K = ir::CollectiveKind;
  // S: the buffer (all_reduce, broadcast), the whole input (reduce_scatter), the whole output
  // (all_gather: n x the input), each rank's buffer (all_to_all), the message (send, recv).
  EXPECT_EQ(comm(work_of(g, "ar"), K::AllReduce), Count(kBytes));
  EXPECT_EQ(comm(work_of(g, "ag"), K::AllGather), Count(kN * kBytes));
  EXPECT_EQ(comm(work_of(g, "rs"), K::ReduceScatter), Count(kBytes));
  EXPECT_EQ(comm(work_of(g, "aa"), K::AllToAll), Count(kBytes));
  EXPECT_EQ(comm(work_of(g, "sd"), K::Send), Count(kBytes));
  EXPECT_EQ(comm(work_of(g, "rv"), K::Recv), Count(kBytes));
  EXPECT_EQ(comm(work_of(g, "bc"), K::Broadcast), Count(kBytes));
  Work ar = work_of(g, "ar");
  ASSERT_TRUE(ar.comm.has_value());
  EXPECT_EQ(ar.comm->kind, K::AllReduce);
  EXPECT_EQ(ar.comm->group.size, 8);
  EXPECT_EQ(ar.comm->payload, Count(kBytes));
  EXPECT_EQ(ar.total_comm_bytes(), Count(kBytes));
  EXPECT_EQ(work_of(g, "ag").comm->payload, Count(kN * kBytes));
}

TEST(CollectiveWork, DramReadsTheInputAndWritesTheResultOnce) {
  Graph g = every_kind();
  EXPECT_EQ(work_of(g, "ar").bytes(), Count(2 * kBytes));
  EXPECT_EQ(work_of(g, "ag").bytes(), Count(kBytes + kN * kBytes));
  EXPECT_EQ(work_of(g, "rs").bytes(), Count(kBytes + kBytes / kN));
  EXPECT_EQ(work_of(g, "sd").bytes_written, Count(0));  // its result is its input
  EXPECT_EQ(work_of(g, "sd").bytes_read, Count(kBytes));
  EXPECT_EQ(work_of(g, "rv").bytes_read, Count(0));     // nothing local to read
  EXPECT_EQ(work_of(g, "rv").bytes_written, Count(kBytes));
}

TEST(CollectiveWork, ReductionsShareTheVectorFlops) {
  Graph g = every_kind();
  // Each rank reduces (n-1)/n of the E elements; avg also divides its E/n results.
  EXPECT_EQ(at(work_of(g, "ar").vector_flops, DType::BF16), Count((kN - 1) * kE / kN));
  EXPECT_EQ(at(work_of(g, "av").vector_flops, DType::BF16),
            Count((kN - 1) * kE / kN + kE / kN));
  EXPECT_EQ(at(work_of(g, "rs").vector_flops, DType::BF16), Count((kN - 1) * kE / kN));
  for (const char* name : {"ag", "aa", "sd", "rv", "bc"})
    EXPECT_EQ(work_of(g, name).total_vector_flops(), Count(0)) << name;
  EXPECT_EQ(work_of(g, "ar").total_macs(), Count(0));
  // A share that does not divide evenly: the busiest rank's, rounded up.
  Graph odd = parse_graph(R"(
    x = f32[5] input
    y = f32[5]{output} collective all_reduce sum {size=3} (x))");
  EXPECT_EQ(work_of(odd, "y").total_vector_flops(), Count((2 * 5 + 2) / 3));  // ceil(10/3)
}

TEST(CollectiveWork, GraphTotalsAddCommunicationByKind) {
  Graph g = every_kind();
  GraphCost c = graph_cost(g);
  using K = ir::CollectiveKind;
  // The send is the graph's output; the recv is never dead either (its peer waits for it).
  // The others reach no output: dead.
  EXPECT_FALSE(c.per_op[op_of(g, "sd").id.value].dead);
  EXPECT_FALSE(c.per_op[op_of(g, "rv").id.value].dead);
  EXPECT_TRUE(c.per_op[op_of(g, "ar").id.value].dead);
  EXPECT_EQ(comm(c.total, K::Send), Count(kBytes));
  EXPECT_EQ(comm(c.total, K::Recv), Count(kBytes));
  EXPECT_EQ(c.total.total_comm_bytes(), Count(2 * kBytes));
  EXPECT_FALSE(c.total.comm.has_value());  // a sum keeps the bytes, not one op's group
  // With every result an output, each kind's payload adds up.
  Graph all = parse_graph(R"(
    x = f32[16] input
    a = f32[16]{output} collective all_reduce sum {size=4} (x)
    b = f32[16]{output} collective all_reduce sum {size=4} (a)
    c = f32[64]{output} collective all_gather {size=4, axis=0} (b))");
  GraphCost ca = graph_cost(all);
  EXPECT_EQ(comm(ca.total, K::AllReduce), Count(2 * 4 * 16));
  EXPECT_EQ(comm(ca.total, K::AllGather), Count(4 * 64));
  // Compulsory traffic: the graph's input once, its outputs once.
  EXPECT_EQ(ca.compulsory_bytes(), Count(4 * (16 + 16 + 16 + 64)));
}

}  // namespace collectives

}  // namespace
}  // namespace solar::cost
