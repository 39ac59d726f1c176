#include "solar/util/output_file.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "solar/util/errors.h"

namespace solar {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr uid_t kNobody = 65534;  // an unprivileged user: permission bits bind it

// A fresh folder per test, removed afterwards.
class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("solar_output_file_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text, int mode = 0644) {
    fs::path p = dir_ / name;
    std::ofstream(p) << text;
    fs::permissions(p, static_cast<fs::perms>(mode));
    return p.string();
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

  fs::path dir_;
};

std::string read(const std::string& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int mode_of(const std::string& p) {
  struct stat st;
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

std::string io_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::Io);
    return e.what();
  }
  ADD_FAILURE() << "expected UserError(Io)";
  return "";
}

TEST_F(OutputFileTest, HardLinksAndSymlinksAreTheSameFile) {
  std::string a = write("a.py", "x = 1\n");
  fs::create_hard_link(a, path("b.py"));
  fs::create_symlink("a.py", path("c.py"));
  std::string other = write("d.py", "x = 1\n");  // equal contents, another file
  EXPECT_TRUE(same_file(a, path("b.py")));
  EXPECT_TRUE(same_file(a, path("c.py")));
  EXPECT_FALSE(same_file(a, other));
  // Files still to be created: by their resolved paths.
  fs::create_directories(dir_ / "sub");
  EXPECT_TRUE(same_file(path("new.json"), path("sub/../new.json")));
  EXPECT_FALSE(same_file(path("new.json"), path("sub/new.json")));
  EXPECT_FALSE(same_file(a, path("new.json")));
}

TEST_F(OutputFileTest, AReadOnlyFileIsRefusedEvenForRoot) {
  std::string ro = write("r.json", "earlier\n", 0444);
  std::optional<std::string> why = why_not_writable(ro);
  ASSERT_TRUE(why.has_value());
  EXPECT_THAT(*why, HasSubstr("read-only (mode 0444)"));
  EXPECT_THAT(io_message([&] { StagedFile(ro, "new\n").commit(); }),
              HasSubstr("cannot write '" + ro + "': the file is read-only"));
  EXPECT_EQ(read(ro), "earlier\n");
  EXPECT_EQ(files(), std::vector<std::string>{"r.json"});  // no temporary left
}

TEST_F(OutputFileTest, FoldersMissingFoldersAndDevicesAreNoOutputs) {
  EXPECT_THAT(why_not_writable(path("no/r.json")).value_or(""),
              HasSubstr("folder '" + path("no") + "' does not exist"));
  EXPECT_EQ(why_not_writable(dir_.string()).value_or(""), "it is a folder");
  EXPECT_THAT(why_not_writable("/dev/null").value_or(""), HasSubstr("not a regular file"));
  EXPECT_EQ(why_not_writable(path("fine.json")), std::nullopt);
  EXPECT_TRUE(files().empty());  // the probe left nothing behind
}

TEST_F(OutputFileTest, AnExistingOutputKeepsItsModeAndANewOneGetsTheUmasks) {
  std::string kept = write("kept.json", "earlier\n", 0640);
  StagedFile(kept, "new\n").commit();
  EXPECT_EQ(read(kept), "new\n");
  EXPECT_EQ(mode_of(kept), 0640);
  mode_t mask = ::umask(027);
  StagedFile(path("fresh.json"), "x").commit();
  ::umask(mask);
  EXPECT_EQ(mode_of(path("fresh.json")), 0666 & ~027);
}

TEST_F(OutputFileTest, ASymlinkIsWrittenThroughAndStays) {
  std::string real = write("real.json", "earlier\n", 0600);
  fs::create_symlink("real.json", path("link.json"));
  StagedFile(path("link.json"), "new\n").commit();
  EXPECT_TRUE(fs::is_symlink(path("link.json")));
  EXPECT_EQ(read(real), "new\n");
  EXPECT_EQ(mode_of(real), 0600);
}

TEST_F(OutputFileTest, AnUncommittedFileLeavesNothing) {
  std::string out = write("out.json", "earlier\n");
  { StagedFile staged(out, "new\n"); }
  EXPECT_EQ(read(out), "earlier\n");
  EXPECT_EQ(files(), std::vector<std::string>{"out.json"});
}

TEST_F(OutputFileTest, CheckOutputsRefusesAnInputOrAnotherOutput) {
  std::string graph = write("g.solar", "graph g\n");
  fs::create_hard_link(graph, path("h.solar"));
  EXPECT_THAT(io_message([&] { check_outputs({{"GRAPH", graph}}, {{"--json", graph}}); }),
              HasSubstr("cannot write '" + graph + "': --json would replace the input GRAPH;"));
  EXPECT_THAT(
      io_message([&] { check_outputs({{"GRAPH", graph}}, {{"--json", path("h.solar")}}); }),
      HasSubstr("--json would replace the input GRAPH '" + graph + "' (the same file)"));
  EXPECT_THAT(io_message([&] {
                check_outputs({{"GRAPH", graph}},
                              {{"--json", path("r.json")}, {"--ski-slope", path("./r.json")}});
              }),
              HasSubstr("--json and --ski-slope name the same file"));
  // `-` (stdout) and absent options pass; nothing was written by any check.
  check_outputs({{"GRAPH", graph}}, {{"--json", "-"}, {"--ski-slope", ""}, {"--html", "-"}});
  EXPECT_EQ(files(), (std::vector<std::string>{"g.solar", "h.solar"}));
  EXPECT_EQ(read(graph), "graph g\n");
}

// Permission bits bind an unprivileged user only (tests run as root): a forked child drops
// to it and reports whether its probe of a root-owned 0755 folder failed.
TEST_F(OutputFileTest, AFolderThatRefusesFilesIsFoundByTheProbe) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to drop to an unprivileged user";
  fs::permissions(dir_, static_cast<fs::perms>(0755));
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) ::_exit(3);
    std::optional<std::string> folder = why_folder_refuses_files(dir_.string());
    std::optional<std::string> out = why_not_writable((dir_ / "r.html").string());
    bool ok = folder && *folder == "Permission denied" && out &&
              out->find("does not accept new files (Permission denied)") != std::string::npos;
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(files().empty());
}

}  // namespace
}  // namespace solar
