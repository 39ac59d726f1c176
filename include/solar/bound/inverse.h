// The inverse roofline (docs/inverse-roofline.md): given a target
// time per run T (seconds, or 1/rate for a control loop), the least hardware that could
// meet it: minimum peak compute per unit kind, minimum DRAM bandwidth as a function of
// on-chip capacity, minimum capacity for a given bandwidth, and for each known device the
// factor by which it falls short of or clears the target.
//
// Semantics (docs/inverse-roofline.md):
// - Whole-graph roofline: T >= max(F_kind/Π_kind, Q(S)/β), so Π_min(kind) = F_kind/T and
//   β_min(S) = Q(S)/T. F_kind is the work the math policy puts on each unit kind (tensor,
//   vector, special), split as if every unit the policy may use were present; FLOP with
//   1 MAC = 2 FLOP (special: ops). Π is a dense peak: 2:4-structured MACs count 1 FLOP each,
//   as a unit whose 2:4 peak is 2x its dense one (the most a device may store) runs them;
//   the requirement without any 2:4 speedup is kept beside it.
// - S_min(β) = the least S (bytes) with Q(S) <= β·T; infeasible when β·T is below the
//   compulsory traffic (no capacity helps), or when no capacity up to kMaxSearchBytes reaches
//   it in the mapspace.
// - Device factors: compute = (the device's fused compute time)/T, bandwidth =
//   β_min(S_device)/β_device. A factor above 1 is a shortfall ("needs 19.7x this device's
//   bandwidth"); below 1 the device clears the target with 1/factor to spare.
// - Per-op ridge sweep (sequential kernels, one roof per op): T = Σ_i max(F_i/Π, Q_i/β);
//   with the ridge r = Π/β, Π(r) = Σ_i max(F_i, r·Q_i)/T and β(r) = Π(r)/r, exact at the
//   breakpoints r = F_i/Q_i and linear between them. F_i = 2·(MACs - MACs_2:4) + MACs_2:4 +
//   vector FLOPs + special ops of op i (2:4 MACs at a 2x sparse peak where the policy puts
//   them on a tensor unit, as above), Q_i its unfused bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "solar/bound/cache_aware.h"
#include "solar/bound/policy.h"
#include "solar/cost/graph_cost.h"
#include "solar/hw/device.h"
#include "solar/ir/graph.h"
#include "solar/tiling/fusion.h"
#include "solar/util/count.h"

