// Tests of `solar analyze --system` (docs/cli.md, docs/parallel.md): a rank's graph with
// collectives on a built-in system, an inline one over several nodes, the JSON `system`
// section and link rows, and the refusals. Expected times are the formulas of
// docs/parallel.md over the systems' own rates.
#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/cli_harness.h"
#include "solar/cli/cli.h"
#include "solar/hw/system.h"

namespace solar::cli {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

using harness::Result;
using harness::solar;

class SystemCli : public harness::FolderTest {};

// One rank of a tensor-parallel layer: x[M,K] @ w[K,N] in bf16, then its all-reduce.
constexpr double M = 128, K = 1024, N = 4096;
constexpr double S = 2 * M * N;  // the all-reduce's buffer, bytes

std::string tp_layer(int size) {
  return "graph tp_layer\n"
         "x = bf16[128,1024] input\n"
         "w = bf16[1024,4096] weight\n"
         "h = bf16[128,4096] einsum \"mk,kn->mn\" (x, w)\n"
         "y = bf16[128,4096]{output} collective all_reduce sum {size=" +
         std::to_string(size) + ", group=\"tp\"} (h)\n";
}

const hw::System& builtin(const std::string& id) {
  static const hw::SystemDb db = hw::SystemDb::builtin();
  return db.get(id);
}

// The level's own terms satisfy seconds = max(all) and no-overlap = max(non-link) + links.
void expect_overlap_formulas(const json& level) {
  double all = 0, local = 0, links = 0;
  for (const auto& [resource, seconds] : level["terms"].items()) {
    const double s = seconds.get<double>();
    all = std::max(all, s);
    if (resource == "scale_up" || resource == "scale_out") links += s;
    else local = std::max(local, s);
  }
  EXPECT_DOUBLE_EQ(level["seconds"].get<double>(), all);
  EXPECT_DOUBLE_EQ(level["seconds_no_overlap"].get<double>(), local + links);
}

TEST_F(SystemCli, DgxH100PricesTheAllReduceOnNvlink) {
  std::string graph = write("tp.solar", tp_layer(8));
  Result r = solar({"analyze", graph, "--system", "DGX_H100", "--json", "-"});
  ASSERT_EQ(r.code, kOk) << r.err;
  json j = json::parse(r.out);
  const hw::System& dgx = builtin("DGX_H100");
  // --system sets the device of the analysis.
  ASSERT_TRUE(j["devices"].contains(dgx.device));
  EXPECT_EQ(j["devices"].size(), 1u);
  const json& dev = j["devices"][dgx.device];
  EXPECT_EQ(dev["system"], "DGX_H100");
  // NVLink SHARP reduces in the switch for 8 GPUs: S per direction at the NVLink rate.
  const double link = S / dgx.scale_up.link.bandwidth.value;
  EXPECT_DOUBLE_EQ(dev["fused"]["terms"]["scale_up"].get<double>(), link);
  expect_overlap_formulas(dev["fused"]);
  ASSERT_EQ(dev["links"].size(), 1u);
  EXPECT_EQ(dev["links"][0]["link"], "scale_up");
  EXPECT_DOUBLE_EQ(dev["links"][0]["bytes"].get<double>(), S);
  // The collective's row: its bytes per link and the algorithm.
  const json& row = j["ops"][1];
  EXPECT_EQ(row["collective"], "all_reduce");
  EXPECT_EQ(row["group"], "tp");
  EXPECT_EQ(row["comm_bytes"], S);
  EXPECT_EQ(row["links"][dgx.device][0]["algorithm"], "in-network reduction");
  EXPECT_EQ(j["totals"]["comm_bytes_by_kind"]["all_reduce"], S);
  // The system section: one rank graph, its level's figures.
  const json& sys = j["system"];
  EXPECT_EQ(sys["id"], "DGX_H100");
  EXPECT_TRUE(sys["plan"].is_null());
  EXPECT_EQ(sys["devices"], 8);
  ASSERT_EQ(sys["ranks"].size(), 1u);
  const json& rank = sys["ranks"][0];
  EXPECT_EQ(rank["graph"], "tp_layer");
  EXPECT_DOUBLE_EQ(rank["bytes"]["scale_up"].get<double>(), S);
  const json& level = sys["level"] == "cache_aware" ? dev["cache_aware"] : dev["fused"];
  EXPECT_DOUBLE_EQ(sys["seconds"].get<double>(), level["seconds"].get<double>());
  EXPECT_DOUBLE_EQ(sys["seconds_no_overlap"].get<double>(),
                   level["seconds_no_overlap"].get<double>());
  EXPECT_EQ(sys["bottleneck"], level["bottleneck"]);
  // The readable table shows the system's rows.
  Result t = solar({"analyze", graph, "--system", "DGX_H100"});
  ASSERT_EQ(t.code, kOk) << t.err;
  EXPECT_THAT(t.out, HasSubstr("system DGX_H100: 8 x H100_SXM"));
  EXPECT_THAT(t.out, HasSubstr("scale_up"));
  EXPECT_THAT(t.out, HasSubstr("comm bytes"));
}

TEST_F(SystemCli, InlineSystemOverTwoNodesUsesTheNics) {
  std::string graph = write("tp.solar", tp_layer(16));
  Result r = solar({"analyze", graph, "--system", "8xH100_SXM", "--nodes", "2", "--json", "-",
                    "--no-cache-aware"});
  ASSERT_EQ(r.code, kOk) << r.err;
  json j = json::parse(r.out);
  const json& dev = j["devices"]["H100_SXM"];
  EXPECT_EQ(dev["system"], "8xH100_SXM");
  EXPECT_EQ(j["system"]["nodes"], 2);
  EXPECT_EQ(j["system"]["level"], "fused");
  // 16 ranks: 8 per domain over 2 domains. The NICs carry 1/g of the domain's all-reduce over
  // m = 2 domains: 2 (m-1)/m S / g.
  hw::System sys = hw::resolve_system("8xH100_SXM", 2, hw::DeviceDb::load_default(),
                                      hw::SystemDb::builtin());
  const double out = 2.0 * 1 / 2 * S / 8 / sys.scale_out->bandwidth.value;
  EXPECT_DOUBLE_EQ(dev["fused"]["terms"]["scale_out"].get<double>(), out);
  EXPECT_TRUE(dev["fused"]["terms"].contains("scale_up"));
  expect_overlap_formulas(dev["fused"]);
  ASSERT_EQ(dev["links"].size(), 2u);
  EXPECT_EQ(dev["links"][1]["link"], "scale_out");
}

TEST_F(SystemCli, ArchAddsASingleDeviceColumn) {
  std::string graph = write("tp.solar", tp_layer(8));
  Result r = solar({"analyze", graph, "--system", "DGX_H100", "--arch", "A100_SXM_80GB,H100_SXM",
                    "--json", "-", "--no-cache-aware"});
  ASSERT_EQ(r.code, kOk) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["devices"].size(), 2u);  // H100_SXM once: the system's
  const json& single = j["devices"]["A100_SXM_80GB"];
  EXPECT_FALSE(single.contains("links"));
  EXPECT_FALSE(single["fused"].contains("seconds_no_overlap"));
  ASSERT_EQ(single["fused"]["unknown"].size(), 1u);
  EXPECT_THAT(single["fused"]["unknown"][0].get<std::string>(), HasSubstr("link time is left out"));
}

