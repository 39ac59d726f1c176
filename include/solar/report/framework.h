// The framework-kernel level (docs/bounds.md, "Framework kernels"): the program as its
// framework runs it eagerly, one kernel per framework op, each fused inside.
//
// Semantics
// - A framework kernel is a maximal run of consecutive live ops (graph order; dead ops are
//   skipped) whose origins agree in file, line, framework op and module: the ops one aten op,
//   one jaxpr equation or custom call, one loop-language statement or one graph-file op
//   lowered to. Two calls of one op on one line back to back fall into one kernel: the level
//   stays a lower bound, only less tight there.
// - Each kernel is bounded with the fused level's rules: max(each compute resource's summed
//   seconds, the bytes crossing the kernel's boundary over the DRAM bandwidth), and never
//   above the sum of its ops' per-op rooflines (a kernel is at least as fast as its ops run
//   apart). The level is the sum over kernels, at least the fused SOL:
//   unfused >= framework >= fused on every graph.
// - Seconds are seconds; work of unknown rate is left out as in the other levels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "solar/bound/sol.h"

namespace solar::report {

struct Report;

// One framework kernel: the ops its framework op lowered to.
struct FrameworkKernel {
  std::vector<std::uint32_t> ops;  // live op ids, graph order
  std::string op;                  // the framework op ("aten::native_layer_norm.default")
  std::string module;              // the module path of its origin; "" when none
  bool free = true;                // every op a free view (no work, no bytes): no launch
};

// The framework kernels of r's graph, in graph order.
std::vector<FrameworkKernel> framework_kernels(const Report& r);

// The framework-kernel level on one device.
struct FrameworkLevel {
  double seconds = 0;      // the sum over kernels (at least the fused SOL)
  // The resource that bounds the kernels carrying the most time (kernel seconds grouped by
  // each kernel's bottleneck); "none" when the level is 0.
  std::string bottleneck;
  std::vector<bound::Term> terms;    // per resource, summed over kernels; largest first
  std::vector<std::string> unknown;  // work of unknown rate left out (the unfused level's)
  std::size_t kernels = 0;           // kernels that are not free views
  std::vector<double> kernel_seconds;  // parallel to Report::kernels
};

// The level on every device of `r`, from r.kernels (parallel to r.devices).
std::vector<FrameworkLevel> framework_levels(const Report& r);

}  // namespace solar::report
