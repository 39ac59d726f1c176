#include "solar/interop/export.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "solar/ir/text.h"

namespace solar::interop {
namespace {

namespace fs = std::filesystem;

ir::Graph mlp() {
  return ir::parse_graph(R"(
    graph mlp
    x = bf16[16,32] input
    w1 = bf16[32,64] weight
    w2 = bf16[64,32] weight
    h = f32[16,64] einsum "md,df->mf" (x, w1)
    a = bf16[16,64] einsum [m=16,f=64] none mul($0,sigmoid($0)) (h[m,f]) -> [m,f]
    y = f32[16,32]{output} einsum "mf,fd->md" (a, w2))");
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("solar_export_test_" + name + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

TEST(ExportManifest, CountsEveryEinsumAndTheTotals) {
  std::vector<ExportFile> files = export_graph(mlp(), Format::AccelForge);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].path, "workload.yaml");
  EXPECT_EQ(files[1].path, "solar-export.json");
  nlohmann::json m = nlohmann::json::parse(files[1].contents);
  EXPECT_EQ(m["schema"], "solar.export.v1");
  EXPECT_EQ(m["totals"]["macs"], 16 * 64 * 32 + 16 * 32 * 64);  // the two matmuls
  EXPECT_EQ(m["totals"]["operations"], 16 * 64 * 32 + 16 * 64 + 16 * 32 * 64);  // + the SiLU
  ASSERT_EQ(m["einsums"].size(), 3u);
  EXPECT_EQ(m["einsums"][1]["class"], "none");
  EXPECT_EQ(m["einsums"][1]["macs"], 0);
  EXPECT_EQ(m["einsums"][1]["combine"], "mul($0,sigmoid($0))");
  // h: written by the first einsum, read by the second (the producer/consumer link).
  EXPECT_EQ(m["einsums"][0]["accesses"][2]["tensor"], "h");
  EXPECT_EQ(m["einsums"][1]["accesses"][0]["tensor"], "h");
  EXPECT_EQ(m["einsums"][0]["accesses"][0]["footprint"], 16 * 32);
  EXPECT_EQ(m["tensors"][0]["bits"], 16);
}

TEST(WriteExport, WritesEveryFileAndCreatesTheFolder) {
  fs::path d = fresh_dir("write");
  std::vector<ExportFile> files = export_graph(mlp(), Format::Timeloop);
  write_export(d.string(), files);
  for (const ExportFile& f : files) EXPECT_EQ(read(d / f.path), f.contents) << f.path;
  EXPECT_TRUE(fs::exists(d / "problems" / "h.yaml"));
  // No temporary file is left beside them.
  for (const auto& entry : fs::recursive_directory_iterator(d))
    EXPECT_FALSE(entry.path().filename().string().starts_with(".")) << entry.path();
  fs::remove_all(d);
}

TEST(WriteExport, AFailureLeavesTheEarlierExportWhole) {
  fs::path d = fresh_dir("fail");
  const std::string manifest = R"({"schema": "solar.export.v1", "files": ["workload.yaml"]})";
  write_export(d.string(), {{"workload.yaml", "old\n"}, {"solar-export.json", manifest}});
  // The second file cannot be written (its path is a folder): nothing is replaced.
  fs::create_directories(d / "taken.json");
  try {
    write_export(d.string(), {{"workload.yaml", "new\n"}, {"taken.json", "x"}});
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::Io);
    EXPECT_NE(std::string(e.what()).find("taken.json': it is not a file of the earlier export"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read(d / "workload.yaml"), "old\n");
  int entries = 0;
  for (const auto& entry : fs::directory_iterator(d)) entries += !entry.path().empty();
  EXPECT_EQ(entries, 3);  // workload.yaml, the manifest and the folder: no temporary left
  fs::remove_all(d);
}

TEST(WriteExport, AReExportRemovesTheEarlierFilesItNoLongerWritesAndNothingElse) {
  fs::path d = fresh_dir("again");
  write_export(d.string(), export_graph(mlp(), Format::Timeloop));
  std::ofstream(d / "notes.txt") << "mine\n";
  std::vector<std::string> removed =
      write_export(d.string(), export_graph(mlp(), Format::AccelForge));
  // The three einsums' classic problems (h, a, y) are removed, then their emptied folder.
  EXPECT_EQ(removed, (std::vector<std::string>{"problems/h.yaml", "problems/a.yaml",
                                               "problems/y.yaml"}));
  EXPECT_FALSE(fs::exists(d / "problems"));
  EXPECT_EQ(read(d / "notes.txt"), "mine\n");
  EXPECT_EQ(nlohmann::json::parse(read(d / "solar-export.json"))["format"], "accelforge");
  fs::remove_all(d);
}

TEST(WriteExport, AFailedExportRemovesTheFolderItCreated) {
  fs::path d = fresh_dir("created");
  try {
    write_export(d.string(), {{"a/b.yaml", "x"}, {"a", "y"}});  // `a` is a folder by then
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::Io);
  }
  EXPECT_FALSE(fs::exists(d));
}

TEST(WriteExport, AMissingParentFolderIsAnIoError) {
  try {
    write_export("/nonexistent_solar_dir/out", {{"a", "b"}});
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::Io);
    EXPECT_NE(std::string(e.what()).find("folder '/nonexistent_solar_dir' does not exist"),
              std::string::npos);
  }
}

TEST(ExportFormat, ParsesItsTwoNames) {
  EXPECT_EQ(parse_format("accelforge"), Format::AccelForge);
  EXPECT_EQ(parse_format("timeloop"), Format::Timeloop);
  EXPECT_EQ(parse_format("maestro"), std::nullopt);
  EXPECT_EQ(format_name(Format::Timeloop), "timeloop");
}

}  // namespace
}  // namespace solar::interop
