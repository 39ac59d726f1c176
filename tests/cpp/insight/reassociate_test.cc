// Tests of re-association (src/insight/reassociate.cc): graphs in the text form, MACs as
// formulas, and every rewrite executed against the original on random inputs.
#include "solar/insight/reassociate.h"

#include <cmath>
#include <functional>
#include <random>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "solar/exec/executor.h"
#include "solar/ir/text.h"

namespace solar::insight {
namespace {

// Runs g and r(g) on the same random sources; every output must agree.
void expect_same_function(const ir::Graph& g, const ir::Graph& h, unsigned seed = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0, 1);
  exec::TensorMap sources;
  for (const ir::Tensor& t : g.tensors()) {
    if (!ir::is_graph_source(t.role)) continue;
    exec::Buffer b = exec::Buffer::zeros(ir::DType::F32, t.shape);
    for (std::int64_t i = 0; i < b.num_elements(); ++i) b.data<float>()[i] = normal(rng);
    sources.emplace(t.name, std::move(b));
  }
  const exec::TensorMap a = exec::run_graph(g, sources), b = exec::run_graph(h, sources);
  ASSERT_FALSE(a.empty());
  for (const auto& [name, want] : a) {
    const exec::Buffer& got = b.at(name);
    ASSERT_EQ(got.shape(), want.shape()) << name;
    for (std::int64_t i = 0; i < want.num_elements(); ++i)
      ASSERT_NEAR(got.value(i), want.value(i), 1e-3 * (1 + std::abs(want.value(i)))) << name << "[" << i << "]";
  }
}

TEST(Reassociate, MatrixChainWrittenTheExpensiveWay) {
  // A[10,20] (B[20,5] C[5,30]) as written: 20*5*30 + 10*20*30 MACs; (A B) C: 10*20*5 + 10*5*30.
  ir::Graph g = ir::parse_graph(R"(
    a = f32[10,20] input
    b = f32[20,5] input
    c = f32[5,30] input
    bc = f32[20,30] einsum "kn,nm->km" (b, c)
    y = f32[10,30]{output} einsum "ik,km->im" (a, bc))");
  std::vector<Reassociation> rs = find_reassociations(g);
  ASSERT_EQ(rs.size(), 1u);
  const Reassociation& r = rs[0];
  EXPECT_EQ(r.contractions, 2);
  EXPECT_EQ(r.leaves.size(), 3u);
  EXPECT_EQ(r.macs_as_written, Count(20 * 5 * 30 + 10 * 20 * 30));
  EXPECT_EQ(r.macs_least, Count(10 * 20 * 5 + 10 * 5 * 30));
  EXPECT_EQ(r.macs_absorbed, Count(0));
  EXPECT_EQ(r.order, "((a . b) . c)");
  expect_same_function(g, reassociated(g, r));
}

TEST(Reassociate, OptimalChainIsLeftAlone) {
  ir::Graph g = ir::parse_graph(R"(
    a = f32[10,20] input
    b = f32[20,5] input
    c = f32[5,30] input
    ab = f32[10,5] einsum "ik,kn->in" (a, b)
    y = f32[10,30]{output} einsum "in,nm->im" (ab, c))");
  std::vector<Reassociation> rs = find_reassociations(g);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].macs_least, rs[0].macs_as_written);  // 10*20*5 + 10*5*30 already
}

TEST(Reassociate, SharedIntermediateEndsTheGroup) {
  // ab feeds two contractions: no group spans it.
  ir::Graph g = ir::parse_graph(R"(
    a = f32[4,6] input
    b = f32[6,8] input
    c = f32[8,2] input
    ab = f32[4,8] einsum "ik,kn->in" (a, b)
    y = f32[4,2]{output} einsum "in,nm->im" (ab, c)
    z = f32[8,8]{output} einsum "in,im->nm" (ab, ab))");
  EXPECT_TRUE(find_reassociations(g).empty());
}

