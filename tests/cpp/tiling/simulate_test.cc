#include "solar/tiling/simulate.h"

#include <gtest/gtest.h>

#include "solar/tiling/mapping.h"
#include "tiling/random_problem.h"

namespace solar::tiling {
namespace {

void expect_same(const MappingCost& a, const MappingCost& b, const std::string& what) {
  ASSERT_EQ(a.access_elements.size(), b.access_elements.size()) << what;
  for (std::size_t t = 0; t < a.access_elements.size(); ++t) {
    EXPECT_EQ(a.access_elements[t], b.access_elements[t]) << what << " tensor " << t;
    EXPECT_EQ(a.buffer_elements[t], b.buffer_elements[t]) << what << " tensor " << t;
  }
  EXPECT_EQ(a.traffic_bits, b.traffic_bits) << what;
  EXPECT_EQ(a.buffer_bits, b.buffer_bits) << what;
}

std::string describe(const TilingProblem& p, const Mapping& m) {
  std::string s = "tiles";
  for (std::size_t r = 0; r < p.ranks.size(); ++r)
    s += " " + p.ranks[r].name + "=" + std::to_string(m.tile[r]) + "/" +
         std::to_string(p.ranks[r].extent);
  s += " order";
  for (int r : m.order) s += " " + p.ranks[r].name;
  return s;
}

TEST(Simulate, GemmOutputStationaryMatchesFormula) {
  TilingProblem p = gemm_problem(7, 5, 4, ir::DType::F32);
  Mapping m{{3, 2, 1}, {0, 1, 2}, {}};
  MappingCost sim = simulate_mapping(p, m);
  // ceil tiles: A re-read ceil(5/2) times, B ceil(7/3) times, C once.
  EXPECT_EQ(sim.access_elements[0], Count(7 * 4 * 3));
  EXPECT_EQ(sim.access_elements[1], Count(4 * 5 * 3));
  EXPECT_EQ(sim.access_elements[2], Count(7 * 5));
}

TEST(Simulate, ClosedFormMatchesOnRandomPlainEinsums) {
  std::mt19937 rng(1234);
  for (int i = 0; i < 300; ++i) {
    TilingProblem p = testing::random_problem(rng, /*window=*/false);
    Mapping m = testing::random_mapping(rng, p);
    expect_same(simulate_mapping(p, m), evaluate_mapping(p, m), describe(p, m));
  }
}

TEST(Simulate, ClosedFormMatchesOnRandomWindowEinsums) {
  std::mt19937 rng(99);
  for (int i = 0; i < 300; ++i) {
    TilingProblem p = testing::random_problem(rng, /*window=*/true);
    Mapping m = testing::random_mapping(rng, p);
    expect_same(simulate_mapping(p, m), evaluate_mapping(p, m), describe(p, m));
  }
}

// Sparse tensors (2:4 with whole-group tiles, bitmaps): the closed form's hull sums and
// storage bits equal what the loop nest moves, tile by tile.
TEST(Simulate, ClosedFormMatchesOnRandomSparseEinsums) {
  std::mt19937 rng(2026);
  int grouped = 0;
  for (int i = 0; i < 600; ++i) {
    const bool window = i % 2;
    TilingProblem p = testing::random_problem(rng, window, /*max_extent=*/9, /*sparse=*/true);
    for (const TensorAccess& t : p.tensors) grouped += t.group_dim >= 0;
    Mapping m = testing::random_mapping(rng, p);
    expect_same(simulate_mapping(p, m), evaluate_mapping(p, m), describe(p, m));
  }
  EXPECT_GE(grouped, 300);
}

TEST(Simulate, RefusesLargeProblems) {
  TilingProblem p = gemm_problem(64, 64, 64, ir::DType::F32);
  Mapping m{{64, 64, 64}, {}, {}};
  try {
    simulate_mapping(p, m, /*max_points=*/1000);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("exceed"), std::string::npos);
  }
}

}  // namespace
}  // namespace solar::tiling
