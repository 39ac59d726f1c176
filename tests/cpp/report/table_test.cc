#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "solar/report/report.h"
#include "testing/fixtures.h"

namespace solar::report {
namespace {

using cost::ContractionClass;
using cost::Work;
using ir::DType;
using ::testing::HasSubstr;
using ::testing::Not;

// Tensor bf16 1e15 FLOP/s, vector f32 1e14, DRAM 1e12 B/s, no special unit.
hw::Device synthetic(const char* id = "SYN") {
  return testing::DeviceBuilder(id).tensor(DType::BF16, 1e15).vector(DType::F32, 1e14).dram(1e12).build();
}

using testing::add_tensor;

// gemm (compute-bound on SYN), act (memory-bound, with unpriced special ops), and optionally
// an unanalyzed fft. Costs are hand-written.
struct Fixture {
  ir::Graph g;
  Report r;
  Fixture(bool with_fft, const std::vector<const hw::Device*>& devices) {
    g.name = "toy";
    g.frontend = "torch";
    auto a = add_tensor(g, "a", DType::BF16, {4096, 4096}, ir::Role::Input);
    auto b = add_tensor(g, "b", DType::BF16, {4096, 4096}, ir::Role::Weight);
    auto c = add_tensor(g, "c", DType::BF16, {4096, 4096}, ir::Role::Intermediate);
    auto e = add_tensor(g, "e", DType::F32, {4096, 4096}, ir::Role::Output);
    g.add_op(ir::Op{{}, "gemm", {a, b}, {c}, ir::EinsumOp{}, Origin{}});
    g.add_op(ir::Op{{}, "act", {c}, {e}, ir::EinsumOp{}, Origin{}});
    Work gemm;
    gemm.contraction = ContractionClass::Matmul;
    gemm.macs[DType::BF16] = Count(4096) * Count(4096) * Count(4096);
    gemm.bytes_read = Count(2 * 2 * 4096 * 4096);
    gemm.bytes_written = Count(2 * 4096 * 4096);
    Work act;
    act.vector_flops[DType::F32] = Count(4096 * 4096);
    act.special_ops = Count(4096 * 4096);
    act.bytes_read = Count(2 * 4096 * 4096);
    act.bytes_written = Count(4 * 4096 * 4096);
    r.cost.per_op = {gemm, act};
    r.cost.total = gemm;
    r.cost.total += act;
    if (with_fft) {
      auto f = add_tensor(g, "f", DType::F32, {4096, 2049}, ir::Role::Output);
      g.add_op(ir::Op{{}, "fft", {e}, {f},
                      ir::UnanalyzedOp{"aten::_fft_r2c", "no lowering for FFT"}, Origin{}});
      Work fft;
      fft.analyzed = false;
      r.cost.per_op.push_back(fft);
      r.cost.num_unanalyzed = 1;
    }
    r.cost.compulsory_bytes_read = Count(2 * 2 * 4096 * 4096);
    r.cost.compulsory_bytes_written = Count(4 * 4096 * 4096);
    r.graph = &g;
    for (const hw::Device* d : devices)
      r.devices.push_back(bound::compute_bounds(g, r.cost, *d, r.options));
  }
};

TEST(ReportTable, HeaderTotalsDeviceRowsAndTopOps) {
  hw::Device d1 = synthetic("SYN");
  hw::Device d2 = synthetic("SYN_FAST");
  d2.memory[0].bandwidth = testing::DeviceBuilder::sourced(4e12);
  Fixture f(false, {&d1, &d2});
  std::string t = to_table(f.r);
  EXPECT_THAT(t, HasSubstr("Solar SOL report: toy"));
  EXPECT_THAT(t, HasSubstr("frontend torch"));
  EXPECT_THAT(t, HasSubstr("ops: 2  analyzed: 2  coverage: complete"));
  EXPECT_THAT(t, HasSubstr("1 MAC = 2 FLOP"));
  EXPECT_THAT(t, Not(HasSubstr("UNANALYZED")));
  EXPECT_THAT(t, HasSubstr("68.72 GMAC"));     // 4096^3 MAC
  EXPECT_THAT(t, HasSubstr("137.5 GFLOP"));    // 2*4096^3 + 4096^2 FLOP
  EXPECT_THAT(t, HasSubstr("unfused 201.3 MB"));  // (2*2 + 2 + 2 + 4) * 4096^2 B
  EXPECT_THAT(t, HasSubstr("fused (compulsory) 134.2 MB"));
  // One row per device with both levels and their bottlenecks: on SYN the gemm takes
  // 2*4096^3/1e15 = 137.4 us and act 6*4096^2/1e12 = 100.66 us.
  EXPECT_THAT(t, HasSubstr("device"));
  EXPECT_THAT(t, HasSubstr("unfused SOL"));
  EXPECT_THAT(t, HasSubstr("unfused/fused"));
  EXPECT_THAT(t, HasSubstr("SYN_FAST"));
  EXPECT_THAT(t, HasSubstr("238.1 us"));  // 137.44 + 100.66 us
  EXPECT_THAT(t, HasSubstr("tensor_core.bf16"));
  EXPECT_THAT(t, HasSubstr("1.73x"));     // 238.1 / 137.4 (fused: the gemm's tensor term)
  // Unknown rates are shown under the device rows.
  EXPECT_THAT(t, HasSubstr("SYN: 1.68e7 special-function ops: SYN publishes no special"));
  // Top ops by share on the first device.
  EXPECT_THAT(t, HasSubstr("top ops by share on SYN"));
  EXPECT_THAT(t, HasSubstr("57.7%"));  // 137.4 / 238.1
  EXPECT_THAT(t, HasSubstr("matmul"));
  EXPECT_THAT(t, HasSubstr("dram"));
}

TEST(ReportTable, ColumnsLineUp) {
  hw::Device d1 = synthetic("SYN");
  hw::Device d2 = synthetic("A_MUCH_LONGER_DEVICE_ID");
  Fixture f(false, {&d1, &d2});
  std::string t = to_table(f.r);
  // The device table: every row starts its second column at the same offset.
  std::size_t header = t.find("device  ");
  ASSERT_NE(header, std::string::npos);
  std::size_t col = t.find("unfused SOL", header) - header;
  std::size_t row1 = t.find("\nSYN ", header) + 1;
  std::size_t row2 = t.find("\nA_MUCH_LONGER_DEVICE_ID", header) + 1;
  std::string r1 = t.substr(row1, t.find('\n', row1) - row1);
  std::string r2 = t.substr(row2, t.find('\n', row2) - row2);
  // "unfused SOL" is right-aligned: the cells end where the header ends. SYN has no
  // special-function rate, so the cells carry the incomplete mark: "... us*".
  std::size_t end = col + std::string("unfused SOL").size();
  EXPECT_EQ(r1.substr(end - 3, 3), "us*") << r1;
  EXPECT_EQ(r2.substr(end - 3, 3), "us*") << r2;
  EXPECT_EQ(r1[end], ' ') << r1;
  EXPECT_EQ(r2[end], ' ') << r2;
}

TEST(ReportTable, UnanalyzedOpsAreLoud) {
  hw::Device d = synthetic();
  Fixture f(true, {&d});
  std::string t = to_table(f.r);
  EXPECT_THAT(t, HasSubstr("coverage: INCOMPLETE"));
  EXPECT_THAT(t, HasSubstr("!!! 1 of 3 ops are UNANALYZED"));
  EXPECT_THAT(t, HasSubstr("fft (aten::_fft_r2c): no lowering for FFT"));
}

TEST(ReportTable, TopOpsIsLimited) {
  hw::Device d = synthetic();
  Fixture f(false, {&d});
  std::string t = to_table(f.r, 1);
  EXPECT_THAT(t, HasSubstr("gemm"));
  EXPECT_THAT(t, HasSubstr("... and 1 more ops"));
}

TEST(ReportTable, WithoutDevicesShowsTotalsOnly) {
  Fixture f(false, {});
  std::string t = to_table(f.r);
  EXPECT_THAT(t, HasSubstr("totals"));
  EXPECT_THAT(t, Not(HasSubstr("unfused SOL")));
}

}  // namespace
}  // namespace solar::report
