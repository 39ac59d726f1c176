// The module tree (include/solar/report/modules.h) on a hand-written graph whose ops name
// modules: the tree's shape and order, summed counts, boundary bytes, levels and shares, and
// its text views.
#include "solar/report/modules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "solar/ir/text.h"
#include "testing/fixtures.h"

namespace solar::report {
namespace {

using ir::DType;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::int64_t N = 64;
constexpr double kBandwidth = 1e12;
const Count kTensor = Count(N * N * 4);  // one f32 [N, N] tensor

// blk.0.fc: a = x w0; blk.1.fc: b = a w1; outside every module: y = b * x.
constexpr const char* kGraph = R"(graph tree {frontend="torch"}
module "" "Net"
module "blk.0" "Block"
module "blk.0.fc" "Linear"
x = f32[64,64] input
w0 = f32[64,64] weight
w1 = f32[64,64] weight
a = f32[64,64] einsum "ij,jk->ik" (x, w0) module "blk.0.fc"
b = f32[64,64] einsum "ij,jk->ik" (a, w1) module "blk.1.fc"
y = f32[64,64]{output} einsum "ij,ij->ij" (b, x)
)";

struct Fixture {
  ir::Graph g = ir::parse_graph(kGraph, "tree.solar");
  hw::Device dev = testing::DeviceBuilder("SYN").tensor(DType::BF16, 1e15).vector(DType::F32, 1e13)
                       .dram(kBandwidth).build();
  Report r;
  Fixture() {
    LevelOptions levels;
    levels.cache_aware = false;
    levels.insights = false;
    r = analyze(g, {&dev}, bound::Options{}, levels);
  }
};

const ModuleNode& child(const ModuleNode& m, const std::string& name) {
  for (const ModuleNode& c : m.children)
    if (c.name == name) return c;
  ADD_FAILURE() << m.path << " has no child " << name;
  return m;
}

// The module tree of a graph on a device with a vector unit and DRAM, without the
// cache-aware level.
ModuleNode tree_of(const char* text) {
  const ir::Graph g = ir::parse_graph(text);
  hw::Device dev = testing::DeviceBuilder("SYN").vector(DType::F32, 1e13).dram(kBandwidth).build();
  LevelOptions levels;
  levels.cache_aware = false;
  return module_tree(analyze(g, {&dev}, bound::Options{}, levels));
}

TEST(ModuleTree, PathsNestInFirstUseOrderWithTheirClasses) {
  Fixture f;
  ModuleNode root = module_tree(f.r);
  EXPECT_EQ(root.path, "");
  EXPECT_EQ(root.type, "Net");
  EXPECT_EQ(root.ops, 3u);
  ASSERT_EQ(root.children.size(), 1u);
  const ModuleNode& blk = root.children[0];
  EXPECT_EQ(blk.path, "blk");
  EXPECT_EQ(blk.type, "");  // no class recorded for it
  ASSERT_EQ(blk.children.size(), 2u);
  EXPECT_EQ(blk.children[0].path, "blk.0");
  EXPECT_EQ(blk.children[0].type, "Block");
  EXPECT_EQ(blk.children[1].path, "blk.1");
  EXPECT_EQ(child(blk.children[0], "fc").path, "blk.0.fc");
  EXPECT_EQ(child(blk.children[0], "fc").type, "Linear");
  EXPECT_EQ(root.own_ops, (std::vector<std::uint32_t>{2}));  // y sits under the root
}

TEST(ModuleTree, CountsSumUpTheTree) {
  Fixture f;
  ModuleNode root = module_tree(f.r);
  const ModuleNode& blk = root.children[0];
  const Count gemm = Count(N) * Count(N) * Count(N);
  EXPECT_EQ(blk.children[0].macs, gemm);
  EXPECT_EQ(blk.children[1].macs, gemm);
  EXPECT_EQ(blk.macs, Count(2) * gemm);
  EXPECT_EQ(root.macs, f.r.cost.total.total_macs());
  EXPECT_EQ(root.flops, f.r.cost.total.flops());
  EXPECT_EQ(blk.ops, 2u);
  // The elementwise y = b * x under the root: N*N vector products, no MACs.
  EXPECT_EQ(root.macs, blk.macs);
  EXPECT_EQ(root.flops - blk.flops, Count(N * N));
}

TEST(ModuleTree, FusedBytesAreTheTensorsCrossingEachBoundary) {
  Fixture f;
  ModuleNode root = module_tree(f.r);
  const ModuleNode& blk = root.children[0];
  // blk.0 reads x, w0 and writes a (read by blk.1); blk.1 reads a, w1, writes b (read by y);
  // blk as a whole keeps a inside: x, w0, w1 in, b out.
  EXPECT_EQ(blk.children[0].bytes_fused, Count(3) * kTensor);
  EXPECT_EQ(blk.children[1].bytes_fused, Count(3) * kTensor);
  EXPECT_EQ(blk.bytes_fused, Count(4) * kTensor);
  EXPECT_EQ(root.bytes_fused, f.r.cost.compulsory_bytes());  // x, w0, w1 in, y out
  EXPECT_EQ(root.bytes_fused, Count(4) * kTensor);
  // Unfused: each op's own reads and writes.
  EXPECT_EQ(blk.bytes_unfused, Count(6) * kTensor);
}

TEST(ModuleTree, ATensorReadByManyOpsCrossesOnce) {
  // m reads x, then w, then x again (through a free view), and writes its output.
  ModuleNode root = tree_of(R"(x = f32[64,64] input
w = f32[64,64] weight
p = f32[64,64] einsum "ij,jk->ik" (x, w) module "m"
v = f32[64,64] move view (x) module "m"
q = f32[64,64]{output} einsum "ij,ij->ij" (p, v) module "m"
)");
  ASSERT_EQ(root.children.size(), 1u);
  EXPECT_EQ(root.children[0].bytes_fused, Count(3) * kTensor);  // x, w in; q out
  EXPECT_EQ(root.children[0].ops, 3u);
}

TEST(ModuleTree, ASliceThatDoesNotCopyMovesOnlyItsPart) {
  // rnn writes h; outside every module the program takes h's last row (a slice that does not
  // copy: a free view) and fc reads it. Only the row crosses out of rnn and into fc.
  // attn reads two overlapping row slices of x: their parts add up to x once at most.
  ModuleNode root = tree_of(R"(x = f32[64,64] input
w = f32[64,64] weight
u = f32[64,4] weight
h = f32[64,64] einsum "ij,jk->ik" (x, w) module "rnn"
last = f32[1,64] move slice {starts=[63,0], ends=[64,64], steps=[1,1]} (h)
o = f32[1,4]{output} einsum "ij,jk->ik" (last, u) module "fc"
q = f32[32,64] move slice {starts=[0,0], ends=[32,64], steps=[1,1]} (x)
k = f32[48,64] move slice {starts=[16,0], ends=[64,64], steps=[1,1]} (x)
s = f32[32,48]{output} einsum [i=32,j=48,d=64] sum mul($0,$1) (q[i,d], k[j,d]) -> [i,j] module "attn"
)");
  const Count row = Count(64 * 4);
  EXPECT_EQ(child(root, "rnn").bytes_fused, Count(2) * kTensor + row);  // x, w in; h's last row out
  EXPECT_EQ(child(root, "fc").bytes_fused, row + Count(64 * 4 * 4) + Count(4 * 4));  // row, u, o
  // q and k name 32 + 48 of x's 64 rows: x once, and s out.
  EXPECT_EQ(child(root, "attn").bytes_fused, kTensor + Count(32 * 48 * 4));
}

TEST(ModuleTree, LevelsAndSharesPerDevice) {
  Fixture f;
  ModuleNode root = module_tree(f.r);
  const bound::DeviceBounds& d = f.r.devices[0];
  ASSERT_EQ(root.devices.size(), 1u);
  EXPECT_EQ(root.devices[0].id, "SYN");
  EXPECT_DOUBLE_EQ(root.devices[0].unfused_seconds, d.unfused.seconds);
  EXPECT_DOUBLE_EQ(root.devices[0].fused_seconds, d.fused.seconds);
  EXPECT_DOUBLE_EQ(root.devices[0].share, 1.0);
  EXPECT_FALSE(root.devices[0].cache_aware_seconds.has_value());  // level skipped
  const ModuleNode& blk = root.children[0];
  EXPECT_DOUBLE_EQ(blk.devices[0].unfused_seconds, d.per_op[0].seconds + d.per_op[1].seconds);
  // The block and the op outside it hold the whole program.
  EXPECT_NEAR(blk.devices[0].share + d.per_op[2].share, 1.0, 1e-12);
  EXPECT_NEAR(blk.children[0].devices[0].share + blk.children[1].devices[0].share,
              blk.devices[0].share, 1e-12);
  // As one kernel: its compute, or its boundary bytes over the bandwidth, whichever is more.
  const double compute = 2 * 2 * std::pow(double(N), 3) / 1e13;  // 2 GEMMs on f32 vector
  EXPECT_DOUBLE_EQ(blk.devices[0].fused_seconds,
                   std::max(compute, (Count(4) * kTensor).to_double() / kBandwidth));
}

TEST(ModuleTree, JsonHasTheAgreedFields) {
  Fixture f;
  nlohmann::json j = module_tree_json(module_tree(f.r));
  EXPECT_EQ(j["path"], "");
  EXPECT_EQ(j["type"], "Net");
  EXPECT_EQ(j["ops"], 3);
  EXPECT_EQ(j["macs"], 2 * N * N * N);
  EXPECT_EQ(j["flops"], 2 * 2 * N * N * N + N * N);
  EXPECT_EQ(j["bytes_fused"], 4 * N * N * 4);
  EXPECT_TRUE(j["devices"]["SYN"].contains("unfused_seconds"));
  EXPECT_TRUE(j["devices"]["SYN"].contains("fused_seconds"));
  EXPECT_TRUE(j["devices"]["SYN"].contains("share"));
  EXPECT_FALSE(j["devices"]["SYN"].contains("cache_aware_seconds"));
  EXPECT_EQ(j["children"][0]["children"][1]["path"], "blk.1");
  EXPECT_EQ(j["children"][0]["children"][0]["children"][0]["name"], "fc");
  nlohmann::json report = to_json(f.r);
  EXPECT_EQ(report["modules"], j);
  EXPECT_EQ(report["ops"][0]["module"], "blk.0.fc");
  EXPECT_EQ(report["ops"][2]["module"], "");
}

TEST(ModuleTree, CacheAwareSecondsSplitTheLevel) {
  ir::Graph g = ir::parse_graph(kGraph, "tree.solar");
  hw::Device dev = testing::DeviceBuilder("SYN").tensor(DType::BF16, 1e15).vector(DType::F32, 1e13)
                       .memory(hw::MemoryLevel::L2, 1024.0 * 1024, std::nullopt).dram(kBandwidth).build();
  LevelOptions levels;
  levels.insights = false;
  levels.ski_slope = false;
  Report r = analyze(g, {&dev}, bound::Options{}, levels);
  ASSERT_FALSE(r.cache_aware.empty());
  ModuleNode root = module_tree(r);
  if (!r.cache_aware[0].available || r.cache_aware[0].op_share.empty())
    GTEST_SKIP() << "no cache-aware split on this device: " << r.cache_aware[0].reason;
  ASSERT_TRUE(root.devices[0].cache_aware_seconds.has_value());
  EXPECT_DOUBLE_EQ(*root.devices[0].cache_aware_seconds, r.cache_aware[0].seconds);
  double blk = root.children[0].devices[0].cache_aware_seconds.value_or(-1);
  double own = r.cache_aware[0].op_share[2] * r.cache_aware[0].seconds;
  EXPECT_NEAR(blk + own, r.cache_aware[0].seconds, 1e-12 * r.cache_aware[0].seconds);
}

TEST(ModuleTable, DepthLimitsTheRows) {
  Fixture f;
  TableOptions o;
  o.depth = 1;
  std::string t = breakdown_table(f.r, o);
  EXPECT_THAT(t, HasSubstr("modules on SYN (depth 1"));
  EXPECT_THAT(t, ::testing::ContainsRegex("\\(program\\) +Net "));
  EXPECT_THAT(t, HasSubstr("\n  blk "));
  EXPECT_THAT(t, HasSubstr("(own ops)"));
  EXPECT_THAT(t, Not(HasSubstr("\n    0 ")));
  o.depth = 3;
  t = breakdown_table(f.r, o);
  EXPECT_THAT(t, HasSubstr("\n    0 "));
  EXPECT_THAT(t, HasSubstr("\n      fc "));
  // The full report puts the module table where the top ops were.
  std::string full = to_table(f.r, o);
  EXPECT_THAT(full, HasSubstr("modules on SYN"));
  EXPECT_THAT(full, Not(HasSubstr("top ops by share")));
  EXPECT_THAT(to_table(f.r, 10), HasSubstr("top ops by share"));
}

TEST(ModuleTable, LineViewAndTheFallbackWithoutModules) {
  Fixture f;
  TableOptions o;
  o.by = Breakdown::Line;
  std::string t = breakdown_table(f.r, o);
  EXPECT_THAT(t, HasSubstr("source lines by share on SYN"));
  EXPECT_THAT(t, HasSubstr("tree.solar:8"));  // a's statement
  EXPECT_THAT(t, HasSubstr("tree.solar:10"));  // y's statement
  // A graph whose ops name no module: the module view gives way to the top ops.
  ir::Graph plain = ir::parse_graph("x = f32[4,4] input\ny = f32[4,4]{output} einsum \"ij,jk->ik\" (x, x)\n");
  hw::Device dev = testing::DeviceBuilder("SYN").vector(DType::F32, 1e13).dram(kBandwidth).build();
  LevelOptions levels;
  levels.cache_aware = false;
  Report r = analyze(plain, {&dev}, bound::Options{}, levels);
  EXPECT_EQ(breakdown_table(r, TableOptions{}), "");
  EXPECT_THAT(to_table(r, TableOptions{}), HasSubstr("top ops by share"));
  EXPECT_EQ(parse_breakdown("line"), Breakdown::Line);
  EXPECT_EQ(parse_breakdown("lines"), std::nullopt);
}

}  // namespace
}  // namespace solar::report
