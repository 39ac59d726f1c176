#include "solar/cost/work.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string_view>

#include "solar/ir/text.h"

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

const ir::Op& op_of(const Graph& g, std::string_view name) {
  return g.op(*g.producer(*g.find_tensor(name)));
}

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

TEST(OperandFootprint, DiagonalGroupIsEnumerated) {
  // trace: a[i,i] touches the 50 diagonal elements, not 50*50.
  Graph g = parse_graph(R"(
    a = f32[50,50] input
    t = f32[] einsum [i=50] sum $0 (a[i,i]) -> [])");
  const ir::EinsumOp& e = op_of(g, "t").einsum();
  EXPECT_EQ(operand_footprint(e, e.operands[0], g.tensor(*g.find_tensor("a"))), Count(50));
  Work w = work_of(g, "t");
  EXPECT_EQ(w.bytes_read, Count(4 * 50));
  EXPECT_EQ(at(w.vector_flops, DType::F32), Count(50 - 1));  // reduction: points - outputs
}

TEST(OperandFootprint, SharedIndexAcrossDimensions) {
  // a[i, i+j] with i in [0,4), j in [0,3) on a [4,8] tensor: 4*3 distinct (row, col) pairs.
  ir::EinsumOp e;
  e.indices = {{"i", 4}, {"j", 3}};
  ir::Operand op{{ir::AffineExpr::index(0), ir::AffineExpr::make({{0, 1}, {1, 1}}, 0)}, {}};
  ir::Tensor t;
  t.name = "a";
  t.shape = {4, 8};
  EXPECT_EQ(operand_footprint(e, op, t), Count(4 * 3));
}

TEST(OperandFootprint, ConstantOutOfRangeReadsNothing) {
  ir::EinsumOp e;
  e.indices = {{"i", 4}};
  ir::Tensor t;
  t.name = "a";
  t.shape = {4, 2};
  ir::Operand in_range{{ir::AffineExpr::index(0), ir::AffineExpr::constant(1)}, {}};
  ir::Operand out_of_range{{ir::AffineExpr::index(0), ir::AffineExpr::constant(5)}, 0.0};
  EXPECT_EQ(operand_footprint(e, in_range, t), Count(4));
  EXPECT_EQ(operand_footprint(e, out_of_range, t), Count(0));
}

TEST(OperandFootprint, NonContiguousWindowMatchesBruteForce) {
  // 3*p + 5*r - 4 over p<7, r<3 on a dim of 20: compare with a brute-force distinct count.
  ir::EinsumOp e;
  e.indices = {{"p", 7}, {"r", 3}};
  ir::Operand op{{ir::AffineExpr::make({{0, 3}, {1, 5}}, -4)}, 0.0};
  ir::Tensor t;
  t.name = "x";
  t.shape = {20};
  std::vector<bool> seen(20, false);
  for (int p = 0; p < 7; ++p)
    for (int r = 0; r < 3; ++r) {
      int v = 3 * p + 5 * r - 4;
      if (v >= 0 && v < 20) seen[v] = true;
    }
  Count expected = 0;
  for (bool s : seen) expected += s ? 1 : 0;
  EXPECT_EQ(operand_footprint(e, op, t), expected);
}

