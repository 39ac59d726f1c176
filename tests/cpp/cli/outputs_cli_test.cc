// Output files lose nothing (docs/cli.md, "Output files"; docs/export.md, "Writing into a
// folder"): no output replaces an input or another output, an existing output keeps its mode
// and a read-only one is refused, a folder that refuses files is found before any work, and
// a re-export replaces exactly the earlier export's files.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/cli_harness.h"

namespace solar::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

using harness::example;
using harness::Result;
using harness::solar;

class OutputsCli : public harness::FolderTest {
 protected:
  std::string graph() { return write("g.solar", read(example("gemm.solar"))); }
  // Every file under the folder with its contents and mode: what a refusal must leave.
  std::map<std::string, std::pair<std::string, int>> snapshot() const {
    std::map<std::string, std::pair<std::string, int>> out;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) {
      struct stat st;
      ::lstat(e.path().c_str(), &st);
      out[fs::relative(e.path(), dir_).string()] = {
          e.is_regular_file() ? read(e.path().string()) : "", static_cast<int>(st.st_mode)};
    }
    return out;
  }
  static std::string read(const std::string& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // The refusal: its code, one error line holding `message`, nothing printed or changed.
  void expect_refused(const std::vector<std::string>& args, int code, const std::string& message) {
    auto before = snapshot();
    Result r = solar(args);
    EXPECT_EQ(r.code, code) << r.err;
    EXPECT_THAT(r.err, StartsWith("solar: error: "));
    EXPECT_THAT(r.err, HasSubstr(message));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(snapshot(), before);
  }
};

int mode_of(const std::string& p) {
  struct stat st;
  ::stat(p.c_str(), &st);
  return st.st_mode & 07777;
}

TEST_F(OutputsCli, AnOutputNeverReplacesTheGraph) {
  std::string g = graph();
  expect_refused({"analyze", g, "--json", g}, kIoError,
                 "cannot write '" + g + "': --json would replace the input GRAPH");
  expect_refused({"analyze", g, "--ski-slope", g}, kIoError, "--ski-slope would replace");
  expect_refused({"inverse", g, "--target-ms", "1", "--json", g}, kIoError, "--json would replace");
  // A hard link and a symlink to the graph are the graph.
  fs::create_hard_link(g, path("hard.solar"));
  fs::create_symlink("g.solar", path("soft.solar"));
  expect_refused({"analyze", g, "--json", path("hard.solar")}, kIoError,
                 "the input GRAPH '" + g + "' (the same file)");
  expect_refused({"analyze", path("soft.solar"), "--json", g}, kIoError, "(the same file)");
}

TEST_F(OutputsCli, TwoOutputsOnOneFileAreRefused) {
  std::string g = graph();
  expect_refused({"analyze", g, "--json", path("r.out"), "--ski-slope", path("./r.out")},
                 kIoError, "--json and --ski-slope name the same file");
}

TEST_F(OutputsCli, AReadOnlyOutputIsRefusedBeforeAnyWork) {
  std::string g = graph();
  std::string ro = write("r.json", "earlier\n");
  fs::permissions(ro, static_cast<fs::perms>(0444));
  // A graph that would fail to parse: the refusal comes first, the graph is never read.
  std::string bad = write("bad.solar", "graph g\nnot a graph\n");
  expect_refused({"analyze", bad, "--json", ro}, kIoError,
                 "cannot write '" + ro + "': the file is read-only (mode 0444)");
  expect_refused({"inverse", g, "--target-ms", "1", "--json", ro}, kIoError, "read-only");
}

TEST_F(OutputsCli, AnExistingOutputKeepsItsMode) {
  std::string g = graph();
  std::string json = write("r.json", "earlier\n");
  std::string svg = write("s.svg", "earlier\n");
  fs::permissions(json, static_cast<fs::perms>(0640));
  fs::permissions(svg, static_cast<fs::perms>(0600));
  Result r = solar({"analyze", g, "--json", json, "--ski-slope", svg});
  ASSERT_EQ(r.code, kOk) << r.err;
  EXPECT_EQ(nlohmann::json::parse(read(json))["schema"], "solar.report.v1");
  EXPECT_EQ(mode_of(json), 0640);
  EXPECT_EQ(mode_of(svg), 0600);
}

// The user the tests cannot be (root writes anywhere): a forked child drops to `nobody`
// and runs the CLI in a root-owned 0755 folder; the parent sees its exit code and output.
TEST_F(OutputsCli, AnUnwritableFolderIsRefusedWithNothingPrinted) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to drop to an unprivileged user";
  std::string g = graph();
  fs::permissions(dir_, static_cast<fs::perms>(0755));
  fs::permissions(g, static_cast<fs::perms>(0644));
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::ostringstream out, err;
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(99);
    int code = run({"solar", "analyze", g, "--json", path("r.json")}, out, err);
    // The child cannot write in the folder: it hands back its result in its exit status
    // (code), and 100 + 1 when anything went to stdout or the message is not the one.
    bool message = err.str().find("cannot write '" + path("r.json") + "': folder '" +
                                  dir_.string() + "' does not accept new files (Permission "
                                  "denied)") != std::string::npos;
    ::_exit(out.str().empty() && message ? code : 101);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), kIoError);
  EXPECT_EQ(files(), std::vector<std::string>{"g.solar"});
}

