#include "solar/tiling/problem.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "solar/cost/work.h"
#include "solar/ir/text.h"
#include "testing/graph_lookup.h"
#include "solar/tiling/curve.h"

namespace solar::tiling {
namespace {

using testing::op_of;

TEST(Problem, MatmulFromGraph) {
  ir::Graph g = ir::parse_graph(R"(
    a = bf16[8,5] input
    b = f32[5,3] input
    c = f32[8,3]{output} einsum "mk,kn->mn" (a, b))");
  TilingProblem p = problem_from_einsum(g, op_of(g, "c"));
  ASSERT_EQ(p.ranks.size(), 3u);
  ASSERT_EQ(p.tensors.size(), 3u);
  EXPECT_EQ(p.tensors[0].bits, 16);
  EXPECT_EQ(p.tensors[1].bits, 32);
  EXPECT_TRUE(p.output().output);
  EXPECT_EQ(p.points(), Count(8 * 3 * 5));                             // M*N*K
  EXPECT_EQ(p.compulsory_bits, Count(16 * 8 * 5 + 32 * 5 * 3 + 32 * 8 * 3));  // A + B + C bits
}

TEST(Problem, SparseOperandsKeepTheirStorage) {
  ir::Graph g = ir::parse_graph(R"(
    a = bf16[8,12] input
    w = bf16[12,20]{sparsity="2:4"} weight
    u = bf16[20,6]{zeros=0.75} weight
    c = bf16[8,20] einsum "mk,kn->mn" (a, w)
    d = bf16[8,6]{output} einsum "mn,nj->mj" (c, u))");
  TilingProblem p = problem_from_einsum(g, op_of(g, "c"));
  EXPECT_EQ(p.tensors[1].storage.format, StorageFormat::Compressed24);
  EXPECT_EQ(p.tensors[1].group_dim, 1);  // groups of 4 along n, w's last dimension
  EXPECT_EQ(p.tensors[0].group_dim, -1);
  // a dense, w as 12*20/2 values of 16 + 2 bits, c dense.
  EXPECT_EQ(p.compulsory_bits, Count(16 * 8 * 12 + 12 * 20 / 2 * 18 + 16 * 8 * 20));
  TilingProblem q = problem_from_einsum(g, op_of(g, "d"));
  EXPECT_EQ(q.tensors[1].storage, (Storage{StorageFormat::Bitmap, 0.75}));
  // u as a bitmap: one bit per element, then its 120 / 4 nonzeros at 16 bits.
  EXPECT_EQ(q.compulsory_bits, Count(16 * 8 * 20 + (120 + 30 * 16) + 16 * 8 * 6));
  // Reducing keeps the storage and the group dimension, whose rank is not merged.
  ReducedProblem r = reduce_problem(p, true);
  EXPECT_EQ(r.problem.tensors[1].storage.format, StorageFormat::Compressed24);
  ASSERT_GE(r.problem.tensors[1].group_dim, 0);
  const DimAccess& gd = r.problem.tensors[1].dims[r.problem.tensors[1].group_dim];
  EXPECT_EQ(r.problem.ranks[gd.terms[0].rank].name, "n");
}

TEST(Problem, SameTensorTwiceCountsOnceInCompulsory) {
  ir::Graph g = ir::parse_graph(R"(
    a = f32[6,6] input
    c = f32[6,6]{output} einsum "ik,kj->ij" (a, a))");
  TilingProblem p = problem_from_einsum(g, op_of(g, "c"));
  EXPECT_EQ(p.tensors.size(), 3u);
  EXPECT_EQ(p.compulsory_bits, Count(32 * (6 * 6 + 6 * 6)));  // a once + c
}

TEST(Problem, ConvolutionKeepsWindowDims) {
  ir::Graph g = ir::parse_graph(R"(
    x = f32[1,4,9,9] input
    w = f32[6,4,3,3] weight
    y = f32[1,6,4,4]{output} einsum [n=1,k=6,p=4,q=4,c=4,r=3,s=3] sum mul($0,$1) (x[n,c,p*2+r,q*2+s], w[k,c,r,s]) -> [n,k,p,q])");
  TilingProblem p = problem_from_einsum(g, op_of(g, "y"));
  EXPECT_FALSE(p.tensors[0].plain());
  EXPECT_TRUE(p.tensors[1].plain());
  EXPECT_EQ(p.tensors[0].dims[2].terms.size(), 2u);
  // p, q, r, s appear in window dimensions.
  RankMask want = (1u << 2) | (1u << 3) | (1u << 5) | (1u << 6);
  EXPECT_EQ(affine_ranks(p), want);
}

TEST(Problem, FlattenedPermutedReadIsSplitIntoPlainDims) {
  // A copy of a permuted flat input: i0*(8*512*96) + i1*96 + i2*(96*8) + i3 never overlaps.
  ir::Graph g = ir::parse_graph(R"(
    x = f32[50331648] input
    y = f32[128,8,512,96]{output} einsum [i0=128,i1=8,i2=512,i3=96] none $0 (x[i0*393216+i1*96+i2*768+i3]) -> [i0,i1,i2,i3])");
  TilingProblem p = problem_from_einsum(g, op_of(g, "y"));
  EXPECT_TRUE(p.tensors[0].plain());
  ASSERT_EQ(p.tensors[0].dims.size(), 4u);
  EXPECT_EQ(p.tensors[0].dims[0].terms[0].rank, 0);  // largest stride outermost: i0, i2, i1, i3
  EXPECT_EQ(p.tensors[0].dims[1].terms[0].rank, 2);
  EXPECT_EQ(p.tensors[0].elements(), Count(128 * 8 * 512 * 96));  // the elements read
}

TEST(Problem, NonOverlappingWindowIsPlainButOverlappingStaysAWindow) {
  ir::Graph g = ir::parse_graph(R"(
    x = f32[1,4,8,8] input
    w = f32[6,4,2,2] weight
    y = f32[1,6,4,4]{output} einsum [n=1,k=6,p=4,q=4,c=4,r=2,s=2] sum mul($0,$1) (x[n,c,p*2+r,q*2+s], w[k,c,r,s]) -> [n,k,p,q]
    z = f32[1,6,7,7]{output} einsum [n=1,k=6,p=7,q=7,c=4,r=2,s=2] sum mul($0,$1) (x[n,c,p+r,q+s], w[k,c,r,s]) -> [n,k,p,q])");
  // stride 2 = kernel 2: a patchify convolution, which reads each input element once.
  EXPECT_TRUE(problem_from_einsum(g, op_of(g, "y")).tensors[0].plain());
  // stride 1 < kernel 2: windows overlap.
  EXPECT_FALSE(problem_from_einsum(g, op_of(g, "z")).tensors[0].plain());
}

TEST(Problem, ExtentOneTermsDoNotHideAFlattenedBox) {
  // A flat read through a permuted view, with size-1 dims (unsqueeze) whose coefficients
  // collide with the real ones (i4 and i1 both step by 1): Mamba2's clones. The extent-1
  // ranks only ever read position 0, so the dim is still a box of plain dims, not a window
  // whose tile hull the search would enumerate element by element.
  ir::Graph g = ir::parse_graph(R"(
    x = f32[4096] input
    y = f32[8,2,16,1]{output} einsum [i0=8,i1=2,i2=16,i3=1] none $0 (x[i0*512+i1+i2*2+i3]) -> [i0,i1,i2,i3])");
  const TilingProblem p = problem_from_einsum(g, op_of(g, "y"));
  EXPECT_TRUE(p.tensors[0].plain());
  EXPECT_EQ(p.tensors[0].dims.size(), 4u);  // i0, i2, i1 (by stride), then i3 of extent 1
  // The compulsory traffic is what the op reads and writes: 8*2*16 f32 each way.
  EXPECT_EQ(p.compulsory_bits, Count(2 * 8 * 2 * 16 * 32));
}

// Element strides: the row-major distance one step of each access dim moves, the coefficient
// times the tensor dim's stride for a split part; 0 for a part a constant offset shifts
// across its own positions (its steps do not line up with the tensor's rows).
TEST(Problem, ElementStridesOfPlainAndSplitDims) {
  ir::Graph g = ir::parse_graph(R"(
    x = f32[4,3,64] input
    f = f32[768] input
    y = f32[4,3,64]{output} einsum [a=4,b=3,c=64] none exp($0) (x[a,b,c]) -> [a,b,c]
    p = f32[4,8,8]{output} einsum [a=4,b=8,c=8] none $0 (f[a*192+b+c*8+64]) -> [a,b,c]
    q = f32[4,8,8]{output} einsum [a=4,b=8,c=8] none $0 (f[a*192+b+c*8+4]) -> [a,b,c])");
  const TilingProblem py = problem_from_einsum(g, op_of(g, "y"));
  EXPECT_EQ(element_strides(py.tensors[0]), (std::vector<std::int64_t>{3 * 64, 64, 1}));
  EXPECT_EQ(element_strides(py.output()), (std::vector<std::int64_t>{3 * 64, 64, 1}));
  // Split outermost first: a (192), c (8), b (1). The offset 64 is a whole step of a's
  // inner positions (64 < 192, 64 / 192 = 0 steps of a): every part lines up.
  const TilingProblem pp = problem_from_einsum(g, op_of(g, "p"));
  EXPECT_EQ(element_strides(pp.tensors[0]), (std::vector<std::int64_t>{192, 8, 1}));
  // The offset 4 lands inside b's positions (4 + 7 >= 8): b and c no longer line up; a does.
  const TilingProblem pq = problem_from_einsum(g, op_of(g, "q"));
  EXPECT_EQ(element_strides(pq.tensors[0]), (std::vector<std::int64_t>{192, 0, 0}));
}

TEST(Problem, KeptSizeOneDimsAreUnitRanksAndFlattenedOutputsSplit) {
  ir::Graph g = ir::parse_graph(R"(
    x = f32[6,8] input
    m = f32[6,1]{output} einsum [r=6,k=8] max $0 (x[r,k]) -> [r,0]
    y = f32[2,24]{output} einsum [a=2,b=3,c=8] none exp($0) (x[a*3+b,c]) -> [a,b*8+c])");
  const TilingProblem pm = problem_from_einsum(g, op_of(g, "m"));
  ASSERT_EQ(pm.output().dims.size(), 2u);  // the size-1 dim is kept, plain, of a unit rank
  EXPECT_TRUE(pm.output().plain());
  EXPECT_EQ(pm.ranks[pm.output().dims[1].terms[0].rank].extent, 1);
  EXPECT_EQ(pm.compulsory_bits, Count((6 * 8 + 6) * 32));
  const TilingProblem py = problem_from_einsum(g, op_of(g, "y"));
  EXPECT_TRUE(py.output().plain());  // [a, b*8+c] split into a, b, c
  EXPECT_EQ(py.output().tensor_dim, (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(py.tensors[0].tensor_dim, (std::vector<int>{0, 0, 1}));
}

TEST(Problem, PatternsOfNonEinsumOps) {
  ir::Graph g = ir::parse_graph(R"(
    x = f32[6,8] input
    a = i64[6] opaque "argmax" {vector_flops=48, special_ops=0, bytes=96, assumption="a", axis=1} (x)
    k = i64[1,8] opaque "argmin" {vector_flops=48, special_ops=0, bytes=256, assumption="a", axis=0} (x)
    s = f32[6,8] opaque "cumsum" {vector_flops=48, special_ops=0, bytes=384, assumption="a", axis=1} (x)
    t = f32[8,6] move permute {perm=[1,0]} (x)
    x4 = f32[1,1,6,8] move view (x)
    p = i64[1,1,6,7] opaque "pool_argmax" {vector_flops=1, special_ops=0, bytes=1, assumption="a", kernel=[1,2], stride=[1,1], padding=[0,0], dilation=[1,1]} (x4)
    o = f32[6] opaque "sort" {vector_flops=1, special_ops=0, bytes=1, assumption="a"} (x))");
  auto bits = [](const TilingProblem& p) { return p.compulsory_bits; };
  // argmax over the columns: reads x once, writes 6 indices of 64 bits.
  std::optional<TilingProblem> a = problem_from_pattern(g, op_of(g, "a"));
  ASSERT_TRUE(a);
  EXPECT_EQ(bits(*a), Count(6 * 8 * 32 + 6 * 64));
  EXPECT_EQ(a->output().dims.size(), 1u);
  // keepdim argmin over the rows: the kept dim is a unit rank
  std::optional<TilingProblem> k = problem_from_pattern(g, op_of(g, "k"));
  ASSERT_TRUE(k);
  EXPECT_TRUE(k->output().plain());
  EXPECT_EQ(bits(*k), Count(6 * 8 * 32 + 8 * 64));
  // a scan and a permute read and write every element once
  for (const char* name : {"s", "t"}) {
    std::optional<TilingProblem> e = problem_from_pattern(g, op_of(g, name));
    ASSERT_TRUE(e) << name;
    EXPECT_EQ(bits(*e), Count(2 * 6 * 8 * 32)) << name;
  }
  // pool indices: windows of 2 along the last dim
  std::optional<TilingProblem> p = problem_from_pattern(g, op_of(g, "p"));
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->tensors[0].plain());
  EXPECT_EQ(p->output().elements(), Count(6 * 7));
  EXPECT_FALSE(problem_from_pattern(g, op_of(g, "o")));  // a sort has no einsum pattern
  // concat along the columns: each part read once, at its offset; the output written once
  ir::Graph c = ir::parse_graph(R"(
    a = f32[6,3] input
    b = f32[6,5] input
    y = f32[6,8]{output} move concat {axis=1} (a, b))");
  std::optional<TilingProblem> cat = problem_from_pattern(c, op_of(c, "y"));
  ASSERT_TRUE(cat);
  EXPECT_EQ(cat->compulsory_bits, Count((6 * 3 + 6 * 5 + 6 * 8) * 32));
  EXPECT_EQ(cat->tensors[1].dims[1].constant, -3);
  const CurveResult r = attainable_curve(*cat);
  EXPECT_EQ(r.curve.floor().traffic_bytes, Count((6 * 3 + 6 * 5 + 6 * 8) * 4));
  EXPECT_FALSE(problem_from_pattern(g, op_of(g, "x4")));  // nor a view
}

TEST(Problem, MaskedEinsumIsUnsupported) {
  ir::Graph g = ir::parse_graph(R"(
    s = f32[4,4] input
    m = f32[4,4]{output} einsum [q=4,k=4] none mul($0,2) (s[q,k]) -> [q,k] where q >= k)");
  try {
    problem_from_einsum(g, op_of(g, "m"));
    FAIL() << "expected Unsupported";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("masked"), std::string::npos);
  }
}

TEST(Problem, DiagonalAccessIsUnsupported) {
  ir::Graph g = ir::parse_graph(R"(
    a = f32[4,4] input
    d = f32[4]{output} einsum [i=4] none mul($0,1) (a[i,i]) -> [i])");
  try {
    problem_from_einsum(g, op_of(g, "d"));
    FAIL() << "expected Unsupported";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("two dimensions"), std::string::npos);
  }
}

TEST(Problem, ReduceRemovesBatchAndMergesSignatures) {
  ir::Graph g = ir::parse_graph(R"(
    a = f32[2,3,4,5] input
    b = f32[2,5,7] input
    c = f32[2,3,4,7]{output} einsum "bxmk,bkn->bxmn" (a, b))");
  TilingProblem p = problem_from_einsum(g, op_of(g, "c"));
  ReducedProblem r = reduce_problem(p, /*merge_ranks=*/true);
  EXPECT_EQ(r.batch, Count(2));                // b is in every tensor
  ASSERT_EQ(r.problem.ranks.size(), 3u);       // {x,m} merged, n, k
  std::int64_t product = 1;
  for (const Rank& rk : r.problem.ranks) product *= rk.extent;
  EXPECT_EQ(product, 3 * 4 * 7 * 5);           // X*M*N*K
  EXPECT_EQ(r.problem.tensors[0].dims.size(), 2u);  // a: (x*m, k)

  ReducedProblem unmerged = reduce_problem(p, /*merge_ranks=*/false);
  EXPECT_EQ(unmerged.problem.ranks.size(), 4u);  // x, m, n, k
}

TEST(Problem, GemmFactoryChecksExtents) {
  EXPECT_THROW(gemm_problem(0, 4, 4, ir::DType::F32), UserError);
  TilingProblem p = gemm_problem(4, 5, 6, ir::DType::F16);
  EXPECT_EQ(p.compulsory_bits, Count(16 * (4 * 6 + 6 * 5 + 4 * 5)));  // MK + KN + MN at 16 bits
}

}  // namespace
}  // namespace solar::tiling
