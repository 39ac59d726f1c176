// Tests of the tensor-parallel pass (src/parallel/propagate.cc, collectives.cc, moves.cc):
// rank graphs in the text form, their work as formulas of the plan, and the ranks run
// together against the unsharded graph.
#include "solar/parallel/tensor_parallel.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "solar/cost/work.h"
#include "solar/exec/ranks.h"
#include "solar/ir/text.h"
#include "solar/ir/verify.h"

namespace solar::parallel {
namespace {

constexpr std::int64_t M = 4, D = 8, H = 16;  // tokens, model width, hidden width

std::string mlp(const std::string& tail = "") {
  return fmt::format(R"(graph mlp
x = f32[{0},{1}] input
w1 = f32[{1},{2}] weight
w2 = f32[{2},{1}] weight
a = f32[{0},{2}] einsum "mk,kn->mn" (x, w1)
r = f32[{0},{2}] einsum [m={0},n={2}] none relu($0) (a[m,n]) -> [m,n]
)",
                     M, D, H) +
         tail;
}
const std::string kMlpOut = fmt::format(R"(y = f32[{0},{1}]{{output}} einsum "mk,kn->mn" (r, w2)
)",
                                        M, D);

TensorParallelPlan mlp_plan(std::int64_t tp, std::int64_t rank, bool sp = false) {
  TensorParallelPlan p;
  p.tp = tp;
  p.rank = rank;
  p.sequence_parallel = sp;
  p.group = {tp, "tp", 0, {}};
  p.weights = {{"w1", {ShardKind::Column, 1}}, {"w2", {ShardKind::Row, 0}}};
  return p;
}

Count macs(const ir::Graph& g) {
  Count n = 0;
  for (const ir::Op& op : g.ops()) n += cost::op_work(g, op).total_macs();
  return n;
}

std::vector<ir::CollectiveKind> kinds(const ir::Graph& g) {
  std::vector<ir::CollectiveKind> out;
  for (const ir::Op& op : g.ops())
    if (op.kind() == ir::OpKind::Collective) out.push_back(op.collective().kind);
  return out;
}

const ir::Tensor& tensor(const ir::Graph& g, const std::string& name) {
  return g.tensor(*g.find_tensor(name));
}

// Runs the unsharded graph and the ranks' graphs (each given its block of the sharded
// weights along the rule's dimension) on the same random sources; every rank's `out` must
// equal the unsharded one.
void expect_ranks_equal_whole(const ir::Graph& whole, const std::vector<ShardedGraph>& ranks,
                              const TensorParallelPlan& plan, const std::string& out) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0, 1);
  exec::TensorMap sources;
  for (const ir::Tensor& t : whole.tensors()) {
    if (!ir::is_graph_source(t.role)) continue;
    exec::Buffer b = exec::Buffer::zeros(ir::DType::F32, t.shape);
    for (std::int64_t i = 0; i < b.num_elements(); ++i) b.data<float>()[i] = normal(rng);
    sources.emplace(t.name, std::move(b));
  }
  std::vector<exec::TensorMap> rank_sources;
  std::vector<const ir::Graph*> graphs;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    exec::TensorMap s;
    for (const auto& [name, buf] : sources) {
      auto rule = plan.weights.find(name);
      if (rule == plan.weights.end()) {
        s.emplace(name, buf);
        continue;
      }
      // The rank's block: rows r*n..(r+1)*n of dim 0, or columns of dim 1 (2-D weights).
      const ir::Tensor& lt = tensor(ranks[r].graph, name);
      exec::Buffer b = exec::Buffer::zeros(ir::DType::F32, lt.shape);
      std::int64_t rows = lt.shape[0], cols = lt.shape[1];
      std::int64_t full_cols = buf.shape()[1];
      for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) {
          std::int64_t gi = rule->second.dim == 0 ? std::int64_t(r) * rows + i : i;
          std::int64_t gj = rule->second.dim == 1 ? std::int64_t(r) * cols + j : j;
          b.data<float>()[i * cols + j] = static_cast<float>(buf.value(gi * full_cols + gj));
        }
      s.emplace(name, std::move(b));
    }
    rank_sources.push_back(std::move(s));
    graphs.push_back(&ranks[r].graph);
  }
  const exec::TensorMap want = exec::run_graph(whole, sources);
  const auto got = exec::run_ranks(graphs, rank_sources);
  for (const auto& g : got) {
    const exec::Buffer& a = g.at(out);
    const exec::Buffer& b = want.at(out);
    ASSERT_EQ(a.shape(), b.shape());
    for (std::int64_t i = 0; i < b.num_elements(); ++i)
      ASSERT_NEAR(a.value(i), b.value(i), 1e-4 * (1 + std::abs(b.value(i))))
          << out << "[" << i << "]";
  }
}

