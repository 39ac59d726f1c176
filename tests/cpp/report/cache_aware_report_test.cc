// Tests of the report's cache-aware parts: `devices.<ID>.cache_aware`, the per-op split,
// the `ski_slope` section, the table's cache-aware rows and the SVG chart.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "solar/ir/text.h"
#include "solar/report/report.h"
#include "solar/util/errors.h"
#include "testing/fixtures.h"

namespace solar::report {
namespace {

using ir::DType;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

// Tensor bf16 1e15 FLOP/s, DRAM 1e12 B/s, 1 MiB of L2 (small: the GEMM below re-reads).
hw::Device synthetic(bool on_chip = true) {
  testing::DeviceBuilder b;
  b.tensor(DType::BF16, 1e15).vector(DType::F32, 1e14).dram(1e12);
  if (on_chip) b.memory(hw::MemoryLevel::L2, 1024.0 * 1024, std::nullopt);
  return b.build();
}

ir::Graph gemm() {
  return ir::parse_graph(R"(
    a = bf16[1024,1024] input
    b = bf16[1024,1024] weight
    c = bf16[1024,1024]{output} einsum "mk,kn->mn" (a, b))");
}

TEST(CacheAwareReport, JsonLevelSplitAndSkiSlope) {
  ir::Graph g = gemm();
  hw::Device d = synthetic();
  Report r = analyze(g, {&d}, {});
  json j = to_json(r);
  EXPECT_EQ(j["options"]["mode"], "attainable");
  EXPECT_EQ(j["options"]["cache_aware"], true);
  const json& ca = j["devices"]["SYN"]["cache_aware"];
  ASSERT_TRUE(ca["available"].get<bool>()) << ca.dump();
  EXPECT_EQ(ca["mode"], "attainable");
  EXPECT_EQ(ca["capacity_bytes"].get<std::uint64_t>(), 1024u * 1024);
  ASSERT_EQ(ca["capacity_levels"].size(), 1u);
  EXPECT_EQ(ca["capacity_levels"][0]["name"], "l2");
  // At 1 MiB the bf16 1024^3 GEMM (2 MiB per operand) cannot read each operand once.
  std::uint64_t compulsory = 3ull * 1024 * 1024 * 2;
  EXPECT_GT(ca["traffic_bytes"].get<std::uint64_t>(), compulsory);
  EXPECT_EQ(ca["bottleneck"], "dram");
  EXPECT_DOUBLE_EQ(ca["terms"]["dram"].get<double>(),
                   ca["traffic_bytes"].get<std::uint64_t>() / 1e12);
  EXPECT_DOUBLE_EQ(ca["tiling_gap"].get<double>(),
                   ca["seconds"].get<double>() / j["devices"]["SYN"]["fused"]["seconds"].get<double>());
  ASSERT_EQ(ca["groups"].size(), 1u);
  EXPECT_EQ(ca["groups"][0]["ops"], json::array({"c"}));
  EXPECT_EQ(ca["groups"][0]["kind"], "none");
  // One op: it carries the whole level.
  EXPECT_EQ(j["ops"][0]["cache_aware_traffic_bytes"]["SYN"], ca["traffic_bytes"]);
  EXPECT_DOUBLE_EQ(j["ops"][0]["cache_aware_share"]["SYN"].get<double>(), 1.0);

  const json& s = j["ski_slope"];
  EXPECT_EQ(s["capacities_bytes"].size(), 32u);
  EXPECT_EQ(s["compulsory_bytes"].get<std::uint64_t>(), compulsory);
  EXPECT_EQ(s["device_capacities_bytes"]["SYN"].get<std::uint64_t>(), 1024u * 1024);
  ASSERT_EQ(s["ops"].size(), 1u);
  EXPECT_EQ(s["ops"][0]["points"].back()[1].get<std::uint64_t>(), compulsory);  // the floor
}

TEST(CacheAwareReport, ProvableModeIsNamed) {
  ir::Graph g = gemm();
  hw::Device d = synthetic();
  LevelOptions levels;
  levels.mode = tiling::TrafficMode::Provable;
  Report r = analyze(g, {&d}, {}, levels);
  json j = to_json(r);
  EXPECT_EQ(j["options"]["mode"], "provable");
  EXPECT_EQ(j["devices"]["SYN"]["cache_aware"]["mode"], "provable");
  EXPECT_THAT(to_table(r), HasSubstr("cache-aware SOL, mode provable (a communication lower bound"));
}

TEST(CacheAwareReport, TableHasACacheAwareRowWithItsMode) {
  ir::Graph g = gemm();
  hw::Device d = synthetic();
  hw::Device bare = synthetic(false);
  bare.id = "BARE";
  Report r = analyze(g, {&d, &bare}, {});
  std::string t = to_table(r);
  EXPECT_THAT(t, HasSubstr("cache-aware SOL, mode attainable"));
  EXPECT_THAT(t, HasSubstr("cache-aware/fused"));
  EXPECT_THAT(t, ::testing::ContainsRegex("\nSYN +attainable +[0-9.]+ us +dram "));
  EXPECT_THAT(t, HasSubstr("1.049 MB"));  // S = 1 MiB
  // A device without on-chip capacity: a dash row and the reason, never a number.
  EXPECT_THAT(t, HasSubstr("no cache-aware level:\n  BARE: BARE publishes no on-chip memory"));
  json j = to_json(r);
  EXPECT_FALSE(j["devices"]["BARE"]["cache_aware"]["available"].get<bool>());
  EXPECT_FALSE(j["devices"]["BARE"]["cache_aware"].contains("seconds"));
  EXPECT_FALSE(j["ops"][0]["cache_aware_share"].contains("BARE"));
}

TEST(CacheAwareReport, WarmStateAndSkippedLevelSayWhy) {
  ir::Graph g = gemm();
  hw::Device d = synthetic();
  Report warm = analyze(g, {&d}, bound::Options{bound::MathPolicy::PytorchDefault,
                                                bound::CacheState::Warm});
  json w = to_json(warm);
  EXPECT_FALSE(w["devices"]["SYN"]["cache_aware"]["available"].get<bool>());
  EXPECT_THAT(w["devices"]["SYN"]["cache_aware"]["reason"].get<std::string>(), HasSubstr("warm"));
  EXPECT_FALSE(w.contains("ski_slope"));
  EXPECT_THAT(to_table(warm), HasSubstr("cache-aware SOL (attainable): the cache-aware level "
                                        "models cold DRAM traffic"));

  LevelOptions off;
  off.cache_aware = false;
  Report skipped = analyze(g, {&d}, {}, off);
  json s = to_json(skipped);
  EXPECT_EQ(s["options"]["cache_aware"], false);
  EXPECT_THAT(s["devices"]["SYN"]["cache_aware"]["reason"].get<std::string>(),
              HasSubstr("--no-cache-aware"));
  EXPECT_FALSE(s["ops"][0].contains("cache_aware_share"));
  try {
    ski_slope_svg(skipped);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::BadArgument);
    EXPECT_THAT(e.message(), HasSubstr("no ski-slope"));
  }
}

TEST(CacheAwareReport, SvgChartHasEveryCurveAndDeviceLine) {
  ir::Graph g = ir::parse_graph(R"(
    graph two_gemms
    a = bf16[512,512] input
    b = bf16[512,512] weight
    c = bf16[512,512] einsum "mk,kn->mn" (a, b)
    w = bf16[512,256] weight
    e = bf16[512,256]{output} einsum "mk,kn->mn" (c, w))");
  hw::Device d = synthetic();
  Report r = analyze(g, {&d}, {});
  std::string svg = ski_slope_svg(r);
  EXPECT_THAT(svg, ::testing::StartsWith("<?xml version=\"1.0\""));
  EXPECT_THAT(svg, HasSubstr("Ski-slope of two_gemms"));
  // Two op curves, the graph in both modes and the compulsory floor.
  std::size_t polylines = 0;
  for (std::size_t p = svg.find("<polyline"); p != std::string::npos; p = svg.find("<polyline", p + 1))
    ++polylines;
  EXPECT_EQ(polylines, r.ski_slope->heaviest.size() + 3);
  EXPECT_EQ(r.ski_slope->heaviest.size(), 2u);
  EXPECT_THAT(svg, HasSubstr("op c"));
  EXPECT_THAT(svg, HasSubstr("op e"));
  EXPECT_THAT(svg, HasSubstr(">SYN (1.049 MB)</text>"));
  EXPECT_THAT(svg, Not(HasSubstr("nan")));
  EXPECT_THAT(svg, HasSubstr("</svg>"));
}

}  // namespace
}  // namespace solar::report
