// The inverse roofline (inverse.h): what hardware a target time needs.
#include "solar/bound/inverse.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "solar/bound/sol.h"
#include "solar/util/errors.h"

namespace solar::bound {

namespace {

// A device with every unit kind publishing every dtype: the routes the math policy picks on
// it are the policy's own split of the work, free of any one device's gaps. Rates are 1, and
// the tensor unit runs 2:4 work at 2 (the largest sparse speedup a device may store), so a
// route's seconds on it are its work in dense-rate FLOP.
hw::Device every_unit_device() {
  hw::Device d;
  d.id = "inverse-roofline";
  d.name = "every unit, every dtype";
  for (hw::UnitKind kind : {hw::UnitKind::Tensor, hw::UnitKind::Vector, hw::UnitKind::Special}) {
    hw::ComputeUnit u;
    u.kind = kind;
    u.name = std::string(hw::unit_kind_name(kind));
    for (ir::DType dt : ir::kAllDTypes) {
      u.peak[dt] = hw::Sourced{1.0, "inverse", "D", ""};
      if (kind == hw::UnitKind::Tensor)
        u.sparse_2_4_peak[dt] = hw::Sourced{2.0, "inverse", "D", "2x dense"};
    }
    d.units.push_back(std::move(u));
  }
  return d;
}

std::size_t kind_index(hw::UnitKind k) {
  switch (k) {
    case hw::UnitKind::Tensor: return 0;
    case hw::UnitKind::Vector: return 1;
    case hw::UnitKind::Special: return 2;
  }
  return 0;
}

constexpr hw::UnitKind kKinds[] = {hw::UnitKind::Tensor, hw::UnitKind::Vector,
                                   hw::UnitKind::Special};

// The FLOP a 2:4 peak of 2x dense saves on the contraction MACs of dtype `dtype` of `w`
// (macs_2_4 count 1 FLOP instead of 2), 0 when its route is not a tensor unit, and the route.
struct Saving {
  Route route;
  double flops = 0;
};
Saving saving_2_4(const hw::Device& every, MathPolicy policy, const cost::Work& w,
                  ir::DType dtype) {
  std::optional<Route> r = contraction_route(every, policy, w.contraction, dtype);
  SOLAR_CHECK(r.has_value(), fmt::format("no route for {} MACs on a device with every unit",
                                         ir::dtype_name(dtype)));
  auto sp = w.macs_2_4.find(dtype);
  const double sparse = sp == w.macs_2_4.end() ? 0.0 : sp->second.to_double();
  // 1 MAC = 2 FLOP at rate 1; at the sparse route's rate 2 it takes the time of 1 FLOP.
  const double saved = 2.0 * sparse * (1 / r->flops_per_s - 1 / sparse_2_4_route(*r).flops_per_s);
  return Saving{*r, saved};
}

std::vector<KindRequirement> split_work(const cost::GraphCost& cost, MathPolicy policy,
                                        double target) {
  hw::Device every = every_unit_device();
  std::array<std::map<ir::DType, double>, 3> work;
  std::array<double, 3> saved_2_4{};  // per kind: FLOP a 2x sparse peak saves
  for (const cost::Work& w : cost.per_op) {
    if (!w.counted()) continue;
    for (const auto& [dtype, macs] : w.macs) {
      if (macs == Count(0)) continue;
      // Dense-rate FLOP: 1 MAC = 2 FLOP, less what a 2x sparse peak saves.
      const Saving s = saving_2_4(every, policy, w, dtype);
      const std::size_t k = kind_index(s.route.unit->kind);
      work[k][s.route.rate_dtype] += 2.0 * macs.to_double() - s.flops;
      saved_2_4[k] += s.flops;
    }
    for (const auto& [dtype, flops] : w.vector_flops) {
      if (flops == Count(0)) continue;
      work[kind_index(hw::UnitKind::Vector)][dtype] += flops.to_double();
    }
    if (w.special_ops != Count(0))
      work[kind_index(hw::UnitKind::Special)][ir::DType::F32] += w.special_ops.to_double();
  }
  std::vector<KindRequirement> out;
  for (hw::UnitKind kind : kKinds) {
    const auto& m = work[kind_index(kind)];
    if (m.empty()) continue;
    KindRequirement k;
    k.kind = kind;
    for (const auto& [dtype, v] : m) {
      k.work += v;
      // Special-function ops have no rate dtype (the unit's fastest rate prices them).
      if (kind != hw::UnitKind::Special) k.by_dtype.emplace_back(dtype, v);
    }
    k.min_rate = k.work / target;
    k.work_without_2_4 = k.work + saved_2_4[kind_index(kind)];
    k.min_rate_without_2_4 = k.work_without_2_4 / target;
    out.push_back(std::move(k));
  }
  return out;
}

// The traffic budget of bandwidth β over T: floor(β·T) bytes.
Count budget_of(double bandwidth, double target) {
  double b = std::floor(bandwidth * target);
  if (b >= 1.8e19) return Count(std::uint64_t{1} << 63) * Count(4);  // beyond any graph
  return Count(static_cast<std::uint64_t>(b));
}

std::string factor_text(double f) { return fmt::format("{:.3g}x", f); }

std::string verdict(const DeviceFit& d) {
  std::vector<std::string> parts;
  if (d.compute_factor > 1)
    parts.push_back(fmt::format("needs {} this device's compute ({})",
                                factor_text(d.compute_factor), d.compute_bottleneck));
  else
    parts.push_back(fmt::format("uses {} of its compute", factor_text(d.compute_factor)));
  if (d.bandwidth_factor) {
    if (*d.bandwidth_factor > 1)
      parts.push_back(fmt::format("needs {} this device's DRAM bandwidth",
                                  factor_text(*d.bandwidth_factor)));
    else
      parts.push_back(
          fmt::format("uses {} of its DRAM bandwidth", factor_text(*d.bandwidth_factor)));
  } else if (!d.dram_bandwidth) {
    parts.push_back("its DRAM bandwidth is unpublished");
  } else {
    parts.push_back("its bandwidth need at its capacity is unknown (" + d.capacity_reason + ")");
  }
  std::string head = d.status == "meets" ? "meets the target" : d.status;
  if (!d.unknown.empty()) {
    std::string left_out;
    for (const std::string& u : d.unknown) left_out += (left_out.empty() ? "" : "; ") + u;
    parts.push_back("left out (no published rate): " + left_out);
  }
  std::string body;
  for (const std::string& p : parts) body += (body.empty() ? "" : "; ") + p;
  return fmt::format("{}: {}: {}", d.device_id, head, body);
}

// Q(S) per mode, remembered: the S_min searches of several devices share most of their
// probes (the doubling phase visits the same powers of two).
class TrafficMemo {
 public:
  explicit TrafficMemo(const tiling::GraphTrafficModel& model) : model_(model) {}
  Count at(Count s, tiling::TrafficMode mode) {
    std::map<Count, Count>& m = memo_[mode == tiling::TrafficMode::Attainable ? 0 : 1];
    auto it = m.find(s);
    if (it != m.end()) return it->second;
    Count q = model_.at(s, mode).traffic_bytes;
    m.emplace(s, q);
    return q;
  }

