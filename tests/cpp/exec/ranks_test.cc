// The multi-rank runner: every collective kind on small tensors, the ranks' values written out
// by formula, and the refusals (mismatched collectives, ranks waiting on each other, a lost
// message, a collective run without ranks).
#include "solar/exec/ranks.h"

#include <gtest/gtest.h>

#include "exec_fixtures.h"
#include "solar/util/errors.h"

namespace solar::exec {
namespace {

using ir::DType;
using testing::make;
using testing::values;

// Rank r's x[2,4] holds 10 r + i at flat position i.
Buffer rank_input(int r, std::vector<std::int64_t> shape = {2, 4}) {
  std::vector<double> v;
  for (int i = 0; i < 8; ++i) v.push_back(10 * r + i);
  return make(DType::F32, std::move(shape), v);
}

std::vector<TensorMap> run(const std::string& text, int ranks) {
  ir::Graph g = ir::parse_graph(text);
  std::vector<const ir::Graph*> graphs(ranks, &g);
  std::vector<TensorMap> in;
  for (int r = 0; r < ranks; ++r) in.push_back({{"x", rank_input(r)}});
  return run_ranks(graphs, in);
}

TEST(RunRanks, AllReduceSumsMaxesAndAverages) {
  auto out = run(R"(
    x = f32[2,4] input
    s = f32[2,4]{output} collective all_reduce sum {size=3} (x)
    m = f32[2,4]{output} collective all_reduce max {size=3} (x)
    a = f32[2,4]{output} collective all_reduce avg {size=3} (x))", 3);
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(values(out[r]["s"])[i], (0 + 10 + 20) + 3 * i);   // sum over ranks of 10 r + i
      EXPECT_EQ(values(out[r]["m"])[i], 20 + i);                  // rank 2's
      EXPECT_EQ(values(out[r]["a"])[i], (0 + 10 + 20) / 3.0 + i);  // the sum over 3
    }
}

TEST(RunRanks, GroupsAreBlocksOfConsecutiveRanks) {
  // 4 ranks, groups of 2: {0, 1} and {2, 3}.
  auto out = run(R"(
    x = f32[2,4] input
    s = f32[2,4]{output} collective all_reduce sum {size=2} (x))", 4);
  EXPECT_EQ(values(out[1]["s"])[0], 0 + 10);
  EXPECT_EQ(values(out[3]["s"])[0], 20 + 30);
}

TEST(RunRanks, AllGatherConcatenatesInRankOrder) {
  auto out = run(R"(
    x = f32[2,4] input
    g = f32[2,8]{output} collective all_gather {size=2, axis=1} (x))", 2);
  // Row i of the result: rank 0's row i, then rank 1's.
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(values(out[r]["g"]), (std::vector<double>{0, 1, 2, 3, 10, 11, 12, 13,  //
                                                        4, 5, 6, 7, 14, 15, 16, 17}));
}

TEST(RunRanks, ReduceScatterKeepsEachRanksBlock) {
  auto out = run(R"(
    x = f32[2,4] input
    y = f32[2,2]{output} collective reduce_scatter sum {size=2, axis=1} (x))", 2);
  // The sum is 10 + 2 x[i]; rank 0 keeps columns 0-1, rank 1 columns 2-3.
  EXPECT_EQ(values(out[0]["y"]), (std::vector<double>{10, 12, 18, 20}));
  EXPECT_EQ(values(out[1]["y"]), (std::vector<double>{14, 16, 22, 24}));
}

TEST(RunRanks, AllToAllSendsBlockJToRankJ) {
  auto out = run(R"(
    x = f32[2,4] input
    y = f32[1,8]{output} collective all_to_all {size=2, split_axis=0, concat_axis=1} (x))", 2);
  // Rank j receives row j of every rank, concatenated along axis 1 in rank order.
  EXPECT_EQ(values(out[0]["y"]), (std::vector<double>{0, 1, 2, 3, 10, 11, 12, 13}));
  EXPECT_EQ(values(out[1]["y"]), (std::vector<double>{4, 5, 6, 7, 14, 15, 16, 17}));
}

TEST(RunRanks, BroadcastGivesEveryRankTheRootsInput) {
  auto out = run(R"(
    x = f32[2,4] input
    y = f32[2,4]{output} collective broadcast {size=3, root=2} (x))", 3);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(values(out[r]["y"]), values(rank_input(2)));
}

TEST(RunRanks, SendAndRecvPairByPeer) {
  // Rank 0 sends x to rank 1, which sends it back doubled.
  ir::Graph r0 = ir::parse_graph(R"(
    x = f32[2,4] input
    s = f32[2,4]{output} collective send {peer=1} (x)
    y = f32[2,4]{output} collective recv {peer=1} ())");
  ir::Graph r1 = ir::parse_graph(R"(
    x = f32[2,4] input
    z = f32[2,4] collective recv {peer=0} ()
    d = f32[2,4] einsum [i=2,j=4] none mul($0,2) (z[i,j]) -> [i,j]
    s = f32[2,4]{output} collective send {peer=0} (d))");
  auto out = run_ranks({&r0, &r1}, {{{"x", rank_input(0)}}, {{"x", rank_input(1)}}});
  for (int i = 0; i < 8; ++i) EXPECT_EQ(values(out[0]["y"])[i], 2 * i);
  EXPECT_EQ(values(out[0]["s"]), values(rank_input(0)));  // a send's result is its input
}

template <class F>
void expect_invalid(F&& f, const std::string& what) {
  try {
    f();
    FAIL() << "no error; wanted: " << what;
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::InvalidGraph) << e.what();
    EXPECT_NE(e.message().find(what), std::string::npos)
        << "message: " << e.message() << "\nwanted:  " << what;
  }
}

