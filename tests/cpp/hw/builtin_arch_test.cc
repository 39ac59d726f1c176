// The built-in arch/*.yaml files: they load, and reproduce the dense datasheet numbers of the
// hardware reference (docs/devices.md sections 1-3), never a sparse figure as a
// dense peak; 2:4-sparse figures only as sparse_2_4_peak, 2x dense.
#include <gtest/gtest.h>

#include <iterator>
#include <string>
#include <utility>

#include "solar/hw/database.h"

namespace solar::hw {
namespace {

using ir::DType;

constexpr double kT = 1e12;  // TFLOP/s, TOPS, TB/s
constexpr double kG = 1e9;   // GB/s

const DeviceDb& builtins() {
  static const DeviceDb db = DeviceDb::load({});  // no SOLAR_ARCH_PATH: built-ins only
  return db;
}

// |actual / expected - 1| <= tol.
::testing::AssertionResult near_rel(double actual, double expected, double tol) {
  if (expected > 0 && std::abs(actual / expected - 1) <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << actual << " is not within " << tol * 100 << "% of "
                                       << expected;
}

TEST(BuiltinArch, EveryFileLoadsAndIsNamedAfterItsId) {
  ASSERT_EQ(builtin_arch_files().size(), 25u);
  for (const auto& [name, text] : builtin_arch_files()) {
    SCOPED_TRACE(std::string(name));
    Device d = parse_device_yaml(text, name);
    EXPECT_EQ(std::string(name), d.id + ".yaml");
    EXPECT_FALSE(d.units.empty());
    EXPECT_GT(d.dram().bandwidth->value, 0);
    EXPECT_FALSE(d.notes.empty());
  }
}

TEST(BuiltinArch, EveryNumberNamesAKnownSourceAndAFlag) {
  auto check = [](const Device& d, const Sourced& s, const std::string& what) {
    SCOPED_TRACE(d.id + " " + what);
    EXPECT_TRUE(d.sources.count(s.source)) << s.source;
    EXPECT_TRUE(s.flag == "V" || s.flag == "V-rev" || s.flag == "D" || s.flag == "E") << s.flag;
    if (s.flag == "D") {
      EXPECT_FALSE(s.note.empty());
    }
    EXPECT_GT(s.value, 0);
  };
  for (const std::string& id : builtins().ids()) {
    if (id == "host") continue;
    const Device& d = builtins().get(id);
    ASSERT_TRUE(d.num_sms_source.has_value());
    check(d, *d.num_sms_source, "sms");
    for (const ComputeUnit& u : d.units) {
      if (u.clock_mhz) check(d, *u.clock_mhz, u.name + ".clock_mhz");
      for (const auto& [dt, p] : u.peak)
        check(d, p, u.name + "." + std::string(ir::dtype_name(dt)));
      for (const auto& [dt, p] : u.sparse_2_4_peak)
        check(d, p, u.name + ".sparse_2_4." + std::string(ir::dtype_name(dt)));
    }
    for (const MemorySpec& m : d.memory) {
      if (m.capacity) check(d, *m.capacity, std::string(m.name()) + ".capacity");
      if (m.bandwidth) check(d, *m.bandwidth, std::string(m.name()) + ".bandwidth");
    }
  }
}

// H100 SXM5 in full: the brief's datasheet numbers.
TEST(BuiltinArch, H100SxmDatasheet) {
  const Device& d = builtins().get("H100_SXM");
  EXPECT_EQ(d.num_sms, 132);
  EXPECT_TRUE(near_rel(*d.peak(UnitKind::Tensor, DType::BF16), 989.4 * kT, 1e-3));
  EXPECT_TRUE(near_rel(*d.peak(UnitKind::Tensor, DType::F16), 989.4 * kT, 1e-3));
  EXPECT_TRUE(near_rel(*d.peak(UnitKind::Tensor, DType::TF32), 494.7 * kT, 1e-3));
  EXPECT_TRUE(near_rel(*d.peak(UnitKind::Tensor, DType::F8E4M3), 1978.9 * kT, 1e-3));
  EXPECT_TRUE(near_rel(*d.peak(UnitKind::Tensor, DType::I8), 1978.9 * kT, 1e-3));
  EXPECT_TRUE(near_rel(*d.peak(UnitKind::Tensor, DType::F64), 66.9 * kT, 1e-3));
  EXPECT_TRUE(near_rel(*d.peak(UnitKind::Vector, DType::F32), 66.9 * kT, 1e-3));
  EXPECT_TRUE(near_rel(*d.peak(UnitKind::Vector, DType::F64), 33.5 * kT, 1e-3));
  EXPECT_TRUE(near_rel(*d.peak(UnitKind::Special, DType::F32), 4.18 * kT, 1e-3));
  EXPECT_TRUE(near_rel(d.dram().bandwidth->value, 3.35 * kT, 1e-3));
  EXPECT_TRUE(near_rel(d.dram().capacity->value, 80 * kG, 1e-3));
  EXPECT_TRUE(near_rel(d.memory_level(MemoryLevel::L2)->capacity->value, 50e6, 1e-3));
  EXPECT_EQ(d.memory_level(MemoryLevel::Smem)->capacity->value, 132.0 * 228 * 1024);  // SMs x 228 KiB
  EXPECT_EQ(d.memory_level(MemoryLevel::Rf)->capacity->value, 132.0 * 65536 * 4);     // SMs x 64K x 32-bit
  // Tensor peaks at the 1830 MHz tensor clock, vector at 1980 MHz (the clocks NVIDIA quotes
  // each peak at; docs/devices.md, "Conventions").
  EXPECT_EQ(d.unit(UnitKind::Tensor, DType::BF16)->clock_mhz->value, 1830);
  EXPECT_EQ(d.unit(UnitKind::Vector, DType::F32)->clock_mhz->value, 1980);
}

TEST(BuiltinArch, H100PcieDatasheet) {
  const Device& d = builtins().get("H100_PCIe");
  EXPECT_TRUE(near_rel(*d.peak(UnitKind::Tensor, DType::BF16), 756 * kT, 1e-3));  // 756.45 also ok
  EXPECT_TRUE(near_rel(*d.peak(UnitKind::Tensor, DType::BF16), 756.45 * kT, 1e-3));
  EXPECT_TRUE(near_rel(*d.peak(UnitKind::Tensor, DType::TF32), 378 * kT, 1e-3));
  EXPECT_TRUE(near_rel(*d.peak(UnitKind::Vector, DType::F32), 51.2 * kT, 1e-3));
  EXPECT_TRUE(near_rel(d.dram().bandwidth->value, 2.0 * kT, 1e-3));
}

// Each device's dense bf16 tensor peak (fp16 on T4 and V100, which have no bf16 tensor path) and
// DRAM bandwidth, as the vendors' datasheets give them (the sources each device file cites,
// docs/devices.md).
struct Datasheet {
  const char* id;
  double bf16_tflops;
  double dram_bytes_per_s;
  DType dtype = DType::BF16;
};
class DeviceDatasheet : public ::testing::TestWithParam<Datasheet> {};

TEST_P(DeviceDatasheet, DenseTensorPeakAndDramBandwidth) {
  const Datasheet& p = GetParam();
  const Device& d = builtins().get(p.id);
  ASSERT_TRUE(d.peak(UnitKind::Tensor, p.dtype).has_value());
  EXPECT_TRUE(near_rel(*d.peak(UnitKind::Tensor, p.dtype), p.bf16_tflops * kT, 1e-3));
  EXPECT_TRUE(near_rel(d.dram().bandwidth->value, p.dram_bytes_per_s, 1e-3));
}

INSTANTIATE_TEST_SUITE_P(
    HardwareReference, DeviceDatasheet,
    ::testing::Values(Datasheet{"H100_SXM", 989.4, 3.35 * kT},
                      Datasheet{"H100_PCIe", 756, 2.0 * kT},
                      Datasheet{"H200", 989.4, 4.8 * kT},
                      Datasheet{"B200", 2250, 8.0 * kT},  // DGX B200; HGX page revised to 7.7
                      Datasheet{"GB200", 2500, 8 * kT},
                      Datasheet{"A100_SXM_80GB", 312, 2039 * kG},
                      Datasheet{"A6000", 154.8, 768 * kG},
                      Datasheet{"L40S", 362.05, 864 * kG},
                      Datasheet{"RTX4090", 165.2, 1008 * kG},  // FP32 accumulate
                      Datasheet{"Jetson_Thor", 258.5, 273 * kG},
                      Datasheet{"Jetson_Orin", 42.6, 204.8 * kG},
                      Datasheet{"MI300X", 1307.4, 5.3 * kT},
                      Datasheet{"TPU_v5e", 197, 819 * kG},
                      Datasheet{"TPU_v5p", 459, 2765 * kG},
                      Datasheet{"L4", 121, 300 * kG},
                      Datasheet{"T4", 65, 320 * kG, DType::F16},  // Turing: no bf16 tensor path
                      Datasheet{"A10G", 70.0, 600 * kG},          // estimate (flag E), see the file
                      Datasheet{"A100_PCIe_40GB", 312, 1555 * kG},
                      Datasheet{"A100_SXM_40GB", 312, 1555 * kG},
                      Datasheet{"V100_SXM2_32GB", 125, 900 * kG, DType::F16},  // Volta: fp16 only
                      Datasheet{"GH200_96GB", 989.4, 4.0 * kT},
                      Datasheet{"GH200_144GB", 989.4, 5.0 * kT},  // announcement; 4.8-4.9 elsewhere
                      Datasheet{"RTX6000_Ada", 364.2, 960 * kG},
                      Datasheet{"MI250X", 383, 3.2 * kT},  // both GCDs
                      Datasheet{"Gaudi3", 1835, 3.7 * kT}),
    [](const auto& info) { return std::string(info.param.id); });

// SMs x MAC/clk/SM x 2 x clock reproduces the stored peak (0.5%), with the per-SM rates of
// the architecture white papers, at the clock the vendor quotes for that pipe.
struct PerSm {
  const char* id;
  UnitKind kind;
  DType dtype;
  double mac_per_clk_per_sm;
  double clock_mhz;  // section 3's "clock that reproduces the vendor peak"
};
class PerSmCrossCheck : public ::testing::TestWithParam<PerSm> {};

TEST_P(PerSmCrossCheck, SmsTimesRateTimesClockIsThePeak) {
  const PerSm& p = GetParam();
  const Device& d = builtins().get(p.id);
  std::optional<double> peak = d.peak(p.kind, p.dtype);
  ASSERT_TRUE(peak.has_value());
  double expected = d.num_sms * p.mac_per_clk_per_sm * 2 * p.clock_mhz * 1e6;  // 1 MAC = 2 FLOP
  EXPECT_TRUE(near_rel(*peak, expected, 5e-3));
  // The stored unit clock is the one section 3 names (L40S: 2520 stored, 2490 implied).
  const ComputeUnit* u = d.unit(p.kind, p.dtype);
  ASSERT_TRUE(u->clock_mhz.has_value());
  EXPECT_TRUE(near_rel(u->clock_mhz->value, p.clock_mhz, 1.5e-2));
}

constexpr UnitKind kTc = UnitKind::Tensor;
constexpr UnitKind kVec = UnitKind::Vector;
INSTANTIATE_TEST_SUITE_P(
    HardwareReference, PerSmCrossCheck,
    ::testing::Values(
        PerSm{"A100_SXM_80GB", kTc, DType::BF16, 1024, 1410},
        PerSm{"A100_SXM_80GB", kTc, DType::TF32, 512, 1410},
        PerSm{"A100_SXM_80GB", kTc, DType::I8, 2048, 1410},
        PerSm{"A100_SXM_80GB", kTc, DType::F64, 64, 1410},
        PerSm{"A100_SXM_80GB", kVec, DType::F32, 64, 1410},
        PerSm{"A6000", kTc, DType::BF16, 512, 1800},
        PerSm{"A6000", kTc, DType::TF32, 256, 1800},
        PerSm{"A6000", kTc, DType::I8, 1024, 1800},
        PerSm{"A6000", kVec, DType::F32, 128, 1800},
        PerSm{"L40S", kTc, DType::BF16, 512, 2490},  // NVIDIA's 362.05 implies ~2490 MHz
        PerSm{"L40S", kVec, DType::F32, 128, 2520},  // "FP32 peak uses 2520"
        PerSm{"RTX4090", kTc, DType::BF16, 256, 2520},  // FP32 accumulate
        PerSm{"RTX4090", kTc, DType::TF32, 128, 2520},
        PerSm{"RTX4090", kTc, DType::F8E4M3, 512, 2520},
        PerSm{"RTX4090", kTc, DType::I8, 1024, 2520},
        PerSm{"RTX4090", kVec, DType::F32, 128, 2520},
        PerSm{"H100_SXM", kTc, DType::BF16, 2048, 1830},
        PerSm{"H100_SXM", kTc, DType::TF32, 1024, 1830},
        PerSm{"H100_SXM", kTc, DType::F8E4M3, 4096, 1830},
        PerSm{"H100_SXM", kTc, DType::I8, 4096, 1830},
        PerSm{"H100_SXM", kTc, DType::F64, 128, 1980},  // FP64 TC at the vector clock
        PerSm{"H100_SXM", kVec, DType::F32, 128, 1980},
        PerSm{"H100_SXM", kVec, DType::F64, 64, 1980},
        PerSm{"H200", kTc, DType::BF16, 2048, 1830},
        PerSm{"H200", kVec, DType::F32, 128, 1980},
        PerSm{"H100_PCIe", kTc, DType::BF16, 2048, 1620},
        PerSm{"H100_PCIe", kTc, DType::F8E4M3, 4096, 1620},
        PerSm{"H100_PCIe", kTc, DType::F64, 128, 1755},
        PerSm{"H100_PCIe", kVec, DType::F32, 128, 1755},
        PerSm{"B200", kTc, DType::BF16, 4096, 1856},
        PerSm{"B200", kTc, DType::TF32, 2048, 1856},
        PerSm{"B200", kTc, DType::F8E4M3, 8192, 1856},
        PerSm{"B200", kTc, DType::I8, 8192, 1856},
        PerSm{"B200", kTc, DType::F4, 16384, 1856},
        PerSm{"GB200", kTc, DType::BF16, 4096, 2062},
        PerSm{"GB200", kTc, DType::TF32, 2048, 2062},
        PerSm{"GB200", kTc, DType::F8E4M3, 8192, 2062},
        PerSm{"GB200", kTc, DType::F4, 16384, 2062},
        PerSm{"Jetson_Thor", kTc, DType::BF16, 4096, 1575},
        PerSm{"Jetson_Thor", kTc, DType::F8E4M3, 8192, 1575},
        PerSm{"Jetson_Thor", kTc, DType::F4, 16384, 1575},
        PerSm{"Jetson_Orin", kTc, DType::BF16, 1024, 1300},
        PerSm{"Jetson_Orin", kTc, DType::I8, 2048, 1300},
        PerSm{"MI300X", kTc, DType::BF16, 1024, 2100},
        PerSm{"MI300X", kTc, DType::TF32, 512, 2100},
        PerSm{"MI300X", kTc, DType::F8E4M3, 2048, 2100},
        PerSm{"MI300X", kTc, DType::F64, 128, 2100},
        // Devices added after the reference: per-SM rates of their architectures (GA100 as
        // A100; GH100 as H100 SXM; professional AD10x as L40S; GeForce-class GA102 for A10G;
        // Turing 8 x 64 FMA tensor cores per SM; Volta likewise; CDNA2 per-CU rates from
        // ROCm's MI250 table; Gaudi 3 TPCs as the "SMs").
        PerSm{"L4", kTc, DType::BF16, 512, 2040},
        PerSm{"L4", kTc, DType::F8E4M3, 1024, 2040},
        PerSm{"L4", kTc, DType::I8, 1024, 2040},
        PerSm{"L4", kTc, DType::TF32, 256, 2020},  // NVIDIA's TF32 120 (sparse) implies ~2020 MHz
        PerSm{"L4", kVec, DType::F32, 128, 2040},
        PerSm{"T4", kTc, DType::F16, 512, 1590},
        PerSm{"T4", kTc, DType::I8, 1024, 1590},
        PerSm{"T4", kTc, DType::I4, 2048, 1590},
        PerSm{"T4", kVec, DType::F32, 64, 1582},  // the datasheet rounds 8.14 down to 8.1
        PerSm{"A10G", kTc, DType::BF16, 256, 1710},  // GeForce-class rate: the file's assumption
        PerSm{"A10G", kTc, DType::TF32, 128, 1710},
        PerSm{"A10G", kTc, DType::I8, 1024, 1710},
        PerSm{"A10G", kVec, DType::F32, 128, 1710},
        PerSm{"A100_PCIe_40GB", kTc, DType::BF16, 1024, 1410},
        PerSm{"A100_PCIe_40GB", kTc, DType::TF32, 512, 1410},
        PerSm{"A100_PCIe_40GB", kTc, DType::I8, 2048, 1410},
        PerSm{"A100_PCIe_40GB", kTc, DType::F64, 64, 1410},
        PerSm{"A100_PCIe_40GB", kVec, DType::F32, 64, 1410},
        PerSm{"A100_SXM_40GB", kTc, DType::BF16, 1024, 1410},
        PerSm{"A100_SXM_40GB", kTc, DType::TF32, 512, 1410},
        PerSm{"A100_SXM_40GB", kTc, DType::I8, 2048, 1410},
        PerSm{"A100_SXM_40GB", kTc, DType::F64, 64, 1410},
        PerSm{"A100_SXM_40GB", kVec, DType::F32, 64, 1410},
        PerSm{"V100_SXM2_32GB", kTc, DType::F16, 512, 1530},
        PerSm{"V100_SXM2_32GB", kVec, DType::F32, 64, 1530},
        PerSm{"V100_SXM2_32GB", kVec, DType::F64, 32, 1530},
        PerSm{"GH200_96GB", kTc, DType::BF16, 2048, 1830},
        PerSm{"GH200_96GB", kTc, DType::F8E4M3, 4096, 1830},
        PerSm{"GH200_96GB", kTc, DType::F64, 128, 1980},
        PerSm{"GH200_96GB", kVec, DType::F32, 128, 1980},
        PerSm{"GH200_144GB", kTc, DType::BF16, 2048, 1830},
        PerSm{"GH200_144GB", kTc, DType::F8E4M3, 4096, 1830},
        PerSm{"GH200_144GB", kTc, DType::F64, 128, 1980},
        PerSm{"GH200_144GB", kVec, DType::F32, 128, 1980},
        PerSm{"RTX6000_Ada", kTc, DType::BF16, 512, 2505},
        PerSm{"RTX6000_Ada", kTc, DType::TF32, 256, 2505},
        PerSm{"RTX6000_Ada", kTc, DType::F8E4M3, 1024, 2505},
        PerSm{"RTX6000_Ada", kTc, DType::I8, 1024, 2505},
        PerSm{"RTX6000_Ada", kVec, DType::F32, 128, 2505},
        PerSm{"MI250X", kTc, DType::BF16, 512, 1700},  // 1024 FLOP/clk/CU
        PerSm{"MI250X", kTc, DType::F64, 128, 1700},   // 256 FLOP/clk/CU
        PerSm{"MI250X", kTc, DType::I8, 512, 1700},
        PerSm{"MI250X", kVec, DType::F64, 64, 1700},
        PerSm{"MI250X", kVec, DType::F32, 128, 1700},  // packed FP32
        PerSm{"Gaudi3", kVec, DType::BF16, 128, 1750}),  // 64 TPCs x 2048-bit SIMD
    [](const auto& info) {
      return std::string(info.param.id) + "_" + std::string(unit_kind_name(info.param.kind)) +
             "_" + std::string(ir::dtype_name(info.param.dtype));
    });

// The special-function unit: 16 results/clk/SM (CUDA guide) at the stored clock; the stored
// values are rounded to 3 digits, hence 1%.
TEST(BuiltinArch, MufuIs16ResultsPerSmPerClock) {
  for (const char* id : {"H100_SXM", "H100_PCIe", "H200", "B200", "GB200", "A100_SXM_80GB",
                         "A6000", "L40S", "RTX4090", "Jetson_Thor", "Jetson_Orin", "L4", "T4",
                         "A10G", "A100_PCIe_40GB", "A100_SXM_40GB", "V100_SXM2_32GB",
                         "GH200_96GB", "GH200_144GB", "RTX6000_Ada"}) {
    SCOPED_TRACE(id);
    const Device& d = builtins().get(id);
    const ComputeUnit* u = d.unit(UnitKind::Special, DType::F32);
    ASSERT_NE(u, nullptr);
    EXPECT_TRUE(near_rel(u->peak.at(DType::F32).value,
                         d.num_sms * 16 * u->clock_mhz->value * 1e6, 1e-2));  // SMs x 16 x clock
  }
}

// No device stores a 2:4-sparse figure: every tensor rate is at most the dense value of the
// vendor's datasheet (listed below), and every stored tensor rate is listed here, so a new one
// must be checked against its datasheet to pass.
TEST(BuiltinArch, NoTensorPeakExceedsTheDenseReference) {
  struct Dense {
    const char* id;
    DType dtype;
    double tflops;
  };
  const Dense table[] = {
      {"B200", DType::TF32, 1125},  // "1,100 (1,125 exact)"
      {"B200", DType::BF16, 2250},        {"B200", DType::F16, 2250},
      {"B200", DType::F8E4M3, 4500},      {"B200", DType::F8E5M2, 4500},
      {"B200", DType::F6, 4500},          {"B200", DType::I8, 4500},
      {"B200", DType::F4, 9000},          {"B200", DType::F64, 37},
      {"GB200", DType::TF32, 1250},       {"GB200", DType::BF16, 2500},
      {"GB200", DType::F16, 2500},        {"GB200", DType::F8E4M3, 5000},
      {"GB200", DType::F8E5M2, 5000},     {"GB200", DType::F6, 5000},
      {"GB200", DType::I8, 5000},         {"GB200", DType::F4, 10000},
      {"GB200", DType::F64, 40},
      {"H200", DType::TF32, 494.7},       {"H200", DType::BF16, 989.4},
      {"H200", DType::F16, 989.4},        {"H200", DType::F8E4M3, 1978.9},
      {"H200", DType::F8E5M2, 1978.9},    {"H200", DType::I8, 1978.9},
      {"H200", DType::F64, 66.9},
      {"H100_SXM", DType::TF32, 494.7},   {"H100_SXM", DType::BF16, 989.4},
      {"H100_SXM", DType::F16, 989.4},    {"H100_SXM", DType::F8E4M3, 1978.9},
      {"H100_SXM", DType::F8E5M2, 1978.9},{"H100_SXM", DType::I8, 1978.9},
      {"H100_SXM", DType::F64, 66.9},
      {"H100_PCIe", DType::TF32, 378},    {"H100_PCIe", DType::BF16, 756.45},
      {"H100_PCIe", DType::F16, 756.45},  {"H100_PCIe", DType::F8E4M3, 1513},
      {"H100_PCIe", DType::F8E5M2, 1513}, {"H100_PCIe", DType::I8, 1513},
      {"H100_PCIe", DType::F64, 51.2},
      {"A100_SXM_80GB", DType::TF32, 156},{"A100_SXM_80GB", DType::BF16, 312},
      {"A100_SXM_80GB", DType::F16, 312}, {"A100_SXM_80GB", DType::I8, 624},
      {"A100_SXM_80GB", DType::F64, 19.5},
      {"A6000", DType::TF32, 77.4},       {"A6000", DType::BF16, 154.8},
      {"A6000", DType::F16, 154.8},       {"A6000", DType::I8, 309.7},
      {"A6000", DType::I4, 619.4},
      {"L40S", DType::TF32, 183},         {"L40S", DType::BF16, 362.05},
      {"L40S", DType::F16, 362.05},       {"L40S", DType::F8E4M3, 733},
      {"L40S", DType::F8E5M2, 733},       {"L40S", DType::I8, 733},
      {"RTX4090", DType::TF32, 82.6},     {"RTX4090", DType::BF16, 165.2},
      {"RTX4090", DType::F16, 165.2},     {"RTX4090", DType::F8E4M3, 330.3},
      {"RTX4090", DType::F8E5M2, 330.3},  {"RTX4090", DType::I8, 660.6},
      {"RTX4090", DType::I4, 1321.2},
      {"Jetson_Thor", DType::TF32, 129},  {"Jetson_Thor", DType::BF16, 258.5},
      {"Jetson_Thor", DType::F16, 258.5}, {"Jetson_Thor", DType::F8E4M3, 517},
      {"Jetson_Thor", DType::F8E5M2, 517},{"Jetson_Thor", DType::F4, 1035},
      {"Jetson_Orin", DType::TF32, 21.3}, {"Jetson_Orin", DType::BF16, 42.6},
      {"Jetson_Orin", DType::F16, 42.6},  {"Jetson_Orin", DType::I8, 85},
      {"MI300X", DType::F64, 163.4},      {"MI300X", DType::F32, 163.4},
      {"MI300X", DType::TF32, 653.7},     {"MI300X", DType::BF16, 1307.4},
      {"MI300X", DType::F16, 1307.4},     {"MI300X", DType::F8E4M3, 2614.9},
      {"MI300X", DType::F8E5M2, 2614.9},  {"MI300X", DType::I8, 2614.9},
      {"TPU_v5e", DType::BF16, 197},      {"TPU_v5e", DType::I8, 394},
      {"TPU_v5e", DType::I4, 788},
      {"TPU_v5p", DType::BF16, 459},      {"TPU_v5p", DType::I8, 918},
      {"TPU_v5p", DType::I4, 1836},
      // Added after the reference: the dense figures of each file's sources (half the NVIDIA
      // 'with sparsity' headline where only that is published).
      {"L4", DType::TF32, 60},            {"L4", DType::BF16, 121},
      {"L4", DType::F16, 121},            {"L4", DType::F8E4M3, 242.5},
      {"L4", DType::F8E5M2, 242.5},       {"L4", DType::I8, 242.5},
      {"T4", DType::F16, 65},             {"T4", DType::I8, 130},
      {"T4", DType::I4, 260},
      {"A10G", DType::TF32, 35.0},        {"A10G", DType::BF16, 70.0},
      {"A10G", DType::F16, 70.0},         {"A10G", DType::I8, 280.2},
      {"A10G", DType::I4, 560.3},
      {"A100_PCIe_40GB", DType::TF32, 156},  {"A100_PCIe_40GB", DType::BF16, 312},
      {"A100_PCIe_40GB", DType::F16, 312},   {"A100_PCIe_40GB", DType::I8, 624},
      {"A100_PCIe_40GB", DType::F64, 19.5},
      {"A100_SXM_40GB", DType::TF32, 156},   {"A100_SXM_40GB", DType::BF16, 312},
      {"A100_SXM_40GB", DType::F16, 312},    {"A100_SXM_40GB", DType::I8, 624},
      {"A100_SXM_40GB", DType::F64, 19.5},
      {"V100_SXM2_32GB", DType::F16, 125},
      {"GH200_96GB", DType::TF32, 494.7},    {"GH200_96GB", DType::BF16, 989.4},
      {"GH200_96GB", DType::F16, 989.4},     {"GH200_96GB", DType::F8E4M3, 1978.9},
      {"GH200_96GB", DType::F8E5M2, 1978.9}, {"GH200_96GB", DType::I8, 1978.9},
      {"GH200_96GB", DType::F64, 66.9},
      {"GH200_144GB", DType::TF32, 494.7},   {"GH200_144GB", DType::BF16, 989.4},
      {"GH200_144GB", DType::F16, 989.4},    {"GH200_144GB", DType::F8E4M3, 1978.9},
      {"GH200_144GB", DType::F8E5M2, 1978.9},{"GH200_144GB", DType::I8, 1978.9},
      {"GH200_144GB", DType::F64, 66.9},
      {"RTX6000_Ada", DType::TF32, 182.1},   {"RTX6000_Ada", DType::BF16, 364.2},
      {"RTX6000_Ada", DType::F16, 364.2},    {"RTX6000_Ada", DType::F8E4M3, 728.5},
      {"RTX6000_Ada", DType::F8E5M2, 728.5}, {"RTX6000_Ada", DType::I8, 728.5},
      {"MI250X", DType::F64, 95.7},       {"MI250X", DType::F32, 95.7},
      {"MI250X", DType::BF16, 383},       {"MI250X", DType::F16, 383},
      {"MI250X", DType::I8, 383},         {"MI250X", DType::I4, 383},
      {"Gaudi3", DType::BF16, 1835},      {"Gaudi3", DType::F8E4M3, 1835},
      {"Gaudi3", DType::F8E5M2, 1835},    {"Gaudi3", DType::F16, 459},
      {"Gaudi3", DType::TF32, 459},       {"Gaudi3", DType::F32, 229},
  };
  for (const std::string& id : builtins().ids()) {
    if (id == "host") continue;
    const Device& d = builtins().get(id);
    for (const ComputeUnit& u : d.units) {
      if (u.kind != UnitKind::Tensor) continue;
      for (const auto& [dtype, peak] : u.peak) {
        SCOPED_TRACE(id + " " + u.name + " " + std::string(ir::dtype_name(dtype)));
        const Dense* ref = nullptr;
        for (const Dense& r : table)
          if (id == r.id && dtype == r.dtype) ref = &r;
        ASSERT_NE(ref, nullptr) << "a tensor rate the reference table does not list";
        EXPECT_LE(peak.value, ref->tflops * kT * 1.001);
      }
    }
  }
}

// 2:4 structured-sparse peaks are stored apart (`sparse_2_4_peak`, never in `peak`: the test
// above), on the tensor units of the devices whose vendor publishes a sparse figure, each
// exactly 2x the stored dense peak of its dtype: the vendors' sparse figures (their
// datasheets' "with sparsity" columns) are 2x dense up to their rounding (H100 bf16: dense
// 989.4, datasheet 1,979, stored 1978.8). Every stored sparse rate is listed here.
TEST(BuiltinArch, TwoFourSparsePeaksAreTwiceDenseWhereVendorsPublishThem) {
  struct Sparse {
    const char* id;
    DType dtype;
    double tflops;
  };
  const Sparse table[] = {
      {"H100_SXM", DType::TF32, 989.4},    {"H100_SXM", DType::BF16, 1978.8},
      {"H100_SXM", DType::F16, 1978.8},    {"H100_SXM", DType::F8E4M3, 3957.8},
      {"H100_SXM", DType::F8E5M2, 3957.8}, {"H100_SXM", DType::I8, 3957.8},
      {"H200", DType::TF32, 989.4},        {"H200", DType::BF16, 1978.8},
      {"H200", DType::F16, 1978.8},        {"H200", DType::F8E4M3, 3957.8},
      {"H200", DType::F8E5M2, 3957.8},     {"H200", DType::I8, 3957.8},
      {"H100_PCIe", DType::TF32, 756},     {"H100_PCIe", DType::BF16, 1512},
      {"H100_PCIe", DType::F16, 1512},     {"H100_PCIe", DType::F8E4M3, 3026},
      {"H100_PCIe", DType::F8E5M2, 3026},  {"H100_PCIe", DType::I8, 3026},
      {"B200", DType::TF32, 2250},         {"B200", DType::BF16, 4500},
      {"B200", DType::F16, 4500},          {"B200", DType::F8E4M3, 9000},
      {"B200", DType::F8E5M2, 9000},       {"B200", DType::F6, 9000},
      {"B200", DType::I8, 9000},           {"B200", DType::F4, 18000},
      {"GB200", DType::TF32, 2500},        {"GB200", DType::BF16, 5000},
      {"GB200", DType::F16, 5000},         {"GB200", DType::F8E4M3, 10000},
      {"GB200", DType::F8E5M2, 10000},     {"GB200", DType::F6, 10000},
      {"GB200", DType::I8, 10000},         {"GB200", DType::F4, 20000},
      {"A100_SXM_80GB", DType::TF32, 312}, {"A100_SXM_80GB", DType::BF16, 624},
      {"A100_SXM_80GB", DType::F16, 624},  {"A100_SXM_80GB", DType::I8, 1248},
      {"A6000", DType::TF32, 154.8},       {"A6000", DType::BF16, 309.6},
      {"A6000", DType::F16, 309.6},        {"A6000", DType::I8, 619.4},
      {"L40S", DType::TF32, 366},          {"L40S", DType::BF16, 724.1},
      {"L40S", DType::F16, 724.1},         {"L40S", DType::F8E4M3, 1466},
      {"L40S", DType::F8E5M2, 1466},       {"L40S", DType::I8, 1466},
      {"RTX4090", DType::TF32, 165.2},     {"RTX4090", DType::BF16, 330.4},
      {"RTX4090", DType::F16, 330.4},      {"RTX4090", DType::F8E4M3, 660.6},
      {"RTX4090", DType::F8E5M2, 660.6},   {"RTX4090", DType::I8, 1321.2},
      {"Jetson_Thor", DType::BF16, 517},   {"Jetson_Thor", DType::F16, 517},
      {"Jetson_Thor", DType::F8E4M3, 1034},{"Jetson_Thor", DType::F8E5M2, 1034},
      {"Jetson_Thor", DType::F4, 2070},
      {"Jetson_Orin", DType::I8, 170},
      {"MI300X", DType::TF32, 1307.4},     {"MI300X", DType::BF16, 2614.8},
      {"MI300X", DType::F16, 2614.8},      {"MI300X", DType::F8E4M3, 5229.8},
      {"MI300X", DType::F8E5M2, 5229.8},   {"MI300X", DType::I8, 5229.8},
      {"L4", DType::TF32, 120},            {"L4", DType::BF16, 242},
      {"L4", DType::F16, 242},             {"L4", DType::F8E4M3, 485},
      {"L4", DType::F8E5M2, 485},          {"L4", DType::I8, 485},
      {"A100_PCIe_40GB", DType::TF32, 312},{"A100_PCIe_40GB", DType::BF16, 624},
      {"A100_PCIe_40GB", DType::F16, 624}, {"A100_PCIe_40GB", DType::I8, 1248},
      {"A100_SXM_40GB", DType::TF32, 312}, {"A100_SXM_40GB", DType::BF16, 624},
      {"A100_SXM_40GB", DType::F16, 624},  {"A100_SXM_40GB", DType::I8, 1248},
      {"GH200_96GB", DType::TF32, 989.4},  {"GH200_96GB", DType::BF16, 1978.8},
      {"GH200_96GB", DType::F16, 1978.8},  {"GH200_96GB", DType::F8E4M3, 3957.8},
      {"GH200_96GB", DType::F8E5M2, 3957.8},{"GH200_96GB", DType::I8, 3957.8},
      {"GH200_144GB", DType::TF32, 989.4}, {"GH200_144GB", DType::BF16, 1978.8},
      {"GH200_144GB", DType::F16, 1978.8}, {"GH200_144GB", DType::F8E4M3, 3957.8},
      {"GH200_144GB", DType::F8E5M2, 3957.8},{"GH200_144GB", DType::I8, 3957.8},
  };
  std::size_t found = 0;
  for (const std::string& id : builtins().ids()) {
    if (id == "host") continue;
    const Device& d = builtins().get(id);
    for (const ComputeUnit& u : d.units) {
      for (const auto& [dtype, sparse] : u.sparse_2_4_peak) {
        SCOPED_TRACE(id + " " + u.name + " " + std::string(ir::dtype_name(dtype)));
        EXPECT_EQ(u.kind, UnitKind::Tensor);
        const Sparse* ref = nullptr;
        for (const Sparse& r : table)
          if (id == r.id && dtype == r.dtype) ref = &r;
        ASSERT_NE(ref, nullptr) << "a sparse rate the table does not list";
        ++found;
        EXPECT_TRUE(near_rel(sparse.value, ref->tflops * kT, 1e-12));
        EXPECT_EQ(sparse.value, 2 * u.peak.at(dtype).value);  // 2 x dense, exactly
        EXPECT_FALSE(sparse.note.empty());  // the vendor's sparse figure, or the arithmetic
      }
    }
  }
  EXPECT_EQ(found, std::size(table));
  // TPUs, Turing, Volta, CDNA2 and Gaudi have no sparse mode; A10G and RTX 6000 Ada store
  // none (no checked vendor figure); H100's FP64 tensor peak has no sparse figure.
  for (const char* id : {"TPU_v5e", "TPU_v5p", "T4", "V100_SXM2_32GB", "MI250X", "Gaudi3", "A10G",
                         "RTX6000_Ada"})
    for (const ComputeUnit& u : builtins().get(id).units) EXPECT_TRUE(u.sparse_2_4_peak.empty());
  EXPECT_FALSE(builtins().get("H100_SXM").sparse_2_4_peak(UnitKind::Tensor, DType::F64));
  EXPECT_EQ(*builtins().get("H100_SXM").sparse_2_4_peak(UnitKind::Tensor, DType::BF16),
            2 * *builtins().get("H100_SXM").peak(UnitKind::Tensor, DType::BF16));
}

// Conventions the device files keep (docs/devices.md): TPUs have no fp32/fp8 matrix rate and no L2;
// MI300X has its Infinity Cache as `llc`; B200's L2 is ~126 MB.
TEST(BuiltinArch, DeviceSpecificConventions) {
  for (const char* id : {"TPU_v5e", "TPU_v5p"}) {
    const Device& tpu = builtins().get(id);
    EXPECT_FALSE(tpu.peak(UnitKind::Tensor, DType::F32).has_value());
    EXPECT_FALSE(tpu.peak(UnitKind::Tensor, DType::F8E4M3).has_value());
    EXPECT_TRUE(tpu.peak(UnitKind::Tensor, DType::I4).has_value());
    EXPECT_EQ(tpu.memory_level(MemoryLevel::L2), nullptr);
    ASSERT_NE(tpu.memory_level(MemoryLevel::Vmem), nullptr);
    EXPECT_EQ(tpu.memory_level(MemoryLevel::Vmem)->capacity->value, 128.0 * 1024 * 1024);  // 128 MiB per chip
  }
  const Device& mi = builtins().get("MI300X");
  EXPECT_EQ(mi.memory_level(MemoryLevel::Llc)->capacity->value, 256.0 * 1024 * 1024);  // 256 MiB
  EXPECT_EQ(mi.memory_level(MemoryLevel::L2)->capacity->value, 32.0 * 1024 * 1024);    // 4 MiB x 8 XCDs
  EXPECT_EQ(mi.memory_level(MemoryLevel::L2)->bandwidth->flag, "D");
  EXPECT_FALSE(mi.peak(UnitKind::Special, DType::F32).has_value());  // not published
  EXPECT_TRUE(near_rel(builtins().get("B200").memory_level(MemoryLevel::L2)->capacity->value, 126e6, 1e-3));
  // RTX 4090 stores the FP32-accumulate rate, not the FP16-accumulate 330.3.
  EXPECT_TRUE(near_rel(*builtins().get("RTX4090").peak(UnitKind::Tensor, DType::BF16),
                       165.2 * kT, 1e-3));
}

// Every peak `a` stores (per unit kind and dtype), `b` stores at the same value with the same
// sparse/no-sparse status, and the other way round: the same compute, only the memory differs.
void expect_same_compute(const char* a_id, const char* b_id) {
  SCOPED_TRACE(std::string(a_id) + " vs " + b_id);
  const Device& a = builtins().get(a_id);
  const Device& b = builtins().get(b_id);
  EXPECT_EQ(a.num_sms, b.num_sms);
  for (const auto& [x, y] : {std::pair{&a, &b}, std::pair{&b, &a}})
    for (const ComputeUnit& u : x->units)
      for (const auto& [dtype, p] : u.peak) {
        SCOPED_TRACE(x->id + " " + u.name + " " + std::string(ir::dtype_name(dtype)));
        ASSERT_TRUE(y->peak(u.kind, dtype).has_value());
        EXPECT_TRUE(near_rel(*y->peak(u.kind, dtype), *x->peak(u.kind, dtype), 1e-9));
        EXPECT_EQ(y->sparse_2_4_peak(u.kind, dtype).has_value(),
                  x->sparse_2_4_peak(u.kind, dtype).has_value());
      }
}

// The serving devices added after the hardware reference: what each file must (and must not)
// say, so that a later edit cannot silently turn an estimate into a "vendor" number, store a
// sparse figure as dense, or give a part a dtype its hardware lacks.
TEST(BuiltinArch, ServingDevicesAddedAfterTheReference) {
  // Variants of one die carry identical compute; only the memory differs.
  expect_same_compute("GH200_96GB", "H100_SXM");
  expect_same_compute("GH200_144GB", "H100_SXM");
  expect_same_compute("A100_PCIe_40GB", "A100_SXM_80GB");
  expect_same_compute("A100_SXM_40GB", "A100_SXM_80GB");
  EXPECT_TRUE(near_rel(builtins().get("GH200_96GB").dram().capacity->value, 96e9, 1e-12));
  EXPECT_TRUE(near_rel(builtins().get("GH200_144GB").dram().capacity->value, 144e9, 1e-12));
  EXPECT_GT(builtins().get("GH200_144GB").dram().bandwidth->value,
            builtins().get("GH200_96GB").dram().bandwidth->value);
  for (const char* id : {"A100_PCIe_40GB", "A100_SXM_40GB"}) {
    EXPECT_TRUE(near_rel(builtins().get(id).dram().capacity->value, 40e9, 1e-12)) << id;
    EXPECT_TRUE(near_rel(builtins().get(id).dram().bandwidth->value, 1555 * kG, 1e-12)) << id;
  }

  // Turing and Volta: fp16 tensor cores, no bf16/tf32/fp8 tensor path; Volta has no int8 tensor.
  for (const char* id : {"T4", "V100_SXM2_32GB"}) {
    SCOPED_TRACE(id);
    const Device& d = builtins().get(id);
    EXPECT_TRUE(d.peak(UnitKind::Tensor, DType::F16).has_value());
    for (DType dt : {DType::BF16, DType::TF32, DType::F8E4M3, DType::F8E5M2})
      EXPECT_FALSE(d.peak(UnitKind::Tensor, dt).has_value()) << ir::dtype_name(dt);
  }
  EXPECT_FALSE(builtins().get("V100_SXM2_32GB").peak(UnitKind::Tensor, DType::I8).has_value());
  EXPECT_TRUE(near_rel(*builtins().get("T4").peak(UnitKind::Tensor, DType::I8), 130 * kT, 1e-12));

  // L4: every dense tensor peak is half NVIDIA's 'with sparsity' headline (TF32 120, 16-bit 242,
  // FP8/INT8 485), and the sparse figures are stored as published.
  const Device& l4 = builtins().get("L4");
  EXPECT_EQ(l4.num_sms, 58);  // 7,424 cores; the "60 SMs" of some DBs do not give FP32 30.3
  EXPECT_TRUE(near_rel(*l4.sparse_2_4_peak(UnitKind::Tensor, DType::BF16), 242 * kT, 1e-12));
  EXPECT_TRUE(near_rel(*l4.sparse_2_4_peak(UnitKind::Tensor, DType::F8E4M3), 485 * kT, 1e-12));
  EXPECT_TRUE(near_rel(*l4.sparse_2_4_peak(UnitKind::Tensor, DType::I8), 485 * kT, 1e-12));

  // A10G: no vendor publishes its rates, so every compute number is an estimate (E) or derived
  // from estimates (D), never "V"; the tensor rate is the GeForce-class one (half the A10's
  // per-SM rate), not NVIDIA's A10 datasheet 125.
  const Device& a10g = builtins().get("A10G");
  for (const ComputeUnit& u : a10g.units) {
    if (u.clock_mhz) EXPECT_EQ(u.clock_mhz->flag, "E") << u.name;
    for (const auto& [dt, p] : u.peak) {
      EXPECT_NE(p.flag, "V") << u.name << " " << ir::dtype_name(dt);
      EXPECT_FALSE(p.note.empty());
    }
  }
  EXPECT_EQ(a10g.num_sms_source->flag, "E");
  EXPECT_LT(*a10g.peak(UnitKind::Tensor, DType::BF16), 125 * kT);

  // RTX 6000 Ada: dense tensor peaks derived (D) from the professional AD102 per-SM rates at the
  // clock NVIDIA's FP32 91.1 implies; FP32 accumulate at full rate, unlike the GeForce RTX 4090.
  const Device& rtx6000 = builtins().get("RTX6000_Ada");
  for (DType dt : {DType::TF32, DType::BF16, DType::F16, DType::F8E4M3, DType::I8})
    EXPECT_EQ(rtx6000.unit(UnitKind::Tensor, dt)->peak.at(dt).flag, "D") << ir::dtype_name(dt);
  EXPECT_TRUE(near_rel(*rtx6000.peak(UnitKind::Tensor, DType::BF16),
                       2 * 142.0 / 128 * 2505 / 2520 *
                           *builtins().get("RTX4090").peak(UnitKind::Tensor, DType::BF16),
                       2e-3));  // 2x the 4090's FP32-accumulate rate per SM per clock

  // MI250X: the whole two-GCD package; CDNA2 has no tf32, fp8, sparsity or special unit.
  const Device& mi250 = builtins().get("MI250X");
  EXPECT_EQ(mi250.num_sms, 220);
  for (DType dt : {DType::TF32, DType::F8E4M3, DType::F8E5M2})
    EXPECT_FALSE(mi250.peak(UnitKind::Tensor, dt).has_value()) << ir::dtype_name(dt);
  EXPECT_FALSE(mi250.peak(UnitKind::Special, DType::F32).has_value());
  EXPECT_EQ(mi250.memory_level(MemoryLevel::L2)->capacity->value, 16.0 * 1024 * 1024);  // 8 MiB x 2 GCDs
  EXPECT_EQ(mi250.memory_level(MemoryLevel::Llc), nullptr);                            // no Infinity Cache

  // Gaudi 3: Intel's matrix peaks (BF16 = FP8 = 1835) are 8 MMEs x 256 x 256 MAC x 2 at the
  // stored MME clock; the TPC vector BF16 peak 28.7; 96 MB SRAM as l2 at 12.8 TB/s; no int8
  // rate (unpublished) and no special-function unit.
  const Device& g3 = builtins().get("Gaudi3");
  const ComputeUnit* mme = g3.unit(UnitKind::Tensor, DType::BF16);
  ASSERT_NE(mme, nullptr);
  ASSERT_TRUE(mme->clock_mhz.has_value());
  EXPECT_TRUE(near_rel(mme->peak.at(DType::BF16).value,
                       8 * 256.0 * 256 * 2 * mme->clock_mhz->value * 1e6, 1e-3));
  EXPECT_EQ(mme->peak.at(DType::BF16).flag, "V");
  EXPECT_EQ(*g3.peak(UnitKind::Tensor, DType::F8E4M3), *g3.peak(UnitKind::Tensor, DType::BF16));
  for (DType dt : {DType::F16, DType::TF32, DType::F32})  // third-party figures only
    EXPECT_EQ(mme->peak.at(dt).flag, "E") << ir::dtype_name(dt);
  EXPECT_FALSE(g3.peak(UnitKind::Tensor, DType::I8).has_value());
  EXPECT_FALSE(g3.peak(UnitKind::Special, DType::F32).has_value());
  EXPECT_TRUE(near_rel(*g3.peak(UnitKind::Vector, DType::BF16), 28.7 * kT, 1e-12));
  EXPECT_TRUE(near_rel(g3.memory_level(MemoryLevel::L2)->capacity->value, 96e6, 1e-12));
  EXPECT_TRUE(near_rel(g3.memory_level(MemoryLevel::L2)->bandwidth->value, 12.8 * kT, 1e-12));
}

// The interconnect sections: per device and per direction, half of the vendors' bidirectional
// headlines (docs/devices.md, "Interconnects"); absent where no source was found.
TEST(BuiltinArch, InterconnectsPerDirection) {
  struct Row {
    const char* id;
    Topology topology;
    double up_gb;      // per device per direction
    double peer_gb;    // mesh: to one peer; torus: per link; else 0
    int max_devices;   // 0: not published
    double out_gb;     // NIC per device per direction; 0: none
    bool reduction;
  };
  const double pcie4 = 16 * 16 * 128.0 / 130 / 8;  // GT/s x lanes x encoding / bits: 31.5
  const Row rows[] = {
      {"A100_SXM_40GB", Topology::Switched, 600 / 2.0, 0, 16, 200 / 8.0, false},
      {"A100_SXM_80GB", Topology::Switched, 600 / 2.0, 0, 16, 200 / 8.0, false},
      {"H100_SXM", Topology::Switched, 900 / 2.0, 0, 8, 400 / 8.0, true},
      {"H200", Topology::Switched, 900 / 2.0, 0, 8, 400 / 8.0, true},
      {"B200", Topology::Switched, 18 * 100 / 2.0, 0, 8, 400 / 8.0, true},
      {"GB200", Topology::Switched, 1800 / 2.0, 0, 72, 400 / 8.0, true},
      {"MI300X", Topology::Mesh, 7 * 128 / 2.0, 128 / 2.0, 8, 400 / 8.0, false},
      {"Gaudi3", Topology::Mesh, 21 * 200 / 8.0, 3 * 200 / 8.0, 8, 3 * 200 / 8.0, false},
      {"TPU_v5e", Topology::Torus, 400 / 2.0, 400 / 2.0 / 4, 256, 2 * 100 / 8.0 / 8, false},
      {"TPU_v5p", Topology::Torus, 1200 / 2.0, 1200 / 2.0 / 6, 6144, 50 / 8.0, false},
      {"L40S", Topology::Pcie, pcie4, 0, 0, 0, false},
      {"L4", Topology::Pcie, pcie4, 0, 0, 0, false},
      {"A10G", Topology::Pcie, pcie4, 0, 0, 0, false},
      {"RTX6000_Ada", Topology::Pcie, pcie4, 0, 0, 0, false},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.id);
    const Device& d = builtins().get(r.id);
    ASSERT_TRUE(d.interconnect && d.interconnect->scale_up);
    const DeviceScaleUp& up = *d.interconnect->scale_up;
    EXPECT_EQ(up.link.topology, r.topology);
    EXPECT_TRUE(near_rel(up.link.bandwidth.value, r.up_gb * kG, 1e-3));
    if (r.topology == Topology::Mesh)
      EXPECT_TRUE(near_rel(up.link.peer_bandwidth->value, r.peer_gb * kG, 1e-12));
    if (r.topology == Topology::Torus)
      EXPECT_TRUE(near_rel(up.link.link_bandwidth->value, r.peer_gb * kG, 1e-12));
    EXPECT_EQ(up.max_devices.has_value(), r.max_devices > 0);
    if (up.max_devices) EXPECT_EQ(up.max_devices->value, r.max_devices);
    EXPECT_EQ(d.interconnect->scale_out.has_value(), r.out_gb > 0);
    if (r.out_gb > 0)
      EXPECT_TRUE(near_rel(d.interconnect->scale_out->bandwidth.value, r.out_gb * kG, 1e-12));
    EXPECT_EQ(up.link.reduction.has_value(), r.reduction);
    if (r.reduction) EXPECT_EQ(up.link.reduction->min_group(), 5);
    EXPECT_FALSE(up.link.latency.has_value());  // no hop latency is published
    // Every interconnect number names a source of the file and a flag.
    for (const Sourced* n : {&up.link.bandwidth}) {
      EXPECT_TRUE(d.sources.count(n->source)) << n->source;
      if (n->flag != "V") EXPECT_FALSE(n->note.empty());
    }
  }
  // Torus axes and their wraparound rules.
  const DeviceScaleUp& v5e = *builtins().get("TPU_v5e").interconnect->scale_up;
  EXPECT_EQ(v5e.torus_axes->value, 2);
  EXPECT_EQ(v5e.wraparound_from->value, 16);
  EXPECT_EQ(v5e.wraparound_scope, WrapScope::Axis);
  const DeviceScaleUp& v5p = *builtins().get("TPU_v5p").interconnect->scale_up;
  EXPECT_EQ(v5p.torus_axes->value, 3);
  EXPECT_EQ(v5p.wraparound_from->value, 4);
  EXPECT_EQ(v5p.wraparound_scope, WrapScope::Slice);
  // Devices whose links no checked source gives: no section, never a guess.
  for (const char* id : {"V100_SXM2_32GB", "H100_PCIe", "A100_PCIe_40GB", "GH200_96GB",
                         "GH200_144GB", "Jetson_Orin", "Jetson_Thor", "T4", "RTX4090", "A6000",
                         "MI250X"})
    EXPECT_FALSE(builtins().get(id).interconnect.has_value()) << id;
}

}  // namespace
}  // namespace solar::hw