TEST_F(SystemCli, CollectivesWithoutASystemAreFlaggedUnknown) {
  std::string graph = write("tp.solar", tp_layer(8));
  Result r = solar({"analyze", graph, "--no-cache-aware"});
  ASSERT_EQ(r.code, kOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("* incomplete"));
  EXPECT_THAT(r.out, HasSubstr("bytes of all_reduce payload: no system gives its links "
                               "(--system), so their link time is left out"));
  Result j = solar({"analyze", graph, "--no-cache-aware", "--json", "-"});
  EXPECT_FALSE(json::parse(j.out).contains("system"));
}

TEST_F(SystemCli, BadSystemValuesAreRefused) {
  std::string graph = write("tp.solar", tp_layer(8));
  Result r = solar({"analyze", graph, "--system", "DGX_H1000"});
  EXPECT_EQ(r.code, kUnknownDevice);
  EXPECT_THAT(r.err, HasSubstr("unknown system 'DGX_H1000'"));
  for (const std::string& id : hw::SystemDb::builtin().ids()) EXPECT_THAT(r.err, HasSubstr(id));
  EXPECT_THAT(r.err, HasSubstr("NxDEVICE"));
  Result d = solar({"analyze", graph, "--system", "8xH100_SXX"});
  EXPECT_EQ(d.code, kUnknownDevice);
  EXPECT_THAT(d.err, HasSubstr("H100_SXX"));
  Result n = solar({"analyze", graph, "--nodes", "2"});
  EXPECT_EQ(n.code, kUsage);
  EXPECT_THAT(n.err, HasSubstr("--nodes needs --system"));
  // A group larger than the system: the op is named.
  std::string big = write("big.solar", tp_layer(16));
  Result g = solar({"analyze", big, "--system", "DGX_H100"});
  EXPECT_EQ(g.code, kUsage);
  EXPECT_THAT(g.err, HasSubstr("op 'y': a group of 16 ranks does not fit DGX_H100"));
  EXPECT_TRUE(r.out.empty());
}

}  // namespace
}  // namespace solar::cli
