#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "solar/cli/cli.h"
#include "solar/hw/device.h"
#include "solar/hw/system.h"

namespace solar::cli {
namespace {

using ::testing::HasSubstr;

// A small described device, so that the expected strings follow from the numbers here.
hw::Device toy() {
  hw::Device d;
  d.id = "TOY";
  d.name = "Toy accelerator";
  d.vendor = "Acme";
  d.kind = "gpu";
  d.num_sms = 4;
  d.num_sms_source = hw::Sourced{4, "spec", "V", ""};
  hw::ComputeUnit tc{hw::UnitKind::Tensor, "tensor_core", {}, hw::Sourced{1500, "spec", "V", ""}};
  tc.peak[ir::DType::BF16] = hw::Sourced{2.5e14, "spec", "V", ""};
  tc.peak[ir::DType::I8] = hw::Sourced{5e14, "spec", "D", "2x bf16"};
  tc.sparse_2_4_peak[ir::DType::BF16] = hw::Sourced{5e14, "spec", "V", "with sparsity"};
  d.units.push_back(tc);
  d.memory.push_back({hw::MemoryLevel::Dram, hw::Sourced{16e9, "spec", "V", ""},
                      hw::Sourced{1e12, "spec", "E", "guess"}});
  d.sources["spec"] = "https://example.com/toy";
  d.file = "test";
  return d;
}

TEST(DeviceToJson, EveryNumberHasUnitSourceAndFlag) {
  nlohmann::json j = device_to_json(toy());
  EXPECT_EQ(j["schema"], "solar.device.v1");
  const auto& bf16 = j["units"][0]["peak"]["bf16"];
  EXPECT_EQ(bf16["value"], 2.5e14);
  EXPECT_EQ(bf16["unit"], "FLOP/s");
  EXPECT_EQ(bf16["source"], "spec");
  EXPECT_EQ(bf16["flag"], "V");
  EXPECT_EQ(j["units"][0]["peak"]["i8"]["unit"], "OP/s");  // integer units count operations
  EXPECT_EQ(j["units"][0]["peak"]["i8"]["note"], "2x bf16");
  EXPECT_EQ(j["units"][0]["clock_mhz"]["value"], 1500);
  // 2:4 sparse peaks apart from the dense ones, sourced like them.
  const auto& sparse = j["units"][0]["sparse_2_4_peak"];
  EXPECT_EQ(sparse.size(), 1u);
  EXPECT_EQ(sparse["bf16"]["value"], 5e14);
  EXPECT_EQ(sparse["bf16"]["unit"], "FLOP/s");
  EXPECT_EQ(sparse["bf16"]["note"], "with sparsity");
  EXPECT_EQ(j["memory"][0]["bandwidth"]["unit"], "bytes/s");
  EXPECT_EQ(j["memory"][0]["bandwidth"]["flag"], "E");
  EXPECT_EQ(j["num_sms"]["value"], 4);
  EXPECT_EQ(j["sources"]["spec"], "https://example.com/toy");
}

TEST(DeviceText, ShowsValuesWithPrefixesFlagsAndSources) {
  std::string t = device_text(toy());
  EXPECT_THAT(t, HasSubstr("250 TFLOP/s"));  // 2.5e14 FLOP/s
  EXPECT_THAT(t, HasSubstr("500 TOP/s"));    // 5e14 int8 OP/s
  EXPECT_THAT(t, HasSubstr("1.5 GHz"));      // 1500 MHz
  EXPECT_THAT(t, HasSubstr("1 TB/s"));       // 1e12 bytes/s
  EXPECT_THAT(t, HasSubstr("16 GB"));        // 16e9 bytes
  EXPECT_THAT(t, HasSubstr("[E] spec (guess)"));
  EXPECT_THAT(t, HasSubstr("2:4 structured-sparse peaks"));
  EXPECT_THAT(t, HasSubstr("[V] spec (with sparsity)"));  // bf16 2:4: 500 TFLOP/s
  EXPECT_THAT(t, HasSubstr("spec: https://example.com/toy"));
}

// ---- systems -------------------------------------------------------------------------------

hw::System toy_system() {
  hw::System s;
  s.id = "TOY_8";
  s.name = "Toy box";
  s.device = "TOY";
  s.nodes = 2;
  s.scale_up.devices = 8;
  s.scale_up.link.fabric = "ToyLink";
  s.scale_up.link.topology = hw::Topology::Switched;
  s.scale_up.link.bandwidth = hw::Sourced{450e9, "spec", "D", "900 / 2"};
  s.scale_up.link.reduction =
      hw::InNetworkReduction{"Toy SHARP", "spec", "V", "", hw::Sourced{5, "spec", "V", ""}};
  s.scale_up.link.latency = hw::Sourced{0.5e-6, "spec", "E", "a guess"};
  s.scale_out = hw::ScaleOutLink{"one NIC", hw::Sourced{50e9, "spec", "V", ""}, std::nullopt,
                                 std::nullopt};
  s.sources["spec"] = "https://example.com/toy";
  s.notes = "A toy.";
  s.file = "test";
  return s;
}

TEST(SystemToJson, EveryRateWithUnitSourceAndFlag) {
  nlohmann::json j = system_to_json(toy_system());
  EXPECT_EQ(j["schema"], "solar.system.v1");
  EXPECT_EQ(j["id"], "TOY_8");
  EXPECT_EQ(j["device"], "TOY");
  EXPECT_EQ(j["nodes"], 2);
  EXPECT_EQ(j["devices"], 16);  // 2 nodes x 8
  const auto& up = j["scale_up"];
  EXPECT_EQ(up["topology"], "switched");
  EXPECT_EQ(up["devices"], 8);
  EXPECT_EQ(up["bandwidth"]["value"], 450e9);
  EXPECT_EQ(up["bandwidth"]["unit"], "bytes/s");
  EXPECT_EQ(up["bandwidth"]["flag"], "D");
  EXPECT_EQ(up["bandwidth"]["note"], "900 / 2");
  EXPECT_EQ(up["in_network_reduction"]["name"], "Toy SHARP");
  EXPECT_EQ(up["in_network_reduction"]["from_devices"]["value"], 5);
  EXPECT_EQ(up["latency"]["unit"], "s");
  EXPECT_EQ(j["scale_out"]["bandwidth"]["value"], 50e9);
  EXPECT_EQ(j["sources"]["spec"], "https://example.com/toy");
}

TEST(SystemText, ShowsDomainsRatesAndSources) {
  std::string t = system_text(toy_system());
  EXPECT_THAT(t, HasSubstr("TOY_8: Toy box"));
  EXPECT_THAT(t, HasSubstr("2 nodes x 8 TOY = 16 devices"));
  EXPECT_THAT(t, HasSubstr("scale-up domain: 8 switched, ToyLink"));
  EXPECT_THAT(t, HasSubstr("450 GB/s"));
  EXPECT_THAT(t, HasSubstr("[D] spec (900 / 2)"));
  EXPECT_THAT(t, HasSubstr("Toy SHARP [V] spec"));
  EXPECT_THAT(t, HasSubstr("0.5 us"));  // the latency in microseconds
  EXPECT_THAT(t, HasSubstr("scale-out: one NIC"));
  EXPECT_THAT(t, HasSubstr("spec: https://example.com/toy"));
}

TEST(DeviceInterconnect, ShownWithTheDevice) {
  hw::Device d = toy();
  hw::DeviceScaleUp up;
  up.link.fabric = "ToyLink";
  up.link.bandwidth = hw::Sourced{300e9, "spec", "V", ""};
  up.max_devices = hw::Sourced{8, "spec", "V", ""};
  d.interconnect = hw::Interconnect{up, std::nullopt};
  EXPECT_EQ(device_to_json(d)["interconnect"]["scale_up"]["bandwidth"]["value"], 300e9);
  EXPECT_EQ(device_to_json(d)["interconnect"]["scale_up"]["max_devices"]["value"], 8);
  EXPECT_TRUE(device_to_json(toy())["interconnect"].is_null());
  std::string t = device_text(d);
  EXPECT_THAT(t, HasSubstr("interconnect (bandwidths per device, per direction)"));
  EXPECT_THAT(t, HasSubstr("scale-up, switched: ToyLink"));
  EXPECT_THAT(t, HasSubstr("300 GB/s"));
  EXPECT_THAT(t, HasSubstr("not published"));  // no latency
}

TEST(SystemListTable, OneRowPerBuiltinSystem) {
  std::string t = system_list_table(hw::SystemDb::builtin());
  for (const char* id : {"DGX_A100", "DGX_H100", "HGX_H200", "DGX_B200", "GB200_NVL72", "MI300X_8",
                         "TPU_v5p_4x4x4", "TPU_v5e_16x16"})
    EXPECT_THAT(t, HasSubstr(id));
  EXPECT_THAT(t, HasSubstr("SCALE-UP/DEV/DIR"));
  EXPECT_THAT(t, HasSubstr("8x H100_SXM"));
  EXPECT_THAT(t, HasSubstr("448 GB/s (64/peer)"));  // MI300X: 7 x 64
  EXPECT_THAT(t, HasSubstr("4x4x4 torus"));
  EXPECT_THAT(t, HasSubstr("600 GB/s (100/link)"));
  EXPECT_THAT(t, HasSubstr("NVLink SHARP (NVSwitch gen3), from 5"));
}

struct CliRun {
  int code;
  std::string out, err;
};

CliRun solar(std::vector<std::string> args) {
  args.insert(args.begin(), "solar");
  std::ostringstream out, err;
  int code = run(args, out, err);
  return {code, out.str(), err.str()};
}

TEST(ArchCommands, ListShowsDevicesThenSystems) {
  CliRun r = solar({"arch", "list"});
  ASSERT_EQ(r.code, kOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("DRAM BW"));  // the device table, as before
  EXPECT_LT(r.out.find("DRAM BW"), r.out.find("SCALE-UP/DEV/DIR"));
  EXPECT_THAT(r.out, HasSubstr("GB200_NVL72"));
}

TEST(ArchCommands, ShowASystemByIdOrInlineForm) {
  CliRun r = solar({"arch", "show", "dgx_h100"});
  ASSERT_EQ(r.code, kOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("DGX_H100: NVIDIA DGX H100"));
  EXPECT_THAT(r.out, HasSubstr("NVLink SHARP"));
  CliRun j = solar({"arch", "show", "MI300X_8", "--json"});
  ASSERT_EQ(j.code, kOk) << j.err;
  nlohmann::json s = nlohmann::json::parse(j.out);
  EXPECT_EQ(s["schema"], "solar.system.v1");
  EXPECT_EQ(s["scale_up"]["topology"], "mesh");
  EXPECT_EQ(s["scale_up"]["peer_bandwidth"]["value"], 64e9);
  CliRun inl = solar({"arch", "show", "4x4x4xTPU_v5p", "--json"});
  ASSERT_EQ(inl.code, kOk) << inl.err;
  EXPECT_EQ(nlohmann::json::parse(inl.out)["scale_up"]["torus"]["dims"], nlohmann::json({4, 4, 4}));
  // A device still shows as a device, now with its interconnect.
  CliRun d = solar({"arch", "show", "H100_SXM", "--json"});
  ASSERT_EQ(d.code, kOk) << d.err;
  EXPECT_EQ(nlohmann::json::parse(d.out)["interconnect"]["scale_up"]["bandwidth"]["value"], 450e9);
}

TEST(ArchCommands, UnknownIdNamesDevicesAndSystems) {
  CliRun r = solar({"arch", "show", "Z9000"});
  EXPECT_EQ(r.code, kUnknownDevice);
  EXPECT_THAT(r.err, HasSubstr("known systems: DGX_A100"));
  CliRun bad = solar({"arch", "show", "8xV100_SXM2_32GB"});
  EXPECT_EQ(bad.code, kUsage);
  EXPECT_THAT(bad.err, HasSubstr("no interconnect.scale_up"));
}

}  // namespace
}  // namespace solar::cli
