#include "solar/cli/cli.h"

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/cli_harness.h"
#include "solar/ir/json.h"
#include "solar/ir/text.h"
#include "solar/util/errors.h"

namespace solar::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

using harness::example;
using harness::Result;
using harness::solar;

class CliTest : public harness::FolderTest {};

constexpr const char* kGemmText = R"(graph g
a = bf16[64,32] input
b = bf16[32,16] weight
c = bf16[64,16]{output} einsum "mk,kn->mn" (a, b)
)";

TEST_F(CliTest, AnalyzesEveryExampleAndPrintsTheTable) {
  for (const char* name : {"gemm.solar", "transformer_block.solar", "conv_resnet.solar"}) {
    Result r = solar({"analyze", example(name)});
    EXPECT_EQ(r.code, kOk) << name << ": " << r.err;
    EXPECT_THAT(r.out, HasSubstr("H100_SXM")) << name;  // the default device
    EXPECT_EQ(r.err, "") << name;
  }
}

TEST_F(CliTest, JsonToStdoutReplacesTheTable) {
  Result r = solar({"analyze", example("gemm.solar"), "--json", "-", "--arch", "H100_SXM",
                    "--arch", "B200"});
  ASSERT_EQ(r.code, kOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);  // the whole of stdout is the document
  EXPECT_EQ(j["schema"], "solar.report.v1");
  EXPECT_EQ(j["devices"].size(), 2u);
}

TEST_F(CliTest, JsonFileIsWrittenWholeNextToTheTable) {
  std::string out = path("gemm.report.json");
  Result r = solar({"analyze", example("gemm.solar"), "--json", out});
  ASSERT_EQ(r.code, kOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("H100_SXM"));
  std::ifstream f(out);
  nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j["schema"], "solar.report.v1");
  EXPECT_EQ(files(), std::vector<std::string>{"gemm.report.json"});  // no temporary left
}

TEST_F(CliTest, CommaSeparatedAndRepeatedArchsAreDeduplicated) {
  Result r = solar({"analyze", example("gemm.solar"), "--json", "-", "--arch", "H100_SXM,B200",
                    "--arch", "h100_sxm"});
  ASSERT_EQ(r.code, kOk) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["devices"].size(), 2u);  // H100_SXM once, B200
}

TEST_F(CliTest, AcceptsTheJsonGraphForm) {
  // The same graph in both forms: `solar analyze` reads either, to the same report.
  std::string json_graph = ir::graph_to_json(ir::parse_graph(kGemmText)).dump();
  Result text = solar({"analyze", write("g.solar", kGemmText), "--json", "-"});
  Result json = solar({"analyze", write("g.json", json_graph), "--json", "-"});
  ASSERT_EQ(text.code, kOk) << text.err;
  ASSERT_EQ(json.code, kOk) << json.err;
  nlohmann::json a = nlohmann::json::parse(text.out), b = nlohmann::json::parse(json.out);
  EXPECT_EQ(a["totals"], b["totals"]);
  EXPECT_EQ(a["devices"], b["devices"]);
}

TEST_F(CliTest, PolicyAndCacheStateAreRecorded) {
  Result r = solar({"analyze", example("conv_resnet.solar"), "--json", "-", "--policy",
                    "strict-fp32", "--cache-state", "warm"});
  ASSERT_EQ(r.code, kOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("strict-fp32"));
  EXPECT_THAT(r.out, HasSubstr("warm"));
}

