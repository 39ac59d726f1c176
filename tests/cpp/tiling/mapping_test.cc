#include "solar/tiling/mapping.h"

#include <gtest/gtest.h>

namespace solar::tiling {
namespace {

constexpr int kM = 0, kN = 1, kK = 2;

TEST(Mapping, OutputStationaryGemm) {
  const std::int64_t M = 100, N = 70, K = 30, m = 16, n = 8;
  TilingProblem p = gemm_problem(M, N, K, ir::DType::F32);
  // Loops m, n outside, k innermost with tile 1: C stays resident across k.
  Mapping map{{m, n, 1}, {kM, kN, kK}, {}};
  MappingCost c = evaluate_mapping(p, map);
  const std::int64_t Tm = (M + m - 1) / m, Tn = (N + n - 1) / n;
  EXPECT_EQ(c.access_elements[0], Count(M * K * Tn));  // A re-read for every column tile
  EXPECT_EQ(c.access_elements[1], Count(K * N * Tm));  // B re-read for every row tile
  EXPECT_EQ(c.access_elements[2], Count(M * N));       // C written once (first read elided)
  EXPECT_EQ(c.buffer_elements[0], Count(m * 1));
  EXPECT_EQ(c.buffer_elements[1], Count(1 * n));
  EXPECT_EQ(c.buffer_elements[2], Count(m * n));
  EXPECT_EQ(c.buffer_bits, Count(32 * (m * n + m + n)));
  EXPECT_EQ(c.traffic_bits, Count(32 * (M * N + M * K * Tn + K * N * Tm)));
}

TEST(Mapping, ReductionOutsidePaysPartialSums) {
  const std::int64_t M = 12, N = 10, K = 9, k = 3;
  TilingProblem p = gemm_problem(M, N, K, ir::DType::F32);
  // k outermost, then m (tile 1): C tiles are revisited once per k tile.
  Mapping map{{1, N, k}, {kK, kM}, {}};
  MappingCost c = evaluate_mapping(p, map);
  const std::int64_t Tk = K / k;
  EXPECT_EQ(c.access_elements[2], Count(2 * M * N * Tk - M * N));  // writes + re-reads
  EXPECT_EQ(c.access_elements[0], Count(M * K));                   // A once
  EXPECT_EQ(c.access_elements[1], Count(K * N));                   // B tile k x N stays across m
}

TEST(Mapping, BypassStreamsEveryPoint) {
  TilingProblem p = gemm_problem(4, 5, 6, ir::DType::F32);
  Mapping map{{4, 5, 1}, {kK}, {true, false, false}};
  MappingCost c = evaluate_mapping(p, map);
  EXPECT_EQ(c.buffer_elements[0], Count(0));
  EXPECT_EQ(c.access_elements[0], Count(4 * 5 * 6));  // one read per MAC
}

TEST(Mapping, InvalidMappingsAreRefused) {
  TilingProblem p = gemm_problem(8, 8, 8, ir::DType::F32);
  auto refuses = [&](const Mapping& m, const std::string& what) {
    try {
      evaluate_mapping(p, m);
      ADD_FAILURE() << "expected UserError: " << what;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  refuses({{8, 8}, {}, {}}, "one tile size per rank");
  refuses({{9, 8, 8}, {}, {}}, "tile of rank 'm'");
  refuses({{4, 8, 8}, {}, {}}, "not in the order");
  refuses({{4, 8, 8}, {0, 0}, {}}, "twice in the order");
}

}  // namespace
}  // namespace solar::tiling
