// DeviceDb: built-ins, SOLAR_ARCH_PATH folders, case-insensitive lookup and its errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "solar/hw/database.h"
#include "solar/util/errors.h"

namespace solar::hw {
namespace {

namespace fs = std::filesystem;
using ir::DType;

// A device file with one bf16 tensor rate of `tflops`.
std::string toy_yaml(const std::string& id, double tflops) {
  return "schema: solar.device.v1\n"
         "id: " + id + "\n"
         "name: Toy " + id + "\n"
         "vendor: Test\n"
         "kind: gpu\n"
         "sms: {value: 2, source: s, flag: V}\n"
         "sources: {s: \"test fixture\"}\n"
         "units:\n"
         "  - name: tc\n"
         "    kind: tensor\n"
         "    peak: {bf16: {tflops: " + std::to_string(tflops) + ", source: s, flag: V}}\n"
         "memory:\n"
         "  - name: dram\n"
         "    bandwidth: {gb_per_s: 100, source: s, flag: V}\n";
}

// A fresh temporary folder, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("solar_hw_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  fs::path write(const std::string& name, const std::string& text) const {
    fs::path p = path_ / name;
    std::ofstream(p) << text;
    return p;
  }

 private:
  fs::path path_;
};

// Sets SOLAR_ARCH_PATH for one test and restores the previous value.
class ArchPath {
 public:
  explicit ArchPath(const std::string& value) {
    if (const char* old = std::getenv("SOLAR_ARCH_PATH")) old_ = old;
    setenv("SOLAR_ARCH_PATH", value.c_str(), 1);
  }
  ~ArchPath() {
    if (old_) setenv("SOLAR_ARCH_PATH", old_->c_str(), 1);
    else unsetenv("SOLAR_ARCH_PATH");
  }

 private:
  std::optional<std::string> old_;
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

TEST(DeviceDb, ListsEveryBuiltinSortedThenHost) {
  DeviceDb db = DeviceDb::load({});
  std::vector<std::string> ids = db.ids();
  ASSERT_EQ(ids.size(), builtin_arch_files().size() + 1);  // + host
  EXPECT_EQ(ids.back(), "host");
  EXPECT_EQ(ids.front(), "A100_PCIe_40GB");
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end() - 1, [](const auto& a, const auto& b) {
    return lower(a) < lower(b);
  }));
  EXPECT_NE(std::find(ids.begin(), ids.end(), "TPU_v5p"), ids.end());
  EXPECT_EQ(ids[ids.size() - 2], "V100_SXM2_32GB");  // last built-in before host
}

TEST(DeviceDb, LookupIsCaseInsensitive) {
  DeviceDb db = DeviceDb::load({});
  EXPECT_EQ(db.get("h100_sxm").id, "H100_SXM");
  EXPECT_EQ(db.get("TPU_V5E").id, "TPU_v5e");
  EXPECT_EQ(db.get("mi300x").file, "builtin:arch/MI300X.yaml");
}

TEST(DeviceDb, UnknownIdListsTheKnownDevices) {
  DeviceDb db = DeviceDb::load({});
  try {
    db.get("h1000");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::UnknownDevice);
    EXPECT_NE(std::string(e.what()).find(
                  "unknown device 'h1000'; known devices: A100_PCIe_40GB, A100_SXM_40GB, "
                  "A100_SXM_80GB, A10G, A6000, B200, Gaudi3, GB200, GH200_144GB, GH200_96GB, "
                  "H100_PCIe, H100_SXM, H200, Jetson_Orin"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("TPU_v5p, V100_SXM2_32GB, host"), std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find("did you mean"), std::string::npos) << e.what();
  }
}

