#include "solar/cost/graph_cost.h"

#include <gtest/gtest.h>


#include "solar/ir/text.h"

namespace solar::cost {
namespace {

using ir::DType;
using ir::Graph;
using ir::parse_graph;

TEST(GraphCost, ChainCompulsoryExcludesIntermediates) {
  constexpr std::uint64_t M = 32, K = 64, N1 = 128, N2 = 16;
  Graph g = parse_graph(R"(
    x = f32[32,64] input
    w1 = f32[64,128] weight
    w2 = f32[128,16] weight
    h = f32[32,128] einsum "mk,kn->mn" (x, w1)
    r = f32[32,128] einsum [m=32,n=128] none relu($0) (h[m,n]) -> [m,n]
    y = f32[32,16]{output} einsum "mk,kn->mn" (r, w2))");
  GraphCost c = graph_cost(g);
  ASSERT_EQ(c.per_op.size(), 3u);
  EXPECT_EQ(c.num_unanalyzed, 0);
  EXPECT_EQ(c.total.total_macs(), Count(M * N1 * K + M * N2 * N1));
  EXPECT_EQ(c.total.total_vector_flops(), Count(M * N1));  // relu
  // Unfused traffic: every op reads its inputs and writes its output, intermediates included.
  EXPECT_EQ(c.total.bytes(), Count(4 * ((M * K + K * N1 + M * N1) + (M * N1 + M * N1) +
                                        (M * N1 + N1 * N2 + M * N2))));
  // Fused: inputs and weights read once, the output written once; h and r never leave chip.
  EXPECT_EQ(c.compulsory_bytes_read, Count(4 * (M * K + K * N1 + N1 * N2)));
  EXPECT_EQ(c.compulsory_bytes_written, Count(4 * M * N2));
  EXPECT_EQ(c.compulsory_bytes(), Count(4 * (M * K + K * N1 + N1 * N2 + M * N2)));
}

TEST(GraphCost, SourceReadAtItsLargestFootprint) {
  // x is read in part by a slice-like einsum (rows 8..23) and fully by another: the largest.
  Graph g = parse_graph(R"(
    x = f32[64,32] input
    a = f32[16,32]{output} einsum [i=16,j=32] none mul($0,2) (x[i+8,j]) -> [i,j]
    b = f32[64,32]{output} einsum [i=64,j=32] none mul($0,3) (x[i,j]) -> [i,j])");
  GraphCost c = graph_cost(g);
  EXPECT_EQ(c.compulsory_bytes_read, Count(4 * 64 * 32));
  EXPECT_EQ(c.compulsory_bytes_written, Count(4 * (16 * 32 + 64 * 32)));
}

TEST(GraphCost, FootprintFollowsFreeViewsAndSlices) {
  // Only a 16-row slice of x is ever read (through a non-copy slice and a view).
  Graph g = parse_graph(R"(
    x = f32[64,32] input
    s = f32[16,32] move slice {starts=[0,0], ends=[16,32], steps=[1,1]} (x)
    v = f32[512] move view (s)
    y = f32[512]{output} einsum [i=512] none exp($0) (v[i]) -> [i])");
  GraphCost c = graph_cost(g);
  EXPECT_EQ(c.compulsory_bytes_read, Count(4 * 16 * 32));
  EXPECT_EQ(c.total.bytes(), Count(4 * (512 + 512)));  // the views move nothing
}

TEST(GraphCost, SourceReadInDisjointSlicesCountsEveryPart) {
  // unbind(0) of h[4,3,12]: four row slices, each read whole by its own op. Compulsory is
  // the union of the parts (all of h), not the largest single part.
  Graph g = parse_graph(R"(
    h = f32[4,3,12] input
    s0 = f32[1,3,12] move slice {starts=[0,0,0], ends=[1,3,12], steps=[1,1,1]} (h)
    s1 = f32[1,3,12] move slice {starts=[1,0,0], ends=[2,3,12], steps=[1,1,1]} (h)
    s2 = f32[1,3,12] move slice {starts=[2,0,0], ends=[3,3,12], steps=[1,1,1]} (h)
    s3 = f32[1,3,12] move slice {starts=[3,0,0], ends=[4,3,12], steps=[1,1,1]} (h)
    v0 = f32[3,12] move view (s0)
    p = f32[3,12] einsum [i=3,j=12] none mul($0,$1) (v0[i,j], s1[0,i,j]) -> [i,j]
    q = f32[3,12] einsum [i=3,j=12] none mul($0,$1) (s2[0,i,j], s3[0,i,j]) -> [i,j]
    y = f32[3,12]{output} einsum [i=3,j=12] none add($0,$1) (p[i,j], q[i,j]) -> [i,j])");
  GraphCost c = graph_cost(g);
  EXPECT_EQ(c.compulsory_bytes_read, Count(4 * 4 * 3 * 12));  // all four rows of h
}

TEST(GraphCost, OverlappingAndStridedSlicesCountTheirUnion) {
  // Rows [0,6) and [4,10) of x: the union is 10 rows; even and odd columns of w: all of w;
  // a 2-D pair of corner blocks of z overlapping in one 2x2 block: 16 + 16 - 4 elements.
  Graph g = parse_graph(R"(
    x = f32[16,8] input
    a = f32[6,8] move slice {starts=[0,0], ends=[6,8], steps=[1,1]} (x)
    b = f32[6,8] move slice {starts=[4,0], ends=[10,8], steps=[1,1]} (x)
    ya = f32[6,8]{output} einsum [i=6,j=8] none exp($0) (a[i,j]) -> [i,j]
    yb = f32[6,8]{output} einsum [i=6,j=8] none exp($0) (b[i,j]) -> [i,j]
    w = f32[4,8] input
    e = f32[4,4] move slice {starts=[0,0], ends=[4,8], steps=[1,2]} (w)
    o = f32[4,4] move slice {starts=[0,1], ends=[4,8], steps=[1,2]} (w)
    ye = f32[4,4]{output} einsum [i=4,j=4] none add($0,$1) (e[i,j], o[i,j]) -> [i,j]
    z = f32[8,8] input
    c0 = f32[4,4] move slice {starts=[0,0], ends=[4,4], steps=[1,1]} (z)
    c1 = f32[4,4] move slice {starts=[2,2], ends=[6,6], steps=[1,1]} (z)
    yc = f32[4,4]{output} einsum [i=4,j=4] none add($0,$1) (c0[i,j], c1[i,j]) -> [i,j])");
  GraphCost c = graph_cost(g);
  EXPECT_EQ(c.compulsory_bytes_read, Count(4 * (10 * 8 + 4 * 8 + (16 + 16 - 4))));
}

TEST(GraphCost, SlicesReadInPartStillCountOnlyWhatIsRead) {
  // Two slices, each read at one element per row by its consumer: no part is read whole,
  // so the largest single read stands (a union of the slices would overcount).
  Graph g = parse_graph(R"(
    x = f32[8,8] input
    a = f32[4,8] move slice {starts=[0,0], ends=[4,8], steps=[1,1]} (x)
    b = f32[4,8] move slice {starts=[4,0], ends=[8,8], steps=[1,1]} (x)
    y = f32[4]{output} einsum [i=4] none add($0,$1) (a[i,0], b[i,0]) -> [i])");
  GraphCost c = graph_cost(g);
  EXPECT_EQ(c.compulsory_bytes_read, Count(4 * 4));  // 4 elements of one slice
}

TEST(GraphCost, ExpandViewIsCappedAtTheSourceSize) {
  Graph g = parse_graph(R"(
    b = f32[1,64] weight
    e = f32[32,64] move view (b)
    y = f32[32,64]{output} einsum [i=32,j=64] none add($0,1) (e[i,j]) -> [i,j])");
  GraphCost c = graph_cost(g);
  EXPECT_EQ(c.compulsory_bytes_read, Count(4 * 64));  // b holds 64 elements
}

TEST(GraphCost, BroadcastSourceReadAtItsOwnSize) {
  Graph g = parse_graph(R"(
    s = f32[4,8,64,64] input
    mask = f32[1,1,64,64] constant
    y = f32[4,8,64,64]{output} einsum [b=4,h=8,i=64,j=64] none add($0,$1) (s[b,h,i,j], mask[0,0,i,j]) -> [b,h,i,j])");
  GraphCost c = graph_cost(g);
  EXPECT_EQ(c.compulsory_bytes_read, Count(4 * (4 * 8 * 64 * 64 + 64 * 64)));
}

TEST(GraphCost, GatherSourceReadsTheGatheredRows) {
  Graph g = parse_graph(R"(
    emb = bf16[50000,512] weight
    ids = i64[256] input
    h = bf16[256,512]{output} move gather {axis=0} (emb, ids))");
  GraphCost c = graph_cost(g);
  EXPECT_EQ(c.compulsory_bytes_read, Count(2 * 256 * 512 + 8 * 256));
}

TEST(GraphCost, StateUpdatedInPlaceIsReadWhereKeptAndWrittenWhereChanged) {
  // One decode step's key cache: B x H x (C + 1) slots, the new token written into slot C,
  // attention reading all C + 1. The bound reads the C cached tokens once (the new one is on
  // chip) and writes only the new token: the cache is updated in place, never copied whole.
  constexpr std::uint64_t B = 2, H = 4, C = 16, D = 16, BF16 = 2;
  Graph g = parse_graph(R"(
    cache = bf16[2,4,17,16] input
    pos = i64[1] input
    knew = bf16[2,4,1,16] input
    q = bf16[2,4,1,16] input
    k = bf16[2,4,17,16]{output} move scatter {axis=2, mode="take", reduce="none"} (cache, pos, knew)
    s = bf16[2,4,1,17]{output} einsum "bhqd,bhkd->bhqk" (q, k))");
  GraphCost c = graph_cost(g);
  EXPECT_EQ(c.compulsory_bytes_read,
            Count(BF16 * B * H * C * D + 8 + BF16 * B * H * D + BF16 * B * H * D));
  EXPECT_EQ(c.compulsory_bytes_written, Count(BF16 * B * H * D + BF16 * B * H * (C + 1)));
}

TEST(GraphCost, ScatterIntoAFreshTensorWritesItWhole) {
  // Not state: the zeros are made in the graph, so the output holds them and is written whole.
  Graph g = parse_graph(R"(
    zero = f32[64] input
    z = f32[64] move copy (zero)
    idx = i64[4] input
    src = f32[4] input
    y = f32[64]{output} move scatter {axis=0, mode="take", reduce="none"} (z, idx, src))");
  GraphCost c = graph_cost(g);
  EXPECT_EQ(c.compulsory_bytes_written, Count(4 * 64));
}

TEST(GraphCost, OpaqueConsumerReadsTheWholeSource) {
  Graph g = parse_graph(R"(
    x = f32[2,1024] input
    v, i = f32[2,8]{output}, i64[2,8]{output} opaque "topk" {vector_flops=20480, special_ops=0, bytes=8320, assumption="bitonic", k=8} (x))");
  GraphCost c = graph_cost(g);
  EXPECT_EQ(c.compulsory_bytes_read, Count(4 * 2 * 1024));
  EXPECT_EQ(c.compulsory_bytes_written, Count(4 * 2 * 8 + 8 * 2 * 8));
  EXPECT_EQ(c.total.bytes_read, Count(8320));
}

TEST(GraphCost, UnanalyzedOpIsCountedAndItsSourceUnknown) {
  Graph g = parse_graph(R"(
    x = f32[2,128] input
    w = f32[128,65] weight
    f = f32[2,65] unanalyzed "aten::_fft_r2c" {reason="no lowering for FFT"} (x)
    y = f32[2,65]{output} einsum [b=2,k=65] none mul($0,$1) (f[b,k], w[0,k]) -> [b,k])");
  GraphCost c = graph_cost(g);
  EXPECT_EQ(c.num_unanalyzed, 1);
  EXPECT_FALSE(c.per_op[0].analyzed);
  EXPECT_EQ(c.per_op[0].note, "no lowering for FFT");
  EXPECT_EQ(c.total.total_vector_flops(), Count(2 * 65));  // only the analyzed mul
  // x is read only by the unanalyzed op: unknown, counted 0 (coverage shows it); w's
  // first row is read by the einsum.
  EXPECT_EQ(c.compulsory_bytes_read, Count(4 * 65));
}

// A branch whose results reach no output (Mamba2's unreturned diagonal block, through a
// view) is dead: its counts stay on its row, but no total or compulsory read includes it.
TEST(GraphCost, OpsReachingNoOutputAreDead) {
  constexpr std::uint64_t M = 16, K = 32, N = 8;
  Graph g = parse_graph(R"(
    x = f32[16,32] input
    w = f32[32,8] weight
    u = f32[32,8] weight
    y = f32[16,8]{output} einsum "mk,kn->mn" (x, w)
    d = f32[16,8] einsum "mk,kn->mn" (x, u)
    dv = f32[128] move view (d)
    e = f32[128] einsum [i=128] none exp($0) (dv[i]) -> [i])");
  GraphCost c = graph_cost(g);
  EXPECT_EQ(c.num_dead, 3);
  EXPECT_EQ(c.num_unanalyzed, 0);
  EXPECT_FALSE(c.per_op[0].dead);
  for (int i : {1, 2, 3}) EXPECT_TRUE(c.per_op[i].dead && c.per_op[i].analyzed) << i;
  EXPECT_EQ(c.per_op[1].total_macs(), Count(M * N * K));  // what it would cost
  EXPECT_EQ(c.dead_total.total_macs(), Count(M * N * K));
  EXPECT_EQ(c.dead_total.special_ops, Count(M * N));  // exp over d's 128 elements
  EXPECT_EQ(c.total.total_macs(), Count(M * N * K));      // y only
  EXPECT_EQ(c.total.special_ops, Count(0));
  EXPECT_EQ(c.total.bytes(), Count(4 * (M * K + K * N + M * N)));
  // u is read only by the dead matmul: not a compulsory read.
  EXPECT_EQ(c.compulsory_bytes_read, Count(4 * (M * K + K * N)));
}

// Without any output marked there is nothing to prune against: every op counts.
TEST(GraphCost, GraphWithoutOutputsKeepsEveryOp) {
  Graph g = parse_graph(R"(
    x = f32[16,32] input
    w = f32[32,8] weight
    y = f32[16,8] einsum "mk,kn->mn" (x, w)
    e = f32[16,8] einsum [m=16,n=8] none exp($0) (y[m,n]) -> [m,n])");
  GraphCost c = graph_cost(g);
  EXPECT_EQ(c.num_dead, 0);
  EXPECT_EQ(c.total.total_macs(), Count(16 * 8 * 32));
  EXPECT_EQ(c.total.special_ops, Count(16 * 8));
}

TEST(GraphCost, UncountableMaskBecomesUnanalyzed) {
  Graph g = parse_graph(R"(
    x = f32[1024,1024,1024,1024] input
    y = f32[1024,1024,1024,1024]{output} einsum [a=1024,b=1024,c=1024,d=1024] none $0 (x[a,b,c,d]) -> [a,b,c,d] where 2*a + 5*c >= 3*b + 7*d)");
  GraphCost c = graph_cost(g);
  EXPECT_EQ(c.num_unanalyzed, 1);
  EXPECT_FALSE(c.per_op[0].analyzed);
  EXPECT_NE(c.per_op[0].note.find("exceeds the limit"), std::string::npos) << c.per_op[0].note;
  EXPECT_THROW(op_work(g, g.op(ir::OpId{0})), Unsupported);
}

// Speed is measured in bench/ (bench_analyze_100k), not asserted here.
TEST(GraphCost, HundredThousandOpChainCostsExactly) {
  // A chain x -> 100,000 elementwise ops with a shared weight: anything quadratic in the
  // number of ops (per-op scans of the graph) takes seconds here.
  constexpr int kOps = 100000;
  Graph g;
  auto tensor = [&](std::string name, ir::Role role) {
    ir::Tensor t;
    t.name = std::move(name);
    t.shape = {64};
    t.dtype = DType::F32;
    t.role = role;
    return g.add_tensor(std::move(t));
  };
  ir::TensorId prev = tensor("x", ir::Role::Input);
  ir::TensorId w = tensor("w", ir::Role::Weight);
  ir::EinsumOp e;
  e.indices = {{"i", 64}};
  e.operands = {{{ir::AffineExpr::index(0)}, {}}, {{ir::AffineExpr::index(0)}, {}}};
  e.output = {ir::AffineExpr::index(0)};
  e.combine = ir::Expr::make(ir::ExprOp::Add, {ir::Expr::operand(0), ir::Expr::operand(1)});
  for (int i = 0; i < kOps; ++i) {
    ir::TensorId out =
        tensor("t" + std::to_string(i), i + 1 == kOps ? ir::Role::Output : ir::Role::Intermediate);
    ir::Op op;
    op.inputs = {prev, w};
    op.outputs = {out};
    op.body = e;
    g.add_op(std::move(op));
    prev = out;
  }
  GraphCost c = graph_cost(g);
  EXPECT_EQ(c.total.total_vector_flops(), Count(std::uint64_t{64} * kOps));
  EXPECT_EQ(c.compulsory_bytes(), Count(4 * (64 + 64 + 64)));  // x, w, last output
}

TEST(GraphCost, OpsOutOfTopologicalOrderAreRejected) {
  Graph g;
  ir::Tensor a;
  a.name = "a";
  a.shape = {4};
  a.role = ir::Role::Input;
  ir::TensorId ta = g.add_tensor(a);
  ir::Tensor b = a;
  b.name = "b";
  b.role = ir::Role::Intermediate;
  ir::TensorId tb = g.add_tensor(b);
  ir::Tensor c = a;
  c.name = "c";
  c.role = ir::Role::Output;
  ir::TensorId tc = g.add_tensor(c);
  ir::Op use;
  use.inputs = {tb};
  use.outputs = {tc};
  use.body = ir::MoveOp{ir::MoveKind::Copy, {}};
  g.add_op(use);
  ir::Op def;
  def.inputs = {ta};
  def.outputs = {tb};
  def.body = ir::MoveOp{ir::MoveKind::Copy, {}};
  g.add_op(def);
  try {
    graph_cost(g);
    FAIL() << "expected UserError";
  } catch (const UserError& ex) {
    EXPECT_EQ(ex.kind(), UserError::Kind::InvalidGraph);
    EXPECT_NE(std::string(ex.what()).find("topological order"), std::string::npos);
  }
}

}  // namespace
}  // namespace solar::cost