TEST(Reassociate, AbsorbedUpProjectionOfLowRankKeys) {
  // MLA decode, one head group: q[h,d] (one query) against T cached latents c[t,r] whose keys
  // are k[t,h,d] = c[t,r] W[r,h,d]. As written: k costs T*R*H*D, the scores T*H*D. Absorbing
  // W into the query: q'[h,r] = q[h,d] W[r,h,d] costs H*D*R, the scores then T*H*R.
  const int T = 64, R = 16, H = 4, D = 8;
  ir::Graph g = ir::parse_graph(fmt::format(R"(
    q = f32[{H},{D}] input
    c = f32[{T},{R}] input
    w = f32[{R},{HD}] weight
    k = f32[{T},{HD}] einsum "tr,rn->tn" (c, w)
    kh = f32[{T},{H},{D}] move view (k)
    s = f32[{H},{T}]{{output}} einsum "hd,thd->ht" (q, kh))", fmt::arg("H", H), fmt::arg("D", D),
                                            fmt::arg("T", T), fmt::arg("R", R),
                                            fmt::arg("HD", H * D)));
  std::vector<Reassociation> rs = find_reassociations(g);
  ASSERT_EQ(rs.size(), 1u);
  const Reassociation& r = rs[0];
  EXPECT_EQ(r.macs_as_written, Count(T * R * H * D + H * T * D));
  EXPECT_EQ(r.macs_least, Count(H * D * R + T * H * R));
  EXPECT_EQ(r.order, "((q . w) . c)");
  expect_same_function(g, reassociated(g, r));
}

TEST(Reassociate, WeightOnlyProductsAreAbsorbed) {
  // x[B,D] W1[D,E] W2[E,F]: with E > D, F precomputing W1 W2 costs D*E*F once; per run B*D*F.
  const int B = 4, D = 8, E = 64, F = 8;
  ir::Graph g = ir::parse_graph(fmt::format(R"(
    x = f32[{B},{D}] input
    w1 = f32[{D},{E}] weight
    w2 = f32[{E},{F}] weight
    h = f32[{B},{E}] einsum "bd,de->be" (x, w1)
    y = f32[{B},{F}]{{output}} einsum "be,ef->bf" (h, w2))", fmt::arg("B", B), fmt::arg("D", D),
                                            fmt::arg("E", E), fmt::arg("F", F)));
  std::vector<Reassociation> rs = find_reassociations(g);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].macs_as_written, Count(B * D * E + B * E * F));
  EXPECT_EQ(rs[0].macs_least, Count(B * D * F));
  EXPECT_EQ(rs[0].macs_absorbed, Count(D * E * F));
  EXPECT_EQ(rs[0].order, "(x . (w1 . w2)')");
  expect_same_function(g, reassociated(g, rs[0]));
}

TEST(Reassociate, ReshapeThatMovesDataIsNotARelabeling) {
  // [6,4] -> [4,6] is not a split or merge of dimensions: the chain stops there.
  ir::Graph g = ir::parse_graph(R"(
    a = f32[6,3] input
    b = f32[3,4] input
    c = f32[6,5] input
    ab = f32[6,4] einsum "ik,kn->in" (a, b)
    v = f32[4,6] move view (ab)
    y = f32[4,5]{output} einsum "ij,jm->im" (v, c))");
  EXPECT_TRUE(find_reassociations(g).empty());
}

TEST(Reassociate, TransposeMaterializedOutOfAFlatViewIsARelabeling) {
  // As the torch lowering writes k.transpose(1, 2) of a [B, T, H, D] view before a bmm: a flat
  // view and a copy reading it in mixed radix, beside a dead alias view of k (which the rewrite
  // drops with k). The chain still links (q . (c . w)) -> ((q . w) . c).
  const int B = 2, T = 32, H = 2, D = 4, R = 8;
  ir::Graph g = ir::parse_graph(fmt::format(R"(
    q = f32[{B},{H},1,{D}] input
    c = f32[{BT},{R}] input
    w = f32[{R},{HD}] weight
    k = f32[{BT},{HD}] einsum "tr,rn->tn" (c, w)
    kv = f32[{B},{T},{H},{D}] move view (k)
    unused = f32[{B},{T},{H},{D}] move view (k)
    flat = f32[{N}] move view (kv)
    kt = f32[{B},{H},{D},{T}] einsum [b={B},h={H},d={D},t={T}] none $0 (flat[b*{TS}+h*{D}+d+t*{HD}]) -> [b,h,d,t]
    kb = f32[{BH},{D},{T}] move view (kt)
    qb = f32[{BH},1,{D}] move view (q)
    s = f32[{BH},1,{T}]{{output}} einsum [x={BH},m=1,d={D},t={T}] sum mul($0,$1) (qb[x,m,d], kb[x,d,t]) -> [x,m,t])",
      fmt::arg("B", B), fmt::arg("T", T), fmt::arg("H", H), fmt::arg("D", D), fmt::arg("R", R),
      fmt::arg("BT", B * T), fmt::arg("HD", H * D), fmt::arg("N", B * T * H * D),
      fmt::arg("TS", T * H * D), fmt::arg("BH", B * H)));
  std::vector<Reassociation> rs = find_reassociations(g);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].macs_as_written, Count(B * T * R * H * D + B * H * D * T));
  EXPECT_EQ(rs[0].macs_least, Count(B * H * D * R + B * H * R * T));
  expect_same_function(g, reassociated(g, rs[0]));
}

