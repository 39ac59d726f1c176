// The built-in arch/*.yaml files: they load, and reproduce the dense datasheet numbers of the
// hardware reference (shared/reference/hardware.md sections 1-3), never a sparse figure as a
// dense peak; 2:4-sparse figures only as sparse_2_4_peak, 2x dense.
#include <gtest/gtest.h>

#include <iterator>
#include <string>

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
  ASSERT_EQ(builtin_arch_files().size(), 14u);
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
    for (const MemoryLevel& m : d.memory) {
      if (m.capacity) check(d, *m.capacity, m.name + ".capacity");
      if (m.bandwidth) check(d, *m.bandwidth, m.name + ".bandwidth");
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
  EXPECT_TRUE(near_rel(d.memory_level("l2")->capacity->value, 50e6, 1e-3));
  EXPECT_EQ(d.memory_level("smem")->capacity->value, 132.0 * 228 * 1024);  // SMs x 228 KiB
  EXPECT_EQ(d.memory_level("rf")->capacity->value, 132.0 * 65536 * 4);     // SMs x 64K x 32-bit
  // Tensor peaks at the 1830 MHz tensor clock, vector at 1980 MHz (hardware.md conventions).
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

// Each device's dense bf16 (or fp16) tensor peak and DRAM bandwidth, as hardware.md
// sections 1 and 2 give them.
struct Datasheet {
  const char* id;
  double bf16_tflops;
  double dram_bytes_per_s;
};
class DeviceDatasheet : public ::testing::TestWithParam<Datasheet> {};

TEST_P(DeviceDatasheet, DenseTensorPeakAndDramBandwidth) {
  const Datasheet& p = GetParam();
  const Device& d = builtins().get(p.id);
  ASSERT_TRUE(d.peak(UnitKind::Tensor, DType::BF16).has_value());
  EXPECT_TRUE(near_rel(*d.peak(UnitKind::Tensor, DType::BF16), p.bf16_tflops * kT, 1e-3));
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
                      Datasheet{"TPU_v5p", 459, 2765 * kG}),
    [](const auto& info) { return std::string(info.param.id); });

// hardware.md section 3: SMs x MAC/clk/SM x 2 x clock reproduces the stored peak (0.5%), at
// the clock section 3 names for that pipe.
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
        PerSm{"MI300X", kTc, DType::F64, 128, 2100}),
    [](const auto& info) {
      return std::string(info.param.id) + "_" + std::string(unit_kind_name(info.param.kind)) +
             "_" + std::string(ir::dtype_name(info.param.dtype));
    });

// The special-function unit: 16 results/clk/SM (CUDA guide) at the stored clock; the stored
// values are rounded to 3 digits, hence 1%.
TEST(BuiltinArch, MufuIs16ResultsPerSmPerClock) {
  for (const char* id : {"H100_SXM", "H100_PCIe", "H200", "B200", "GB200", "A100_SXM_80GB",
                         "A6000", "L40S", "RTX4090", "Jetson_Thor", "Jetson_Orin"}) {
    SCOPED_TRACE(id);
    const Device& d = builtins().get(id);
    const ComputeUnit* u = d.unit(UnitKind::Special, DType::F32);
    ASSERT_NE(u, nullptr);
    EXPECT_TRUE(near_rel(u->peak.at(DType::F32).value,
                         d.num_sms * 16 * u->clock_mhz->value * 1e6, 1e-2));  // SMs x 16 x clock
  }
}

// No device stores a 2:4-sparse figure: every tensor rate is at most the dense value of
// hardware.md section 1 (section 4 for INT4), and every stored tensor rate is listed here,
// so a new one must be checked against the reference to pass.
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
// exactly 2x the stored dense peak of its dtype: the vendors' sparse figures (hardware.md
// section 1, "Sparse (2:4) figures") are 2x dense up to their rounding (H100 bf16: dense
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
  // TPUs have no sparse mode; H100's FP64 tensor peak has no sparse figure.
  for (const char* id : {"TPU_v5e", "TPU_v5p"})
    for (const ComputeUnit& u : builtins().get(id).units) EXPECT_TRUE(u.sparse_2_4_peak.empty());
  EXPECT_FALSE(builtins().get("H100_SXM").sparse_2_4_peak(UnitKind::Tensor, DType::F64));
  EXPECT_EQ(*builtins().get("H100_SXM").sparse_2_4_peak(UnitKind::Tensor, DType::BF16),
            2 * *builtins().get("H100_SXM").peak(UnitKind::Tensor, DType::BF16));
}

// hardware.md conventions kept in the files: TPUs have no fp32/fp8 matrix rate and no L2;
// MI300X has its Infinity Cache as `llc`; B200's L2 is ~126 MB.
TEST(BuiltinArch, DeviceSpecificConventions) {
  for (const char* id : {"TPU_v5e", "TPU_v5p"}) {
    const Device& tpu = builtins().get(id);
    EXPECT_FALSE(tpu.peak(UnitKind::Tensor, DType::F32).has_value());
    EXPECT_FALSE(tpu.peak(UnitKind::Tensor, DType::F8E4M3).has_value());
    EXPECT_TRUE(tpu.peak(UnitKind::Tensor, DType::I4).has_value());
    EXPECT_EQ(tpu.memory_level("l2"), nullptr);
    ASSERT_NE(tpu.memory_level("vmem"), nullptr);
    EXPECT_EQ(tpu.memory_level("vmem")->capacity->value, 128.0 * 1024 * 1024);  // 128 MiB per chip
  }
  const Device& mi = builtins().get("MI300X");
  EXPECT_EQ(mi.memory_level("llc")->capacity->value, 256.0 * 1024 * 1024);  // 256 MiB
  EXPECT_EQ(mi.memory_level("l2")->capacity->value, 32.0 * 1024 * 1024);    // 4 MiB x 8 XCDs
  EXPECT_EQ(mi.memory_level("l2")->bandwidth->flag, "D");
  EXPECT_FALSE(mi.peak(UnitKind::Special, DType::F32).has_value());  // not published
  EXPECT_TRUE(near_rel(builtins().get("B200").memory_level("l2")->capacity->value, 126e6, 1e-3));
  // RTX 4090 stores the FP32-accumulate rate, not the FP16-accumulate 330.3.
  EXPECT_TRUE(near_rel(*builtins().get("RTX4090").peak(UnitKind::Tensor, DType::BF16),
                       165.2 * kT, 1e-3));
}

}  // namespace
}  // namespace solar::hw