namespace solar::bound {

// The largest capacity S_min searches (1 PiB): beyond it no real chip exists.
inline constexpr std::uint64_t kMaxSearchBytes = std::uint64_t{1} << 50;

struct InverseOptions {
  double target_seconds = 0;             // T > 0
  std::optional<double> bandwidth;       // bytes/s: also report S_min at this β
  tiling::TrafficMode mode = tiling::TrafficMode::Attainable;  // device factors' Q(S)
  MathPolicy policy = MathPolicy::PytorchDefault;
  int curve_points = 32;                 // capacities of the β_min(S) curve
};

// Work on one unit kind and the least peak that does it within T.
struct KindRequirement {
  hw::UnitKind kind = hw::UnitKind::Tensor;
  // FLOP at the dense rate (special: ops): 2:4-structured MACs count 1 FLOP each, as a unit
  // with a 2:4 peak of 2x dense runs them.
  double work = 0;
  double min_rate = 0;         // work / T, FLOP/s (special: ops/s): the least dense peak
  // The same for a unit without a 2:4 peak (every MAC 2 FLOP at the dense rate); equal to
  // work / min_rate when the program has no 2:4 work.
  double work_without_2_4 = 0;
  double min_rate_without_2_4 = 0;
  // Work per rate dtype on this kind ("bf16", "tf32" for an fp32 convolution on tensor units);
  // empty for the special kind (its ops have no rate dtype).
  std::vector<std::pair<ir::DType, double>> by_dtype;
};

struct BandwidthPoint {
  Count capacity_bytes;
  Count attainable_bytes, provable_bytes;       // Q(S) in each mode
  double attainable_bandwidth = 0, provable_bandwidth = 0;  // Q(S)/T, bytes/s
};

struct CapacityRequirement {
  double bandwidth = 0;   // β, bytes/s
  Count budget_bytes;     // floor(β·T): the traffic β can move in T
  bool feasible = false;  // some S <= kMaxSearchBytes reaches the budget (mode `mode`)
  std::optional<Count> attainable_bytes;  // S_min in the attainable mapspace
  std::optional<Count> provable_bytes;    // S_min under the provable bound (<= attainable)
  std::string reason;     // when infeasible: why
};

struct DeviceFit {
  std::string device_id, device_name;
  double compute_seconds = 0;      // the device's fused compute time (max over unit kinds)
  std::string compute_bottleneck;  // its term; "none" when there is no work
  double compute_factor = 0;       // compute_seconds / T
  std::vector<std::string> unknown;  // work the device publishes no rate for
  std::optional<double> dram_bandwidth;  // bytes/s
  std::optional<Count> capacity_bytes;   // S of cache_aware.h; nullopt: `capacity_reason`
  std::string capacity_reason;
  std::optional<Count> traffic_bytes;    // Q(S_device) in the mode
  std::optional<double> min_bandwidth;   // Q(S_device)/T, bytes/s
  std::optional<double> bandwidth_factor;  // min_bandwidth / dram_bandwidth
  // compulsory/(T·β): the bandwidth factor with unlimited on-chip memory (never above
  // bandwidth_factor).
  std::optional<double> bandwidth_factor_unlimited;
  // S_min at this device's own bandwidth (mode `mode`), when feasible.
  std::optional<Count> min_capacity_bytes;
  // Both factors known and <= 1, and no work left out for want of a rate (`unknown`: that
  // work would add time, so the device is then "undetermined" unless it falls short).
  bool meets = false;
  // "meets"; "falls short" (a known factor above 1); "undetermined" (known factors <= 1,
  // but work left out or a bandwidth factor that cannot be computed).
  std::string status;
  std::string verdict;       // one sentence: the status, the factors, the work left out
};

struct RidgePoint {
  double ridge = 0;          // r = Π/β, FLOP per byte
  double min_rate = 0;       // Π(r), FLOP/s
  double min_bandwidth = 0;  // β(r) = Π(r)/r, bytes/s
};

struct InverseResult {
  double target_seconds = 0;
  tiling::TrafficMode mode = tiling::TrafficMode::Attainable;
  MathPolicy policy = MathPolicy::PytorchDefault;
  std::vector<KindRequirement> compute;  // kinds with work: tensor, vector, special
  Count compulsory_bytes;
  double min_bandwidth_unlimited = 0;    // compulsory/T: β_min with unlimited capacity
  std::vector<BandwidthPoint> bandwidth_curve;  // the ski-slope capacities, then devices'
  std::optional<CapacityRequirement> capacity_for_bandwidth;  // with options.bandwidth
  std::vector<DeviceFit> devices;
  std::vector<RidgePoint> ridge;         // increasing r
  bool exhaustive = true;                // false when an einsum search was thinned
};

// The inverse roofline of `g` for `devices` (may be empty). Throws UserError(BadArgument)
// when T <= 0 or not finite, or the bandwidth is <= 0.
InverseResult inverse_roofline(const ir::Graph& g, const cost::GraphCost& cost,
                               const tiling::GraphTrafficModel& model,
                               const std::vector<const hw::Device*>& devices,
                               const InverseOptions& options);

// S_min(β): the least capacity (bytes) at which the model's Q(S) in `mode` is <= `budget`
// bytes; nullopt when none up to kMaxSearchBytes is. Exact: Q is non-increasing in S and
// the search is a binary search over integer bytes.
std::optional<Count> min_capacity(const tiling::GraphTrafficModel& model, Count budget,
                                  tiling::TrafficMode mode);

// The per-op ridge sweep (see above), one point per distinct breakpoint; `policy` decides
// which contractions run on tensor units (where 2:4 MACs count 1 FLOP).
std::vector<RidgePoint> ridge_sweep(const cost::GraphCost& cost, double target_seconds,
                                    MathPolicy policy = MathPolicy::PytorchDefault);

}  // namespace solar::bound