TEST(TensorParallel, Tp2MlpIsHalfTheMacsPlusOneAllReduce) {
  const std::int64_t tp = 2;
  ir::Graph g = ir::parse_graph(mlp(kMlpOut));
  std::vector<ShardedGraph> ranks;
  for (std::int64_t r = 0; r < tp; ++r) ranks.push_back(shard_tensor_parallel(g, mlp_plan(tp, r)));
  for (const auto& s : ranks) {
    ir::verify(s.graph);
    // Both matmuls split along the hidden index: 2 M H D MACs over tp ranks.
    EXPECT_EQ(macs(g), Count(2 * M * H * D));
    EXPECT_EQ(macs(s.graph), Count(2 * M * H * D / tp));
    // One all-reduce of the [M, D] partial sums, f32: M D 4 bytes.
    ASSERT_EQ(kinds(s.graph), std::vector{ir::CollectiveKind::AllReduce});
    EXPECT_EQ(tensor(s.graph, "y.local").size_bytes(), Count(M * D * 4));
    EXPECT_EQ(tensor(s.graph, "w1").shape, (std::vector<std::int64_t>{D, H / tp}));
    EXPECT_EQ(tensor(s.graph, "w2").shape, (std::vector<std::int64_t>{H / tp, D}));
    EXPECT_TRUE(s.replicated_ops.empty());
  }
  expect_ranks_equal_whole(g, ranks, mlp_plan(tp, 0), "y");
}

TEST(TensorParallel, AReduceOverAShardedIndexIsPartialThenAllReduced) {
  // A max over a sharded weight's columns: each rank's max over its block, then the
  // all-reduce's max over the ranks.
  ir::Graph g = ir::parse_graph(fmt::format(R"(graph rowmax
w = f32[{0},{1}] weight
s = f32[{0}]{{output}} einsum [m={0},k={1}] max $0 (w[m,k]) -> [m]
)",
                                            M, H));
  TensorParallelPlan plan = mlp_plan(4, 1);
  plan.weights = {{"w", {ShardKind::Column, 1}}};
  std::vector<ShardedGraph> ranks;
  for (std::int64_t r = 0; r < 4; ++r) {
    plan.rank = r;
    ranks.push_back(shard_tensor_parallel(g, plan));
  }
  const ir::Graph& r1 = ranks[1].graph;
  ASSERT_EQ(kinds(r1), std::vector{ir::CollectiveKind::AllReduce});
  const ir::Op& ar = r1.ops().back();
  EXPECT_EQ(ar.collective().reduction, ir::CollectiveReduction::Max);
  EXPECT_EQ(r1.tensor(ar.outputs[0]).name, "s");
  EXPECT_EQ(r1.ops().front().einsum().indices[1].extent, H / 4);
  expect_ranks_equal_whole(g, ranks, plan, "s");
}

TEST(TensorParallel, SequenceParallelReduceScattersThenGathers) {
  // With --sp the row-parallel output is reduce-scattered along the tokens (M / tp each),
  // the next op runs on the rank's tokens, and the output is gathered whole.
  const std::int64_t tp = 2;
  ir::Graph g = ir::parse_graph(mlp(fmt::format(R"(y = f32[{0},{1}] einsum "mk,kn->mn" (r, w2)
z = f32[{0},{1}]{{output}} einsum [m={0},d={1}] none relu($0) (y[m,d]) -> [m,d]
)",
                                                M, D)));
  std::vector<ShardedGraph> ranks;
  for (std::int64_t r = 0; r < tp; ++r)
    ranks.push_back(shard_tensor_parallel(g, mlp_plan(tp, r, true)));
  const ir::Graph& r0 = ranks[0].graph;
  ASSERT_EQ(kinds(r0),
            (std::vector{ir::CollectiveKind::ReduceScatter, ir::CollectiveKind::AllGather}));
  EXPECT_EQ(tensor(r0, "y.scattered").shape, (std::vector<std::int64_t>{M / tp, D}));
  EXPECT_EQ(tensor(r0, "z.local").shape, (std::vector<std::int64_t>{M / tp, D}));
  expect_ranks_equal_whole(g, ranks, mlp_plan(tp, 0, true), "z");
}

TEST(TensorParallel, AnOpWithNoRuleGetsItsInputsGatheredAndRunsReplicated) {
  const std::int64_t tp = 2;
  ir::Graph g = ir::parse_graph(mlp(fmt::format(
      R"(s = f32[{0},{1}]{{output}} unanalyzed "aten::_fft_r2c" {{reason="no lowering"}} (r)
)",
      M, H)));
  ShardedGraph s = shard_tensor_parallel(g, mlp_plan(tp, 0));
  // r is sharded along the hidden index: gathered whole (M H), the op run on every rank.
  ASSERT_EQ(kinds(s.graph), std::vector{ir::CollectiveKind::AllGather});
  EXPECT_EQ(tensor(s.graph, "r.whole").shape, (std::vector<std::int64_t>{M, H}));
  ASSERT_EQ(s.replicated_ops.size(), 1u);
  EXPECT_NE(s.replicated_ops[0].find("no sharding rule"), std::string::npos);
}

