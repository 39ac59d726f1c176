// Honest headlines: a device row whose bound leaves work out is marked in the table itself,
// a program that cannot fit a device's DRAM is warned about (table) and said so (JSON), the
// inverse roofline does not say "meets" when work has no rate, and the ski-slope chart keeps
// its labels and curves inside the canvas.
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "solar/hw/database.h"
#include "solar/ir/text.h"
#include "solar/report/report.h"
#include "solar/tiling/fusion.h"
#include "testing/fixtures.h"

namespace solar::report {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const hw::DeviceDb& db() {
  static const hw::DeviceDb d = hw::DeviceDb::load_default();
  return d;
}

// The table line that starts with `prefix` (the device table's rows start with the id).
std::string line_starting(const std::string& table, const std::string& prefix) {
  std::istringstream in(table);
  for (std::string l; std::getline(in, l);)
    if (l.rfind(prefix, 0) == 0) return l;
  return "";
}

LevelOptions no_cache_aware() {
  LevelOptions l;
  l.cache_aware = false;
  l.insights = false;
  return l;
}

// exp has no special-function rate on a TPU: its SOL cells carry the mark, H100's
// (which has MUFU) do not, and the legend says what the mark means.
TEST(Headline, ARowThatLeavesWorkOutIsMarkedInTheTable) {
  ir::Graph g = ir::parse_graph(R"(
    x = f32[1024,1024] input
    y = f32[1024,1024]{output} einsum [m=1024,n=1024] none exp($0) (x[m,n]) -> [m,n])");
  Report r = analyze(g, {&db().get("H100_SXM"), &db().get("TPU_v5e")}, {});
  ASSERT_FALSE(r.devices[1].fused.unknown.empty());
  ASSERT_TRUE(r.devices[0].fused.unknown.empty());
  std::string t = to_table(r);
  std::string tpu = line_starting(t, "TPU_v5e ");
  std::string h100 = line_starting(t, "H100_SXM ");
  ASSERT_FALSE(tpu.empty()) << t;
  // Every level of the TPU row (unfused, framework, fused) is marked: "<time>*".
  EXPECT_EQ(std::count(tpu.begin(), tpu.end(), '*'), 3) << tpu;
  EXPECT_THAT(tpu, ::testing::ContainsRegex("s\\* "));
  EXPECT_EQ(std::count(h100.begin(), h100.end(), '*'), 0) << h100;
  EXPECT_THAT(t, HasSubstr("* incomplete: leaves out work the device publishes no rate for"));
  EXPECT_THAT(t, HasSubstr("TPU_v5e: 1.05e6 special-function ops"));
}

// A weight of 2*10^10 bytes: more than TPU v5e's 16 GB of HBM, less than H100's 80 GB.
TEST(Headline, AProgramWhoseInputsDoNotFitIsWarnedAndSaidInTheJson) {
  ir::Graph g = ir::parse_graph(R"(
    x = bf16[8,100000] input
    w = bf16[100000,100000] weight
    y = bf16[8,100000]{output} einsum "mk,kn->mn" (x, w))");
  Report r = analyze(g, {&db().get("H100_SXM"), &db().get("TPU_v5e")}, {}, no_cache_aware());
  const Count footprint = Count(2) * Count(100000) * Count(100000) + Count(2 * 8 * 100000);
  nlohmann::json j = to_json(r);
  const nlohmann::json& tpu = j["devices"]["TPU_v5e"]["memory"];
  EXPECT_EQ(tpu["capacity_bytes"].get<std::uint64_t>(), 16'000'000'000u);
  EXPECT_EQ(tpu["footprint_bytes"].get<std::uint64_t>(), footprint.to_u64());
  EXPECT_FALSE(tpu["fits"].get<bool>());
  EXPECT_EQ(tpu["largest_tensor"]["name"], "w");
  EXPECT_EQ(tpu["largest_tensor"]["bytes"].get<std::uint64_t>(), 20'000'000'000u);
  const nlohmann::json& h100 = j["devices"]["H100_SXM"]["memory"];
  EXPECT_EQ(h100["capacity_bytes"].get<std::uint64_t>(), 80'000'000'000u);
  EXPECT_TRUE(h100["fits"].get<bool>());

  std::string t = to_table(r);
  EXPECT_THAT(line_starting(t, "TPU_v5e"), HasSubstr("TPU_v5e (!)"));
  EXPECT_THAT(line_starting(t, "H100_SXM"), Not(HasSubstr("(!)")));
  EXPECT_THAT(t, HasSubstr("!!! (!) does not fit the device's DRAM:"));
  EXPECT_THAT(t, HasSubstr("TPU_v5e: its inputs, weights and constants take 20 GB"));
  EXPECT_THAT(t, HasSubstr("tensor 'w' alone takes 20 GB, its DRAM holds 16 GB"));
}

// Small inputs, one output of 4*70000^2 = 19.6 GB: the footprint fits a TPU v5e, the tensor
// does not (an intermediate that size would not count: a fused kernel need never store it).
TEST(Headline, AnOutputLargerThanTheDeviceMemoryIsWarned) {
  ir::Graph g = ir::parse_graph(R"(
    a = f32[70000] input
    b = f32[70000] input
    c = f32[70000,70000]{output} einsum "i,j->ij" (a, b))");
  Report r = analyze(g, {&db().get("TPU_v5e")}, {}, no_cache_aware());
  nlohmann::json m = to_json(r)["devices"]["TPU_v5e"]["memory"];
  EXPECT_EQ(m["footprint_bytes"].get<std::uint64_t>(), 2u * 4 * 70000);
  EXPECT_EQ(m["largest_tensor"]["name"], "c");
  EXPECT_EQ(m["largest_tensor"]["bytes"].get<std::uint64_t>(), 4ull * 70000 * 70000);
  EXPECT_FALSE(m["fits"].get<bool>());
  std::string t = to_table(r);
  EXPECT_THAT(t, HasSubstr("tensor 'c' alone takes 19.6 GB, its DRAM holds 16 GB"));
  EXPECT_THAT(t, Not(HasSubstr("its inputs, weights and constants take")));

  ir::Graph inner = ir::parse_graph(R"(
    a = f32[70000] input
    b = f32[70000] input
    c = f32[70000,70000] einsum "i,j->ij" (a, b)
    s = f32[70000]{output} einsum "ij->i" (c))");
  Report ri = analyze(inner, {&db().get("TPU_v5e")}, {}, no_cache_aware());
  EXPECT_TRUE(to_json(ri)["devices"]["TPU_v5e"]["memory"]["fits"].get<bool>());
  EXPECT_THAT(to_table(ri), Not(HasSubstr("(!)")));
}

// A device without a published DRAM capacity: fits is null, no warning.
TEST(Headline, AnUnpublishedCapacityIsNull) {
  hw::Device d = testing::DeviceBuilder("NOCAP").tensor(ir::DType::BF16, 1e15).build();
  hw::MemorySpec dram;
  dram.level = hw::MemoryLevel::Dram;
  dram.bandwidth = testing::DeviceBuilder::sourced(1e12);
  d.memory.push_back(dram);
  ir::Graph g = ir::parse_graph(R"(
    a = bf16[64,64] input
    b = bf16[64,64]{output} einsum "mk,kn->mn" (a, a))");
  Report r = analyze(g, {&d}, {}, no_cache_aware());
  nlohmann::json m = to_json(r)["devices"]["NOCAP"]["memory"];
  EXPECT_TRUE(m["capacity_bytes"].is_null());
  EXPECT_TRUE(m["fits"].is_null());
  EXPECT_EQ(m["footprint_bytes"].get<std::uint64_t>(), 2u * 64 * 64);
}

// The inverse roofline on a TPU v5e for a program of exp: the compute factor leaves those
// ops out, so the device is "undetermined", never "meets"; the verdict names the work; the
// special-function line shows its work, not "()".
TEST(Headline, InverseDoesNotClaimMeetsWhenRatesAreUnknown) {
  ir::Graph g = ir::parse_graph(R"(
    x = f32[1024,1024] input
    y = f32[1024,1024]{output} einsum [m=1024,n=1024] none exp($0) (x[m,n]) -> [m,n])");
  cost::GraphCost cost = cost::graph_cost(g);
  tiling::GraphTrafficModel model(g, cost, {});
  bound::InverseOptions o;
  o.target_seconds = 1.0;  // every known factor far below 1
  bound::InverseResult r =
      bound::inverse_roofline(g, cost, model, {&db().get("TPU_v5e"), &db().get("H100_SXM")}, o);
  const bound::DeviceFit& tpu = r.devices[0];
  ASSERT_FALSE(tpu.unknown.empty());
  EXPECT_LE(tpu.compute_factor, 1);
  ASSERT_TRUE(tpu.bandwidth_factor.has_value());
  EXPECT_LE(*tpu.bandwidth_factor, 1);
  EXPECT_FALSE(tpu.meets);
  EXPECT_EQ(tpu.status, "undetermined");
  EXPECT_THAT(tpu.verdict, HasSubstr("TPU_v5e: undetermined"));
  EXPECT_THAT(tpu.verdict, HasSubstr("special-function"));
  EXPECT_TRUE(r.devices[1].meets);
  EXPECT_EQ(r.devices[1].status, "meets");

  std::string t = inverse_table(g, r);
  EXPECT_THAT(t, Not(HasSubstr("()")));
  // 1024^2 exp: 1.049 Mop of work, at T = 1 s 1.049 Mop/s.
  EXPECT_THAT(t, HasSubstr("special     1.049 Mop/s  (1.049 Mop)"));
  std::string row = line_starting(t, "  TPU_v5e ");
  EXPECT_THAT(row, HasSubstr("undetermined"));
  EXPECT_THAT(row, Not(HasSubstr("meets")));
  // No compute factor for work without a published rate: "-" (a note says why), never "0x".
  EXPECT_THAT(row, ::testing::ContainsRegex("TPU_v5e +- "));
  EXPECT_THAT(t, HasSubstr("TPU_v5e: compute factor absent: left out (no published rate)"));
  EXPECT_THAT(t, HasSubstr("left out (no published rate): 1.05e6 special-function ops"));
  EXPECT_THAT(line_starting(t, "  H100_SXM "), HasSubstr("meets"));
  nlohmann::json j = inverse_to_json(g, r);
  EXPECT_EQ(j["devices"]["TPU_v5e"]["status"], "undetermined");
  EXPECT_FALSE(j["devices"]["TPU_v5e"]["meets"].get<bool>());
}

// ---- the ski-slope SVG ----

struct SvgText {
  double x = 0, y = 0, font = 11;
  std::string anchor = "start", text;
  bool rotated = false;
};

std::vector<SvgText> svg_texts(const std::string& svg) {
  std::vector<SvgText> out;
  std::regex text_re("<text ([^>]*)>([^<]*)</text>");
  std::regex attr_re("([a-z-]+)=\"([^\"]*)\"");
  for (std::sregex_iterator it(svg.begin(), svg.end(), text_re), end; it != end; ++it) {
    SvgText t;
    std::string attrs = (*it)[1];
    t.text = (*it)[2];
    for (std::sregex_iterator a(attrs.begin(), attrs.end(), attr_re); a != end; ++a) {
      std::string k = (*a)[1], v = (*a)[2];
      if (k == "x") t.x = std::stod(v);
      if (k == "y") t.y = std::stod(v);
      if (k == "font-size") t.font = std::stod(v);
      if (k == "text-anchor") t.anchor = v;
      if (k == "transform") t.rotated = v.rfind("rotate(-90", 0) == 0;
    }
    out.push_back(t);
  }
  return out;
}

// Every polyline's points, in pixels.
std::vector<std::vector<std::pair<double, double>>> svg_polylines(const std::string& svg) {
  std::vector<std::vector<std::pair<double, double>>> out;
  std::regex re("<polyline [^>]*points=\"([^\"]*)\"");
  for (std::sregex_iterator it(svg.begin(), svg.end(), re), end; it != end; ++it) {
    std::istringstream in((*it)[1].str());
    std::vector<std::pair<double, double>> pts;
    for (std::string p; in >> p;) {
      std::size_t comma = p.find(',');
      pts.emplace_back(std::stod(p.substr(0, comma)), std::stod(p.substr(comma + 1)));
    }
    out.push_back(pts);
  }
  return out;
}

// Long device ids and a long op name: every label stays on the canvas (its extent at 0.6 em
// per character, the average width of a sans-serif glyph), and the gemm's tiling curve, whose
// smallest buffers lie below the chart's 1 KiB axis start, is clipped there, not pinned to the
// axis as a vertical spike.
TEST(SkiSlopeSvg, LabelsStayOnTheCanvasAndCurvesAreClipped) {
  std::string long_op = "blocks.11.attention.output_projection_with_a_very_long_name";
  ir::Graph g = ir::parse_graph(
      "a = bf16[1024,1024] input\nb = bf16[1024,1024] weight\n" + long_op +
      " = bf16[1024,1024]{output} einsum \"mk,kn->mn\" (a, b)");
  g.name = "a_program_whose_name_is_long_enough_to_push_the_title_past_the_edge_of_the_chart";
  hw::Device wide = testing::DeviceBuilder("A_DEVICE_WITH_A_VERY_LONG_IDENTIFIER_THAT_RUNS_ON")
                        .tensor(ir::DType::BF16, 1e15)
                        .dram(1e12)
                        .memory(hw::MemoryLevel::L2, 256e6, std::nullopt)
                        .build();
  Report r = analyze(g, {&db().get("H100_SXM"), &wide}, {});
  ASSERT_TRUE(r.ski_slope.has_value());
  std::string svg = ski_slope_svg(r);
  const double width = 860, height = 540;
  auto texts = svg_texts(svg);
  ASSERT_GE(texts.size(), 10u);
  for (const SvgText& t : texts) {
    double len = t.text.size() * 0.6 * t.font;
    double lo = t.anchor == "end" ? -len : t.anchor == "middle" ? -len / 2 : 0;
    double hi = lo + len;
    if (t.rotated) {  // reads upwards from (x, y): its extent is along -y
      EXPECT_GE(t.y - hi, 0) << t.text;
      EXPECT_LE(t.y - lo, height) << t.text;
      EXPECT_GE(t.x - t.font, 0) << t.text;
    } else {
      EXPECT_GE(t.x + lo, 0) << t.text;
      EXPECT_LE(t.x + hi, width) << t.text;
    }
    EXPECT_GE(t.x, 0) << t.text;
    EXPECT_LE(t.x, width) << t.text;
  }
  // The device labels are there (cut when too long).
  EXPECT_THAT(svg, HasSubstr("H100_SXM ("));
  EXPECT_THAT(svg, HasSubstr("A_DEVICE_WITH"));

  // The frame's left edge is the axis start: no curve point left of it, and at most one
  // point of a curve on it (a second one there, at another height, is a pinned spike).
  std::smatch frame;
  ASSERT_TRUE(std::regex_search(svg, frame, std::regex("<rect x=\"([0-9.]+)\"")));
  const double axis = std::stod(frame[1]);
  auto lines = svg_polylines(svg);
  ASSERT_GE(lines.size(), 4u);  // the op, attainable, provable, compulsory
  ASSERT_FALSE(r.ski_slope->heaviest.empty());
  // The op's curve does have points below 1 KiB (else this test would test nothing).
  EXPECT_LT(r.ski_slope->heaviest[0].points.front().buffer_bytes, Count(1024));
  for (const auto& pts : lines) {
    int on_axis = 0;
    for (const auto& [x, y] : pts) {
      EXPECT_GE(x, axis - 0.05);
      if (std::abs(x - axis) < 0.05) ++on_axis;
    }
    EXPECT_LE(on_axis, 1) << "a curve pinned to the axis start";
  }
}

}  // namespace
}  // namespace solar::report
