#include "solar/hw/device.h"

#include "solar/util/errors.h"

namespace solar::hw {

std::string_view unit_kind_name(UnitKind k) {
  switch (k) {
    case UnitKind::Tensor: return "tensor";
    case UnitKind::Vector: return "vector";
    case UnitKind::Special: return "special";
  }
  SOLAR_UNREACHABLE("bad UnitKind");
}

std::optional<UnitKind> parse_unit_kind(std::string_view name) {
  for (UnitKind k : {UnitKind::Tensor, UnitKind::Vector, UnitKind::Special})
    if (unit_kind_name(k) == name) return k;
  return std::nullopt;
}

std::string_view memory_level_name(MemoryLevel l) {
  switch (l) {
    case MemoryLevel::Dram: return "dram";
    case MemoryLevel::Llc: return "llc";
    case MemoryLevel::L3: return "l3";
    case MemoryLevel::L2: return "l2";
    case MemoryLevel::L1: return "l1";
    case MemoryLevel::Smem: return "smem";
    case MemoryLevel::Tmem: return "tmem";
    case MemoryLevel::Vmem: return "vmem";
    case MemoryLevel::Rf: return "rf";
  }
  SOLAR_UNREACHABLE("bad MemoryLevel");
}

std::optional<MemoryLevel> parse_memory_level(std::string_view name) {
  for (MemoryLevel l : kAllMemoryLevels)
    if (memory_level_name(l) == name) return l;
  return std::nullopt;
}

const ComputeUnit* Device::unit(UnitKind kind, ir::DType dtype) const {
  const ComputeUnit* best = nullptr;
  double best_rate = 0;
  for (const ComputeUnit& u : units) {
    if (u.kind != kind) continue;
    auto it = u.peak.find(dtype);
    if (it == u.peak.end()) continue;
    if (best == nullptr || it->second.value > best_rate) {
      best = &u;
      best_rate = it->second.value;
    }
  }
  return best;
}

std::optional<double> Device::peak(UnitKind kind, ir::DType dtype) const {
  const ComputeUnit* u = unit(kind, dtype);
  if (u == nullptr) return std::nullopt;
  return u->peak.at(dtype).value;
}

std::optional<double> Device::sparse_2_4_peak(UnitKind kind, ir::DType dtype) const {
  const ComputeUnit* u = unit(kind, dtype);
  if (u == nullptr) return std::nullopt;
  auto it = u->sparse_2_4_peak.find(dtype);
  if (it == u->sparse_2_4_peak.end()) return std::nullopt;
  return it->second.value;
}

const MemorySpec* Device::memory_level(MemoryLevel level) const {
  for (const MemorySpec& m : memory)
    if (m.level == level) return &m;
  return nullptr;
}

const MemorySpec& Device::dram() const {
  const MemorySpec* m = memory_level(MemoryLevel::Dram);
  SOLAR_CHECK(m != nullptr && m->bandwidth.has_value(),
              "device '" + id + "' has no dram level with a bandwidth");
  return *m;
}

}  // namespace solar::hw
