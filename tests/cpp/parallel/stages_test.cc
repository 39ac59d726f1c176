// Tests of pipeline stages (src/parallel/stages.cc): ops assigned by layer, send/recv at the
// cut, and the stages run together against the whole graph.
#include "solar/parallel/stages.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "solar/exec/ranks.h"
#include "solar/ir/text.h"
#include "solar/ir/verify.h"

namespace solar::parallel {
namespace {

// Four layers of a residual chain and a head outside every layer.
const char* kChain = R"(graph chain
module "model.layers.0" "Layer"
module "model.layers.1" "Layer"
module "model.layers.2" "Layer"
module "model.layers.3" "Layer"
x = f32[2,4] input
w = f32[4,4] weight
h0 = f32[2,4] einsum "mk,kn->mn" (x, w) module "model.layers.0.mlp"
h1 = f32[2,4] einsum "mk,kn->mn" (h0, w) module "model.layers.1.mlp"
h2 = f32[2,4] einsum "mk,kn->mn" (h1, w) module "model.layers.2.mlp"
h3 = f32[2,4] einsum "mk,kn->mn" (h2, w) module "model.layers.3.mlp"
y = f32[2,4]{output} einsum [m=2,n=4] none tanh($0) (h3[m,n]) -> [m,n]
)";

std::vector<std::string> op_names(const ir::Graph& g) {
  std::vector<std::string> out;
  for (const ir::Op& op : g.ops()) out.push_back(op.name);
  return out;
}

TEST(Stages, LayersSplitInContiguousBlocksTheFirstOnesLonger) {
  // 5 layers over 2 stages: 3 then 2 (the first L mod p stages one layer longer).
  std::vector<std::int64_t> got;
  for (std::int64_t n = 0; n < 5; ++n) got.push_back(stage_of_layer(n, 5, 2));
  EXPECT_EQ(got, (std::vector<std::int64_t>{0, 0, 0, 1, 1}));
  EXPECT_EQ(layer_count(ir::parse_graph(kChain)), 4);
}

TEST(Stages, TheCutIsASendAndARecvAndTheStagesComputeTheWhole) {
  ir::Graph g = ir::parse_graph(kChain);
  // tp 1, 8 devices per domain: stage 1 is rank 1, in stage 0's domain.
  std::vector<ir::Graph> st = split_stages(g, 2, 1, 0, 8);
  ASSERT_EQ(st.size(), 2u);
  for (const ir::Graph& s : st) ir::verify(s);
  EXPECT_EQ(op_names(st[0]), (std::vector<std::string>{"h0", "h1", "h1.to_stage1"}));
  EXPECT_EQ(op_names(st[1]), (std::vector<std::string>{"h1", "h2", "h3", "y"}));
  const ir::CollectiveOp& send = st[0].ops().back().collective();
  EXPECT_EQ(send.kind, ir::CollectiveKind::Send);
  EXPECT_EQ(send.peer, 1);
  EXPECT_EQ(send.group.ranks_per_domain, 2);  // both ends in one domain
  const ir::CollectiveOp& recv = st[1].ops().front().collective();
  EXPECT_EQ(recv.kind, ir::CollectiveKind::Recv);
  EXPECT_EQ(recv.peer, 0);
  // One device per domain: the pair crosses domains.
  EXPECT_EQ(split_stages(g, 2, 1, 0, 1)[0].ops().back().collective().group.ranks_per_domain, 1);

  exec::TensorMap sources;
  for (const char* n : {"x", "w"}) {
    exec::Buffer b =
        exec::Buffer::zeros(ir::DType::F32, n[0] == 'x' ? std::vector<std::int64_t>{2, 4}
                                                        : std::vector<std::int64_t>{4, 4});
    for (std::int64_t i = 0; i < b.num_elements(); ++i)
      b.data<float>()[i] = 0.1f * float(i % 7) - 0.3f;
    sources.emplace(n, std::move(b));
  }
  const exec::TensorMap want = exec::run_graph(g, sources);
  exec::TensorMap s1;
  s1.emplace("w", sources.at("w"));
  const auto got = exec::run_ranks({&st[0], &st[1]}, {sources, s1});
  for (std::int64_t i = 0; i < want.at("y").num_elements(); ++i)
    EXPECT_NEAR(got[1].at("y").value(i), want.at("y").value(i), 1e-6);
}

TEST(Stages, FewerLayersThanStagesAreRefused) {
  try {
    split_stages(ir::parse_graph(kChain), 8, 1, 0, 8);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::BadArgument);
    EXPECT_NE(std::string(e.what()).find("4 layers do not make 8 pipeline stages"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace solar::parallel
