// Graphs that give nothing to analyze are refused, not reported "complete" with 0 ops, and
// shapes that disagree are an invalid graph (exit 5), with the file named and nothing
// written (docs/cli.md, "Errors and exit codes").
#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/cli_harness.h"

namespace solar::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

using harness::Result;
using harness::solar;

class RefusalTest : public harness::FolderTest {};

struct Case {
  std::string file, text;
  int code;
  std::string message;
};

TEST_F(RefusalTest, EmptyGraphsAndMismatchedShapesAreRefusedByEveryGraphCommand) {
  const std::vector<Case> cases = {
      {"empty.solar", "", kParseError, "the file is empty: expected a graph"},
      {"blank.json", " \n\t\n", kParseError, "the file is empty: expected a graph"},
      {"comments.solar", "# a graph to be written\ngraph g\n", kInvalidGraph,
       "graph 'g' has no ops, so no output: nothing to analyze"},
      {"inputs_only.solar", "graph g\na = f32[4,4] input\nw = f32[4,4] weight\n", kInvalidGraph,
       "graph 'g' has no ops"},
      {"no_ops.json",
       R"({"schema": "solar.graph.v1", "name": "j", "tensors": [
             {"name": "x", "shape": [4], "dtype": "f32", "role": "input"}], "ops": []})",
       kInvalidGraph, "graph 'j' has no ops"},
      // Edge 10: a shorthand einsum's letters that disagree in extent are an invalid graph.
      {"extents.solar",
       "graph g\na = f32[4,5] input\nb = f32[6,3] input\nc = f32[4,3]{output} einsum "
       "\"mk,kn->mn\" (a, b)\n",
       kInvalidGraph, "extents.solar:4: einsum \"mk,kn->mn\" of 'c': letter 'k' has extent 5"},
      {"rank.solar", "graph g\na = f32[4,5] input\nc = f32[4]{output} einsum \"mkn->m\" (a)\n",
       kInvalidGraph, "operand 0 ('a') has rank 2 but its subscript \"mkn\" has 3 letters"},
  };
  const std::string out = path("out.json");
  for (const Case& c : cases) {
    std::string graph = write(c.file, c.text);
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"analyze", graph, "--json", out},
             {"inverse", graph, "--target-ms", "1", "--arch", "H100_SXM", "--json", out},
             {"export", graph, "--format", "accelforge", "--out", path("export")}}) {
      Result r = solar(args);
      std::string what = c.file + " (" + args[0] + ")";
      EXPECT_EQ(r.code, c.code) << what << ": " << r.err;
      EXPECT_THAT(r.err, StartsWith("solar: error: " + graph)) << what;
      EXPECT_THAT(r.err, HasSubstr(c.message)) << what;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": " << r.err;
      EXPECT_EQ(r.out, "") << what;
      EXPECT_FALSE(fs::exists(out)) << what;
      EXPECT_FALSE(fs::exists(path("export"))) << what;
    }
  }
}

// A graph with ops and no marked output still analyzes (every op is kept: docs/report-json.md,
// "coverage"); only a graph with no op at all is refused.
TEST_F(RefusalTest, AGraphWithOpsButNoMarkedOutputStillAnalyzes) {
  std::string graph =
      write("kept.solar", "graph g\na = f32[4,4] input\nb = f32[4] einsum \"ij->i\" (a)\n");
  Result r = solar({"analyze", graph, "--top", "0"});
  EXPECT_EQ(r.code, kOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("ops: 1  analyzed: 1  coverage: complete"));
}

}  // namespace
}  // namespace solar::cli