 private:
  const tiling::GraphTrafficModel& model_;
  std::array<std::map<Count, Count>, 2> memo_;
};

std::optional<Count> search_min_capacity(TrafficMemo& memo, Count budget,
                                         tiling::TrafficMode mode) {
  auto fits = [&](Count s) { return memo.at(s, mode) <= budget; };
  if (!fits(Count(kMaxSearchBytes))) return std::nullopt;
  // Doubling from 1 KiB brackets S_min in (lo, hi]; then bisect over integer bytes.
  Count lo(0);
  Count hi(1024);
  while (!fits(hi)) {
    lo = hi;
    hi = hi * Count(2);
  }
  while (hi - lo > Count(1)) {
    Count mid(lo.to_u64() + (hi.to_u64() - lo.to_u64()) / 2);
    if (mid == Count(0) || !fits(mid))
      lo = mid;
    else
      hi = mid;
  }
  return hi;
}

}  // namespace

std::optional<Count> min_capacity(const tiling::GraphTrafficModel& model, Count budget,
                                  tiling::TrafficMode mode) {
  TrafficMemo memo(model);
  return search_min_capacity(memo, budget, mode);
}

std::vector<RidgePoint> ridge_sweep(const cost::GraphCost& cost, double target_seconds,
                                    MathPolicy policy) {
  const hw::Device every = every_unit_device();
  struct OpWork {
    double f = 0, q = 0, r = 0;
  };
  std::vector<OpWork> ops;
  double f_always = 0;  // ops with no bytes: always their compute
  double q_always = 0;  // ops with no work: always r·Q
  for (const cost::Work& w : cost.per_op) {
    if (!w.counted()) continue;
    // Dense-rate FLOP, 2:4 MACs at a sparse peak of 2x dense where their route is a tensor
    // unit (as split_work).
    double f = w.flops().to_double() + w.special_ops.to_double();
    for (const auto& [dtype, sparse] : w.macs_2_4)
      if (sparse != Count(0)) f -= saving_2_4(every, policy, w, dtype).flops;
    double q = w.bytes().to_double();
    if (q == 0) {
      f_always += f;
    } else if (f == 0) {
      q_always += q;
    } else {
      ops.push_back(OpWork{f, q, f / q});
    }
  }
  std::sort(ops.begin(), ops.end(), [](const OpWork& a, const OpWork& b) { return a.r < b.r; });
  // suffix_f[k] = Σ F of ops k.. (r_i >= r_k), prefix_q[k] = Σ Q of ops ..k-1 (r_i < r_k).
  std::vector<double> suffix_f(ops.size() + 1, 0.0);
  for (std::size_t k = ops.size(); k-- > 0;) suffix_f[k] = suffix_f[k + 1] + ops[k].f;
  std::vector<RidgePoint> out;
  double prefix_q = 0;
  for (std::size_t k = 0; k < ops.size(); ++k) {
    if (k > 0 && ops[k].r == ops[k - 1].r) {
      prefix_q += ops[k].q;  // same breakpoint: the point was already emitted
      continue;
    }
    double r = ops[k].r;
    double pi = (f_always + suffix_f[k] + r * (prefix_q + q_always)) / target_seconds;
    out.push_back(RidgePoint{r, pi, pi / r});
    prefix_q += ops[k].q;
  }
  return out;
}

InverseResult inverse_roofline(const ir::Graph& g, const cost::GraphCost& cost,
                               const tiling::GraphTrafficModel& model,
                               const std::vector<const hw::Device*>& devices,
                               const InverseOptions& options) {
  const double T = options.target_seconds;
  if (!(T > 0) || !std::isfinite(T))
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("the target time must be a positive number of seconds, got {}", T));
  if (options.bandwidth && (!(*options.bandwidth > 0) || !std::isfinite(*options.bandwidth)))
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("the bandwidth must be a positive number of bytes/s, got {}",
                                *options.bandwidth));
  SOLAR_CHECK(cost.per_op.size() == g.ops().size(), "inverse roofline: cost does not match graph");

  TrafficMemo memo(model);
  InverseResult r;
  r.target_seconds = T;
  r.mode = options.mode;
  r.policy = options.policy;
  r.compute = split_work(cost, options.policy, T);
  r.compulsory_bytes = cost.compulsory_bytes();
  r.min_bandwidth_unlimited = r.compulsory_bytes.to_double() / T;

  // β_min(S) at the ski-slope capacities and at every device's capacity.
  std::vector<Count> device_caps;
  for (const hw::Device* d : devices) {
    if (d == nullptr)
      throw UserError(UserError::Kind::BadArgument, "inverse roofline: a device in the list is null");
    OnChipCapacity c = on_chip_capacity(*d, tiling::TrafficMode::Attainable);
    if (c.bytes) device_caps.push_back(*c.bytes);
  }
  SkiSlope slope = ski_slope(g, cost, model, device_caps, options.curve_points, 0);
  std::vector<Count> caps = slope.capacities;
  std::vector<Count> att = slope.attainable, prov = slope.provable;
  for (Count c : device_caps) {
    if (std::find(caps.begin(), caps.end(), c) != caps.end()) continue;
    caps.push_back(c);
    att.push_back(model.at(c, tiling::TrafficMode::Attainable).traffic_bytes);
    prov.push_back(model.at(c, tiling::TrafficMode::Provable).traffic_bytes);
  }
  for (std::size_t i = 0; i < caps.size(); ++i)
    r.bandwidth_curve.push_back(BandwidthPoint{caps[i], att[i], prov[i], att[i].to_double() / T,
                                               prov[i].to_double() / T});
  std::stable_sort(r.bandwidth_curve.begin(), r.bandwidth_curve.end(),
                   [](const BandwidthPoint& a, const BandwidthPoint& b) {
                     return a.capacity_bytes < b.capacity_bytes;
                   });

  if (options.bandwidth) {
    CapacityRequirement cr;
    cr.bandwidth = *options.bandwidth;
    cr.budget_bytes = budget_of(cr.bandwidth, T);
    if (cr.budget_bytes < r.compulsory_bytes) {
      cr.reason = fmt::format(
          "beta*T = {} bytes is below the compulsory traffic {} bytes: no on-chip capacity "
          "can meet the target at this bandwidth",
          cr.budget_bytes.str(), r.compulsory_bytes.str());
    } else {
      cr.attainable_bytes =
          search_min_capacity(memo, cr.budget_bytes, tiling::TrafficMode::Attainable);
      cr.provable_bytes = search_min_capacity(memo, cr.budget_bytes, tiling::TrafficMode::Provable);
      cr.feasible = (options.mode == tiling::TrafficMode::Attainable ? cr.attainable_bytes
                                                                    : cr.provable_bytes)
                        .has_value();
      if (!cr.feasible)
        cr.reason = fmt::format("no capacity up to {} bytes brings the {} traffic within {} bytes",
                                kMaxSearchBytes, tiling::traffic_mode_name(options.mode),
                                cr.budget_bytes.str());
    }
    r.capacity_for_bandwidth = std::move(cr);
  }

  for (const hw::Device* d : devices) {
    DeviceFit f;
    f.device_id = d->id;
    f.device_name = d->name;
    DeviceBounds b = compute_bounds(g, cost, *d, Options{options.policy, CacheState::Cold});
    f.compute_bottleneck = "none";
    for (const Term& t : b.fused.terms) {
      if (t.memory) continue;
      if (t.seconds > f.compute_seconds) {
        f.compute_seconds = t.seconds;
        f.compute_bottleneck = t.resource;
      }
    }
    // Compute sentences, and collectives' link time (no system here); not the memory ones.
    // (Without what the sentence adds about the fused SOL, which is not this comparison's.)
    for (const std::string& s : b.fused.unknown)
      if (s.find("bytes") == std::string::npos || s.find("link time") != std::string::npos)
        f.unknown.push_back(s.substr(0, s.find("; it raises the fused SOL")));
    f.compute_factor = f.compute_seconds / T;
    f.dram_bandwidth = b.dram_bandwidth;
    OnChipCapacity c = on_chip_capacity(*d, options.mode);
    if (c.bytes) {
      f.capacity_bytes = c.bytes;
      f.traffic_bytes = memo.at(*c.bytes, options.mode);
      f.min_bandwidth = f.traffic_bytes->to_double() / T;
    } else {
      f.capacity_reason = c.reason;
    }
    if (f.dram_bandwidth) {
      f.bandwidth_factor_unlimited = r.min_bandwidth_unlimited / *f.dram_bandwidth;
      if (f.min_bandwidth) f.bandwidth_factor = *f.min_bandwidth / *f.dram_bandwidth;
      Count budget = budget_of(*f.dram_bandwidth, T);
      if (budget >= r.compulsory_bytes)
        f.min_capacity_bytes = search_min_capacity(memo, budget, options.mode);
    }
    f.meets = f.bandwidth_factor && *f.bandwidth_factor <= 1 && f.compute_factor <= 1 &&
              f.unknown.empty();
    // Work without a published rate, or a bandwidth need that cannot be computed, cannot
    // show that the device meets T (the work only adds time), nor that one whose known
    // factors are <= 1 falls short.
    bool short_on_known =
        f.compute_factor > 1 || (f.bandwidth_factor && *f.bandwidth_factor > 1);
    f.status = f.meets ? "meets" : short_on_known ? "falls short" : "undetermined";
    f.verdict = verdict(f);
    r.devices.push_back(std::move(f));
  }
  r.ridge = ridge_sweep(cost, T, options.policy);
  r.exhaustive = model.at(Count(1024), tiling::TrafficMode::Attainable).exhaustive;
  return r;
}

}  // namespace solar::bound
