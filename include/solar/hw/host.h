// The host CPU as a device, detected at run time (cores, vector ISA and width, FMA units,
// max clock, caches) with DRAM bandwidth from a short calibrated probe (flag M).
//
// Detection reads Linux's /proc and /sys (other systems: Unsupported). The peaks follow from
// stated assumptions (docs/devices.md, "The host"): vector f32 = cores x FMA units x
// (vector bits / 32) x 2 FLOP x clock, FMA units per core assumed 2 on x86 (flag E). An
// assumption that overestimates a peak keeps the SOL a valid lower bound; one that
// underestimates it would not, so each one says which way it errs.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "solar/hw/device.h"

namespace solar::hw {

// Detects the host: host_device(read_host_facts()). The bandwidth probe runs once per
// process. Throws Unsupported on systems other than Linux.
Device detect_host();

// Measured DRAM read bandwidth in bytes/s: best of several multi-threaded streaming passes
// over a buffer much larger than the last-level cache. Runs once per process (cached).
double probe_memory_bandwidth();

// How probe_memory_bandwidth() measured (for the note of the DRAM bandwidth).
struct MemoryProbe {
  double bytes_per_s = 0;
  int passes = 0;                 // timed passes; the best one is kept
  std::uint64_t buffer_bytes = 0; // >= 4 x last-level cache and >= 256 MiB (unless memory is short)
  int threads = 0;                // one per physical core
  double seconds = 0;             // the whole probe, allocation included
  std::string date;               // YYYY-MM-DD, local time
  std::string caveat;             // why the buffer is smaller than the rule, if it is
};
const MemoryProbe& memory_probe();  // runs the probe on first call

// The fastest core clock observed, in MHz: one thread times dependent chains of
// instructions whose latency in cycles is fixed by the ISA implementation (64-bit register
// add: 1 cycle, 64-bit imul: 3 cycles on x86-64 cores), after a warm-up that lets turbo
// ramp, best of several runs. Where an implementation executes a chain faster than that
// latency the estimate errs high, which keeps peaks upper bounds. x86-64 only (nullopt
// elsewhere). Runs once per process (cached).
struct ClockProbe {
  double mhz = 0;
  double add_chain_mhz = 0;   // from the add chain
  double imul_chain_mhz = 0;  // from the imul chain
  int runs = 0;               // timed runs of each chain
};
std::optional<ClockProbe> clock_probe();

// What detect_host() reads from the system, kept apart from the formulas in host_device()
// so that those are testable on a described machine. Every value is Sourced: its source is
// a key of `sources`, flag M when read on this machine, E when assumed.
struct HostFacts {
  std::string model_name;     // "Intel(R) Xeon(R) Platinum 8480+"
  std::string vendor;         // "Intel", "AMD", else the raw vendor string
  std::string arch;           // "x86_64", "aarch64"
  int x86_family = 0;         // /proc/cpuinfo "cpu family" (AMD Zen 4 = 25); 0 when unknown
  Sourced cores;              // physical cores
  std::set<std::string> flags;        // ISA flags (/proc/cpuinfo "flags" or "Features")
  std::optional<Sourced> clock_mhz;   // max clock in MHz
  std::optional<Sourced> l1d, l2, l3; // device-total capacities in bytes
  std::optional<Sourced> dram_capacity;   // bytes
  std::optional<Sourced> dram_bandwidth;  // bytes/s
  std::map<std::string, std::string> sources;
  std::string notes;                  // caveats found while reading
};
HostFacts read_host_facts();  // Linux only; runs the bandwidth probe (once per process)

// The host device for `facts`: units `simd_fma` (vector) and `amx` (tensor, when the AMX
// flags are present), memory dram, l3, l2, l1. No special-function unit: exp, log, ... run
// on the vector unit, and the notes say so.
Device host_device(const HostFacts& facts);

}  // namespace solar::hw
