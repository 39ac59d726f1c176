// A device: compute units with dense peak rates per dtype, memory levels, with sources.
//
// Units: every rate is in FLOP/s (operations per second for integer and special-function
// units), dense (no 2:4 sparsity), 1 MAC = 2 FLOP. Bandwidths in bytes/s, capacities in
// bytes (decimal units as vendors publish them).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "solar/ir/dtype.h"

namespace solar::hw {

// A number with where it comes from. `flag` is V (vendor), V-rev, D (derived, arithmetic
// in `note`), E (estimate) or M (measured on this machine).
struct Sourced {
  double value = 0;
  std::string source;  // a key of Device::sources, or a free-text provenance
  std::string flag;
  std::string note;
};

enum class UnitKind {
  Tensor,  // matrix units (tensor cores, MXU, XMX, AMX): contractions
  Vector,  // SIMT / SIMD ALUs: elementwise, reductions, non-tensor contractions
  Special, // special-function units (MUFU): exp, log, rsqrt, ...
};
std::string_view unit_kind_name(UnitKind k);  // tensor vector special

struct ComputeUnit {
  UnitKind kind = UnitKind::Vector;
  std::string name;                     // "tensor_core", "fp32_simt", "mufu", "avx512_fma"
  std::map<ir::DType, Sourced> peak;    // dense FLOP/s (ops/s) per dtype it executes
  std::optional<Sourced> clock_mhz;     // the clock its peaks are quoted at
};

struct MemoryLevel {
  std::string name;                 // "dram", "l2", "smem", "rf", "l3"
  std::optional<Sourced> capacity;  // bytes (per device; per-SM values in `note`)
  std::optional<Sourced> bandwidth; // bytes/s; absent when not published
};

struct Device {
  std::string id;        // "H100_SXM"
  std::string name;      // "NVIDIA H100 SXM5 80GB"
  std::string vendor;
  std::string kind;      // gpu, tpu, cpu
  int num_sms = 0;       // SMs / CUs / TensorCores / CPU cores
  std::vector<ComputeUnit> units;
  std::vector<MemoryLevel> memory;  // outermost first: dram, then l2/llc, ...
  std::map<std::string, std::string> sources;  // key -> URL or citation
  std::string notes;
  std::string file;      // where it was loaded from ("builtin:arch/H100_SXM.yaml", a path)

  // The fastest unit of `kind` for `dtype`; nullptr when the device has none.
  const ComputeUnit* unit(UnitKind kind, ir::DType dtype) const;
  // Peak of `kind` for `dtype` in FLOP/s, if published.
  std::optional<double> peak(UnitKind kind, ir::DType dtype) const;
  const MemoryLevel* memory_level(std::string_view name) const;
  const MemoryLevel& dram() const;  // throws InternalError when missing (the loader rejects that)
};

}  // namespace solar::hw
