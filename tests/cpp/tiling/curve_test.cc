#include "solar/tiling/curve.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "solar/ir/text.h"
#include "solar/tiling/mapping.h"
#include "tiling/random_problem.h"

namespace solar::tiling {
namespace {

constexpr std::uint64_t kWord = 4;  // fp32 bytes: the anchors of cache-aware.md §5 are in words

CurveOptions divisor_no_bypass() {
  CurveOptions o;
  o.tiles = TileMode::Divisor;
  o.bypass = false;
  return o;
}

bool has_point(const TrafficCurve& c, Count buffer, Count traffic) {
  return std::find(c.points().begin(), c.points().end(), CurvePoint{buffer, traffic}) !=
         c.points().end();
}

// cache-aware.md §5.B: divisor-model Pareto points of the fp32 4096^3 GEMM.
TEST(Curve, Gemm4096DivisorParetoPoints) {
  const std::uint64_t M = 4096, N = 4096, K = 4096;
  CurveResult r = attainable_curve(gemm_problem(M, N, K, ir::DType::F32), divisor_no_bypass());
  EXPECT_TRUE(r.exhaustive);
  EXPECT_EQ(r.curve.points().size(), 25u);  // "25 Pareto points in total"
  // Output-stationary square tiles b x b: buffer b^2 + 2b words, traffic MN + 2MNK/b words.
  for (std::uint64_t b : {32u, 64u, 128u, 256u, 512u, 1024u, 2048u}) {
    EXPECT_TRUE(has_point(r.curve, Count(kWord * (b * b + 2 * b)),
                          Count(kWord * (M * N + 2 * M * N * K / b))))
        << "b = " << b;
  }
  // Published anchors: 1088 words -> 4.3117e9, 4198400 -> 8.3886e7 (4 digits).
  EXPECT_NEAR(r.curve.traffic_at(Count(kWord * 1088))->to_double() / kWord, 4.3117e9, 0.0001e9);
  EXPECT_NEAR(r.curve.traffic_at(Count(kWord * 4198400))->to_double() / kWord, 8.3886e7, 0.0001e7);
  // m = 2048, n = 4096: MN + MK + 2KN at 2048*4096 + 2048 + 4096 = 8,394,752 words.
  EXPECT_TRUE(has_point(r.curve, Count(kWord * (2048 * 4096 + 2048 + 4096)),
                        Count(kWord * (M * N + M * K + 2 * K * N))));
  // Compulsory at the maximal effectual buffer |C| + one row + one column = 16,785,408 words.
  EXPECT_EQ(r.curve.floor().buffer_bytes, Count(kWord * (M * N + M + N)));
  EXPECT_EQ(r.curve.floor().traffic_bytes, r.compulsory_bytes);
  EXPECT_EQ(r.compulsory_bytes, Count(kWord * (M * K + K * N + M * N)));
}

// cache-aware.md §5.A, "Orojenesis model (divisor)" column, fp32 4096^3 at GA100 L2 sizes.
TEST(Curve, Gemm4096DivisorAtL2Sizes) {
  CurveResult r = attainable_curve(gemm_problem(4096, 4096, 4096, ir::DType::F32),
                                   divisor_no_bypass());
  const std::uint64_t MiB = 1024 * 1024;
  EXPECT_EQ(*r.curve.traffic_at(Count(2 * MiB)), Count(1088 * MiB));
  EXPECT_EQ(*r.curve.traffic_at(Count(24 * MiB)), Count(320 * MiB));
  EXPECT_EQ(*r.curve.traffic_at(Count(40 * MiB)), Count(256 * MiB));
  EXPECT_EQ(*r.curve.traffic_at(Count(50 * MiB)), Count(256 * MiB));
  EXPECT_EQ(r.compulsory_bytes, Count(192 * MiB));
}

// cache-aware.md §5.C: GEMM 16384 x 1024 x 1024 (Orojenesis Fig. 1 shape), divisor model.
TEST(Curve, Gemm16384x1024x1024) {
  const std::uint64_t M = 16384, N = 1024, K = 1024;
  CurveResult r = attainable_curve(gemm_problem(M, N, K, ir::DType::F32), divisor_no_bypass());
  // B (K x N, the smallest tensor) resident + one row of A and one row of C.
  EXPECT_EQ(r.curve.floor().buffer_bytes, Count(kWord * (K * N + K + N)));  // 1,050,624 words
  auto words_at = [&](std::uint64_t s) {
    return r.curve.traffic_at(Count(kWord * s))->to_double() / kWord;
  };
  EXPECT_NEAR(words_at(1024), 1.627e9, 0.001e9);
  EXPECT_NEAR(words_at(64 * 1024), 2.181e8, 0.001e8);
  EXPECT_NEAR(words_at(1024 * 1024), 5.138e7, 0.001e7);
  const double compulsory = static_cast<double>(M * K + K * N + M * N);
  EXPECT_NEAR(words_at(1024 * 1024) / compulsory, 1.48, 0.01);
}

TEST(Curve, CeilModeIsNeverAboveDivisorMode) {
  TilingProblem p = gemm_problem(4096, 4096, 4096, ir::DType::F32);
  CurveResult div = attainable_curve(p, divisor_no_bypass());
  CurveResult ceil = attainable_curve(p);
  EXPECT_TRUE(ceil.exhaustive);
  EXPECT_GT(ceil.curve.points().size(), div.curve.points().size());
  for (const CurvePoint& pt : div.curve.points())
    EXPECT_LE(*ceil.curve.traffic_at(pt.buffer_bytes), pt.traffic_bytes);
  EXPECT_EQ(ceil.curve.floor(), div.curve.floor());  // same maximal effectual buffer
  // Bypass adds a zero-buffer point: every MAC streams its operands.
  EXPECT_EQ(ceil.curve.points().front().buffer_bytes, Count(0));
}

TEST(Curve, LookupIsAFloor) {
  TrafficCurve c({{Count(10), Count(100)}, {Count(20), Count(50)}});
  EXPECT_FALSE(c.traffic_at(Count(9)).has_value());
  EXPECT_EQ(*c.traffic_at(Count(10)), Count(100));
  EXPECT_EQ(*c.traffic_at(Count(19)), Count(100));
  EXPECT_EQ(*c.traffic_at(Count(1000)), Count(50));
  EXPECT_THROW(TrafficCurve({{Count(10), Count(100)}, {Count(20), Count(100)}}), InternalError);
}

// The envelope of every mapping (all tiles, all orders, all bypass sets), by brute force.
std::vector<CurvePoint> brute_force(const TilingProblem& p) {
  const int n = static_cast<int>(p.ranks.size());
  std::vector<std::pair<Count, Count>> all;
  std::vector<std::int64_t> tile(n, 1);
  while (true) {
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    do {
      for (std::uint32_t b = 0; b < (1u << p.tensors.size()); ++b) {
        Mapping m{tile, order, {}};
        bool ok = true;
        for (std::size_t t = 0; t < p.tensors.size(); ++t) {
          m.bypass.push_back(b & (1u << t));
          ok = ok && (!(b & (1u << t)) || (p.tensors[t].plain() &&
                                            p.tensors[t].storage.format == StorageFormat::Dense));
        }
        if (!ok) continue;
        MappingCost c = evaluate_mapping(p, m);
        all.emplace_back(c.buffer_bits.ceil_div(8), c.traffic_bits.ceil_div(8));
      }
    } while (std::next_permutation(order.begin(), order.end()));
    int i = 0;
    for (; i < n; ++i) {
      if (++tile[i] <= p.ranks[i].extent) break;
      tile[i] = 1;
    }
    if (i == n) break;
  }
  std::sort(all.begin(), all.end());
  std::vector<CurvePoint> env;
  for (const auto& [b, q] : all)
    if (env.empty() || q < env.back().traffic_bytes) {
      if (!env.empty() && env.back().buffer_bytes == b) env.pop_back();
      env.push_back({b, q});
    }
  return env;
}

TEST(Curve, PrunedSearchEqualsBruteForceOnPlainEinsums) {
  std::mt19937 rng(7);
  for (int i = 0; i < 25; ++i) {
    TilingProblem p = testing::random_problem(rng, /*window=*/false, /*max_extent=*/4);
    CurveOptions o;
    o.merge_ranks = false;
    CurveResult r = attainable_curve(p, o);
    EXPECT_EQ(r.curve.points(), brute_force(p)) << "problem " << i;
    // Merging ranks only lowers the curve.
    CurveResult merged = attainable_curve(p);
    for (const CurvePoint& pt : r.curve.points())
      EXPECT_LE(*merged.curve.traffic_at(pt.buffer_bytes), pt.traffic_bytes) << "problem " << i;
  }
}

// Sparse tensors: 2:4 group ranks keep their own loops (no merge, no batch, no tile-1 pin),
// and the pruned search still finds the whole envelope.
TEST(Curve, PrunedSearchEqualsBruteForceOnSparseEinsums) {
  std::mt19937 rng(17);
  for (int i = 0; i < 40; ++i) {
    // Extents up to 9 give tiles with every residue modulo 4 and partial last groups.
    TilingProblem p = testing::random_problem(rng, /*window=*/false, /*max_extent=*/i < 25 ? 4 : 9,
                                              /*sparse=*/true);
    CurveOptions o;
    o.merge_ranks = false;
    const CurveResult unmerged = attainable_curve(p, o);
    EXPECT_EQ(unmerged.curve.points(), brute_force(p)) << "problem " << i;
    CurveResult merged = attainable_curve(p);
    for (const CurvePoint& pt : unmerged.curve.points())
      EXPECT_LE(*merged.curve.traffic_at(pt.buffer_bytes), pt.traffic_bytes) << "problem " << i;
    EXPECT_EQ(merged.curve.floor().traffic_bytes, merged.compulsory_bytes) << "problem " << i;
  }
}

TEST(Curve, WindowSearchEqualsBruteForce) {
  std::mt19937 rng(11);
  int checked = 0;
  for (int i = 0; i < 30; ++i) {
    TilingProblem p = testing::random_problem(rng, /*window=*/true, /*max_extent=*/3);
    if (p.ranks.size() > 5) continue;  // keeps the brute force (n! orders x 3^n tiles) short
    CurveOptions o;
    o.merge_ranks = false;
    CurveResult r = attainable_curve(p, o);
    TrafficCurve all(brute_force(p));
    // Every searched point is some mapping's cost, so never below the full envelope.
    for (const CurvePoint& pt : r.curve.points())
      EXPECT_GE(pt.traffic_bytes, *all.traffic_at(pt.buffer_bytes)) << "problem " << i;
    EXPECT_EQ(r.curve.floor().traffic_bytes, all.floor().traffic_bytes) << "problem " << i;
    EXPECT_EQ(r.curve.points(), all.points()) << "problem " << i;
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

TEST(Curve, InvariantsOnRandomEinsums) {
  std::mt19937 rng(5);
  for (int i = 0; i < 80; ++i) {
    const bool window = i % 2;
    TilingProblem p = testing::random_problem(rng, window, 6, /*sparse=*/i >= 40);
    CurveResult r = attainable_curve(p);
    const auto& pts = r.curve.points();
    ASSERT_FALSE(pts.empty());
    for (std::size_t j = 1; j < pts.size(); ++j) {
      EXPECT_LT(pts[j - 1].buffer_bytes, pts[j].buffer_bytes);
      EXPECT_GT(pts[j - 1].traffic_bytes, pts[j].traffic_bytes);
    }
    EXPECT_GE(r.curve.floor().traffic_bytes, r.compulsory_bytes);
    if (!window) {
      EXPECT_EQ(r.curve.floor().traffic_bytes, r.compulsory_bytes) << "problem " << i;
    }
  }
}

// The search counts on 64 bits where its bound allows (fits_in_64_bits) and on 128 bits
// otherwise: on the same problems both give the same curve, the same evaluations.
TEST(Curve, SixtyFourAndOneTwentyEightBitSearchesAgree) {
  std::mt19937 rng(17);
  CurveOptions narrow_options, wide;
  narrow_options.max_evaluations = wide.max_evaluations = 1 << 12;
  wide.wide_numbers = true;
  std::vector<TilingProblem> problems = {gemm_problem(4096, 4096, 4096, ir::DType::F32),
                                         gemm_problem(16384, 1024, 1024, ir::DType::BF16)};
  for (int i = 0; i < 40; ++i)
    problems.push_back(testing::random_problem(rng, /*window=*/i % 2, /*max_extent=*/16));
  for (std::size_t i = 0; i < problems.size(); ++i) {
    const CurveResult narrow = attainable_curve(problems[i], narrow_options);
    const CurveResult r = attainable_curve(problems[i], wide);
    EXPECT_EQ(narrow.curve.points(), r.curve.points()) << "problem " << i;
    EXPECT_EQ(narrow.evaluated, r.evaluated) << "problem " << i;
    EXPECT_EQ(narrow.compulsory_bytes, r.compulsory_bytes) << "problem " << i;
  }
}

// 2^21 x 2^21 x 2^21 f32: 2^63 points, past 64-bit counts, so searched on 128 bits; its
// floor is still the three matrices once each.
TEST(Curve, GemmPastSixtyFourBitsIsSearchedWide) {
  const std::uint64_t n = std::uint64_t{1} << 21;
  CurveOptions o;
  o.max_evaluations = 4096;
  const CurveResult r = attainable_curve(gemm_problem(n, n, n, ir::DType::F32), o);
  EXPECT_EQ(r.compulsory_bytes, Count(kWord * 3 * n * n));
  EXPECT_EQ(r.curve.floor().traffic_bytes, r.compulsory_bytes);
  // The smallest buffer's traffic: each of the n^3 products reads its operands and
  // accumulates its output, far past 2^64 bits.
  EXPECT_GT(r.curve.points().front().traffic_bytes.to_double(), std::pow(2.0, 64));
}

// A 4096^3 bf16 GEMM with a 2:4 weight: its floor is the compulsory traffic with the weight
// compressed (half the values, 16 + 2 bits each), not the dense three matrices.
TEST(Curve, TwoFourGemmFloorIsItsCompressedCompulsory) {
  constexpr std::uint64_t N = 4096;
  ir::Graph g = ir::parse_graph(R"(
    a = bf16[4096,4096] input
    w = bf16[4096,4096]{sparsity="2:4"} weight
    c = bf16[4096,4096]{output} einsum "mk,kn->mn" (a, w))");
  CurveResult r = attainable_curve(problem_from_einsum(g, g.op(ir::OpId{0})));
  const std::uint64_t compulsory = 2 * N * N + N * N / 2 * (16 + 2) / 8 + 2 * N * N;
  EXPECT_EQ(r.compulsory_bytes, Count(compulsory));  // 85.98 MB
  EXPECT_EQ(r.curve.floor().traffic_bytes, Count(compulsory));
  // The dense weight's floor: the three matrices at 2 bytes (100.7 MB).
  CurveResult dense = attainable_curve(gemm_problem(N, N, N, ir::DType::BF16));
  EXPECT_EQ(dense.curve.floor().traffic_bytes, Count(3 * 2 * N * N));
  for (const CurvePoint& pt : r.curve.points()) EXPECT_GE(pt.traffic_bytes, Count(compulsory));
}

TEST(Curve, ThinnedSearchStaysAttainable) {
  TilingProblem p = gemm_problem(1000, 700, 300, ir::DType::BF16);
  CurveResult full = attainable_curve(p);
  CurveOptions o;
  o.max_evaluations = 2000;
  CurveResult thin = attainable_curve(p, o);
  EXPECT_TRUE(full.exhaustive);
  EXPECT_FALSE(thin.exhaustive);
  for (const CurvePoint& pt : thin.curve.points())
    EXPECT_GE(pt.traffic_bytes, *full.curve.traffic_at(pt.buffer_bytes));
  EXPECT_EQ(thin.curve.floor().traffic_bytes, full.compulsory_bytes);
}

TEST(Curve, MoreThanEightLoopsKeepTheShortestWhole) {
  // A 3-D transposed convolution: 12 ranks, 10 of them after merging, with the kernel taps
  // (extent 2) among them. The 8 longest are tiled, the taps kept whole: a smaller mapspace,
  // still attainable (the floor is reached) and flagged as not exhaustive.
  ir::Graph g = ir::parse_graph(R"(
    x = f32[2,4,4,4,4] input
    w = f32[4,6,3,3,3] weight
    y = f32[2,6,8,8,8]{output} einsum [n=2,k=6,c=4,q0=4,rho0=2,v0=2,q1=4,rho1=2,v1=2,q2=4,rho2=2,v2=2] sum mul($0,$1) (x[n,c,q0+v0,q1+v1,q2+v2] pad 0, w[c,k,rho0-v0*2+1,rho1-v1*2+1,rho2-v2*2+1] pad 0) -> [n,k,q0*2+rho0,q1*2+rho1,q2*2+rho2])");
  TilingProblem p = problem_from_einsum(g, g.op(ir::OpId{0}));
  CurveResult r = attainable_curve(p);
  EXPECT_FALSE(r.exhaustive);
  ASSERT_FALSE(r.curve.points().empty());
  EXPECT_GE(r.curve.floor().traffic_bytes, r.compulsory_bytes);
  EXPECT_LE(r.curve.floor().traffic_bytes,
            Count(4 * (2 * 4 * 4 * 4 * 4 + 4 * 6 * 3 * 3 * 3 + 2 * 6 * 8 * 8 * 8)));
}

TEST(Curve, BatchedMatmulScalesByBatch) {
  ir::Graph g = ir::parse_graph(R"(
    a = f16[6,32,16] input
    b = f16[6,16,24] input
    c = f16[6,32,24]{output} einsum "bmk,bkn->bmn" (a, b))");
  TilingProblem p = problem_from_einsum(g, g.op(ir::OpId{0}));
  CurveResult r = attainable_curve(p, divisor_no_bypass());
  CurveResult one = attainable_curve(gemm_problem(32, 24, 16, ir::DType::F16), divisor_no_bypass());
  ASSERT_EQ(r.curve.points().size(), one.curve.points().size());
  for (std::size_t i = 0; i < one.curve.points().size(); ++i) {
    EXPECT_EQ(r.curve.points()[i].buffer_bytes, one.curve.points()[i].buffer_bytes);
    EXPECT_EQ(r.curve.points()[i].traffic_bytes, Count(6) * one.curve.points()[i].traffic_bytes);
  }
}

TEST(Curve, ConvolutionFromGraph) {
  ir::Graph g = ir::parse_graph(R"(
    x = f32[2,8,18,18] input
    w = f32[16,8,3,3] weight
    y = f32[2,16,16,16]{output} einsum [n=2,k=16,p=16,q=16,c=8,r=3,s=3] sum mul($0,$1) (x[n,c,p+r,q+s], w[k,c,r,s]) -> [n,k,p,q])");
  TilingProblem p = problem_from_einsum(g, g.op(ir::OpId{0}));
  CurveResult r = attainable_curve(p);
  EXPECT_EQ(r.compulsory_bytes, Count(4 * (2 * 8 * 18 * 18 + 16 * 8 * 3 * 3 + 2 * 16 * 16 * 16)));
  // Unit stride, no padding: the whole-tensor hull is the input itself.
  EXPECT_EQ(r.curve.floor().traffic_bytes, r.compulsory_bytes);
  EXPECT_GT(r.curve.points().size(), 3u);
}

// Skipping the mappings dominated by their buffer alone (CurveOptions::skip_dominated)
// leaves every curve as the full search makes it, with fewer evaluations: on random plain,
// window and 2:4 problems, with and without bypass, and on strided, dilated and padded
// convolutions (positions their windows leave out: the floor counts only those reached;
// padding makes a window's largest hull shrink for some larger tiles, so window ranks are
// never skipped).
TEST(Curve, SkippingDominatedMappingsKeepsTheCurve) {
  std::mt19937 rng(23);
  std::vector<TilingProblem> problems;
  for (int i = 0; i < 60; ++i)
    problems.push_back(testing::random_problem(rng, /*window=*/i % 3 == 1, /*max_extent=*/12,
                                               /*sparse=*/i % 3 == 2));
  for (const char* conv : {
           "x = f32[2,8,33,33] input\n w = f32[16,8,3,3] weight\n"
           "y = f32[2,16,16,16]{output} einsum [n=2,k=16,p=16,q=16,c=8,r=3,s=3] sum "
           "mul($0,$1) (x[n,c,2*p+r,2*q+s], w[k,c,r,s]) -> [n,k,p,q]",
           "x = f32[2,8,31,31] input\n w = f32[16,8,1,1] weight\n"
           "y = f32[2,16,16,16]{output} einsum [n=2,k=16,p=16,q=16,c=8,r=1,s=1] sum "
           "mul($0,$1) (x[n,c,2*p+r,2*q+s], w[k,c,r,s]) -> [n,k,p,q]",
           "x = f32[1,4,20,20] input\n w = f32[8,4,3,3] weight\n"
           "y = f32[1,8,16,16]{output} einsum [n=1,k=8,p=16,q=16,c=4,r=3,s=3] sum "
           "mul($0,$1) (x[n,c,p+2*r,q+2*s], w[k,c,r,s]) -> [n,k,p,q]",
           // Padding: a larger tile of p can meet it at both ends, and its largest hull
           // shrink (11 rows in tiles of 5: 13 positions; of 6: 12).
           "x = f32[2,8,24] input\n w = f32[16,8,1] weight\n"
           "y = f32[2,16,11]{output} einsum [n=2,k=16,p=11,c=8,r=1] sum "
           "mul($0,$1) (x[n,c,3*p+2*r-4] pad 0, w[k,c,r]) -> [n,k,p]",
           "x = f32[2,8,56] input\n w = f32[16,8,4] weight\n"
           "y = f32[2,16,20]{output} einsum [n=2,k=16,p=20,c=8,r=4] sum "
           "mul($0,$1) (x[n,c,3*p+2*r-4] pad 0, w[k,c,r]) -> [n,k,p]",
           "x = f32[1,4,14,14] input\n w = f32[8,4,5,5] weight\n"
           "y = f32[1,8,9,9]{output} einsum [n=1,k=8,p=9,q=9,c=4,r=5,s=5] sum "
           "mul($0,$1) (x[n,c,2*p+r-4,2*q+s-4] pad 0, w[k,c,r,s]) -> [n,k,p,q]"}) {
    const ir::Graph g = ir::parse_graph(conv);
    problems.push_back(problem_from_einsum(g, g.op(ir::OpId{0})));
  }
  problems.push_back(gemm_problem(4096, 4096, 4096, ir::DType::F32));
  std::uint64_t full_total = 0, skipped_total = 0;
  for (std::size_t i = 0; i < problems.size(); ++i)
    for (bool bypass : {true, false}) {
      CurveOptions full, skipping;
      full.bypass = skipping.bypass = bypass;
      full.skip_dominated = false;
      const CurveResult a = attainable_curve(problems[i], full);
      const CurveResult b = attainable_curve(problems[i], skipping);
      EXPECT_EQ(a.curve.points(), b.curve.points()) << "problem " << i << " bypass " << bypass;
      EXPECT_LE(b.evaluated, a.evaluated) << "problem " << i;
      full_total += a.evaluated;
      skipped_total += b.evaluated;
    }
  EXPECT_LT(skipped_total, full_total);
}

}  // namespace
}  // namespace solar::tiling
