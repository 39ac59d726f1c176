// Tests of the CLI's cache-aware options (`analyze --mode`, `--no-cache-aware`,
// `--ski-slope`) and of `solar inverse`: JSON fields, exit codes, no partial output.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/cli_harness.h"
#include "solar/cli/cli.h"

namespace solar::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

using harness::example;
using harness::Result;
using harness::solar;

class CacheAwareCli : public harness::FolderTest {};

TEST_F(CacheAwareCli, AnalyzeReportsTheAttainableLevelByDefault) {
  Result r = solar({"analyze", example("gemm.solar"), "--json", "-"});
  ASSERT_EQ(r.code, kOk) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["options"]["mode"], "attainable");
  const json& ca = j["devices"]["H100_SXM"]["cache_aware"];
  ASSERT_TRUE(ca["available"].get<bool>());
  EXPECT_EQ(ca["mode"], "attainable");
  // S = 50 MB L2 + 132 SMs x (228 KiB shared memory + 256 KiB registers).
  EXPECT_EQ(ca["capacity_bytes"].get<std::uint64_t>(),
            50'000'000ull + 132ull * (228 + 256) * 1024);
  EXPECT_EQ(ca["capacity_levels"].size(), 3u);
  // The whole GEMM fits: Q(S) = compulsory = 3 * 4096^2 * 2 bytes, compute-bound.
  EXPECT_EQ(ca["traffic_bytes"].get<std::uint64_t>(), 3ull * 4096 * 4096 * 2);
  EXPECT_DOUBLE_EQ(ca["seconds"].get<double>(),
                   j["devices"]["H100_SXM"]["fused"]["seconds"].get<double>());
  EXPECT_DOUBLE_EQ(ca["tiling_gap"].get<double>(), 1.0);
  EXPECT_EQ(ca["groups"].size(), 1u);
  EXPECT_EQ(j["ops"][0]["cache_aware_share"]["H100_SXM"].get<double>(), 1.0);
  // The ski-slope: 32 capacities, both modes, the GEMM's own curve.
  const json& s = j["ski_slope"];
  EXPECT_EQ(s["capacities_bytes"].size(), 32u);
  EXPECT_EQ(s["attainable_bytes"].size(), 32u);
  EXPECT_EQ(s["provable_bytes"].size(), 32u);
  ASSERT_EQ(s["ops"].size(), 1u);
  EXPECT_EQ(s["ops"][0]["name"], "c");
}

TEST_F(CacheAwareCli, ModeProvableIsReportedWithEachNumber) {
  Result r = solar({"analyze", example("transformer_block.solar"), "--mode", "provable", "--json", "-"});
  ASSERT_EQ(r.code, kOk) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["options"]["mode"], "provable");
  const json& ca = j["devices"]["H100_SXM"]["cache_aware"];
  EXPECT_EQ(ca["mode"], "provable");
  EXPECT_LE(j["devices"]["H100_SXM"]["fused"]["seconds"].get<double>(), ca["seconds"].get<double>());
  Result table = solar({"analyze", example("transformer_block.solar"), "--mode", "provable"});
  ASSERT_EQ(table.code, kOk);
  EXPECT_THAT(table.out, HasSubstr("cache-aware SOL, mode provable"));
}

TEST_F(CacheAwareCli, UnknownModeIsAUsageError) {
  Result r = solar({"analyze", example("gemm.solar"), "--mode", "optimistic"});
  EXPECT_EQ(r.code, kUsage);
  EXPECT_THAT(r.err, HasSubstr("unknown --mode 'optimistic'"));
  EXPECT_EQ(r.out, "");
}

TEST_F(CacheAwareCli, NoCacheAwareSkipsTheLevelWithAReason) {
  Result r = solar({"analyze", example("gemm.solar"), "--no-cache-aware", "--json", "-"});
  ASSERT_EQ(r.code, kOk) << r.err;
  json j = json::parse(r.out);
  const json& ca = j["devices"]["H100_SXM"]["cache_aware"];
  EXPECT_FALSE(ca["available"].get<bool>());
  EXPECT_THAT(ca["reason"].get<std::string>(), HasSubstr("--no-cache-aware"));
  EXPECT_FALSE(j.contains("ski_slope"));
  EXPECT_FALSE(j["ops"][0].contains("cache_aware_share"));
}

TEST_F(CacheAwareCli, SkiSlopeWritesAnSvgChart) {
  std::string svg = path("slope.svg");
  Result r = solar({"analyze", example("transformer_block.solar"), "--arch", "H100_SXM,B200",
                    "--ski-slope", svg});
  ASSERT_EQ(r.code, kOk) << r.err;
  std::ifstream in(svg);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_THAT(text.str(), StartsWith("<?xml"));
  EXPECT_THAT(text.str(), HasSubstr("<svg"));
  EXPECT_THAT(text.str(), HasSubstr("graph, attainable"));
  EXPECT_THAT(text.str(), HasSubstr("H100_SXM"));  // a device capacity line
  EXPECT_THAT(text.str(), HasSubstr("</svg>"));
  EXPECT_EQ(files().size(), 1u);  // no temporary left
}

TEST_F(CacheAwareCli, SkiSlopeIntoAMissingFolderFailsWithoutOutput) {
  std::string svg = path("missing/slope.svg");
  Result r = solar({"analyze", example("gemm.solar"), "--ski-slope", svg});
  EXPECT_EQ(r.code, kIoError);
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(fs::exists(svg));
  EXPECT_EQ(files().size(), 0u);
}