TEST(TensorParallel, KeyValueHeadsFewerThanTpAreSharedByTheRanks) {
  // Grouped-query attention scores, 4 query heads over 2 key/value heads (head size 2), at
  // tp 4: each rank keeps one key/value head (tp / kv = 2 ranks share it) and one query head.
  constexpr std::int64_t T = 3, Dm = 8, Hq = 4, Kv = 2, E = 2, tp = 4;
  ir::Graph g = ir::parse_graph(fmt::format(R"(graph gqa
x = f32[{0},{1}] input
wq = f32[{1},{2}] weight
wk = f32[{1},{3}] weight
q = f32[{0},{2}] einsum "mk,kn->mn" (x, wq)
k = f32[{0},{3}] einsum "mk,kn->mn" (x, wk)
qh = f32[{0},{4},{6}] move view (q)
kh = f32[{0},{5},{6}] move view (k)
s = f32[{0},{4}]{{output}} einsum [t={0},h={5},j={7},e={6}] sum mul($0,$1) (qh[t,h*{7}+j,e], kh[t,h,e]) -> [t,h*{7}+j]
)",
                                            T, Dm, Hq * E, Kv * E, Hq, Kv, E, Hq / Kv));
  TensorParallelPlan plan = mlp_plan(tp, 0);
  plan.weights = {{"wq", {ShardKind::Column, 1}}, {"wk", {ShardKind::Column, 1, Kv}}};
  std::vector<ShardedGraph> ranks;
  for (std::int64_t r = 0; r < tp; ++r) {
    plan.rank = r;
    ranks.push_back(shard_tensor_parallel(g, plan));
  }
  for (const auto& s : ranks) {
    ir::verify(s.graph);
    // The key projection: the whole one over kv (one head's columns); the query's over tp.
    EXPECT_EQ(tensor(s.graph, "wk").shape, (std::vector<std::int64_t>{Dm, Kv * E / Kv}));
    EXPECT_EQ(tensor(s.graph, "wq").shape, (std::vector<std::int64_t>{Dm, Hq * E / tp}));
    // All MACs: T Dm (Hq E / tp + Kv E / Kv) projections + T (Hq / tp) E scores.
    EXPECT_EQ(macs(s.graph), Count(T * Dm * (Hq * E / tp + E) + T * (Hq / tp) * E));
    EXPECT_TRUE(s.replicated_ops.empty());
    ASSERT_EQ(kinds(s.graph), std::vector{ir::CollectiveKind::AllGather});  // the scores, whole
  }
  // Run together, each rank given its block of wq (of tp) and of wk (head r / (tp / kv)),
  // the ranks' scores equal the unsharded graph's.
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0, 1);
  exec::TensorMap sources;
  for (const ir::Tensor& t : g.tensors()) {
    if (!ir::is_graph_source(t.role)) continue;
    exec::Buffer b = exec::Buffer::zeros(ir::DType::F32, t.shape);
    for (std::int64_t i = 0; i < b.num_elements(); ++i) b.data<float>()[i] = normal(rng);
    sources.emplace(t.name, std::move(b));
  }
  std::vector<exec::TensorMap> rank_sources;
  std::vector<const ir::Graph*> graphs;
  for (std::int64_t r = 0; r < tp; ++r) {
    exec::TensorMap m;
    m.emplace("x", sources.at("x"));
    for (auto [name, parts] : {std::pair<std::string, std::int64_t>{"wq", tp}, {"wk", Kv}}) {
      const exec::Buffer& w = sources.at(name);
      std::int64_t cols = w.shape()[1] / parts, b = r / (tp / parts);
      exec::Buffer blk = exec::Buffer::zeros(ir::DType::F32, {Dm, cols});
      for (std::int64_t i = 0; i < Dm; ++i)
        for (std::int64_t j = 0; j < cols; ++j)
          blk.data<float>()[i * cols + j] =
              static_cast<float>(w.value(i * w.shape()[1] + b * cols + j));
      m.emplace(name, std::move(blk));
    }
    rank_sources.push_back(std::move(m));
    graphs.push_back(&ranks[r].graph);
  }
  const exec::TensorMap want = exec::run_graph(g, sources);
  for (const auto& got : exec::run_ranks(graphs, rank_sources))
    for (std::int64_t i = 0; i < want.at("s").num_elements(); ++i)
      ASSERT_NEAR(got.at("s").value(i), want.at("s").value(i),
                  1e-4 * (1 + std::abs(want.at("s").value(i))));
}

TEST(TensorParallel, ADimensionThatDoesNotDivideIsRefused) {
  ir::Graph g = ir::parse_graph(mlp(kMlpOut));
  try {
    shard_tensor_parallel(g, mlp_plan(3, 0));
    FAIL() << "expected Unsupported";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("does not divide over tp=3"), std::string::npos);
  }
}

}  // namespace
}  // namespace solar::parallel
