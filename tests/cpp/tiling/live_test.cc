// Masked einsums tiled by their live region (live.h): live-tile counts, the closed form
// against the tile-by-tile simulation, and the ski-slope of causal attention.
#include <algorithm>
#include <numeric>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "solar/cost/graph_cost.h"
#include "solar/ir/text.h"
#include "solar/tiling/curve.h"
#include "solar/tiling/fusion.h"
#include "solar/tiling/mapping.h"
#include "solar/tiling/provable.h"
#include "solar/tiling/simulate.h"

namespace solar::tiling {
namespace {

// The problem of the graph's last op in `mode`.
TilingProblem last_problem(const std::string& text, MaskedEinsum mode = MaskedEinsum::Live) {
  ir::Graph g = ir::parse_graph(text);
  return problem_from_einsum(g, g.ops().back(), mode);
}

// Causal QK^T: s[l, k] = sum_e q[l, e] k[k, e], live where k <= l (torch's is_causal).
std::string causal_scores(int n, int e, const std::string& mask = "l >= k") {
  return "q = f32[" + std::to_string(n) + "," + std::to_string(e) + "] input\n" +
         "k = f32[" + std::to_string(n) + "," + std::to_string(e) + "] input\n" +
         "s = f32[" + std::to_string(n) + "," + std::to_string(n) +
         "]{output} einsum [l,k,e] sum mul($0,$1) (q[l,e], k[k,e]) -> [l,k] where " + mask;
}

// Causal P V: o[l, d] = sum_k p[l, k] v[k, d], live where k <= l.
std::string causal_pv(int n, int d) {
  return "p = f32[" + std::to_string(n) + "," + std::to_string(n) + "] input\n" +
         "v = f32[" + std::to_string(n) + "," + std::to_string(d) + "] input\n" +
         "o = f32[" + std::to_string(n) + "," + std::to_string(d) +
         "]{output} einsum [l,k,d] sum mul($0,$1) (p[l,k], v[k,d]) -> [l,d] where l >= k";
}

// K's DRAM reads under tiles (tl, tk) of l and k, e whole, order (l, k): K's tile is loaded
// once per (query tile, key tile) pair that holds a live point.
Count key_reads(const TilingProblem& p, std::int64_t tl, std::int64_t tk) {
  return evaluate_mapping(p, Mapping{{tl, tk, p.ranks[2].extent}, {0, 1}, {}}).access_elements[1];
}

TEST(LiveTiles, CausalTilesOnAndBelowTheDiagonal) {
  const TilingProblem p = last_problem(causal_scores(8, 4));
  // Tiles of 2 x 2: block (i, j) holds a live point when j <= i: 4 * 5 / 2 pairs, each
  // loading 2 keys of 4.
  EXPECT_EQ(key_reads(p, 2, 2), Count(10 * 2 * 4));
  // Tiles of 3 (3, 3, 2): blocks j <= i, each its key tile: 3 + (3 + 3) + (3 + 3 + 2) keys.
  EXPECT_EQ(key_reads(p, 3, 3), Count((3 + 6 + 8) * 4));
  // Whole ranks: one tile, live.
  EXPECT_EQ(key_reads(p, 8, 8), Count(8 * 4));
}

TEST(LiveTiles, BandOfThreeKeys) {
  // k <= l and k >= l - 2: with tiles of 2, block (i, j) is live for j in {i - 1, i}: 4 + 3.
  const TilingProblem p = last_problem(causal_scores(8, 4, "l >= k, k >= l - 2"));
  EXPECT_EQ(key_reads(p, 2, 2), Count(7 * 2 * 4));
  // Tiles of 1: the band's points themselves, 1 + 2 + 3 * 6.
  EXPECT_EQ(key_reads(p, 1, 1), Count(21 * 4));
}

TEST(LiveTiles, NoLivePointStillReadsAndWritesOnce) {
  // Masks do not shrink footprints: K is read once, S written once (all 0).
  const TilingProblem p = last_problem(causal_scores(8, 4, "k >= l + 8"));
  const MappingCost c = evaluate_mapping(p, Mapping{{2, 2, 4}, {0, 1}, {}});
  EXPECT_EQ(c.access_elements[1], Count(8 * 4));
  EXPECT_EQ(c.access_elements[2], Count(8 * 8));
}

// Every mapping of small masked problems: the closed form counts what the loop nest that
// skips dead tiles moves, tensor by tensor.
TEST(LiveMapping, ClosedFormMatchesTheSimulation) {
  const std::vector<std::string> masks = {"l >= k", "l >= k + 2", "k >= l - 1, l >= k",
                                          "l + k >= 6", "k >= l + 1"};
  for (const std::string& mask : masks) {
    for (const std::string& text : {causal_scores(7, 3, mask), causal_pv(7, 3)}) {
      if (text.find("where l >= k") != std::string::npos && mask != "l >= k") continue;
      TilingProblem p = last_problem(text);
      std::vector<int> ranks(p.ranks.size());
      std::iota(ranks.begin(), ranks.end(), 0);
      for (std::int64_t t0 : {1, 2, 3, 7})
        for (std::int64_t t1 : {1, 3, 4, 7})
          for (std::int64_t t2 : {1, 2, 3}) {
            std::vector<int> order = ranks;
            do {
              Mapping m{{t0, t1, t2}, order, {}};
              const MappingCost closed = evaluate_mapping(p, m);
              const MappingCost sim = simulate_mapping(p, m);
              for (std::size_t t = 0; t < p.tensors.size(); ++t)
                EXPECT_EQ(closed.access_elements[t], sim.access_elements[t])
                    << mask << " tiles " << t0 << "," << t1 << "," << t2 << " order " << order[0]
                    << order[1] << order[2] << " tensor " << p.tensors[t].name;
            } while (std::next_permutation(order.begin(), order.end()));
          }
    }
  }
}

TEST(LiveMapping, OneTileMovesTheCompulsoryTraffic) {
  TilingProblem p = last_problem(causal_scores(64, 16));
  MappingCost c = evaluate_mapping(p, Mapping{{64, 64, 16}, {}, {}});
  EXPECT_EQ(c.traffic_bits, p.compulsory_bits);  // q, k read once, s written once
}

TEST(LiveMapping, DeadTilesAreNotLoaded) {
  // Key tiles of 16 inside query tiles of 16 (order l, k), e whole: K is loaded once per live
  // (query tile, key tile) pair, 4 * 5 / 2 = 10 of the 16 the box loads; Q once per query
  // tile; S written once (its dead tiles too: they hold 0).
  TilingProblem p = last_problem(causal_scores(64, 8));
  const Mapping m{{16, 16, 8}, {0, 1}, {}};
  const MappingCost live = evaluate_mapping(p, m);
  const MappingCost box = evaluate_mapping(last_problem(causal_scores(64, 8), MaskedEinsum::Box), m);
  EXPECT_EQ(live.access_elements[0], Count(64 * 8));           // Q
  EXPECT_EQ(live.access_elements[1], Count(10 * 16 * 8));      // K: live pairs x tile
  EXPECT_EQ(box.access_elements[1], Count(16 * 16 * 8));       // K: every pair
  EXPECT_EQ(live.access_elements[2], Count(64 * 64));          // S once
}

std::vector<Count> capacities() {
  std::vector<Count> s;
  for (std::uint64_t c = 1024; c <= (std::uint64_t{1} << 24); c *= 2) s.push_back(Count(c));
  return s;
}

// The ski-slope Q(S) of a causal contraction: below its box's, never below its provable
// bound (which counts the live MACs), and the compulsory traffic once everything fits.
void check_ski_slope(const std::string& text) {
  SCOPED_TRACE(text);
  const TilingProblem live = last_problem(text, MaskedEinsum::Live);
  const TilingProblem box = last_problem(text, MaskedEinsum::Box);
  const CurveResult cl = attainable_curve(live), cb = attainable_curve(box);
  bool below_somewhere = false;
  for (Count s : capacities()) {
    const std::optional<Count> ql = cl.curve.traffic_at(s), qb = cb.curve.traffic_at(s);
    ASSERT_TRUE(ql && qb) << s.str();
    EXPECT_LE(*ql, *qb) << "at " << s.str();
    below_somewhere = below_somewhere || *ql < *qb;
    EXPECT_GE(*ql, provable_bound(live, true, s).traffic_bytes) << "at " << s.str();
    EXPECT_GE(*ql, cl.compulsory_bytes);
  }
  EXPECT_TRUE(below_somewhere);
  EXPECT_EQ(cl.curve.floor().traffic_bytes, cl.compulsory_bytes);
  EXPECT_EQ(cl.compulsory_bytes, cb.compulsory_bytes);  // masks do not shrink footprints
}

TEST(LiveCurve, CausalScoresBelowTheBoxAboveTheBound) { check_ski_slope(causal_scores(512, 64)); }
TEST(LiveCurve, CausalPvBelowTheBoxAboveTheBound) { check_ski_slope(causal_pv(512, 64)); }

TEST(LiveCurve, CausalScoresHalveWhatTheBoxMovesAboveCompulsory) {
  // 1024 x 1024 x 64 f32 at 32 KiB: Q, K read and S written once (4.7 MB) plus re-reads;
  // the box re-reads every (query tile, key tile) pair, the live tiles the lower triangle's:
  // (T + 1) / 2T of them.
  const std::string text = causal_scores(1024, 64);
  const Count s(32 * 1024);
  const CurveResult live = attainable_curve(last_problem(text));
  const Count ql = *live.curve.traffic_at(s);
  const Count qb = *attainable_curve(last_problem(text, MaskedEinsum::Box)).curve.traffic_at(s);
  const double ratio = (ql - live.compulsory_bytes).to_double() /
                       (qb - live.compulsory_bytes).to_double();
  EXPECT_GT(ratio, 0.45);
  EXPECT_LT(ratio, 0.6);
}

TEST(LiveCurve, ProvableBoundCountsTheLiveMacs) {
  // 2 G / sqrt(S) grows with G: the causal P V's bound counts its live MACs.
  const std::string text = causal_pv(1024, 64);
  const Count s(4 * 1024);
  const ProvableBound live = provable_bound(last_problem(text), true, s);
  const ProvableBound box = provable_bound(last_problem(text, MaskedEinsum::Box), true, s);
  EXPECT_EQ(live.formula, BoundFormula::Gemm);
  // G = 1024 * 1025 / 2 * 64 live MACs (the box: 1024^2 * 64).
  EXPECT_NE(live.detail.find("G = 3.35872e+07"), std::string::npos) << live.detail;
  EXPECT_LT(live.traffic_bytes, box.traffic_bytes);
}

// A causal attention graph as the SDPA lowering writes it: the masked scores, softmax and
// P V. Masked, its Q(S) is at most the dense attention's (the same graph without masks) at
// every capacity, non-increasing, above the provable bound and the compulsory traffic.
std::string attention(bool masked) {
  const std::string m = masked ? " where l >= k" : "";
  const std::string m2 = masked ? " where i >= j" : "";
  return R"(
    q = f32[4,256,64] input
    k = f32[4,256,64] input
    v = f32[4,256,64] input
    s = f32[4,256,256] einsum [h=4,l=256,k=256,e=64] sum mul($0,$1) (q[h,l,e], k[h,k,e]) -> [h,l,k])" + m + R"(
    mx = f32[4,256,1] einsum [h=4,i=256,j=256] max $0 (s[h,i,j]) -> [h,i,0])" + m2 + R"(
    ex = f32[4,256,256] einsum [h=4,i=256,j=256] none exp(sub($0,$1)) (s[h,i,j], mx[h,i,0]) -> [h,i,j])" + m2 + R"(
    sm = f32[4,256,1] einsum [h=4,i=256,j=256] sum $0 (ex[h,i,j]) -> [h,i,0])" + m2 + R"(
    p = f32[4,256,256] einsum [h=4,i=256,j=256] none div($0,$1) (ex[h,i,j], sm[h,i,0]) -> [h,i,j])" + m2 + R"(
    o = f32[4,256,64]{output} einsum [h=4,l=256,k=256,d=64] sum mul($0,$1) (p[h,l,k], v[h,k,d]) -> [h,l,d])" + m;
}

TEST(LiveGraph, CausalAttentionMovesAtMostTheDenseAttention) {
  const ir::Graph gm = ir::parse_graph(attention(true)), gd = ir::parse_graph(attention(false));
  const cost::GraphCost cm = cost::graph_cost(gm), cd = cost::graph_cost(gd);
  GraphTrafficModel mm(gm, cm), md(gd, cd);
  std::optional<Count> prev;
  bool below = false;
  for (Count s : capacities()) {
    const GraphTraffic a = mm.at(s, TrafficMode::Attainable);
    const GraphTraffic p = mm.at(s, TrafficMode::Provable);
    const GraphTraffic d = md.at(s, TrafficMode::Attainable);
    EXPECT_LE(a.traffic_bytes, d.traffic_bytes) << "at " << s.str();
    below = below || a.traffic_bytes < d.traffic_bytes;
    EXPECT_LE(p.traffic_bytes, a.traffic_bytes) << "at " << s.str();
    EXPECT_EQ(p.detail.find("clamped"), std::string::npos) << p.detail;
    EXPECT_GE(a.traffic_bytes, cm.compulsory_bytes());
    if (prev) EXPECT_LE(a.traffic_bytes, *prev) << "at " << s.str();
    prev = a.traffic_bytes;
  }
  EXPECT_TRUE(below);
  EXPECT_EQ(mm.at(Count(std::uint64_t{1} << 30), TrafficMode::Attainable).traffic_bytes,
            cm.compulsory_bytes());
}

}  // namespace
}  // namespace solar::tiling
