#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "solar/cli/cli.h"
#include "solar/util/errors.h"

namespace solar::cli {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream f(p);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

fs::path fresh_dir(const char* name) {
  fs::path d = fs::path(::testing::TempDir()) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(WriteFileAtomically, ReplacesTheTargetAndLeavesNothingElse) {
  fs::path d = fresh_dir("solar_atomic_replace");
  write_file_atomically((d / "out.json").string(), "first");
  write_file_atomically((d / "out.json").string(), "second");
  EXPECT_EQ(read(d / "out.json"), "second");
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 1);
  fs::remove_all(d);
}

TEST(WriteFileAtomically, MissingFolderIsAnIoError) {
  fs::path d = fresh_dir("solar_atomic_missing");
  try {
    write_file_atomically((d / "nope" / "out.json").string(), "x");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::Io);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("does not exist"));
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 0);
  fs::remove_all(d);
}

TEST(WriteFileAtomically, AFolderAsTargetIsAnIoError) {
  fs::path d = fresh_dir("solar_atomic_folder");
  fs::create_directories(d / "sub");
  try {
    write_file_atomically((d / "sub").string(), "x");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::Io);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("folder"));
  }
  EXPECT_TRUE(fs::is_directory(d / "sub"));
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 1);
  fs::remove_all(d);
}

}  // namespace
}  // namespace solar::cli
