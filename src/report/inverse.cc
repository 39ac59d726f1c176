// The inverse roofline's writers: "solar.inverse.v1" JSON and the readable text of
// `solar inverse` (docs/inverse-roofline.md).
#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "format.h"
#include "solar/report/report.h"
#include "solar/util/errors.h"

namespace solar::report {

namespace {

using detail::count_json;
using nlohmann::json;

json number(double v) {
  if (!std::isfinite(v)) return json(nullptr);
  return json(v);
}

json opt(const std::optional<double>& v) { return v ? number(*v) : json(nullptr); }
json opt(const std::optional<Count>& v) { return v ? count_json(*v) : json(nullptr); }

std::string unit_of(hw::UnitKind k) { return k == hw::UnitKind::Special ? "op" : "FLOP"; }

std::string rate(double bytes_per_s) { return detail::si(bytes_per_s, "B/s"); }

// The factor that decides a device's verdict: the larger of its known factors.
double limiting_factor(const bound::DeviceFit& d) {
  return std::max(d.compute_factor, d.bandwidth_factor.value_or(0));
}

// Devices best first: those that meet T, then the undetermined, then those that fall short,
// each by its limiting factor (the most headroom, or the least shortfall, first).
std::vector<const bound::DeviceFit*> by_verdict(const std::vector<bound::DeviceFit>& devices) {
  auto rank = [](const bound::DeviceFit& d) {
    return d.meets ? 0 : d.status == "falls short" ? 2 : 1;
  };
  std::vector<const bound::DeviceFit*> out;
  for (const bound::DeviceFit& d : devices) out.push_back(&d);
  std::stable_sort(out.begin(), out.end(),
                   [&](const bound::DeviceFit* a, const bound::DeviceFit* b) {
                     if (rank(*a) != rank(*b)) return rank(*a) < rank(*b);
                     return limiting_factor(*a) < limiting_factor(*b);
                   });
  return out;
}

// The verdict cell: the status with its margin or what falls short, once.
std::string verdict_cell(const bound::DeviceFit& d) {
  auto f = [](double x) { return fmt::format("{:.3g}x", x); };
  if (d.meets) return fmt::format("meets ({} headroom)", f(1 / limiting_factor(d)));
  std::vector<std::string> short_on;
  if (d.compute_factor > 1) short_on.push_back(f(d.compute_factor) + " compute (" +
                                               d.compute_bottleneck + ")");
  if (d.bandwidth_factor && *d.bandwidth_factor > 1)
    short_on.push_back(f(*d.bandwidth_factor) + " DRAM bandwidth");
  std::string out = d.status;
  for (std::size_t i = 0; i < short_on.size(); ++i)
    out += (i == 0 ? ": needs " : " and ") + short_on[i];
  return out;
}

// Why a device's compute or bandwidth factor is absent or only a part ("" when both are whole).
std::string missing_factors(const bound::DeviceFit& d) {
  std::vector<std::string> why;
  if (!d.unknown.empty()) {
    std::string left_out;
    for (const std::string& u : d.unknown) left_out += (left_out.empty() ? "" : "; ") + u;
    why.push_back(fmt::format("compute factor {}: left out (no published rate): {}",
                              d.compute_seconds > 0 ? "is for the rest of the work" : "absent",
                              left_out));
  }
  if (!d.bandwidth_factor)
    why.push_back("bandwidth factor absent: " + (d.dram_bandwidth
                                                     ? "its need at its capacity is unknown (" +
                                                           d.capacity_reason + ")"
                                                     : std::string("its DRAM bandwidth is "
                                                                   "unpublished")));
  std::string out;
  for (const std::string& w : why) out += (out.empty() ? "" : "; ") + w;
  return out;
}

// One row per device, best first, each verdict once; then why any factor is absent.
std::string device_rows(const bound::InverseResult& r) {
  std::string out =
      "\ndevices, best first (factor = needed / available; above 1 falls short):\n";
  out += fmt::format("  {:<14}  {:>9}  {:>10}  {:>12}  {:>12}  {:>9}  {}\n", "device", "compute",
                     "S (chip)", "beta_min(S)", "DRAM bw", "bandwidth", "verdict");
  std::vector<std::string> notes;
  for (const bound::DeviceFit* d : by_verdict(r.devices)) {
    // No factor is printed for compute the device has no rate for (never "0x"); ">=" when
    // some of the work is left out (the factor is for the rest).
    std::string compute = !d->unknown.empty() && !(d->compute_seconds > 0)
                              ? "-"
                              : fmt::format("{}{:.3g}x", d->unknown.empty() ? "" : ">=",
                                            d->compute_factor);
    out += fmt::format("  {:<14}  {:>9}  {:>10}  {:>12}  {:>12}  {:>9}  {}\n", d->device_id,
                       compute, d->capacity_bytes ? detail::si(*d->capacity_bytes, "B") : "-",
                       d->min_bandwidth ? rate(*d->min_bandwidth) : "-",
                       d->dram_bandwidth ? rate(*d->dram_bandwidth) : "-",
                       d->bandwidth_factor ? fmt::format("{:.3g}x", *d->bandwidth_factor) : "-",
                       verdict_cell(*d));
    if (std::string why = missing_factors(*d); !why.empty())
      notes.push_back(fmt::format("  {}: {}\n", d->device_id, why));
  }
  for (const std::string& n : notes) out += n;
  return out;
}

}  // namespace

json inverse_to_json(const ir::Graph& g, const bound::InverseResult& r) {
  json j;
  j["schema"] = kInverseSchema;
  j["conventions"] = {
      {"mac", "1 MAC = 2 FLOP"},
      {"rates", "FLOP/s (special-function units: ops/s) and bytes/s, decimal; capacities and "
                "traffic in bytes"},
      {"factors", "needed / available: above 1 the device falls short by that factor, below 1 "
                  "it clears the target"},
  };
  j["program"] = {{"name", g.name}, {"frontend", g.frontend}, {"source", g.source}};
  j["target_seconds"] = number(r.target_seconds);
  j["target_rate_hz"] = number(1.0 / r.target_seconds);
  j["mode"] = std::string(tiling::traffic_mode_name(r.mode));
  j["policy"] = std::string(bound::policy_name(r.policy));
  j["exhaustive"] = r.exhaustive;
  json compute = json::object();
  for (const bound::KindRequirement& k : r.compute) {
    json by = json::object();
    for (const auto& [dtype, work] : k.by_dtype)
      by[std::string(ir::dtype_name(dtype))] = {{"work", number(work)},
                                                {"min_rate", number(work / r.target_seconds)}};
    compute[std::string(hw::unit_kind_name(k.kind))] = {
        {"work", number(k.work)},
        {"unit", unit_of(k.kind)},
        {"min_rate", number(k.min_rate)},
        {"work_without_2_4", number(k.work_without_2_4)},
        {"min_rate_without_2_4", number(k.min_rate_without_2_4)},
        {"by_dtype", std::move(by)}};
  }
  j["min_compute"] = std::move(compute);
  j["compulsory_bytes"] = count_json(r.compulsory_bytes);
  j["min_bandwidth_unlimited_capacity"] = number(r.min_bandwidth_unlimited);
  json curve = json::array();
  for (const bound::BandwidthPoint& p : r.bandwidth_curve)
    curve.push_back({{"capacity_bytes", count_json(p.capacity_bytes)},
                     {"attainable_traffic_bytes", count_json(p.attainable_bytes)},
                     {"provable_traffic_bytes", count_json(p.provable_bytes)},
                     {"attainable_min_bandwidth", number(p.attainable_bandwidth)},
                     {"provable_min_bandwidth", number(p.provable_bandwidth)}});
  j["min_bandwidth_curve"] = std::move(curve);
  if (r.capacity_for_bandwidth) {
    const bound::CapacityRequirement& c = *r.capacity_for_bandwidth;
    j["min_capacity"] = {{"bandwidth", number(c.bandwidth)},
                         {"budget_bytes", count_json(c.budget_bytes)},
                         {"feasible", c.feasible},
                         {"attainable_bytes", opt(c.attainable_bytes)},
                         {"provable_bytes", opt(c.provable_bytes)},
                         {"reason", c.reason}};
  } else {
    j["min_capacity"] = nullptr;
  }
  json devices = json::object();
  for (const bound::DeviceFit& d : r.devices)
    devices[d.device_id] = {{"name", d.device_name},
                            {"compute_seconds", number(d.compute_seconds)},
                            {"compute_bottleneck", d.compute_bottleneck},
                            {"compute_factor", number(d.compute_factor)},
                            {"unknown", d.unknown},
                            {"dram_bandwidth", opt(d.dram_bandwidth)},
                            {"capacity_bytes", opt(d.capacity_bytes)},
                            {"capacity_reason", d.capacity_reason},
                            {"traffic_bytes", opt(d.traffic_bytes)},
                            {"min_bandwidth", opt(d.min_bandwidth)},
                            {"bandwidth_factor", opt(d.bandwidth_factor)},
                            {"bandwidth_factor_unlimited_capacity", opt(d.bandwidth_factor_unlimited)},
                            {"min_capacity_bytes_at_device_bandwidth", opt(d.min_capacity_bytes)},
                            {"meets", d.meets},
                            {"status", d.status},
                            {"verdict", d.verdict}};
  j["devices"] = std::move(devices);
  json ridge = json::array();
  for (const bound::RidgePoint& p : r.ridge)
    ridge.push_back({{"ridge_flop_per_byte", number(p.ridge)},
                     {"min_rate", number(p.min_rate)},
                     {"min_bandwidth", number(p.min_bandwidth)}});
  j["per_op_ridge"] = std::move(ridge);
  return j;
}

std::string inverse_table(const ir::Graph& g, const bound::InverseResult& r) {
  std::string out = fmt::format(
      "Solar inverse roofline: {}  (target {} per run = {}; mode {}, policy {})\n", g.name,
      detail::human_seconds(r.target_seconds), detail::si(1.0 / r.target_seconds, "Hz"),
      tiling::traffic_mode_name(r.mode), bound::policy_name(r.policy));
  out += "\nminimum peak compute (work / T, 1 MAC = 2 FLOP):\n";
  if (r.compute.empty()) out += "  none: the program does no arithmetic\n";
  for (const bound::KindRequirement& k : r.compute) {
    std::string by;
    for (const auto& [dtype, work] : k.by_dtype)
      by += fmt::format("{}{} {}", by.empty() ? "" : ", ", ir::dtype_name(dtype),
                        detail::si(work, unit_of(k.kind)));
    // Special-function ops have no rate dtype: the work alone.
    if (by.empty()) by = detail::si(k.work, unit_of(k.kind));
    out += fmt::format("  {:<8} {:>14}  ({})\n", hw::unit_kind_name(k.kind),
                       detail::si(k.min_rate, unit_of(k.kind) + "/s"), by);
    if (k.work_without_2_4 != k.work)
      out += fmt::format("  {:<8} {:>14}  (with no 2:4 sparse peak; above: one of 2x "
                         "dense)\n", "",
                         detail::si(k.min_rate_without_2_4, unit_of(k.kind) + "/s"));
  }
  out += "\nminimum DRAM bandwidth beta_min(S) = Q(S) / T:\n";
  out += fmt::format("  {:>10}  {:>12}  {:>12}  {:>12}  {:>12}\n", "S", "Q attainable",
                     "beta_min", "Q provable", "beta_min");
  // Every fourth sample and the last keep the text short; the JSON has them all.
  for (std::size_t i = 0; i < r.bandwidth_curve.size(); ++i) {
    if (i % 4 != 0 && i + 1 != r.bandwidth_curve.size()) continue;
    const bound::BandwidthPoint& p = r.bandwidth_curve[i];
    out += fmt::format("  {:>10}  {:>12}  {:>12}  {:>12}  {:>12}\n",
                       detail::si(p.capacity_bytes, "B"), detail::si(p.attainable_bytes, "B"),
                       rate(p.attainable_bandwidth), detail::si(p.provable_bytes, "B"),
                       rate(p.provable_bandwidth));
  }
  out += fmt::format("  unlimited capacity: compulsory {} -> {}\n",
                     detail::si(r.compulsory_bytes, "B"), rate(r.min_bandwidth_unlimited));
  if (r.capacity_for_bandwidth) {
    const bound::CapacityRequirement& c = *r.capacity_for_bandwidth;
    // S_min = 1 byte: the traffic fits the budget at any capacity (no bound asks for memory).
    auto cap = [](const std::optional<Count>& v) {
      if (!v) return std::string("none");
      return *v == Count(1) ? std::string("any capacity") : detail::si(*v, "B");
    };
    out += fmt::format("\nminimum on-chip capacity at {} (traffic budget {}): ", rate(c.bandwidth),
                       detail::si(c.budget_bytes, "B"));
    if (!c.reason.empty() && !c.attainable_bytes && !c.provable_bytes)
      out += "INFEASIBLE: " + c.reason + "\n";
    else
      out += fmt::format("attainable {}, provable {}{}\n", cap(c.attainable_bytes),
                         cap(c.provable_bytes), c.feasible ? "" : " (" + c.reason + ")");
  }
  if (!r.devices.empty()) out += device_rows(r);
  return out;
}

}  // namespace solar::report
