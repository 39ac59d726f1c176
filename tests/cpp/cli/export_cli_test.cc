// `solar export GRAPH --format accelforge|timeloop --out DIR` (docs/export.md, docs/cli.md).
#include <gtest/gtest.h>

#include "cli/cli_harness.h"

namespace solar::cli {
namespace {

using harness::solar;

class ExportCli : public harness::FolderTest {};

TEST_F(ExportCli, GemmToAccelForgeWritesTheWorkloadAndTheManifest) {
  harness::Result r = solar({"export", harness::example("gemm.solar"), "--format", "accelforge",
                             "--out", path("out")});
  ASSERT_EQ(r.code, kOk) << r.err;
  // 4096^3 MACs, every one an operation of the one einsum.
  EXPECT_EQ(r.out,
            "exported 1 einsum of 'gemm' (68719476736 operations, 68719476736 MACs) as accelforge "
            "to " + path("out") + "/: workload.yaml solar-export.json\n");
  EXPECT_TRUE(std::filesystem::is_regular_file(path("out") + "/workload.yaml"));
  EXPECT_EQ(r.err, "");
}

TEST_F(ExportCli, TimeloopWritesOneProblemPerEinsum) {
  harness::Result r = solar({"export", harness::example("conv_resnet.solar"), "--format",
                             "timeloop", "--out", path("out")});
  ASSERT_EQ(r.code, kOk) << r.err;
  EXPECT_NE(r.out.find("problems/conv.yaml"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::is_regular_file(path("out") + "/problems/conv.yaml"));
  EXPECT_TRUE(std::filesystem::is_regular_file(path("out") + "/workload.yaml"));
}

TEST_F(ExportCli, BadInputGetsTheProjectsExitCodes) {
  harness::Result bad_format = solar({"export", harness::example("gemm.solar"), "--format",
                                      "maestro", "--out", path("out")});
  EXPECT_EQ(bad_format.code, kUsage);
  EXPECT_NE(bad_format.err.find("unknown --format 'maestro' (expected accelforge or timeloop)"),
            std::string::npos);
  EXPECT_EQ(solar({"export", harness::example("gemm.solar"), "--out", path("out")}).code, kUsage);
  harness::Result missing = solar({"export", path("nope.solar"), "--format", "timeloop", "--out",
                                   path("out")});
  EXPECT_EQ(missing.code, kIoError);
  harness::Result no_parent = solar({"export", harness::example("gemm.solar"), "--format",
                                     "timeloop", "--out", path("a/b")});
  EXPECT_EQ(no_parent.code, kIoError);
  EXPECT_NE(no_parent.err.find("does not exist"), std::string::npos);
  std::string only_moves = write("moves.solar", "x = f32[4,8] input\n"
                                                "y = f32[8,4]{output} move permute {perm=[1,0]} (x)\n");
  harness::Result nothing = solar({"export", only_moves, "--format", "accelforge", "--out",
                                   path("out")});
  EXPECT_EQ(nothing.code, kInvalidGraph);
  EXPECT_NE(nothing.err.find("no live einsum to export"), std::string::npos);
  // Nothing was written by any of them.
  EXPECT_EQ(files(), (std::vector<std::string>{"moves.solar"}));
}

}  // namespace
}  // namespace solar::cli
