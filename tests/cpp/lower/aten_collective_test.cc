// Tests of the aten table's collectives (src/lower/aten_collective.cc): the capture's
// arguments on torch.distributed's ops (`collective`, `reduction`, `group`, `size`, `axis`)
// become one rank's collective op; wait_tensor is free; FSDP2's copy-in and chunk_cat are
// data movement; a collective the capture did not resolve is unanalyzed with the reason.
#include "lower/trace_builder.h"
#include "solar/lower/aten.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace solar::lower {
namespace {

using nlohmann::json;

json T(int id) { return {{"tensor", id}}; }

std::vector<const ir::Op*> collectives(const ir::Graph& g) {
  std::vector<const ir::Op*> out;
  for (const ir::Op& op : g.ops())
    if (op.kind() == ir::OpKind::Collective) out.push_back(&op);
  return out;
}

TEST(AtenCollective, FunctionalAllReduceAndWaitIsOneAllReduce) {
  testing::TraceBuilder t;
  int x = t.tensor({4, 16}, "input"), r = t.tensor({4, 16}), y = t.tensor({4, 16}, "output");
  t.op("_c10d_functional::all_reduce.default",
       {{"input", T(x)}, {"reduce_op", "sum"}, {"group_name", "3"}, {"collective", "all_reduce"},
        {"reduction", "sum"}, {"group", "tp"}, {"size", 2}},
       {r});
  t.op("_c10d_functional::wait_tensor.default", {{"tensor", T(r)}}, {y});
  LowerResult res = lower_aten(t.build());
  ASSERT_TRUE(res.warnings.empty()) << res.warnings[0];
  auto cs = collectives(res.graph);
  ASSERT_EQ(cs.size(), 1u);
  const ir::CollectiveOp& c = cs[0]->collective();
  EXPECT_EQ(c.kind, ir::CollectiveKind::AllReduce);
  EXPECT_EQ(c.reduction, ir::CollectiveReduction::Sum);
  EXPECT_EQ(c.group.size, 2);
  EXPECT_EQ(c.group.name, "tp");
}

TEST(AtenCollective, InPlaceC10dOpsReadTheirInputAndDefineTheWrittenTensor) {
  testing::TraceBuilder t;
  int g = t.tensor({8}, "input"), g2 = t.tensor({8}, "output");
  int shard = t.tensor({2, 4}, "input"), empty = t.tensor({8, 4}), full = t.tensor({8, 4}, "output");
  t.op("c10d::allreduce_.default",
       {{"tensors", {T(g)}}, {"collective", "all_reduce"}, {"reduction", "avg"}, {"size", 4}},
       {g2, nullptr});
  t.op("aten::empty.memory_format", {{"size", {8, 4}}}, {empty});
  t.op("c10d::_allgather_base_.default",
       {{"output_tensor", T(empty)}, {"input_tensor", T(shard)}, {"collective", "all_gather"},
        {"size", 4}, {"axis", 0}},
       {full, nullptr});
  LowerResult res = lower_aten(t.build());
  ASSERT_TRUE(res.warnings.empty()) << res.warnings[0];
  auto cs = collectives(res.graph);
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_EQ(cs[0]->collective().reduction, ir::CollectiveReduction::Avg);
  EXPECT_EQ(cs[1]->collective().kind, ir::CollectiveKind::AllGather);
  EXPECT_EQ(res.graph.tensor(cs[1]->outputs[0]).shape, (std::vector<std::int64_t>{8, 4}));
}

TEST(AtenCollective, UnresolvedCollectivesAreUnanalyzedWithTheReason) {
  testing::TraceBuilder t;
  int x = t.tensor({4}, "input"), a = t.tensor({4}, "output"), b = t.tensor({4}, "output");
  t.op("c10d::allreduce_.default", {{"tensors", {T(x)}}}, {a, nullptr});
  t.op("_c10d_functional::all_reduce.default", {{"input", T(x)}, {"reduce_op", "sum"}}, {b});
  LowerResult res = lower_aten(t.build());
  ASSERT_EQ(res.warnings.size(), 2u);
  for (const std::string& w : res.warnings)
    EXPECT_NE(w.find("fake process group"), std::string::npos) << w;
  EXPECT_TRUE(collectives(res.graph).empty());
}

TEST(AtenCollective, FsdpCopyInAndChunkCatAreDataMovement) {
  testing::TraceBuilder t;
  int a = t.tensor({2, 4}, "input"), b = t.tensor({2, 2}, "input");
  int buf = t.tensor({4 * 12}), slot = t.tensor({12}, "output"), whole = t.tensor({4 * 12});
  t.op("aten::empty.memory_format", {{"size", {4 * 12}}}, {buf});
  // This rank's shards a and b, flattened side by side: 2*4 + 2*2 = 12 elements.
  t.op("fsdp::all_gather_copy_in.default",
       {{"all_gather_inputs", {T(a), T(b)}}, {"all_gather_output", T(buf)}}, {slot, whole});
  int ga = t.tensor({4, 3}, "input"), gb = t.tensor({4, 1}, "input"), out = t.tensor({2, 8});
  int rows = t.tensor({2, 8}, "output");
  t.op("aten::empty.memory_format", {{"size", {2, 8}}}, {out});
  // Two chunks of each gradient along dim 0: row i holds chunk i of ga (6) and of gb (2).
  t.op("fsdp::chunk_cat.default",
       {{"tensors", {T(ga), T(gb)}}, {"dim", 0}, {"num_chunks", 2}, {"out", T(out)}}, {rows});
  LowerResult res = lower_aten(t.build());
  ASSERT_TRUE(res.warnings.empty()) << res.warnings[0];
  int concats = 0;
  for (const ir::Op& op : res.graph.ops())
    if (op.kind() == ir::OpKind::Move && op.move().kind == ir::MoveKind::Concat) ++concats;
  EXPECT_EQ(concats, 2);
}

}  // namespace
}  // namespace solar::lower
