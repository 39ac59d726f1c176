#include "solar/cost/footprint.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string_view>

#include "solar/cost/work.h"
#include "solar/ir/text.h"
#include "testing/graph_lookup.h"

namespace solar::cost {
namespace {

using ir::Graph;
using ir::parse_graph;

using testing::op_of;

TEST(OperandFootprint, DiagonalGroupIsEnumerated) {
  // trace: a[i,i] touches the 50 diagonal elements, not 50*50.
  Graph g = parse_graph(R"(
    a = f32[50,50] input
    t = f32[] einsum [i=50] sum $0 (a[i,i]) -> [])");
  const ir::EinsumOp& e = op_of(g, "t").einsum();
  EXPECT_EQ(operand_footprint(e, e.operands[0], g.tensor(*g.find_tensor("a"))), Count(50));
  EXPECT_EQ(op_work(g, op_of(g, "t")).bytes_read, Count(4 * 50));
}

TEST(OperandFootprint, SharedIndexAcrossDimensions) {
  // a[i, i+j] with i in [0,4), j in [0,3) on a [4,8] tensor: 4*3 distinct (row, col) pairs.
  ir::EinsumOp e;
  e.indices = {{"i", 4}, {"j", 3}};
  ir::Operand op{{ir::AffineExpr::index(0), ir::AffineExpr::make({{0, 1}, {1, 1}}, 0)}, {}};
  ir::Tensor t;
  t.name = "a";
  t.shape = {4, 8};
  EXPECT_EQ(operand_footprint(e, op, t), Count(4 * 3));
}

TEST(OperandFootprint, ConstantOutOfRangeReadsNothing) {
  ir::EinsumOp e;
  e.indices = {{"i", 4}};
  ir::Tensor t;
  t.name = "a";
  t.shape = {4, 2};
  ir::Operand in_range{{ir::AffineExpr::index(0), ir::AffineExpr::constant(1)}, {}};
  ir::Operand out_of_range{{ir::AffineExpr::index(0), ir::AffineExpr::constant(5)}, 0.0};
  EXPECT_EQ(operand_footprint(e, in_range, t), Count(4));
  EXPECT_EQ(operand_footprint(e, out_of_range, t), Count(0));
}

TEST(OperandFootprint, NonContiguousWindowMatchesBruteForce) {
  // 3*p + 5*r - 4 over p<7, r<3 on a dim of 20: compare with a brute-force distinct count.
  ir::EinsumOp e;
  e.indices = {{"p", 7}, {"r", 3}};
  ir::Operand op{{ir::AffineExpr::make({{0, 3}, {1, 5}}, -4)}, 0.0};
  ir::Tensor t;
  t.name = "x";
  t.shape = {20};
  std::vector<bool> seen(20, false);
  for (int p = 0; p < 7; ++p)
    for (int r = 0; r < 3; ++r) {
      int v = 3 * p + 5 * r - 4;
      if (v >= 0 && v < 20) seen[v] = true;
    }
  Count expected = 0;
  for (bool s : seen) expected += s ? 1 : 0;
  EXPECT_EQ(operand_footprint(e, op, t), expected);
}

TEST(OperandFootprint, RandomAffineSubscriptsMatchBruteForce) {
  // Odd trials: one dimension mixing up to three indices (closed form, contiguity test or
  // bitset). Even trials: two such dimensions, usually sharing an index (joint group).
  // Both against a brute-force set of touched (row, col) pairs.
  std::mt19937 rng(12345);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 600; ++trial) {
    ir::EinsumOp e;
    const int n = pick(1, 3);
    for (int i = 0; i < n; ++i) e.indices.push_back({"i" + std::to_string(i), pick(1, 9)});
    ir::Tensor t;
    t.name = "x";
    const bool one_dim = trial % 2 == 1;
    t.shape = {pick(1, 60), one_dim ? 1 : pick(1, 12)};
    ir::Operand op;
    op.pad = 0.0;
    for (int d = 0; d < 2; ++d) {
      if (d == 1 && one_dim) {
        op.subscript.push_back(ir::AffineExpr::constant(0));
        break;
      }
      std::vector<ir::AffineTerm> terms;
      for (int i = 0; i < n; ++i)
        if (pick(0, 2) != 0) terms.push_back({i, pick(-4, 6)});
      op.subscript.push_back(ir::AffineExpr::make(terms, pick(-6, 6)));
    }
    std::set<std::pair<std::int64_t, std::int64_t>> touched;
    std::vector<std::int64_t> at(n, 0);
    for (;;) {
      std::int64_t r = op.subscript[0].evaluate(at.data()), c = op.subscript[1].evaluate(at.data());
      if (r >= 0 && r < t.shape[0] && c >= 0 && c < t.shape[1]) touched.insert({r, c});
      int j = 0;
      for (; j < n; ++j) {
        if (++at[j] < e.indices[j].extent) break;
        at[j] = 0;
      }
      if (j == n) break;
    }
    EXPECT_EQ(operand_footprint(e, op, t), Count(touched.size())) << "trial " << trial;
  }
}

TEST(OperandFootprint, WideSparseWindowIsEnumerated) {
  // 10^9*p + r, p < 4, r < 3: a window of 3e9 values (too wide for a bitset) holding only
  // 4*3 distinct points, counted exactly by enumeration.
  ir::EinsumOp e;
  e.indices = {{"p", 4}, {"r", 3}};
  ir::Operand op{{ir::AffineExpr::make({{0, 1000000000}, {1, 1}}, 0)}, {}};
  ir::Tensor t;
  t.name = "x";
  t.shape = {4000000000};
  EXPECT_EQ(operand_footprint(e, op, t), Count(4 * 3));
}

TEST(OperandFootprint, HugeNestedFlatReadIsExact) {
  // x[p*2^40 + q*2^20 + r], p < 4, q < 2^19, r < 2^19: each step exceeds every value the
  // smaller ones reach (a mixed radix), so every sum is distinct. Too wide for the bitset
  // and too many points to enumerate, it is still counted exactly: with the tensor cut at
  // 2^40 + 5, p = 0 keeps its 2^19 * 2^19 values and p = 1 only q = 0, r <= 4 (5 values).
  constexpr std::int64_t K = std::int64_t{1} << 19;
  ir::EinsumOp e;
  e.indices = {{"p", 4}, {"q", K}, {"r", K}};
  ir::Operand op{{ir::AffineExpr::make({{0, std::int64_t{1} << 40}, {1, 1 << 20}, {2, 1}}, 0)},
                 {}};
  ir::Tensor t;
  t.name = "x";
  t.shape = {(std::int64_t{1} << 40) + 5};
  EXPECT_EQ(operand_footprint(e, op, t), Count::from_signed(K * K + 5));
  t.shape = {std::int64_t{1} << 42};
  EXPECT_EQ(operand_footprint(e, op, t), Count::from_signed(4 * K * K));
}

TEST(OperandFootprint, NestedReadsMatchEnumeration) {
  // Permuted flat reads (a transpose's copy, x[i0*S0 + i1*S1 + i2]) with offsets and cut
  // windows, against the set of touched offsets.
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 300; ++trial) {
    ir::EinsumOp e;
    const int n = pick(2, 4);
    std::vector<ir::AffineTerm> terms;
    std::int64_t step = pick(1, 3), reach = 0;
    for (int i = 0; i < n; ++i) {
      e.indices.push_back({fmt::format("i{}", i), pick(1, 6)});
      terms.push_back({i, (pick(0, 1) ? 1 : -1) * step});
      reach += step * (e.indices[i].extent - 1);
      step = reach + pick(1, 4);  // nested: above every value reached so far
    }
    ir::Operand op{{ir::AffineExpr::make(terms, pick(-20, 20))}, {}};
    ir::Tensor t;
    t.name = "x";
    t.shape = {pick(1, static_cast<int>(reach) + 20)};
    std::set<std::int64_t> touched;
    std::vector<std::int64_t> at(n, 0);
    for (;;) {
      const std::int64_t v = op.subscript[0].evaluate(at.data());
      if (v >= 0 && v < t.shape[0]) touched.insert(v);
      int j = 0;
      for (; j < n; ++j) {
        if (++at[j] < e.indices[j].extent) break;
        at[j] = 0;
      }
      if (j == n) break;
    }
    EXPECT_EQ(operand_footprint(e, op, t), Count(touched.size())) << "trial " << trial;
  }
}

