// Device queries: the fastest unit per kind and dtype, memory levels.
#include <gtest/gtest.h>

#include "solar/hw/device.h"
#include "solar/util/errors.h"

namespace solar::hw {
namespace {

using ir::DType;

Device two_tensor_units() {
  Device d;
  d.id = "Toy";
  ComputeUnit tc{UnitKind::Tensor, "tc", {{DType::BF16, {100e12, "s", "V", ""}}}, std::nullopt};
  ComputeUnit tc64{UnitKind::Tensor, "tc_fp64", {{DType::F64, {10e12, "s", "V", ""}}},
                   std::nullopt};
  ComputeUnit slow{UnitKind::Tensor, "slow", {{DType::BF16, {50e12, "s", "V", ""}}}, std::nullopt};
  ComputeUnit vec{UnitKind::Vector, "simt",
                  {{DType::F32, {5e12, "s", "V", ""}}, {DType::BF16, {10e12, "s", "V", ""}}},
                  std::nullopt};
  d.units = {slow, tc, tc64, vec};
  d.memory = {MemorySpec{MemoryLevel::Dram, Sourced{80e9, "s", "V", ""}, Sourced{3e12, "s", "V", ""}},
              MemorySpec{MemoryLevel::L2, Sourced{50e6, "s", "V", ""}, std::nullopt}};
  return d;
}

TEST(Device, UnitIsTheFastestOfItsKindForTheDtype) {
  Device d = two_tensor_units();
  EXPECT_EQ(d.unit(UnitKind::Tensor, DType::BF16)->name, "tc");  // 100 T beats 50 T
  EXPECT_EQ(d.unit(UnitKind::Tensor, DType::F64)->name, "tc_fp64");
  EXPECT_EQ(d.unit(UnitKind::Vector, DType::BF16)->name, "simt");
  EXPECT_EQ(d.unit(UnitKind::Tensor, DType::F32), nullptr);
  EXPECT_EQ(d.unit(UnitKind::Special, DType::F32), nullptr);
}

TEST(Device, PeakIsInFlopPerSecondOrAbsent) {
  Device d = two_tensor_units();
  EXPECT_EQ(d.peak(UnitKind::Tensor, DType::BF16), 100e12);
  EXPECT_EQ(d.peak(UnitKind::Vector, DType::F32), 5e12);
  EXPECT_FALSE(d.peak(UnitKind::Vector, DType::F64).has_value());
}

TEST(Device, MemoryLevels) {
  Device d = two_tensor_units();
  EXPECT_EQ(d.dram().bandwidth->value, 3e12);
  ASSERT_NE(d.memory_level(MemoryLevel::L2), nullptr);
  EXPECT_FALSE(d.memory_level(MemoryLevel::L2)->bandwidth.has_value());
  EXPECT_EQ(d.memory_level(MemoryLevel::Smem), nullptr);
  d.memory.erase(d.memory.begin());
  EXPECT_THROW(d.dram(), InternalError);
}

TEST(Device, MemoryLevelNamesRoundTrip) {
  for (MemoryLevel l : kAllMemoryLevels) EXPECT_EQ(parse_memory_level(memory_level_name(l)), l);
  EXPECT_EQ(memory_level_name(MemoryLevel::Dram), "dram");
  EXPECT_EQ(memory_level_name(MemoryLevel::L2), "l2");
  EXPECT_EQ(parse_memory_level("L2"), std::nullopt);  // names are lower case
  EXPECT_EQ(parse_memory_level("shmem"), std::nullopt);
}

TEST(Device, UnitKindNamesRoundTrip) {
  for (UnitKind k : {UnitKind::Tensor, UnitKind::Vector, UnitKind::Special})
    EXPECT_EQ(parse_unit_kind(unit_kind_name(k)), k);
  EXPECT_EQ(unit_kind_name(UnitKind::Tensor), "tensor");
  EXPECT_FALSE(parse_unit_kind("matrix").has_value());
}

}  // namespace
}  // namespace solar::hw
