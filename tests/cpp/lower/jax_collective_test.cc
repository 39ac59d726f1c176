// Tests of the jax table's collectives (src/lower/jax_collective.cc): the sharded capture's
// arguments (`collective`, `reduction`, `group`, `size`, `axis`, `peer`) become one rank's
// collective op; a collective without them (recorded outside a shard_map) is unanalyzed.
#include "lower/trace_builder.h"
#include "solar/lower/jax.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace solar::lower {
namespace {

using nlohmann::json;

struct Trace : testing::TraceBuilder {
  Trace() { frontend = "jax"; }
};
json T(int id) { return {{"tensor", id}}; }

const ir::Op& only_collective(const ir::Graph& g) {
  for (const ir::Op& op : g.ops())
    if (op.kind() == ir::OpKind::Collective) return op;
  throw std::runtime_error("no collective op");
}

TEST(JaxCollective, PsumOverTwoAxesIsOneAllReduceOverTheirProduct) {
  Trace t;
  int x = t.tensor({4, 8}, "input"), y = t.tensor({4, 8}, "output");
  t.op("jax::psum_invariant",
       {{"operands", {T(x)}}, {"collective", "all_reduce"}, {"reduction", "sum"},
        {"group", "dp,tp"}, {"size", 2 * 4}, {"axes", {"dp", "tp"}}},
       {y});
  LowerResult r = lower_jax(t.build());
  ASSERT_TRUE(r.warnings.empty()) << r.warnings[0];
  const ir::CollectiveOp& c = only_collective(r.graph).collective();
  EXPECT_EQ(c.kind, ir::CollectiveKind::AllReduce);
  EXPECT_EQ(c.reduction, ir::CollectiveReduction::Sum);
  EXPECT_EQ(c.group.size, 2 * 4);  // dp extent x tp extent
  EXPECT_EQ(c.group.name, "dp,tp");
}

TEST(JaxCollective, TiledAllGatherAndReduceScatterKeepTheirAxis) {
  Trace t;
  int x = t.tensor({4, 8}, "input"), g = t.tensor({4, 32}, "output"),
      s = t.tensor({1, 8}, "output");
  t.op("jax::all_gather", {{"operands", {T(x)}}, {"collective", "all_gather"}, {"group", "fsdp"},
                           {"size", 4}, {"axis", 1}},
       {g});
  t.op("jax::psum_scatter", {{"operands", {T(x)}}, {"collective", "reduce_scatter"},
                             {"reduction", "sum"}, {"group", "fsdp"}, {"size", 4}, {"axis", 0}},
       {s});
  LowerResult r = lower_jax(t.build());
  ASSERT_TRUE(r.warnings.empty()) << r.warnings[0];
  int seen = 0;
  for (const ir::Op& op : r.graph.ops()) {
    if (op.kind() != ir::OpKind::Collective) continue;
    ++seen;
    EXPECT_EQ(op.collective().group.size, 4);
    EXPECT_EQ(op.collective().axis, op.collective().kind == ir::CollectiveKind::AllGather ? 1 : 0);
  }
  EXPECT_EQ(seen, 2);
}

TEST(JaxCollective, PpermuteIsASendAndARecvWithTheirPeers) {
  Trace t;
  int x = t.tensor({2, 3}, "input"), sent = t.tensor({2, 3}, "intermediate"),
      got = t.tensor({2, 3}, "output");
  t.op("jax::ppermute", {{"operands", {T(x)}}, {"collective", "send"}, {"peer", 1},
                         {"group", "sp"}, {"size", 4}},
       {sent});
  t.op("jax::ppermute", {{"operands", json::array()}, {"collective", "recv"}, {"peer", 3},
                         {"group", "sp"}, {"size", 4}},
       {got});
  LowerResult r = lower_jax(t.build());
  ASSERT_TRUE(r.warnings.empty()) << r.warnings[0];
  std::vector<std::pair<ir::CollectiveKind, std::int64_t>> seen;
  for (const ir::Op& op : r.graph.ops())
    if (op.kind() == ir::OpKind::Collective)
      seen.push_back({op.collective().kind, op.collective().peer});
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], std::make_pair(ir::CollectiveKind::Send, std::int64_t{1}));
  EXPECT_EQ(seen[1], std::make_pair(ir::CollectiveKind::Recv, std::int64_t{3}));
  for (const ir::Op& op : r.graph.ops())
    if (op.kind() == ir::OpKind::Collective) EXPECT_EQ(op.collective().group.size, 2);  // a pair
}

TEST(JaxCollective, WithoutTheShardedCaptureItIsUnanalyzed) {
  Trace t;
  int x = t.tensor({4}, "input"), y = t.tensor({4}, "output");
  t.op("jax::psum", {{"operands", {T(x)}}, {"axes", {"i"}}}, {y});
  LowerResult r = lower_jax(t.build());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("recorded outside a shard_map over a mesh"), std::string::npos) << r.warnings[0];
}

}  // namespace
}  // namespace solar::lower
