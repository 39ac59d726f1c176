// The framework-kernel level (include/solar/report/framework.h): ops grouped into the kernels
// their framework ops lowered to, each bounded as one fused kernel, between the unfused and
// fused levels.
#include "solar/report/framework.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "solar/ir/text.h"
#include "solar/report/report.h"
#include "testing/fixtures.h"

namespace solar::report {
namespace {

using ir::DType;

constexpr double kBandwidth = 1e12;        // bytes/s
constexpr double kTensor = 64.0 * 64 * 4;  // one f32 [64, 64] tensor, bytes

// A softmax-like framework op lowered to two steps (s, t) and an add: two framework kernels.
// The vector unit is fast, so every level is DRAM-bound.
constexpr const char* kGraph = R"(graph fw {frontend="torch"}
x = f32[64,64] input
s = f32[64,64] einsum [i=64,j=64] none mul($0, $0) (x[i,j]) -> [i,j] from "aten::softmax" at "m.py:3"
t = f32[64,64] einsum [i=64,j=64] none add($0, $0) (s[i,j]) -> [i,j] from "aten::softmax" at "m.py:3"
y = f32[64,64]{output} einsum [i=64,j=64] none add($0, $1) (t[i,j], x[i,j]) -> [i,j] from "aten::add" at "m.py:4"
)";

Report report_of(const ir::Graph& g) {
  static const hw::Device dev =
      testing::DeviceBuilder("SYN").vector(DType::F32, 1e15).dram(kBandwidth).build();
  LevelOptions levels;
  levels.cache_aware = false;
  levels.insights = false;
  return analyze(g, {&dev}, bound::Options{}, levels);
}

TEST(FrameworkLevel, OpsOfOneFrameworkOpAreOneKernel) {
  const ir::Graph g = ir::parse_graph(kGraph, "fw.solar");
  const Report r = report_of(g);
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.kernels[0].op, "aten::softmax");
  EXPECT_EQ(r.kernels[0].ops, (std::vector<std::uint32_t>{0, 1}));
  EXPECT_EQ(r.kernels[1].ops, (std::vector<std::uint32_t>{2}));
  ASSERT_EQ(r.framework.size(), 1u);
  EXPECT_EQ(r.framework[0].kernels, 2u);
}

TEST(FrameworkLevel, AKernelKeepsItsIntermediatesOnChip) {
  const ir::Graph g = ir::parse_graph(kGraph, "fw.solar");
  const Report r = report_of(g);
  const FrameworkLevel& f = r.framework[0];
  // softmax reads x and writes t (s stays on chip); add reads t and x and writes y.
  EXPECT_DOUBLE_EQ(f.kernel_seconds[0], 2 * kTensor / kBandwidth);
  EXPECT_DOUBLE_EQ(f.kernel_seconds[1], 3 * kTensor / kBandwidth);
  EXPECT_DOUBLE_EQ(f.seconds, 5 * kTensor / kBandwidth);
  EXPECT_EQ(f.bottleneck, "dram");
  // unfused: every op reads and writes its tensors (2 + 2 + 3); fused: x in, y out.
  EXPECT_DOUBLE_EQ(r.devices[0].unfused.seconds, 7 * kTensor / kBandwidth);
  EXPECT_DOUBLE_EQ(r.devices[0].fused.seconds, 2 * kTensor / kBandwidth);
}

TEST(FrameworkLevel, AGraphFilesOpsAreEachTheirOwnKernel) {
  // Without `from`/`at`, each op's origin is its own statement: framework = unfused.
  const ir::Graph g = ir::parse_graph(R"(graph plain
x = f32[64,64] input
s = f32[64,64] einsum [i=64,j=64] none mul($0, $0) (x[i,j]) -> [i,j]
y = f32[64,64]{output} einsum [i=64,j=64] none add($0, $0) (s[i,j]) -> [i,j]
)");
  const Report r = report_of(g);
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_DOUBLE_EQ(r.framework[0].seconds, r.devices[0].unfused.seconds);
  EXPECT_DOUBLE_EQ(r.framework[0].seconds, 4 * kTensor / kBandwidth);
}

}  // namespace
}  // namespace solar::report
