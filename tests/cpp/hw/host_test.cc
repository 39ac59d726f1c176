// The host device: detection on this machine, and the peak formulas on described machines.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "solar/hw/host.h"

namespace solar::hw {
namespace {

using ir::DType;

TEST(DetectHost, DescribesThisMachine) {
  Device h = detect_host();
  EXPECT_EQ(h.id, "host");
  EXPECT_EQ(h.kind, "cpu");
  EXPECT_GE(h.num_sms, 1);  // physical cores
  ASSERT_TRUE(h.num_sms_source.has_value());
  EXPECT_EQ(h.num_sms_source->flag, "M");

  std::optional<double> f32 = h.peak(UnitKind::Vector, DType::F32);
  ASSERT_TRUE(f32.has_value());
  EXPECT_GT(*f32, 0);
  EXPECT_DOUBLE_EQ(*h.peak(UnitKind::Vector, DType::F64), *f32 / 2);  // half the lanes
  EXPECT_FALSE(h.peak(UnitKind::Special, DType::F32).has_value());  // exp etc. on the vector unit

  const MemorySpec& dram = h.dram();
  EXPECT_GT(dram.bandwidth->value, 0);
  EXPECT_EQ(dram.bandwidth->flag, "M");
  EXPECT_NE(dram.bandwidth->note.find("measured by Solar's probe on"), std::string::npos);
  EXPECT_GT(dram.capacity->value, 0);
  const MemorySpec* l2 = h.memory_level(MemoryLevel::L2);
  const MemorySpec* l3 = h.memory_level(MemoryLevel::L3);
  ASSERT_TRUE(l2 != nullptr || l3 != nullptr);
  if (l2) {
    EXPECT_GT(l2->capacity->value, 0);
  }
  if (l3) {
    EXPECT_GT(l3->capacity->value, 0);
  }
  EXPECT_TRUE(h.sources.count(dram.bandwidth->source));
  for (const ComputeUnit& u : h.units)
    for (const auto& [dt, p] : u.peak) EXPECT_TRUE(h.sources.count(p.source)) << p.source;
}

TEST(DetectHost, ProbeIsRunOncePerProcess) {
  const MemoryProbe& a = memory_probe();
  EXPECT_EQ(&a, &memory_probe());
  EXPECT_DOUBLE_EQ(probe_memory_bandwidth(), a.bytes_per_s);
  EXPECT_GE(a.passes, 2);
  EXPECT_GE(a.threads, 1);
  EXPECT_GE(a.buffer_bytes, 64ull << 20);
  EXPECT_EQ(a.date.size(), 10u);  // YYYY-MM-DD
}

TEST(DetectHost, ClockIsTheFastestOfProbeAndReports) {
  std::optional<ClockProbe> probe = clock_probe();
#if defined(__x86_64__)
  ASSERT_TRUE(probe.has_value());
  EXPECT_GE(probe->runs, 2);
  EXPECT_GT(probe->add_chain_mhz, 0);
  EXPECT_GT(probe->imul_chain_mhz, 0);
  EXPECT_DOUBLE_EQ(probe->mhz, std::max(probe->add_chain_mhz, probe->imul_chain_mhz));
  // The clock the peaks use is never below the measured one (peaks must not be low).
  HostFacts f = read_host_facts();
  ASSERT_TRUE(f.clock_mhz.has_value());
  EXPECT_GE(f.clock_mhz->value, probe->mhz);
  EXPECT_EQ(f.clock_mhz->flag, "M");
#else
  EXPECT_FALSE(probe.has_value());
#endif
}

// A described 56-core Sapphire Rapids at 2.0 GHz (Intel's Xeon Platinum 8480+ at its base clock).
HostFacts xeon_8480() {
  HostFacts f;
  f.model_name = "Intel(R) Xeon(R) Platinum 8480+";
  f.vendor = "Intel";
  f.arch = "x86_64";
  f.x86_family = 6;
  f.cores = Sourced{56, "t", "M", "test"};
  f.flags = {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "avx512_vnni", "amx_bf16",
             "amx_int8", "amx_tile"};
  f.clock_mhz = Sourced{2000, "t", "M", "test"};
  f.l3 = Sourced{105e6, "t", "M", "test"};
  f.dram_capacity = Sourced{512e9, "t", "M", "test"};
  f.dram_bandwidth = Sourced{307.2e9, "t", "M", "test"};
  f.sources["t"] = "test fixture";
  return f;
}

TEST(HostDevice, Avx512AndAmxPeaks) {
  Device d = host_device(xeon_8480());
  // 56 cores x 2 AVX-512 FMA units x 16 f32 lanes x 2 FLOP x 2.0 GHz = 7.17 TFLOP/s.
  EXPECT_DOUBLE_EQ(*d.peak(UnitKind::Vector, DType::F32), 56.0 * 2 * 16 * 2 * 2.0e9);
  EXPECT_DOUBLE_EQ(*d.peak(UnitKind::Vector, DType::F64), 56.0 * 2 * 8 * 2 * 2.0e9);
  EXPECT_DOUBLE_EQ(*d.peak(UnitKind::Vector, DType::BF16), 2 * 56.0 * 2 * 16 * 2 * 2.0e9);
  // AMX: 1,024 bf16 FLOP and 2,048 int8 ops per clock per core -> 114.7 T / 229 T at 2 GHz.
  EXPECT_DOUBLE_EQ(*d.peak(UnitKind::Tensor, DType::BF16), 56.0 * 1024 * 2.0e9);
  EXPECT_DOUBLE_EQ(*d.peak(UnitKind::Tensor, DType::I8), 56.0 * 2048 * 2.0e9);
  EXPECT_EQ(d.unit(UnitKind::Tensor, DType::BF16)->name, "amx");
  EXPECT_FALSE(d.sparse_2_4_peak(UnitKind::Tensor, DType::BF16).has_value());  // AMX: no 2:4
  EXPECT_EQ(d.unit(UnitKind::Vector, DType::F32)->name, "simd_fma");
  // The FMA-unit count is an assumption, so the vector peaks are estimates.
  EXPECT_EQ(d.unit(UnitKind::Vector, DType::F32)->peak.at(DType::F32).flag, "E");
  EXPECT_EQ(d.units.size(), 2u);  // no special unit
  EXPECT_NE(d.notes.find("No special-function unit"), std::string::npos);
  EXPECT_EQ(d.num_sms, 56);
  EXPECT_DOUBLE_EQ(d.dram().bandwidth->value, 307.2e9);
  EXPECT_EQ(d.memory[1].level, MemoryLevel::L3);
}

TEST(HostDevice, Avx2WithoutAmx) {
  HostFacts f = xeon_8480();
  f.flags = {"avx2", "fma"};
  Device d = host_device(f);
  EXPECT_DOUBLE_EQ(*d.peak(UnitKind::Vector, DType::F32), 56.0 * 2 * 8 * 2 * 2.0e9);  // 8 lanes
  EXPECT_FALSE(d.peak(UnitKind::Vector, DType::BF16).has_value());
  EXPECT_FALSE(d.peak(UnitKind::Tensor, DType::BF16).has_value());
}

TEST(HostDevice, Zen4RunsAvx512OnHalfWidthDatapaths) {
  HostFacts f = xeon_8480();
  f.vendor = "AMD";
  f.x86_family = 25;
  f.cores.value = 96;
  f.clock_mhz->value = 2400;
  f.flags = {"avx2", "fma", "avx512f"};
  Device d = host_device(f);
  // 96 x 2 pipes x 8 f32 x 2 x 2.4 GHz = 7.37 TFLOP/s (AMD's EPYC 9654 at its base clock).
  EXPECT_DOUBLE_EQ(*d.peak(UnitKind::Vector, DType::F32), 96.0 * 2 * 8 * 2 * 2.4e9);
}

TEST(HostDevice, CacheBandwidthsAreDerivedUpperBounds) {
  HostFacts f = xeon_8480();
  f.l2 = Sourced{56 * 2e6, "t", "M", "test"};
  f.l1d = Sourced{56 * 48e3, "t", "M", "test"};
  Device d = host_device(f);
  // bytes per clock per core x 56 cores x 2.0 GHz
  EXPECT_DOUBLE_EQ(d.memory_level(MemoryLevel::L3)->bandwidth->value, 64.0 * 56 * 2000e6);
  EXPECT_DOUBLE_EQ(d.memory_level(MemoryLevel::L2)->bandwidth->value, 64.0 * 56 * 2000e6);
  EXPECT_DOUBLE_EQ(d.memory_level(MemoryLevel::L1)->bandwidth->value, 192.0 * 56 * 2000e6);
  EXPECT_EQ(d.memory_level(MemoryLevel::L1)->bandwidth->flag, "D");
  EXPECT_TRUE(d.sources.count(d.memory_level(MemoryLevel::L2)->bandwidth->source));
  // Without a clock there is no rate to derive: capacities only.
  f.clock_mhz.reset();
  EXPECT_FALSE(host_device(f).memory_level(MemoryLevel::L2)->bandwidth.has_value());
}

TEST(HostDevice, NoClockMeansNoComputePeaks) {
  HostFacts f = xeon_8480();
  f.clock_mhz.reset();
  Device d = host_device(f);
  EXPECT_TRUE(d.units.empty());
  EXPECT_FALSE(d.peak(UnitKind::Vector, DType::F32).has_value());
}

}  // namespace
}  // namespace solar::hw