TEST(OperandFootprint, RandomAffineSubscriptsMatchBruteForce) {
  // Odd trials: one dimension mixing up to three indices (closed form, contiguity test or
  // bitset). Even trials: two such dimensions, usually sharing an index (joint group).
  // Both against a brute-force set of touched (row, col) pairs.
  std::mt19937 rng(12345);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 600; ++trial) {
    ir::EinsumOp e;
    const int n = pick(1, 3);
    for (int i = 0; i < n; ++i) e.indices.push_back({"i" + std::to_string(i), pick(1, 9)});
    ir::Tensor t;
    t.name = "x";
    const bool one_dim = trial % 2 == 1;
    t.shape = {pick(1, 60), one_dim ? 1 : pick(1, 12)};
    ir::Operand op;
    op.pad = 0.0;
    for (int d = 0; d < 2; ++d) {
      if (d == 1 && one_dim) {
        op.subscript.push_back(ir::AffineExpr::constant(0));
        break;
      }
      std::vector<ir::AffineTerm> terms;
      for (int i = 0; i < n; ++i)
        if (pick(0, 2) != 0) terms.push_back({i, pick(-4, 6)});
      op.subscript.push_back(ir::AffineExpr::make(terms, pick(-6, 6)));
    }
    std::set<std::pair<std::int64_t, std::int64_t>> touched;
    std::vector<std::int64_t> at(n, 0);
    for (;;) {
      std::int64_t r = op.subscript[0].evaluate(at.data()), c = op.subscript[1].evaluate(at.data());
      if (r >= 0 && r < t.shape[0] && c >= 0 && c < t.shape[1]) touched.insert({r, c});
      int j = 0;
      for (; j < n; ++j) {
        if (++at[j] < e.indices[j].extent) break;
        at[j] = 0;
      }
      if (j == n) break;
    }
    EXPECT_EQ(operand_footprint(e, op, t), Count(touched.size())) << "trial " << trial;
  }
}

TEST(OperandFootprint, WideSparseWindowIsEnumerated) {
  // 10^9*p + r, p < 4, r < 3: a window of 3e9 values (too wide for a bitset) holding only
  // 4*3 distinct points, counted exactly by enumeration.
  ir::EinsumOp e;
  e.indices = {{"p", 4}, {"r", 3}};
  ir::Operand op{{ir::AffineExpr::make({{0, 1000000000}, {1, 1}}, 0)}, {}};
  ir::Tensor t;
  t.name = "x";
  t.shape = {4000000000};
  EXPECT_EQ(operand_footprint(e, op, t), Count(4 * 3));
}

TEST(OperandFootprint, LargeDiagonalFallsBackToItsLargestDimension) {
  // a[i,i] with 2^23 diagonal points (beyond the 2^22 enumeration limit): the largest single
  // dimension's count, which for a diagonal is exact.
  constexpr std::int64_t N = std::int64_t{1} << 23;
  ir::EinsumOp e;
  e.indices = {{"i", N}};
  ir::Operand op{{ir::AffineExpr::index(0), ir::AffineExpr::index(0)}, {}};
  ir::Tensor t;
  t.name = "a";
  t.shape = {N, N};
  EXPECT_EQ(operand_footprint(e, op, t), Count::from_signed(N));
}

TEST(OperandFootprint, HugeIrregularSubscriptIsALowerBound) {
  // 2*p + 3*r with p, r < 1e8 takes every value in [0, 5(N-1)] except 1 and 5(N-1)-1: too
  // wide to enumerate, so the footprint is a lower bound, never above the true count.
  constexpr std::int64_t N = 100000000;
  ir::EinsumOp e;
  e.indices = {{"p", N}, {"r", N}};
  ir::Operand op{{ir::AffineExpr::make({{0, 2}, {1, 3}}, 0)}, {}};
  ir::Tensor t;
  t.name = "x";
  t.shape = {5 * (N - 1) + 1};
  const Count fp = operand_footprint(e, op, t);
  EXPECT_LE(fp, Count::from_signed(5 * (N - 1) + 1 - 2));  // never an overestimate
  EXPECT_GE(fp, Count::from_signed(N));                     // at least one index's progression
}

