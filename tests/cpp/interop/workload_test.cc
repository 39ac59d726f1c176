#include "solar/interop/workload.h"

#include <gtest/gtest.h>

#include "solar/cost/graph_cost.h"
#include "solar/ir/text.h"

namespace solar::interop {
namespace {

Workload workload_of(const ir::Graph& g) { return build_workload(g, cost::graph_cost(g)); }

const WorkloadEinsum& einsum_named(const Workload& w, const std::string& name) {
  for (const WorkloadEinsum& e : w.einsums)
    if (e.solar_name == name) return e;
  throw std::runtime_error("no einsum " + name);
}

std::vector<std::string> projection(const Workload& w, const WorkloadEinsum& e, std::size_t k) {
  std::vector<std::string> out;
  for (const ir::AffineExpr& x : e.accesses.at(k).projection)
    out.push_back(isl_affine(x, e.rank_variables));
  (void)w;
  return out;
}

TEST(BuildWorkload, GemmIsOneEinsumOfMNKOperations) {
  ir::Graph g = ir::parse_graph(R"(
    graph gemm
    a = bf16[10,5]{dims="M,K"} input
    b = bf16[5,30] weight
    c = f32[10,30]{output} einsum "mk,kn->mn" (a, b))");
  Workload w = workload_of(g);
  ASSERT_EQ(w.einsums.size(), 1u);
  const WorkloadEinsum& e = w.einsums[0];
  EXPECT_EQ(e.rank_variables, (std::vector<std::string>{"m", "n", "k"}));
  EXPECT_EQ(e.live_points, Count(10 * 30 * 5));  // every point of the box is one MAC
  EXPECT_EQ(e.macs, Count(10 * 30 * 5));
  EXPECT_EQ(e.contraction, cost::ContractionClass::Matmul);
  ASSERT_EQ(e.accesses.size(), 3u);
  EXPECT_FALSE(e.accesses[0].output);
  EXPECT_TRUE(e.accesses[2].output);
  EXPECT_EQ(projection(w, e, 0), (std::vector<std::string>{"m", "k"}));
  EXPECT_EQ(projection(w, e, 1), (std::vector<std::string>{"k", "n"}));
  EXPECT_EQ(w.tensor_of(e.accesses[0]).ranks, (std::vector<std::string>{"A_M", "A_K"}));  // dims=
  EXPECT_EQ(w.tensor_of(e.accesses[1]).ranks, (std::vector<std::string>{"B_K", "B_N"}));  // first use
  EXPECT_EQ(e.accesses[0].footprint, Count(10 * 5));
  EXPECT_EQ(w.total_macs(), Count(10 * 30 * 5));
}

TEST(BuildWorkload, AnEmptyIterationSpaceIsLeftOutWithItsReason) {
  ir::Graph g = ir::parse_graph(R"(
    a = f32[10,0] input
    b = f32[0,30] weight
    c = f32[10,30]{output} einsum "mk,kn->mn" (a, b)
    d = f32[10,30]{output} einsum [m=10,n=30] none exp($0) (c[m,n]) -> [m,n])");
  Workload w = workload_of(g);
  ASSERT_EQ(w.einsums.size(), 1u);
  EXPECT_EQ(w.einsums[0].solar_name, "d");
  ASSERT_EQ(w.left_out.size(), 1u);
  EXPECT_EQ(w.left_out[0].op, "c");
  EXPECT_NE(w.left_out[0].reason.find("empty iteration space"), std::string::npos);
}

TEST(BuildWorkload, StridedPaddedConvolutionKeepsItsAffineProjection) {
  ir::Graph g = ir::parse_graph(R"(
    x = f32[2,8,32,32] input
    w = f32[16,8,3,3] weight
    y = f32[2,16,16,16]{output} einsum [n=2,k=16,p=16,q=16,c=8,r=3,s=3] sum mul($0,$1) (x[n,c,p*2+r-1,q*2+s-1] pad 0, w[k,c,r,s]) -> [n,k,p,q])");
  Workload w = workload_of(g);
  const WorkloadEinsum& e = w.einsums.at(0);
  EXPECT_EQ(projection(w, e, 0), (std::vector<std::string>{"n", "c", "2*p + r - 1", "2*q + s - 1"}));
  EXPECT_EQ(e.macs, Count(2 * 16 * 16 * 16 * 8 * 3 * 3));  // the halo's MACs included
  EXPECT_EQ(e.live_points, e.macs);
  EXPECT_EQ(e.contraction, cost::ContractionClass::Convolution);
  // Rows -1..31 touched, 0..31 in range: the footprint is the whole input.
  EXPECT_EQ(e.accesses[0].footprint, Count(2 * 8 * 32 * 32));
  EXPECT_EQ(e.accesses[0].pad, 0.0);
}

TEST(BuildWorkload, MaskedEinsumCountsItsLivePoints) {
  ir::Graph g = ir::parse_graph(R"(
    a = f32[4,256] input
    s = f32[4,4]{output} einsum [q=4,k=4,n=256] sum mul($0,$1) (a[q,n], a[k,n]) -> [q,k] where q-k >= 0)");
  Workload w = workload_of(g);
  const WorkloadEinsum& e = w.einsums.at(0);
  EXPECT_EQ(e.box_points, Count(4 * 4 * 256));
  EXPECT_EQ(e.live_points, Count(10 * 256));  // q >= k: 4*5/2 pairs
  // Both targets key accesses by tensor: the second read of a is an alias.
  EXPECT_EQ(w.tensor_of(e.accesses[0]).name, "a");
  EXPECT_EQ(w.tensor_of(e.accesses[1]).name, "a__1");
  EXPECT_EQ(w.tensor_of(e.accesses[1]).alias_of, "a");
}

TEST(BuildWorkload, ViewsAndPermutesFoldIntoTheConsumersProjection) {
  // q = x @ wq, split into heads by a view, transposed by a permute, then read by QK^T:
  // the scores einsum reads q itself.
  ir::Graph g = ir::parse_graph(R"(
    x = f32[8,64] input
    wq = f32[64,64] weight
    q = f32[8,64] einsum "sd,de->se" (x, wq)
    qh = f32[8,4,16] move view (q)
    qt = f32[4,8,16] move permute {perm=[1,0,2]} (qh)
    s = f32[4,8,8]{output} einsum "hid,hjd->hij" (qt, qt))");
  Workload w = workload_of(g);
  ASSERT_EQ(w.einsums.size(), 2u);
  const WorkloadEinsum& s = einsum_named(w, "s");
  EXPECT_EQ(w.tensor_of(s.accesses[0]).name, "q");
  // qt[h,i,d] = qh[i,h,d] = q[i, h*16 + d]
  EXPECT_EQ(projection(w, s, 0), (std::vector<std::string>{"i", "16*h + d"}));
  EXPECT_EQ(s.accesses[0].folded, (std::vector<std::string>{"qt", "qh"}));
  EXPECT_EQ(w.folded, (std::vector<std::string>{"qh", "qt"}));
  EXPECT_TRUE(w.left_out.empty());
  EXPECT_EQ(s.accesses[0].footprint, Count(8 * 64));
}

TEST(BuildWorkload, AViewThatIsNotAffineStaysAnInput) {
  // [6,4] -> [8,3]: no common refinement of the two shapes, so the view is left out and
  // its output is what the einsum reads.
  ir::Graph g = ir::parse_graph(R"(
    a = f32[6,4] input
    b = f32[8,3] move view (a)
    c = f32[8]{output} einsum "ij->i" (b))");
  Workload w = workload_of(g);
  EXPECT_EQ(w.tensor_of(w.einsums[0].accesses[0]).name, "b");
  ASSERT_EQ(w.left_out.size(), 1u);
  EXPECT_EQ(w.left_out[0].op, "b");
  EXPECT_EQ(w.left_out[0].kind, "move:view");
}

TEST(BuildWorkload, CollectivesAreLeftOutWithTheirReason) {
  // A collective moves data between devices; a workload is one device's loop nests.
  ir::Graph g = ir::parse_graph(R"(
    x = f32[4,8] input
    w = f32[8,8] weight
    p = f32[4,8] einsum "mk,kn->mn" (x, w)
    y = f32[4,8]{output} collective all_reduce sum {size=2, group="tp"} (p))");
  Workload w = workload_of(g);
  ASSERT_EQ(w.einsums.size(), 1u);
  ASSERT_EQ(w.left_out.size(), 1u);
  EXPECT_EQ(w.left_out[0].op, "y");
  EXPECT_EQ(w.left_out[0].kind, "collective");
  EXPECT_NE(w.left_out[0].reason.find("all_reduce over 2 ranks moves data between devices"),
            std::string::npos)
      << w.left_out[0].reason;
}

TEST(BuildWorkload, OpaqueCastAndDeadOpsAreLeftOutWithReasons) {
  ir::Graph g = ir::parse_graph(R"(
    x = f32[4,8] input
    v, i = f32[4,2], i64[4,2] opaque "topk" {vector_flops=96, special_ops=0, bytes=256, assumption="one pass", k=2} (x)
    h = bf16[4,2] move cast (v)
    y = bf16[4]{output} einsum "ij->i" (h)
    z = f32[4] einsum "ij->i" (x))");
  Workload w = workload_of(g);
  ASSERT_EQ(w.einsums.size(), 1u);
  EXPECT_EQ(w.einsums[0].solar_name, "y");
  std::vector<std::string> kinds;
  for (const LeftOut& l : w.left_out) kinds.push_back(l.kind + ":" + l.op);
  EXPECT_EQ(kinds, (std::vector<std::string>{"opaque:v", "einsum:z", "move:cast:h"}));
}

TEST(BuildWorkload, NamesAreSanitizedAndKeepClearOfRankVariables) {
  // Tensor k and index k: AccelForge has one symbol table for both.
  ir::Graph g = ir::parse_graph(R"(
    "layer1/x:0" = f32[4,3] input
    k = f32[3,5] weight
    "0out" = f32[4,5]{output} einsum "ik,kj->ij" ("layer1/x:0", k))");
  Workload w = workload_of(g);
  const WorkloadEinsum& e = w.einsums[0];
  EXPECT_EQ(e.name, "t0out");
  EXPECT_EQ(w.tensor_of(e.accesses[0]).name, "layer1_x_0");
  EXPECT_EQ(w.tensor_of(e.accesses[1]).name, "k_t");
  EXPECT_EQ(sanitize_identifier("_a.b"), "t_a_b");
}

TEST(BuildWorkload, AGraphWithoutEinsumsIsAnError) {
  ir::Graph g = ir::parse_graph(R"(
    x = f32[4,8] input
    y = f32[8,4]{output} move permute {perm=[1,0]} (x))");
  try {
    workload_of(g);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::InvalidGraph);
    EXPECT_NE(std::string(e.what()).find("no live einsum"), std::string::npos);
  }
}

}  // namespace
}  // namespace solar::interop