std::string unknown_message(const DeviceDb& db, const std::string& id) {
  try {
    db.get(id);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(DeviceDb, SuggestsTheObviousId) {
  DeviceDb db = DeviceDb::load({});
  EXPECT_NE(unknown_message(db, "mi300").find("did you mean MI300X?"), std::string::npos);
  EXPECT_NE(unknown_message(db, "h100").find("did you mean H100_PCIe or H100_SXM?"),
            std::string::npos);
  EXPECT_NE(unknown_message(db, "h100-sxm5").find("did you mean H100_SXM?"), std::string::npos);
  EXPECT_NE(unknown_message(db, "rtx-4080").find("did you mean RTX4090?"), std::string::npos);
  // Prefixes name every variant: the GH200 memory variants, the three A100s.
  EXPECT_NE(unknown_message(db, "gh200").find("did you mean GH200_144GB or GH200_96GB?"),
            std::string::npos);
  EXPECT_NE(unknown_message(db, "a100").find(
                "did you mean A100_PCIe_40GB, A100_SXM_40GB or A100_SXM_80GB?"),
            std::string::npos);
  EXPECT_EQ(unknown_message(db, "quantum").find("did you mean"), std::string::npos);
}

TEST(DeviceDb, ArchPathAddsADevice) {
  TempDir dir;
  fs::path file = dir.write("my_chip.yaml", toy_yaml("My_Chip", 3));
  dir.write("README.md", "not a device file");  // only *.yaml is read
  ArchPath env(dir.path().string());
  DeviceDb db = DeviceDb::load_default();
  const Device& d = db.get("my_chip");
  EXPECT_EQ(d.id, "My_Chip");
  EXPECT_EQ(d.file, file.string());
  EXPECT_DOUBLE_EQ(*d.peak(UnitKind::Tensor, DType::BF16), 3e12);
  EXPECT_EQ(db.ids().size(), builtin_arch_files().size() + 2);  // + My_Chip + host
}

TEST(DeviceDb, ArchPathOverridesABuiltin) {
  TempDir dir;
  dir.write("override.yaml", toy_yaml("h100_sxm", 1));
  // Empty entries (leading, doubled or trailing ':') are skipped.
  ArchPath env(":" + dir.path().string() + "::");
  DeviceDb db = DeviceDb::load_default();
  const Device& d = db.get("H100_SXM");
  EXPECT_DOUBLE_EQ(*d.peak(UnitKind::Tensor, DType::BF16), 1e12);  // the user's, not 989.4e12
  EXPECT_EQ(db.ids().size(), builtin_arch_files().size() + 1);      // replaced, not added
}

TEST(DeviceDb, ArchPathFolderThatDoesNotExist) {
  TempDir dir;
  std::string missing = (dir.path() / "nope").string();
  ArchPath env(dir.path().string() + ":" + missing);
  try {
    DeviceDb::load_default();
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::Io);
    EXPECT_NE(std::string(e.what()).find("'" + missing + "' does not exist"), std::string::npos)
        << e.what();
  }
}

TEST(DeviceDb, TwoUserFilesWithOneIdAreAnError) {
  TempDir dir;
  dir.write("a.yaml", toy_yaml("Twin", 1));
  fs::path second = dir.write("b.yaml", toy_yaml("TWIN", 2));
  try {
    DeviceDb::load({dir.path().string()});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::Parse);
    EXPECT_NE(std::string(e.what()).find("duplicate device id 'TWIN'"), std::string::npos);
    EXPECT_EQ(e.origin().file, second.string());
    EXPECT_EQ(e.origin().line, 2);  // the `id:` line
  }
}

TEST(DeviceDb, ABadUserFileNamesItsPath) {
  TempDir dir;
  fs::path bad = dir.write("bad.yaml", "schema: solar.device.v1\nid: X\nsms: 3\n");
  try {
    DeviceDb::load({dir.path().string()});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::Parse);
    EXPECT_EQ(e.origin().file, bad.string());
    EXPECT_NE(std::string(e.what()).find(bad.string() + ":"), std::string::npos) << e.what();
  }
}

TEST(DeviceDb, AddReplacesCaseInsensitively) {
  DeviceDb db = DeviceDb::load({});
  size_t n = db.ids().size();
  db.add(parse_device_yaml(toy_yaml("a6000", 7), "mine.yaml"));
  EXPECT_EQ(db.ids().size(), n);
  EXPECT_EQ(db.get("A6000").file, "mine.yaml");
}

TEST(DeviceDb, HostIsDetectedOnFirstGet) {
  DeviceDb db = DeviceDb::load({});
  const Device& h = db.get("HOST");
  EXPECT_EQ(h.id, "host");
  EXPECT_EQ(h.kind, "cpu");
  EXPECT_EQ(&db.get("host"), &h);  // detected once
}

}  // namespace
}  // namespace solar::hw
