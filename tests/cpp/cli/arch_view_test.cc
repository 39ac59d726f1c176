#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "solar/cli/cli.h"
#include "solar/hw/device.h"

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

}  // namespace
}  // namespace solar::cli
