// A device: compute units with dense peak rates per dtype (and 2:4 structured-sparse peaks
// where the vendor publishes them), memory levels and interconnects, with sources.
//
// Units: every rate is in FLOP/s (operations per second for integer and special-function
// units), 1 MAC = 2 FLOP. `peak` is dense (no 2:4 sparsity); `sparse_2_4_peak` is the rate
// of a contraction with a 2:4-structured operand counted as vendors quote it: in
// dense-equivalent FLOP/s, the skipped zero products counted as if computed (2x dense on
// NVIDIA and AMD tensor units). Bandwidths in bytes/s, capacities in
// bytes (decimal units as vendors publish them; binary where the source is binary, e.g.
// 228 KiB of shared memory per SM). Clocks in MHz.
//
// A device has at most a few units of each kind. Units of one kind may be one physical pipe
// split by clock (H100's tensor cores run FP64 at the 1980 MHz vector clock and the other
// dtypes at 1830 MHz, so the file has `tensor_core` and `tensor_core_fp64`): treat a kind,
// not a unit, as the resource that runs concurrently with the other kinds.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "solar/hw/interconnect.h"
#include "solar/hw/sourced.h"
#include "solar/ir/dtype.h"

namespace solar::hw {

enum class UnitKind {
  Tensor,  // matrix units (tensor cores, MXU, XMX, AMX): contractions
  Vector,  // SIMT / SIMD ALUs: elementwise, reductions, non-tensor contractions
  Special, // special-function units (MUFU): exp, log, rsqrt, ...
};
std::string_view unit_kind_name(UnitKind k);  // tensor vector special
std::optional<UnitKind> parse_unit_kind(std::string_view name);

struct ComputeUnit {
  UnitKind kind = UnitKind::Vector;
  std::string name;                     // "tensor_core", "fp32_simt", "mufu", "simd_fma"
  std::map<ir::DType, Sourced> peak;    // dense FLOP/s (ops/s) per dtype it executes
  std::optional<Sourced> clock_mhz;     // the clock its peaks are quoted at, in MHz
  // 2:4 structured-sparse peak per dtype, dense-equivalent FLOP/s (ops/s); only dtypes whose
  // sparse rate is published. Tensor units only; each dtype also has a dense `peak` and
  // dense < sparse <= 2 x dense (the loader checks it). A unit without an entry for a dtype
  // runs 2:4 contractions of it at the dense peak (it does not skip the zeros).
  std::map<ir::DType, Sourced> sparse_2_4_peak;
};

// A level of the memory hierarchy, outermost first (docs/devices.md): a closed set, so that
// a typo in a device file ("L2", "shmem") is caught by the loader rather than making a level
// invisible to the bounds. Names appear only in the YAML, JSON and text forms.
enum class MemoryLevel { Dram, Llc, L3, L2, L1, Smem, Tmem, Vmem, Rf };
inline constexpr MemoryLevel kAllMemoryLevels[] = {
    MemoryLevel::Dram, MemoryLevel::Llc,  MemoryLevel::L3,   MemoryLevel::L2, MemoryLevel::L1,
    MemoryLevel::Smem, MemoryLevel::Tmem, MemoryLevel::Vmem, MemoryLevel::Rf};
std::string_view memory_level_name(MemoryLevel l);  // dram llc l3 l2 l1 smem tmem vmem rf
std::optional<MemoryLevel> parse_memory_level(std::string_view name);

// One memory level of a device and its published figures.
struct MemorySpec {
  MemoryLevel level = MemoryLevel::Dram;
  std::optional<Sourced> capacity;  // bytes (per device; per-SM values in `note`)
  std::optional<Sourced> bandwidth; // bytes/s; absent when not published
  std::string_view name() const { return memory_level_name(level); }
};

struct Device {
  std::string id;        // "H100_SXM"
  std::string name;      // "NVIDIA H100 SXM5 80GB"
  std::string vendor;
  std::string kind;      // gpu, tpu, cpu
  int num_sms = 0;       // SMs / CUs / TensorCores / CPU cores
  std::optional<Sourced> num_sms_source;  // provenance of num_sms (value == num_sms)
  std::vector<ComputeUnit> units;
  std::vector<MemorySpec> memory;  // outermost first: dram, then llc/l2, ...
  // The links that join it to other devices, where published (docs/devices.md,
  // "Interconnects"); absent for a device whose links are not in the database.
  std::optional<Interconnect> interconnect;
  std::map<std::string, std::string> sources;  // key -> URL or citation
  std::string notes;
  std::string file;      // where it was loaded from ("builtin:arch/H100_SXM.yaml", a path)

  // The fastest unit of `kind` for `dtype`; nullptr when the device has none.
  const ComputeUnit* unit(UnitKind kind, ir::DType dtype) const;
  // Peak of `kind` for `dtype` in FLOP/s, if published.
  std::optional<double> peak(UnitKind kind, ir::DType dtype) const;
  // The 2:4 structured-sparse peak of the unit `unit(kind, dtype)` picks, in dense-equivalent
  // FLOP/s; nullopt when that unit publishes none for `dtype` (or there is no such unit).
  std::optional<double> sparse_2_4_peak(UnitKind kind, ir::DType dtype) const;
  const MemorySpec* memory_level(MemoryLevel level) const;  // nullptr when the device lacks it
  const MemorySpec& dram() const;  // throws InternalError when missing (the loader rejects that)
};

}  // namespace solar::hw
