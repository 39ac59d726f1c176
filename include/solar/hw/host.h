// The host CPU as a device, detected at run time (cores, vector ISA and width, FMA units,
// max clock, caches) with DRAM bandwidth from a short calibrated probe (flag M).
#pragma once

#include "solar/hw/device.h"

namespace solar::hw {

Device detect_host();

// Measured DRAM read bandwidth in bytes/s: best of several multi-threaded streaming passes
// over a buffer much larger than the last-level cache.
double probe_memory_bandwidth();

}  // namespace solar::hw
