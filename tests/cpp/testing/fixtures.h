// Test fixtures shared by the module tests: synthetic devices with round rates (so expected
// times read as plain formulas) and a one-line tensor declaration.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "solar/hw/device.h"
#include "solar/ir/graph.h"

namespace solar::testing {

// Builds a hw::Device unit by unit: DeviceBuilder().tensor(BF16, 1e15).vector(F32, 1e14)
// .dram(1e12).build(). Rates in FLOP/s (ops/s), bandwidths in bytes/s, capacities in bytes.
class DeviceBuilder {
 public:
  explicit DeviceBuilder(std::string id = "SYN", std::string name = "Synthetic device") {
    device_.id = std::move(id);
    device_.name = std::move(name);
  }
  DeviceBuilder& tensor(ir::DType d, double rate) { return peak(hw::UnitKind::Tensor, "tensor_core", d, rate); }
  DeviceBuilder& vector(ir::DType d, double rate, const std::string& unit = "fp32_simt") {
    return peak(hw::UnitKind::Vector, unit, d, rate);
  }
  DeviceBuilder& special(double rate) { return peak(hw::UnitKind::Special, "mufu", ir::DType::F32, rate); }
  DeviceBuilder& memory(hw::MemoryLevel level, std::optional<double> capacity,
                        std::optional<double> bandwidth) {
    hw::MemorySpec m;
    m.level = level;
    if (capacity) m.capacity = sourced(*capacity);
    if (bandwidth) m.bandwidth = sourced(*bandwidth);
    device_.memory.push_back(std::move(m));
    return *this;
  }
  DeviceBuilder& dram(double bandwidth, double capacity = 8e10) { return memory(hw::MemoryLevel::Dram, capacity, bandwidth); }
  hw::Device build() const { return device_; }

  static hw::Sourced sourced(double v) { return hw::Sourced{v, "test", "V", ""}; }

 private:
  DeviceBuilder& peak(hw::UnitKind kind, const std::string& unit, ir::DType d, double rate) {
    hw::ComputeUnit* u = nullptr;
    for (hw::ComputeUnit& existing : device_.units)
      if (existing.kind == kind && existing.name == unit) u = &existing;
    if (u == nullptr) {
      device_.units.push_back(hw::ComputeUnit{kind, unit, {}, std::nullopt});
      u = &device_.units.back();
    }
    u->peak[d] = sourced(rate);
    return *this;
  }

  hw::Device device_;
};

// Adds a tensor to `g` and returns its id.
inline ir::TensorId add_tensor(ir::Graph& g, const std::string& name, ir::DType dtype,
                               std::vector<std::int64_t> shape, ir::Role role) {
  ir::Tensor t;
  t.name = name;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.role = role;
  return g.add_tensor(std::move(t));
}

}  // namespace solar::testing