TEST(RunRanks, MismatchedCollectivesAreRefused) {
  ir::Graph a = ir::parse_graph(R"(
    x = f32[2,4] input
    y = f32[2,4]{output} collective all_reduce sum {size=2} (x))");
  ir::Graph b = ir::parse_graph(R"(
    x = f32[2,4] input
    y = f32[2,4]{output} collective all_reduce max {size=2} (x))");
  expect_invalid([&] { run_ranks({&a, &b}, {{{"x", rank_input(0)}}, {{"x", rank_input(1)}}}); },
                 "collectives do not match: rank 0 at 'y' (all_reduce over 2 ranks)");
}

TEST(RunRanks, RanksWaitingOnEachOtherAreRefused) {
  ir::Graph g = ir::parse_graph(R"(
    x = f32[2,4] input
    y = f32[2,4]{output} collective recv {peer=1} ())");
  ir::Graph h = ir::parse_graph(R"(
    x = f32[2,4] input
    y = f32[2,4]{output} collective recv {peer=0} ())");
  expect_invalid([&] { run_ranks({&g, &h}, {{{"x", rank_input(0)}}, {{"x", rank_input(1)}}}); },
                 "the ranks wait for each other: rank 0 at 'y' (recv peer 1); rank 1 at 'y' "
                 "(recv peer 0)");
  ir::Graph lone = ir::parse_graph(R"(
    x = f32[2,4] input
    y = f32[2,4]{output} collective send {peer=1} (x))");
  ir::Graph idle = ir::parse_graph(R"(
    x = f32[2,4] input
    y = f32[2,4]{output} einsum [i=2,j=4] none $0 (x[i,j]) -> [i,j])");
  expect_invalid(
      [&] { run_ranks({&lone, &idle}, {{{"x", rank_input(0)}}, {{"x", rank_input(1)}}}); },
      "rank 0 sent 1 message to rank 1 that it never received");
}

TEST(RunRanks, GroupLargerThanTheProgramIsRefused) {
  expect_invalid([] {
    run(R"(
      x = f32[2,4] input
      y = f32[2,4]{output} collective all_reduce sum {size=4} (x))", 2);
  }, "its group of 4 consecutive ranks from rank 0 needs 4 ranks, the program has 2");
}

TEST(RunGraph, RefusesACollectiveWithoutRanks) {
  ir::Graph g = ir::parse_graph(R"(
    x = f32[2,4] input
    y = f32[2,4]{output} collective all_reduce sum {size=2} (x))");
  try {
    run_graph(g, {{"x", rank_input(0)}});
    FAIL() << "no error";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("all_reduce exchanges data with other ranks: run the "
                                         "ranks' graphs together (run_ranks"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace solar::exec