// ---- export ---------------------------------------------------------------------------

TEST_F(OutputsCli, AReExportReplacesExactlyTheEarlierExportsFiles) {
  std::string out = path("out");
  Result first = solar({"export", example("transformer_block.solar"), "--format", "timeloop",
                        "--out", out});
  ASSERT_EQ(first.code, kOk) << first.err;
  nlohmann::json m = nlohmann::json::parse(read(out + "/solar-export.json"));
  const std::size_t problems = m["einsums"].size();  // one classic problem per einsum
  ASSERT_EQ(problems, 30u);
  // The user's own files beside the export, in the folder and in its subfolder.
  std::ofstream(out + "/notes.txt") << "mine\n";
  std::ofstream(out + "/problems/mine.yaml") << "mine\n";

  Result second = solar({"export", example("gemm.solar"), "--format", "accelforge", "--out", out});
  ASSERT_EQ(second.code, kOk) << second.err;
  // workload.yaml is written by both formats: replaced, not removed.
  EXPECT_THAT(second.out, HasSubstr("removed " + std::to_string(problems) +
                                    " files of the earlier export that this one does not write"));
  std::vector<std::string> left;
  for (const auto& e : fs::recursive_directory_iterator(out))
    left.push_back(fs::relative(e.path(), out).string());
  std::sort(left.begin(), left.end());
  // accelforge writes workload.yaml (replacing Timeloop's) and the manifest; the 30 problems
  // are gone, the user's two files stay.
  EXPECT_EQ(left, (std::vector<std::string>{"notes.txt", "problems", "problems/mine.yaml",
                                            "solar-export.json", "workload.yaml"}));
  EXPECT_EQ(read(out + "/notes.txt"), "mine\n");
  EXPECT_EQ(nlohmann::json::parse(read(out + "/solar-export.json"))["format"], "accelforge");
}

TEST_F(OutputsCli, AFolderWithoutAnExportIsRefused) {
  fs::create_directories(path("out"));
  write("out/thesis.tex", "years of work\n");
  expect_refused({"export", example("gemm.solar"), "--format", "accelforge", "--out", path("out")},
                 kIoError,
                 "the folder is not empty and holds no Solar export (no solar-export.json)");
}

TEST_F(OutputsCli, AManifestThatIsNotOursOrLeadsOutsideIsRefused) {
  fs::create_directories(path("out"));
  write("out/solar-export.json", "{\"files\": []}");
  expect_refused({"export", example("gemm.solar"), "--format", "accelforge", "--out", path("out")},
                 kIoError, "is not a Solar export manifest (its schema is not solar.export.v1)");
  write("out/solar-export.json", R"({"schema": "solar.export.v1", "files": ["../keep.txt"]})");
  write("keep.txt", "mine\n");
  expect_refused({"export", example("gemm.solar"), "--format", "accelforge", "--out", path("out")},
                 kIoError, "lists '../keep.txt', which is not a file inside the folder");
}

TEST_F(OutputsCli, AnExportNeverReplacesTheGraphOrAFileItDidNotWrite) {
  std::string out = path("out");
  ASSERT_EQ(solar({"export", example("gemm.solar"), "--format", "accelforge", "--out", out}).code,
            kOk);
  // The graph is now one of the files the manifest lists.
  fs::copy_file(example("gemm.solar"), out + "/workload.yaml",
                fs::copy_options::overwrite_existing);
  expect_refused({"export", out + "/workload.yaml", "--format", "accelforge", "--out", out},
                 kIoError, "the export would replace the input GRAPH");
  // A Timeloop export would write problems/c.yaml, which the user wrote, not the export.
  fs::create_directories(out + "/problems");
  std::ofstream(out + "/problems/c.yaml") << "mine\n";
  expect_refused({"export", example("gemm.solar"), "--format", "timeloop", "--out", out}, kIoError,
                 "problems/c.yaml': it is not a file of the earlier export");
}

TEST_F(OutputsCli, AReadOnlyFileOfTheEarlierExportIsRefused) {
  std::string out = path("out");
  ASSERT_EQ(solar({"export", example("gemm.solar"), "--format", "accelforge", "--out", out}).code,
            kOk);
  fs::permissions(out + "/workload.yaml", static_cast<fs::perms>(0444));
  expect_refused({"export", example("gemm.solar"), "--format", "accelforge", "--out", out},
                 kIoError, "workload.yaml': the file is read-only (mode 0444)");
}

}  // namespace
}  // namespace solar::cli
