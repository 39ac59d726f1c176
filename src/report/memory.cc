// A program's footprint against a device's DRAM capacity (include/solar/report/memory.h).
#include "solar/report/memory.h"

#include "solar/cost/work.h"

namespace solar::report {

MemoryFit memory_fit(const ir::Graph& g, const hw::Device& d) {
  MemoryFit m;
  for (const ir::Tensor& t : g.tensors()) {
    bool source = ir::is_graph_source(t.role);
    if (!source && t.role != ir::Role::Output) continue;
    Count bytes = cost::tensor_bytes(t, t.num_elements());
    if (source) m.footprint_bytes += bytes;
    if (m.largest_tensor.empty() || bytes > m.largest_tensor_bytes) {
      m.largest_tensor = t.name;
      m.largest_tensor_bytes = bytes;
    }
  }
  const hw::MemorySpec* dram = d.memory_level(hw::MemoryLevel::Dram);
  if (dram != nullptr && dram->capacity && dram->capacity->value > 0) {
    // Capacities are whole bytes in the device files (decimal GB, or binary units).
    m.capacity_bytes = Count(static_cast<std::uint64_t>(dram->capacity->value));
    m.fits = m.footprint_bytes <= *m.capacity_bytes && m.largest_tensor_bytes <= *m.capacity_bytes;
  }
  return m;
}

}  // namespace solar::report