TEST(OperandFootprint, SubscriptRankMismatchIsUserError) {
  ir::EinsumOp e;
  e.indices = {{"i", 4}};
  ir::Tensor t;
  t.name = "a";
  t.shape = {4, 2};
  ir::Operand op{{ir::AffineExpr::index(0)}, {}};
  try {
    operand_footprint(e, op, t);
    FAIL() << "expected UserError";
  } catch (const UserError& ex) {
    EXPECT_EQ(ex.kind(), UserError::Kind::InvalidGraph);
    EXPECT_NE(std::string(ex.what()).find("1 expressions for 2 dimensions"), std::string::npos);
  }
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

TEST(TensorBytes, WidthsAndSparsity) {
  ir::Tensor t;
  t.dtype = DType::F6;
  EXPECT_EQ(tensor_bytes(t, Count(5)), Count((5 * 6 + 7) / 8));  // 30 bits round up to 4 bytes
  t.dtype = DType::I4;
  EXPECT_EQ(tensor_bytes(t, Count(7)), Count(4));                 // 28 bits -> 4 bytes
  t.dtype = DType::BF16;
  t.sparsity = ir::Sparsity{0.5, true};
  // 2:4: half the values, each with a 2-bit index, rounded up to whole bytes.
  EXPECT_EQ(tensor_bytes(t, Count(100)), Count((50 * (16 + 2) + 7) / 8));
}

// Unstructured sparsity: min(dense, ceil(n/8) bitmap bytes + ceil(nnz * bits / 8)) with
// nnz = ceil(n * (1 - f)).
TEST(TensorBytes, UnstructuredSparsityUsesTheBitmapFormatWhenSmaller) {
  ir::Tensor t;
  t.dtype = DType::BF16;
  t.sparsity = ir::Sparsity{0.9, false};
  // n = 100: bitmap ceil(100/8) = 13 bytes, nnz = 10 values of 2 bytes.
  EXPECT_EQ(tensor_bytes(t, Count(100)), Count((100 + 7) / 8 + 10 * 2));
  // n = 101: nnz = ceil(101 * 0.1) = ceil(10.1) = 11; bitmap ceil(101/8) = 13.
  EXPECT_EQ(tensor_bytes(t, Count(101)), Count((101 + 7) / 8 + 11 * 2));
  // zeros=0.3 is read as 3/10 (the decimal the IR prints): 10 elements keep 7 nonzeros.
  t.sparsity = ir::Sparsity{0.3, false};
  EXPECT_EQ(tensor_bytes(t, Count(10)), Count((10 + 7) / 8 + 7 * 2));
  // f = 1: only the bitmap.
  t.sparsity = ir::Sparsity{1.0, false};
  EXPECT_EQ(tensor_bytes(t, Count(64)), Count(64 / 8));
  // f = 0: dense.
  t.sparsity = ir::Sparsity{0.0, false};
  EXPECT_EQ(tensor_bytes(t, Count(64)), Count(64 * 2));
  // A small zero fraction does not pay for the bitmap: int4 at f = 0.1 keeps 90 of 100
  // values, 13 + 45 bytes > 50 dense bytes.
  t.dtype = DType::I4;
  t.sparsity = ir::Sparsity{0.1, false};
  EXPECT_EQ(tensor_bytes(t, Count(100)), Count(100 * 4 / 8));
  // f32 at f = 0.5: a 1000-bit bitmap and 500 values of 4 bytes.
  t.dtype = DType::F32;
  t.sparsity = ir::Sparsity{0.5, false};
  EXPECT_EQ(tensor_bytes(t, Count(1000)), Count(1000 / 8 + 500 * 4));
}

TEST(TensorBytes, UnstructuredSparsityIsExactForHugeTensors) {
  const Count two40(std::uint64_t{1} << 40);
  ir::Tensor t;
  t.dtype = DType::I8;
  t.sparsity = ir::Sparsity{0.25, false};
  // n = 2^80: nnz = 3/4 of it = 6 * 2^77 values of one byte; bitmap 2^77 bytes.
  const Count two77 = two40 * Count(std::uint64_t{1} << 37);
  EXPECT_EQ(tensor_bytes(t, two40 * two40), two77 + Count(6) * two77);
  // n = 2^120, f = 0.375 (n * 375 needs more than 128 bits, so f is taken in binary, where
  // it is exactly 3/8): nnz = 5 * 2^117; bitmap 2^117 bytes.
  t.sparsity = ir::Sparsity{0.375, false};
  const Count two117 = two77 * two40;
  EXPECT_EQ(tensor_bytes(t, two40 * two40 * two40), two117 + Count(5) * two117);
}

TEST(TensorBytes, ZeroFractionOutsideZeroToOneIsAnInvalidGraph) {
  ir::Tensor t;
  t.name = "w";
  t.dtype = DType::F32;
  t.sparsity = ir::Sparsity{1.5, false};
  try {
    tensor_bytes(t, Count(8));
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::InvalidGraph);
    EXPECT_NE(std::string(e.what()).find("tensor 'w' has zero fraction 1.5"), std::string::npos);
  }
}