TEST_F(CacheAwareCli, SkiSlopeNeedsTheCacheAwareLevel) {
  Result r = solar({"analyze", example("gemm.solar"), "--no-cache-aware", "--ski-slope",
                    path("s.svg")});
  EXPECT_EQ(r.code, kUsage);
  EXPECT_THAT(r.err, HasSubstr("--no-cache-aware"));
  EXPECT_EQ(files().size(), 0u);
}

TEST_F(CacheAwareCli, InverseOfTheGemmAt100us) {
  Result r = solar({"inverse", example("gemm.solar"), "--target-ms", "0.1", "--arch", "H100_SXM",
                    "--bandwidth", "2000", "--json", "-"});
  ASSERT_EQ(r.code, kOk) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["schema"], "solar.inverse.v1");
  EXPECT_DOUBLE_EQ(j["target_seconds"].get<double>(), 0.1e-3);
  // Pi_min = 2 * 4096^3 FLOP / 100 us on the tensor unit.
  EXPECT_DOUBLE_EQ(j["min_compute"]["tensor"]["min_rate"].get<double>(),
                   2.0 * 4096 * 4096 * 4096 / 1e-4);
  EXPECT_DOUBLE_EQ(j["min_bandwidth_unlimited_capacity"].get<double>(),
                   3.0 * 4096 * 4096 * 2 / 1e-4);
  EXPECT_TRUE(j["min_capacity"]["feasible"].get<bool>());
  const json& d = j["devices"]["H100_SXM"];
  // H100 SXM: bf16 dense 989.4 TFLOP/s -> 138.9 us of compute against 100 us.
  EXPECT_GT(d["compute_factor"].get<double>(), 1.0);
  EXPECT_FALSE(d["meets"].get<bool>());
  EXPECT_THAT(d["verdict"].get<std::string>(), HasSubstr("needs"));
  EXPECT_FALSE(j["per_op_ridge"].empty());
}

TEST_F(CacheAwareCli, InverseComparesEveryDeviceByDefaultAndPrintsText) {
  std::string out = path("inverse.json");
  Result r = solar({"inverse", example("gemm.solar"), "--rate-hz", "500", "--json", out});
  ASSERT_EQ(r.code, kOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Solar inverse roofline: gemm"));
  EXPECT_THAT(r.out, HasSubstr("minimum peak compute"));
  std::ifstream in(out);
  json j = json::parse(in);
  EXPECT_DOUBLE_EQ(j["target_seconds"].get<double>(), 1.0 / 500);
  EXPECT_GE(j["devices"].size(), 10u);
  EXPECT_FALSE(j["devices"].contains("host"));
}

TEST_F(CacheAwareCli, InverseTargetErrorsAreUsageErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::vector<Case> cases = {
      {{}, "missing target"},
      {{"--target-ms", "1", "--rate-hz", "10"}, "not both"},
      {{"--target-ms", "0"}, "positive"},
      {{"--target-ms", "-2"}, "positive"},
      {{"--rate-hz", "0"}, "positive"},
      {{"--target-ms", "1", "--bandwidth", "0"}, "positive"},
      {{"--target-ms", "1", "--mode", "both"}, "unknown --mode"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"inverse", example("gemm.solar")};
    args.insert(args.end(), c.args.begin(), c.args.end());
    Result r = solar(args);
    EXPECT_EQ(r.code, kUsage) << c.message;
    EXPECT_THAT(r.err, HasSubstr(c.message));
    EXPECT_EQ(r.out, "");
  }
}

TEST_F(CacheAwareCli, InverseUnknownDeviceAndMissingFile) {
  Result dev = solar({"inverse", example("gemm.solar"), "--target-ms", "1", "--arch", "Z9000"});
  EXPECT_EQ(dev.code, kUnknownDevice);
  Result io = solar({"inverse", path("none.solar"), "--target-ms", "1"});
  EXPECT_EQ(io.code, kIoError);
}

}  // namespace
}  // namespace solar::cli

namespace solar::cli {
namespace {

// `--unroll` expands the loop of examples/rnn.solar into its 128 steps: every count and the
// unfused and fused levels stay the same (docs/cost.md, "Repeat").
TEST(RepeatCli, UnrollGivesTheSameCountsAndLevels) {
  harness::Result looped = harness::solar({"analyze", harness::example("rnn.solar"), "--json", "-",
                                           "--no-cache-aware"});
  harness::Result flat = harness::solar({"analyze", harness::example("rnn.solar"), "--json", "-",
                                         "--no-cache-aware", "--unroll"});
  ASSERT_EQ(looped.code, kOk) << looped.err;
  ASSERT_EQ(flat.code, kOk) << flat.err;
  const nlohmann::json a = nlohmann::json::parse(looped.out), b = nlohmann::json::parse(flat.out);
  EXPECT_EQ(a["ops"].size(), 2u);
  // The input projection, then per step a slice, a view and 2 einsums, then the stacking
  // (a view per step and a concatenation) and the final state's view.
  EXPECT_EQ(b["ops"].size(), 1u + 128u * 4u + 128u + 1u + 1u);
  EXPECT_EQ(a["totals"], b["totals"]);
  for (const char* level : {"unfused", "fused"}) {
    const double x = a["devices"]["H100_SXM"][level]["seconds"].get<double>();
    const double y = b["devices"]["H100_SXM"][level]["seconds"].get<double>();
    EXPECT_NEAR(x, y, 1e-12 * y) << level;
  }
}

}  // namespace
}  // namespace solar::cli
