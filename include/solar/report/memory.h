// Whether a program's data fits a device's memory: the report's `devices.<ID>.memory` and
// the table's memory warning (docs/report-json.md, "memory").
#pragma once

#include <optional>
#include <string>

#include "solar/hw/device.h"
#include "solar/ir/graph.h"
#include "solar/util/count.h"

namespace solar::report {

// Only tensors that must exist in the device's memory are counted: graph sources (inputs,
// weights, constants: the caller holds them for the whole run) and graph outputs (returned
// to the caller). Intermediates are not: a fused kernel need never store them (a flash
// attention's score matrix), so counting them would warn about programs that do fit.
struct MemoryFit {
  // The device's DRAM capacity in bytes; nullopt when it is unpublished.
  std::optional<Count> capacity_bytes;
  // Every graph source at its stored size: what must be resident when the run starts. A
  // lower bound on the run's footprint (outputs, activations and workspace come on top;
  // outputs are left out because a state update's output is its input updated in place).
  Count footprint_bytes;
  // The largest source or output (its stored size); name "" when the graph has none.
  std::string largest_tensor;
  Count largest_tensor_bytes;
  // footprint_bytes <= capacity and largest_tensor_bytes <= capacity; nullopt when the
  // capacity is unpublished.
  std::optional<bool> fits;
};

// The footprint of `g` against `d`'s DRAM capacity. Bytes at each tensor's own width, in
// its storage format (2:4 and bitmap-sparse tensors compressed, docs/cost.md).
MemoryFit memory_fit(const ir::Graph& g, const hw::Device& d);

// The sentence the table prints and the JSON's `footprint_basis` carries.
inline constexpr const char* kFootprintBasis =
    "graph inputs, weights and constants at their stored size: a lower bound (outputs, "
    "activations and workspace come on top); largest_tensor: the largest source or output";

}  // namespace solar::report
