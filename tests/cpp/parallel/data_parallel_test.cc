// Tests of data parallelism and ZeRO (src/parallel/data_parallel.cc): each stage's
// collectives and payloads by formula.
#include "solar/parallel/data_parallel.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "solar/ir/text.h"
#include "solar/ir/verify.h"

namespace solar::parallel {
namespace {

constexpr std::int64_t M = 4, D = 8, F = 6;

// A training step's shape: a loss and the gradient of weight w ([D, F]).
const std::string kStep = fmt::format(R"(graph step
x = f32[{0},{1}] input
w = f32[{1},{2}] weight
y = f32[{0},{2}] einsum "mk,kn->mn" (x, w)
loss = f32[]{{output}} einsum [m={0},n={2}] sum $0 (y[m,n]) -> []
gw = f32[{1},{2}]{{output}} einsum [m={0},k={1},n={2}] sum $0 (x[m,k]) -> [k,n]
)",
                                      M, D, F);

std::vector<std::pair<ir::CollectiveKind, std::string>> colls(const ir::Graph& g) {
  std::vector<std::pair<ir::CollectiveKind, std::string>> out;
  for (const ir::Op& op : g.ops())
    if (op.kind() == ir::OpKind::Collective)
      out.push_back({op.collective().kind, g.tensor(op.outputs[0]).name});
  return out;
}

const ir::Tensor& tensor(const ir::Graph& g, const std::string& n) {
  return g.tensor(*g.find_tensor(n));
}

TEST(DataParallel, ZeroStagesReduceTheGradientsAsZeroSays) {
  ir::Graph g = ir::parse_graph(kStep);
  const std::int64_t dp = 2, n = D * F;
  const ir::CollectiveGroup group{dp, "dp", 0, {}};
  // ZeRO 0: an all-reduce (avg) of the gradient.
  DataParallelGraph z0 = data_parallel(g, dp, 0, group);
  ir::verify(z0.graph);
  EXPECT_EQ(z0.gradient_elements, n);
  EXPECT_EQ(colls(z0.graph), (std::vector<std::pair<ir::CollectiveKind, std::string>>{
                                 {ir::CollectiveKind::AllReduce, "gw"}}));
  EXPECT_EQ(z0.graph.ops().back().collective().reduction, ir::CollectiveReduction::Avg);
  // ZeRO 1: reduce-scatter of the flattened gradient (n / dp each), all-gather of the update.
  DataParallelGraph z1 = data_parallel(g, dp, 1, group);
  ir::verify(z1.graph);
  EXPECT_EQ(colls(z1.graph), (std::vector<std::pair<ir::CollectiveKind, std::string>>{
                                 {ir::CollectiveKind::ReduceScatter, "gw.shard"},
                                 {ir::CollectiveKind::AllGather, "gw"}}));
  EXPECT_EQ(tensor(z1.graph, "gw.shard").shape, (std::vector<std::int64_t>{n / dp}));
  // ZeRO 3: w held as its 1/dp shard, gathered before the forward and after the loss.
  DataParallelGraph z3 = data_parallel(g, dp, 3, group);
  ir::verify(z3.graph);
  EXPECT_EQ(tensor(z3.graph, "w.fsdp_shard").shape, (std::vector<std::int64_t>{n / dp}));
  EXPECT_EQ(tensor(z3.graph, "w.fsdp_shard").role, ir::Role::Weight);
  EXPECT_EQ(tensor(z3.graph, "w").role, ir::Role::Intermediate);
  EXPECT_EQ(colls(z3.graph), (std::vector<std::pair<ir::CollectiveKind, std::string>>{
                                 {ir::CollectiveKind::AllGather, "w.fwd_flat"},
                                 {ir::CollectiveKind::AllGather, "w.bwd_gathered"},
                                 {ir::CollectiveKind::ReduceScatter, "gw.shard"},
                                 {ir::CollectiveKind::AllGather, "gw"}}));
}

TEST(DataParallel, AGraphWithoutGradientsOrAGradientThatDoesNotSplitIsRefused) {
  ir::Graph plain =
      ir::parse_graph("x = f32[2] input\ny = f32[]{output} einsum [i=2] sum $0 (x[i]) -> []\n");
  EXPECT_THROW(data_parallel(plain, 2, 0, {2, "dp", 0, {}}), Unsupported);
  EXPECT_THROW(data_parallel(ir::parse_graph(kStep), 5, 1, {5, "dp", 0, {}}), Unsupported);
}

}  // namespace
}  // namespace solar::parallel