TEST_F(CliTest, VersionMatchesTheProjectVersion) {
  Result r = solar({"--version"});
  EXPECT_EQ(r.code, kOk);
  EXPECT_EQ(r.out, std::string("solar ") + kVersion + "\n");
  // The CMake project and the CLI carry the same release number.
  std::ifstream f(std::string(SOLAR_SOURCE_DIR) + "/CMakeLists.txt");
  std::stringstream cmake;
  cmake << f.rdbuf();
  std::smatch m;
  std::string text = cmake.str();
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(project\(solar VERSION ([0-9.]+))")));
  EXPECT_EQ(m[1].str(), kVersion);
}

TEST_F(CliTest, HelpExitsZero) {
  Result r = solar({"--help"});
  EXPECT_EQ(r.code, kOk);
  EXPECT_THAT(r.out, HasSubstr("analyze"));
  Result sub = solar({"analyze", "--help"});
  EXPECT_EQ(sub.code, kOk);
  EXPECT_THAT(sub.out, HasSubstr("--policy"));
  // The console script's command list belongs to the main page only.
  EXPECT_THAT(r.out, HasSubstr("Python programs"));
  EXPECT_THAT(sub.out, Not(HasSubstr("Python programs")));
}

// ---- errors: one line on stderr, a distinct exit code, no output file ---------------------

struct BadCase {
  const char* name;
  std::vector<std::string> args;  // "$DIR" is replaced by the test folder
  int code;
  const char* message;
};

TEST_F(CliTest, UsageErrorsExitTwo) {
  for (const BadCase& c : std::vector<BadCase>{
           {"no command", {}, kUsage, "subcommand"},
           {"unknown option", {"analyze", example("gemm.solar"), "--frobnicate"}, kUsage,
            "frobnicate"},
           {"missing graph", {"analyze"}, kUsage, "GRAPH"},
           {"bad policy", {"analyze", example("gemm.solar"), "--policy", "fast"}, kUsage,
            "unknown --policy 'fast'"},
           {"bad cache state", {"analyze", example("gemm.solar"), "--cache-state", "hot"},
            kUsage, "unknown --cache-state 'hot'"},
           {"negative top", {"analyze", example("gemm.solar"), "--top", "-1"}, kUsage, "top"},
           {"mistyped command", {"anlyze", example("gemm.solar")}, kUsage,
            "unknown command 'anlyze': did you mean 'solar analyze'?"},
           {"unknown command", {"frobnicate"}, kUsage, "unknown command 'frobnicate'"},
       }) {
    Result r = solar(c.args);
    EXPECT_EQ(r.code, c.code) << c.name;
    EXPECT_THAT(r.err, StartsWith("solar: error: ")) << c.name;
    EXPECT_THAT(r.err, HasSubstr(c.message)) << c.name;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.name << ": " << r.err;
    EXPECT_EQ(r.out, "") << c.name;
  }
}

TEST_F(CliTest, InputErrorsHaveDistinctCodesAndLeaveNoOutput) {
  std::string syntax = write("syntax.solar", "graph g\na = f32[4 input\n");
  // Parsed fine, rejected by the verifier: a rank-2 tensor read with one subscript.
  std::string rank = write("rank.solar", R"(graph g
a = f32[4,8] input
b = f32[4,8]{output} einsum [i=4,j=8] none relu($0) (a[i]) -> [i,j]
)");
  std::string json = write("bad.json", "{\"schema\": \"solar.graph.v1\", ");
  std::string out = path("report.json");
  for (const BadCase& c : std::vector<BadCase>{
           {"missing file", {"analyze", path("nope.solar")}, kIoError, "nope.solar"},
           {"syntax error", {"analyze", syntax}, kParseError, "syntax.solar:2"},
           {"malformed json", {"analyze", json}, kParseError, "bad.json"},
           {"rank mismatch", {"analyze", rank}, kInvalidGraph, "rank.solar"},
           {"unknown device", {"analyze", example("gemm.solar"), "--arch", "H100_SXM", "--arch",
                               "Z9000"}, kUnknownDevice, "Z9000"},
           {"output folder missing", {"analyze", example("gemm.solar"), "--json",
                                      path("no/such/folder/r.json")}, kIoError, "does not exist"},
       }) {
    std::vector<std::string> args = c.args;
    if (std::string(c.name) != "output folder missing") {
      args.push_back("--json");
      args.push_back(out);
    }
    Result r = solar(args);
    EXPECT_EQ(r.code, c.code) << c.name << ": " << r.err;
    EXPECT_THAT(r.err, StartsWith("solar: error: ")) << c.name;
    EXPECT_THAT(r.err, HasSubstr(c.message)) << c.name;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.name << ": " << r.err;
    EXPECT_EQ(r.out, "") << c.name;
    EXPECT_FALSE(fs::exists(out)) << c.name;
    for (const std::string& f : files()) EXPECT_THAT(f, Not(HasSubstr(".tmp"))) << c.name;
  }
}

TEST_F(CliTest, DebugAddsTheExceptionDetails) {
  std::string syntax = write("syntax.solar", "graph g\na = f32[4 input\n");
  Result plain = solar({"analyze", syntax});
  Result debug = solar({"analyze", syntax, "--debug"});
  EXPECT_EQ(plain.code, kParseError);
  EXPECT_EQ(debug.code, kParseError);
  EXPECT_THAT(plain.err, Not(HasSubstr("debug")));
  EXPECT_THAT(debug.err, StartsWith(plain.err));  // the same error line first
  EXPECT_THAT(debug.err, HasSubstr("solar: debug: origin: file '" + syntax + "', line 2"));
}

TEST_F(CliTest, ExistingOutputSurvivesAFailedRun) {
  std::string out = write("report.json", "previous report\n");
  Result r = solar({"analyze", path("missing.solar"), "--json", out});
  EXPECT_EQ(r.code, kIoError);
  std::ifstream f(out);
  std::string content((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "previous report\n");
}

TEST(ExitCodeFor, MapsEveryErrorKind) {
  using K = UserError::Kind;
  EXPECT_EQ(exit_code_for(UserError(K::Io, "x")), kIoError);
  EXPECT_EQ(exit_code_for(UserError(K::Parse, "x")), kParseError);
  EXPECT_EQ(exit_code_for(UserError(K::InvalidGraph, "x")), kInvalidGraph);
  EXPECT_EQ(exit_code_for(UserError(K::UnknownDevice, "x")), kUnknownDevice);
  EXPECT_EQ(exit_code_for(UserError(K::BadArgument, "x")), kUsage);
  EXPECT_EQ(exit_code_for(Unsupported("x")), kUnsupported);
  EXPECT_EQ(exit_code_for(InternalError("x", __FILE__, __LINE__)), kInternal);
  EXPECT_EQ(exit_code_for(std::runtime_error("x")), kInternal);
}

// ---- arch ------------------------------------------------------------------------------

TEST_F(CliTest, ArchListShowsEveryDeviceAndTheHost) {
  Result r = solar({"arch", "list"});
  ASSERT_EQ(r.code, kOk) << r.err;
  for (const char* id : {"H100_SXM", "B200", "MI300X", "host"}) EXPECT_THAT(r.out, HasSubstr(id));
  EXPECT_THAT(r.out, HasSubstr("DRAM BW"));
}

TEST_F(CliTest, ArchShowGivesEveryNumberWithItsSource) {
  Result r = solar({"arch", "show", "h100_sxm"});
  ASSERT_EQ(r.code, kOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("H100_SXM"));
  EXPECT_THAT(r.out, HasSubstr("bf16"));
  EXPECT_THAT(r.out, HasSubstr("[V]"));
  EXPECT_THAT(r.out, HasSubstr("dram"));

  Result j = solar({"arch", "show", "H100_SXM", "--json"});
  ASSERT_EQ(j.code, kOk) << j.err;
  nlohmann::json d = nlohmann::json::parse(j.out);
  EXPECT_EQ(d["schema"], "solar.device.v1");
  EXPECT_EQ(d["id"], "H100_SXM");
  for (const auto& unit : d["units"])
    for (const auto& [dtype, peak] : unit["peak"].items()) {
      EXPECT_GT(peak["value"].get<double>(), 0) << dtype;
      EXPECT_FALSE(peak["source"].get<std::string>().empty()) << dtype;
      EXPECT_FALSE(peak["flag"].get<std::string>().empty()) << dtype;
    }
}

TEST_F(CliTest, ArchShowUnknownDeviceExitsSix) {
  Result r = solar({"arch", "show", "Z9000"});
  EXPECT_EQ(r.code, kUnknownDevice);
  EXPECT_THAT(r.err, StartsWith("solar: error: "));
  EXPECT_THAT(r.err, HasSubstr("Z9000"));
}

}  // namespace
}  // namespace solar::cli