// ---- elementwise and reductions ------------------------------------------------------

TEST(CombineCost, FunctionTable) {
  using ir::Expr;
  using ir::ExprOp;
  Expr x = Expr::operand(0);
  EXPECT_EQ(combine_cost(x).vector_flops, 0u);
  CombineCost sig = combine_cost(Expr::make(ExprOp::Sigmoid, {x}));
  EXPECT_EQ(sig.special_ops, 2u);  // exp, recip
  EXPECT_EQ(sig.vector_flops, 1u);  // add
  CombineCost pw = combine_cost(Expr::make(ExprOp::Pow, {x, Expr::constant(3)}));
  EXPECT_EQ(pw.special_ops, 2u);  // log, exp
  EXPECT_EQ(pw.vector_flops, 1u);  // mul
  // gelu(tanh form) pieces: mul(x, add(1, tanh(x))) = 2 vector + 1 special.
  Expr one_plus_tanh =
      Expr::make(ExprOp::Add, {Expr::constant(1), Expr::make(ExprOp::Tanh, {x})});
  CombineCost gelu = combine_cost(Expr::make(ExprOp::Mul, {x, one_plus_tanh}));
  EXPECT_EQ(gelu.vector_flops, 2u);
  EXPECT_EQ(gelu.special_ops, 1u);
  CombineCost sel = combine_cost(Expr::make(
      ExprOp::Select, {Expr::make(ExprOp::Gt, {x, Expr::constant(0)}), x, Expr::constant(0)}));
  EXPECT_EQ(sel.vector_flops, 2u);  // gt, select
}

// A subexpression that occurs several times is computed once by any implementation, so it
// is counted once: structurally equal subtrees, whether built twice or shared.
TEST(CombineCost, RepeatedSubexpressionCountsOnce) {
  using ir::Expr;
  using ir::ExprOp;
  Expr x = Expr::operand(0), y = Expr::operand(1);
  auto diff = [&] { return Expr::make(ExprOp::Sub, {x, y}); };  // a fresh tree each call
  // (x - y) * (x - y): one sub, one mul.
  CombineCost sq = combine_cost(Expr::make(ExprOp::Mul, {diff(), diff()}));
  EXPECT_EQ(sq.vector_flops, 2u);
  EXPECT_EQ(sq.special_ops, 0u);
  // exp(x) + exp(x): one exp, one add.
  CombineCost e = combine_cost(Expr::make(
      ExprOp::Add, {Expr::make(ExprOp::Exp, {x}), Expr::make(ExprOp::Exp, {x})}));
  EXPECT_EQ(e.special_ops, 1u);
  EXPECT_EQ(e.vector_flops, 1u);
  // Different operands or constants are different values: sub(x, y) and sub(y, x) both count.
  CombineCost two = combine_cost(
      Expr::make(ExprOp::Mul, {diff(), Expr::make(ExprOp::Sub, {y, x})}));
  EXPECT_EQ(two.vector_flops, 3u);
  CombineCost consts = combine_cost(
      Expr::make(ExprOp::Add, {Expr::make(ExprOp::Mul, {x, Expr::constant(2)}),
                               Expr::make(ExprOp::Mul, {x, Expr::constant(3)})}));
  EXPECT_EQ(consts.vector_flops, 3u);
  // softplus with beta = 2 (as lowered): beta*x in the threshold test and in the exponent.
  Expr bx = Expr::make(ExprOp::Mul, {Expr::constant(2), x});
  Expr soft = Expr::make(
      ExprOp::Mul,
      {Expr::make(ExprOp::Log,
                  {Expr::make(ExprOp::Add, {Expr::constant(1), Expr::make(ExprOp::Exp, {bx})})}),
       Expr::constant(0.5)});
  CombineCost sp = combine_cost(Expr::make(
      ExprOp::Select, {Expr::make(ExprOp::Gt, {bx, Expr::constant(20)}), x, soft}));
  EXPECT_EQ(sp.vector_flops, 5u);  // mul (beta x, once), gt, select, add, mul (1/beta)
  EXPECT_EQ(sp.special_ops, 2u);   // exp, log
  // A tree shared 60 levels deep (d = x - y; d = d * d; ...) unfolds to 2^60 nodes; each
  // distinct one is counted once, and found without walking the unfolded tree.
  Expr d = diff();
  for (int i = 0; i < 60; ++i) d = Expr::make(ExprOp::Mul, {d, d});
  EXPECT_EQ(combine_cost(d).vector_flops, 61u);
}

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