TEST(OperandFootprint, LargeDiagonalFallsBackToItsLargestDimension) {
  // a[i,i] with 2^23 diagonal points (beyond the 2^22 enumeration limit): the largest single
  // dimension's count, which for a diagonal is exact.
  constexpr std::int64_t N = std::int64_t{1} << 23;
  ir::EinsumOp e;
  e.indices = {{"i", N}};
  ir::Operand op{{ir::AffineExpr::index(0), ir::AffineExpr::index(0)}, {}};
  ir::Tensor t;
  t.name = "a";
  t.shape = {N, N};
  EXPECT_EQ(operand_footprint(e, op, t), Count::from_signed(N));
}

TEST(OperandFootprint, HugeIrregularSubscriptIsALowerBound) {
  // 2*p + 3*r with p, r < 1e8 takes every value in [0, 5(N-1)] except 1 and 5(N-1)-1: too
  // wide to enumerate, so the footprint is a lower bound, never above the true count.
  constexpr std::int64_t N = 100000000;
  ir::EinsumOp e;
  e.indices = {{"p", N}, {"r", N}};
  ir::Operand op{{ir::AffineExpr::make({{0, 2}, {1, 3}}, 0)}, {}};
  ir::Tensor t;
  t.name = "x";
  t.shape = {5 * (N - 1) + 1};
  const Count fp = operand_footprint(e, op, t);
  EXPECT_LE(fp, Count::from_signed(5 * (N - 1) + 1 - 2));  // never an overestimate
  EXPECT_GE(fp, Count::from_signed(N));                     // at least one index's progression
}

TEST(OperandFootprint, SubscriptRankMismatchIsUserError) {
  ir::EinsumOp e;
  e.indices = {{"i", 4}};
  ir::Tensor t;
  t.name = "a";
  t.shape = {4, 2};
  ir::Operand op{{ir::AffineExpr::index(0)}, {}};
  try {
    operand_footprint(e, op, t);
    FAIL() << "expected UserError";
  } catch (const UserError& ex) {
    EXPECT_EQ(ex.kind(), UserError::Kind::InvalidGraph);
    EXPECT_NE(std::string(ex.what()).find("1 expressions for 2 dimensions"), std::string::npos);
  }
}

}  // namespace
}  // namespace solar::cost
