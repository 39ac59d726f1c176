// The inverse roofline's device rows: best first (meets, undetermined, falls short, each by
// its limiting factor), each verdict printed once, and no "0x" for compute the device has no
// rate for: "-" and a line that says why.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "solar/bound/inverse.h"
#include "solar/cost/graph_cost.h"
#include "solar/hw/database.h"
#include "solar/ir/text.h"
#include "solar/report/report.h"
#include "solar/tiling/fusion.h"

namespace solar::report {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const hw::DeviceDb& db() {
  static const hw::DeviceDb d = hw::DeviceDb::load_default();
  return d;
}

// The device ids of the table's rows, in order.
std::vector<std::string> row_order(const std::string& table,
                                   const std::vector<std::string>& ids) {
  std::vector<std::pair<std::size_t, std::string>> at;
  for (const std::string& id : ids) at.emplace_back(table.find("\n  " + id + " "), id);
  std::sort(at.begin(), at.end());
  std::vector<std::string> out;
  for (const auto& [pos, id] : at) out.push_back(id);
  return out;
}

bound::InverseResult inverse(const ir::Graph& g, const std::vector<std::string>& ids,
                             double target_seconds) {
  cost::GraphCost cost = cost::graph_cost(g);
  tiling::GraphTrafficModel model(g, cost, {});
  bound::InverseOptions o;
  o.target_seconds = target_seconds;
  std::vector<const hw::Device*> devices;
  for (const std::string& id : ids) devices.push_back(&db().get(id));
  return bound::inverse_roofline(g, cost, model, devices, o);
}

// A 4096^3 bf16 GEMM at T = 0.5 ms: 2 * 4096^3 FLOP / T = 275 TFLOP/s. B200 (2.25 PFLOP/s
// dense bf16) meets it with more headroom than H100 SXM (989 TFLOP/s); T4 (no bf16 tensor
// rate: fp32 SIMT) falls short further than A10G.
TEST(InverseTable, DevicesAreOrderedByVerdictThenMarginAndPrintedOnce) {
  ir::Graph g = ir::parse_graph(R"(
    a = bf16[4096,4096] input
    b = bf16[4096,4096] input
    c = bf16[4096,4096]{output} einsum "mk,kn->mn" (a, b))");
  const std::vector<std::string> ids = {"A10G", "B200", "H100_SXM", "T4"};
  bound::InverseResult r = inverse(g, ids, 0.5e-3);
  std::string t = inverse_table(g, r);
  EXPECT_EQ(row_order(t, ids), (std::vector<std::string>{"B200", "H100_SXM", "A10G", "T4"}));
  for (const std::string& id : ids) {
    // one row per device, and no separate verdict sentence ("ID: meets the target: ...")
    std::size_t first = t.find("\n  " + id + " ");
    ASSERT_NE(first, std::string::npos) << t;
    EXPECT_EQ(t.find("\n  " + id + " ", first + 1), std::string::npos) << t;
    EXPECT_THAT(t, Not(HasSubstr(id + ": ")));
  }
  const bound::DeviceFit& h100 = r.devices[2];
  const double limiting = std::max(h100.compute_factor, *h100.bandwidth_factor);
  EXPECT_THAT(t, HasSubstr(fmt::format("meets ({:.3g}x headroom)", 1 / limiting)));
  EXPECT_THAT(t, HasSubstr("falls short: needs"));
}

// exp on TPU v5e and MI300X: neither publishes a special-function rate, so there is no
// compute factor: "-", never "0x", and a line says why.
TEST(InverseTable, AnAbsentComputeFactorIsADashWithItsReason) {
  ir::Graph g = ir::parse_graph(R"(
    x = f32[1024,1024] input
    y = f32[1024,1024]{output} einsum [m=1024,n=1024] none exp($0) (x[m,n]) -> [m,n])");
  bound::InverseResult r = inverse(g, {"TPU_v5e", "MI300X"}, 1.0);
  std::string t = inverse_table(g, r);
  EXPECT_THAT(t, Not(HasSubstr(" 0x")));
  EXPECT_THAT(t, ::testing::ContainsRegex("\n  TPU_v5e +- "));
  EXPECT_THAT(t, HasSubstr("TPU_v5e: compute factor absent: left out (no published rate): "
                           "1.05e6 special-function ops"));
  EXPECT_THAT(t, Not(HasSubstr("it raises the fused SOL")));
}

}  // namespace
}  // namespace solar::report