TEST(CombineCost, RoundingRemainderAndBitFunctions) {
  using ir::Expr;
  using ir::ExprOp;
  Expr x = Expr::operand(0), y = Expr::operand(1);
  // One vector op each: rounding, sign and the integer bit operations.
  for (ExprOp op : {ExprOp::Floor, ExprOp::Ceil, ExprOp::Trunc, ExprOp::RoundEven, ExprOp::RoundAway,
                    ExprOp::Sign, ExprOp::Not, ExprOp::Popcount, ExprOp::Clz}) {
    CombineCost c = combine_cost(Expr::make(op, {x}));
    EXPECT_EQ(c.vector_flops, 1u) << ir::expr_op_name(op);
    EXPECT_EQ(c.special_ops, 0u) << ir::expr_op_name(op);
  }
  for (ExprOp op : {ExprOp::And, ExprOp::Or, ExprOp::Xor, ExprOp::Shl, ExprOp::Ashr, ExprOp::Lshr}) {
    CombineCost c = combine_cost(Expr::make(op, {x, y}));
    EXPECT_EQ(c.vector_flops, 1u) << ir::expr_op_name(op);
  }
  EXPECT_EQ(combine_cost(Expr::make(ExprOp::IDiv, {x, y})).vector_flops, 2u);  // div, trunc
  EXPECT_EQ(combine_cost(Expr::make(ExprOp::Rem, {x, y})).vector_flops, 4u);  // div, trunc, mul, sub
  EXPECT_EQ(combine_cost(Expr::make(ExprOp::Mod, {x, y})).vector_flops, 6u);  // rem + compare, add
  CombineCost a2 = combine_cost(Expr::make(ExprOp::Atan2, {x, y}));
  EXPECT_EQ(a2.special_ops, 1u);   // atan
  EXPECT_EQ(a2.vector_flops, 2u);  // div, quadrant select
  for (ExprOp op : {ExprOp::Atan, ExprOp::Asin, ExprOp::Acos, ExprOp::ErfInv, ExprOp::Lgamma, ExprOp::Digamma})
    EXPECT_EQ(combine_cost(Expr::make(op, {x})).special_ops, 1u) << ir::expr_op_name(op);
  // A bit reinterpretation is free: only the or and the shift of the RNG idiom count.
  CombineCost rng = combine_cost(Expr::make(
      ExprOp::BitsF32, {Expr::make(ExprOp::Or, {Expr::make(ExprOp::Lshr, {x, Expr::constant(9)}),
                                                Expr::constant(1065353216)})}));
  EXPECT_EQ(rng.vector_flops, 2u);
  EXPECT_EQ(rng.special_ops, 0u);
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

}  // namespace
}  // namespace solar::cost
