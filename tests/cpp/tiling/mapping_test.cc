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

// C[m,n] = A[m,k] W[k,n] with a 2:4 weight (groups of 4 along n, its last dimension), bf16.
TilingProblem sparse_gemm(std::int64_t M, std::int64_t N, std::int64_t K) {
  TilingProblem p = gemm_problem(M, N, K, ir::DType::BF16);
  p.tensors[1].storage = {StorageFormat::Compressed24, 0.5};
  p.tensors[1].group_dim = 1;
  p.compulsory_bits = Count(16 * M * K) + storage_bits(p.tensors[1], Count(K * N)) +
                      Count(16 * M * N);
  p.check();
  return p;
}

TEST(Mapping, TwoFourTilesCoverWholeGroups) {
  const std::int64_t M = 8, N = 12, K = 6;
  TilingProblem p = sparse_gemm(M, N, K);
  // Column tiles of 4 (A stays resident): whole groups, W read once in its compressed form,
  // ceil(n/2) values of 16 + 2 bits.
  MappingCost aligned = evaluate_mapping(p, {{M, 4, K}, {kN}, {}});
  EXPECT_EQ(aligned.access_elements[1], Count(K * N));
  EXPECT_EQ(aligned.buffer_elements[1], Count(K * 4));
  EXPECT_EQ(aligned.traffic_bits, Count(16 * M * K + K * N / 2 * 18 + 16 * M * N));
  // Column tiles of 3: [0,3) [3,6) [6,9) [9,12). The boundaries 3, 6 and 9 fall inside the
  // groups [0,4), [4,8) and [8,12), which both neighbours load: the tiles cover 4, 8, 8 and 4
  // columns, 12 + 3 * 4 in all per row of W.
  MappingCost split = evaluate_mapping(p, {{M, 3, K}, {kN}, {}});
  EXPECT_EQ(split.access_elements[1], Count(K * (N + 3 * 4)));
  EXPECT_EQ(split.buffer_elements[1], Count(K * 8));
  // One column at a time: each column loads its whole group, 4x the columns.
  MappingCost one = evaluate_mapping(p, {{M, 1, K}, {kN}, {}});
  EXPECT_EQ(one.access_elements[1], Count(K * N * 4));
  // A 2:4 tensor streams as compressed tiles, never element by element.
  EXPECT_THROW(evaluate_mapping(p, {{M, N, K}, {}, {false, true, false}}), UserError);
}

// The last group of a dimension that is not a multiple of 4 is partial: a boundary inside it
// loads only its own positions twice.
TEST(Mapping, TwoFourPartialLastGroup) {
  const std::int64_t M = 2, N = 6, K = 1;
  TilingProblem p = sparse_gemm(M, N, K);
  // Tiles of 5 columns: [0,5) covers [0,6) (groups [0,4), [4,6)); [5,6) covers [4,6).
  MappingCost c = evaluate_mapping(p, {{M, 5, K}, {kN}, {}});
  EXPECT_EQ(c.access_elements[1], Count(K * (6 + 2)));
  EXPECT_EQ(c.buffer_elements[1], Count(K * 6));
  // The whole width at once is the footprint: whole groups, as cost::tensor_bytes assumes.
  EXPECT_EQ(evaluate_mapping(p, {{M, N, K}, {}, {}}).access_elements[1], Count(K * N));
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
