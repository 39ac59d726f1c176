// Tests of expert parallelism (src/parallel/experts.cc): the rank's block of experts and the
// all-to-alls of the (token, expert) pairs, by formula.
#include "solar/parallel/experts.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "solar/ir/text.h"
#include "solar/ir/verify.h"

namespace solar::parallel {
namespace {

constexpr std::int64_t E = 4, P = 6, D = 8, F = 16;  // experts, pairs, width, hidden

std::string moe() {
  return fmt::format(R"(graph moe
module "moe.experts" "MixtralExperts"
x = f32[{1},{2}] input
ids = i64[{1}] input
moe.experts.up = f32[{0},{2},{3}] weight
g = f32[{1},{2},{3}] move gather {{axis=0}} (moe.experts.up, ids)
y = f32[{1},{3}] einsum [p={1},d={2},f={3}] sum mul($0,$1) (x[p,d], g[p,d,f]) -> [p,f]
z = f32[{1},{3}]{{output}} einsum [p={1},f={3}] none relu($0) (y[p,f]) -> [p,f]
)",
                     E, P, D, F);
}

TEST(Experts, TheRankHoldsItsExpertsAndTheirPairsCrossByAllToAll) {
  ir::Graph g = ir::parse_graph(moe());
  EXPECT_EQ(expert_weights(g),
            (std::map<std::string, std::string>{{"moe.experts.up", "moe.experts"}}));
  const std::int64_t ep = 2;
  ExpertParallelGraph r = expert_parallel(g, ep, 1, {ep, "ep", 0, {}});
  ir::verify(r.graph);
  EXPECT_EQ(r.graph.tensor(*r.graph.find_tensor("moe.experts.up")).shape,
            (std::vector<std::int64_t>{E / ep, D, F}));
  // The pairs' activations dispatched, their ids sent, the expert outputs combined.
  EXPECT_EQ(r.all_to_alls, 3);
  std::vector<std::string> a2a;
  for (const ir::Op& op : r.graph.ops())
    if (op.kind() == ir::OpKind::Collective) {
      EXPECT_EQ(op.collective().kind, ir::CollectiveKind::AllToAll);
      a2a.push_back(r.graph.tensor(op.inputs[0]).name);
    }
  // The ids before the gather that reads them, the activations before the first expert
  // matmul, the outputs before their first reader.
  EXPECT_EQ(a2a, (std::vector<std::string>{"ids", "x", "y"}));
  // z reads the combined outputs.
  EXPECT_EQ(r.graph.tensor(r.graph.ops().back().inputs[0]).name, "y.combined");
}

TEST(Experts, PairsThatDoNotSplitAndGraphsWithoutExpertsAreRefused) {
  ir::Graph g = ir::parse_graph(moe());
  EXPECT_THROW(expert_parallel(g, 4, 0, {4, "ep", 0, {}}), Unsupported);  // 6 pairs over 4
  ir::Graph plain =
      ir::parse_graph("x = f32[2] input\ny = f32[2]{output} einsum [i=2] none $0 (x[i]) -> [i]\n");
  EXPECT_THROW(expert_parallel(plain, 2, 0, {2, "ep", 0, {}}), Unsupported);
}

}  // namespace
}  // namespace solar::parallel