// ---------------------------------------------------------------- random chains

// The least cost of a chain of matrices d[0] x d[1] x ... x d[n] by the textbook recursion.
std::int64_t matrix_chain(const std::vector<std::int64_t>& d) {
  const std::size_t n = d.size() - 1;
  std::vector<std::vector<std::int64_t>> m(n, std::vector<std::int64_t>(n, 0));
  for (std::size_t len = 2; len <= n; ++len)
    for (std::size_t i = 0; i + len <= n; ++i) {
      const std::size_t j = i + len - 1;
      m[i][j] = INT64_MAX;
      for (std::size_t k = i; k < j; ++k)
        m[i][j] = std::min(m[i][j], m[i][k] + m[k + 1][j] + d[i] * d[k + 1] * d[j + 1]);
    }
  return m[0][n - 1];
}

TEST(ReassociateProperty, RandomChainsReachTheTextbookOptimumAndKeepTheFunction) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 60; ++trial) {
    const int n = 3 + static_cast<int>(rng() % 4);  // 3..6 matrices
    std::vector<std::int64_t> d;
    for (int k = 0; k <= n; ++k) d.push_back(1 + static_cast<std::int64_t>(rng() % 12));
    std::string text;
    for (int k = 0; k < n; ++k) text += fmt::format("m{} = f32[{},{}] input\n", k, d[k], d[k + 1]);
    // a random parenthesization, written op by op: contract a random adjacent pair
    std::vector<std::string> names;
    std::vector<std::pair<std::int64_t, std::int64_t>> shapes;
    for (int k = 0; k < n; ++k) names.push_back(fmt::format("m{}", k)), shapes.push_back({d[k], d[k + 1]});
    std::int64_t written = 0;
    for (int step = 0; names.size() > 1; ++step) {
      const std::size_t i = rng() % (names.size() - 1);
      const auto [r0, c0] = shapes[i];
      const auto [r1, c1] = shapes[i + 1];
      const std::string out = names.size() == 2 ? "y" : fmt::format("p{}", step);
      text += fmt::format("{} = f32[{},{}]{} einsum \"ik,kj->ij\" ({}, {})\n", out, r0, c1,
                          names.size() == 2 ? "{output}" : "", names[i], names[i + 1]);
      written += r0 * c0 * c1;
      names[i] = out;
      shapes[i] = {r0, c1};
      names.erase(names.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      shapes.erase(shapes.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    }
    ir::Graph g = ir::parse_graph(text);
    std::vector<Reassociation> rs = find_reassociations(g);
    ASSERT_EQ(rs.size(), 1u) << text;
    EXPECT_EQ(rs[0].macs_as_written, Count(static_cast<std::uint64_t>(written))) << text;
    // Size-1 dimensions leave labels out of the network, which can only help: the search
    // finds at most the chain's optimum, and exactly it when no extent is 1.
    const std::int64_t optimum = matrix_chain(d);
    EXPECT_LE(rs[0].macs_least, Count(static_cast<std::uint64_t>(optimum))) << text;
    if (std::find(d.begin(), d.end(), 1) == d.end())
      EXPECT_EQ(rs[0].macs_least, Count(static_cast<std::uint64_t>(optimum))) << text;
    expect_same_function(g, reassociated(g, rs[0]), static_cast<unsigned>(trial));
  }
}

}  // namespace
}  // namespace solar::insight
