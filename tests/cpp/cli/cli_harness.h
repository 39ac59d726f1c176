// What the CLI tests share: running `solar` in process, the bundled examples, and a fresh
// folder per test for inputs and outputs.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "solar/cli/cli.h"

namespace solar::cli::harness {

struct Result {
  int code;
  std::string out;
  std::string err;
};

// `solar ARGS...`, its exit code and what it wrote.
inline Result solar(std::vector<std::string> args) {
  args.insert(args.begin(), "solar");
  std::ostringstream out, err;
  int code = run(args, out, err);
  return {code, out.str(), err.str()};
}

inline std::string example(const std::string& name) {
  return std::string(SOLAR_SOURCE_DIR) + "/examples/" + name;
}

// A fresh folder per test, named after it, removed afterwards.
class FolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("solar_cli_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // Every file in the folder, sorted (to show that no temporary or partial output is left).
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir_))
      out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

  std::filesystem::path dir_;
};

}  // namespace solar::cli::harness
