#include "solar/cost/live_points.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "solar/ir/text.h"
#include "testing/graph_lookup.h"
#include "solar/util/errors.h"

namespace solar::cost {
namespace {

using ir::Graph;
using ir::parse_graph;

using testing::op_of;

TEST(LivePoints, CausalMask8192IsExact) {
  constexpr std::uint64_t S = 8192;
  Graph g = parse_graph(R"(
    a = f32[8192,8192] input
    m = f32[8192,8192] einsum [i=8192,j=8192] none mul($0,2) (a[i,j]) -> [i,j] where i >= j)");
  Count n = live_points(op_of(g, "m").einsum());
  EXPECT_EQ(n, Count(S * (S + 1) / 2));  // points with i >= j
}

TEST(LivePoints, SlidingWindowMask) {
  // Causal with a window of W keys: row i keeps j in [max(0, i-W+1), i], min(i+1, W) keys.
  constexpr std::uint64_t S = 1000, W = 256;
  Graph g = parse_graph(R"(
    a = f32[1000,1000] input
    m = f32[1000,1000] einsum [i=1000,j=1000] none mul($0,2) (a[i,j]) -> [i,j] where i >= j, j + 255 >= i)");
  EXPECT_EQ(live_points(op_of(g, "m").einsum()), Count(W * (W + 1) / 2 + (S - W) * W));
}

TEST(LivePoints, IndependentConstraintsAndConstants) {
  // i >= j over 10x10 (55 points) and k >= 2*l over 9x5 (k >= 0,2,4,6,8: 9+7+5+3+1 = 25),
  // times the unconstrained extent 3; a constant constraint 4 >= 0 always holds.
  Graph g = parse_graph(R"(
    a = f32[10,10,9,5,3] input
    m = f32[10,10,9,5,3] einsum [i=10,j=10,k=9,l=5,u=3] none $0 (a[i,j,k,l,u]) -> [i,j,k,l,u] where i >= j, k >= l*2, 4 >= 0)");
  EXPECT_EQ(live_points(op_of(g, "m").einsum()), Count(55 * 25 * 3));
}

TEST(LivePoints, NegativeCoefficientsRoundCorrectly) {
  // 3*i - 2*j - 1 >= 0 over i, j in [0,7): j <= (3i-1)/2 floored -> per i: 0,2,3,5,6,7,7 = 30.
  ir::EinsumOp e;
  e.indices = {{"i", 7}, {"j", 7}};
  e.mask = {{ir::AffineExpr::make({{0, 3}, {1, -2}}, -1)}};
  Count expected = 0;
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 7; ++j)
      if (3 * i - 2 * j - 1 >= 0) expected += 1;  // brute force, independent of the solver
  EXPECT_EQ(live_points(e), expected);
  EXPECT_EQ(live_points(e), Count(0 + 2 + 3 + 5 + 6 + 7 + 7));
}

TEST(LivePoints, NoMaskIsProductOfExtents) {
  ir::EinsumOp e;
  e.indices = {{"a", 3}, {"b", 5}, {"c", 7}};
  EXPECT_EQ(live_points(e), Count(3 * 5 * 7));
}

TEST(LivePoints, BeyondEnumerationCapThrowsUnsupported) {
  // One constraint linking four indices of 1024 with no unit coefficient: only one index is
  // solved in closed form, three must be enumerated (2^30 > 2^27).
  ir::EinsumOp e;
  e.indices = {{"a", 1024}, {"b", 1024}, {"c", 1024}, {"d", 1024}};
  e.mask = {{ir::AffineExpr::make({{0, 2}, {1, -3}, {2, 5}, {3, -7}}, 0)}};
  try {
    live_points(e);
    FAIL() << "expected Unsupported";
  } catch (const Unsupported& ex) {
    EXPECT_NE(std::string(ex.what()).find("exceeds the limit"), std::string::npos) << ex.what();
  }
}

TEST(LivePoints, RandomMasksMatchBruteForce) {
  // Half the coefficients are -1/0/1, so both the closed-form plane (count_2d) and the
  // interval enumeration are exercised, with up to 4 constraints crossing each other.
  std::mt19937 rng(777);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 1000; ++trial) {
    ir::EinsumOp e;
    const int n = pick(1, 4);
    for (int i = 0; i < n; ++i)
      e.indices.push_back({"i" + std::to_string(i), pick(1, n <= 2 ? 40 : 9)});
    const int nc = pick(1, 4);
    for (int c = 0; c < nc; ++c) {
      std::vector<ir::AffineTerm> terms;
      for (int i = 0; i < n; ++i)
        if (pick(0, 2) != 0) terms.push_back({i, pick(0, 1) ? pick(-1, 1) : pick(-3, 3)});
      e.mask.push_back({ir::AffineExpr::make(terms, pick(-12, 12))});
    }
    std::uint64_t expected = 0;
    std::vector<std::int64_t> at(n, 0);
    for (;;) {
      bool live = true;
      for (const ir::AffineConstraint& c : e.mask) live = live && c.expr.evaluate(at.data()) >= 0;
      expected += live ? 1 : 0;
      int j = 0;
      for (; j < n; ++j) {
        if (++at[j] < e.indices[j].extent) break;
        at[j] = 0;
      }
      if (j == n) break;
    }
    EXPECT_EQ(live_points(e), Count(expected)) << "trial " << trial;
  }
}

}  // namespace
}  // namespace solar::cost
