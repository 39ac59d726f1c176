// The cache-aware fused SOL level and the ski-slope samples (cache_aware.h).
#include "solar/bound/cache_aware.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "solar/util/errors.h"

namespace solar::bound {

namespace {

// The route labels a term is made of ("fp32_simt.f32+fp32_simt.bf16" -> both).
std::vector<std::string> routes_of(const std::string& label) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    std::size_t plus = label.find('+', start);
    out.push_back(label.substr(start, plus == std::string::npos ? std::string::npos : plus - start));
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  return out;
}

// Whether an op's compute term belongs to the fused level's term `fused_label`: the fused
// term of a unit kind joins every route of that kind that priced some op, so an op's term
// (routes of one kind) shares its routes with exactly one fused term.
bool same_kind(const std::string& op_label, const std::vector<std::string>& fused_routes) {
  std::string first = routes_of(op_label).front();
  return std::find(fused_routes.begin(), fused_routes.end(), first) != fused_routes.end();
}

void sort_terms(std::vector<Term>& terms) {
  std::sort(terms.begin(), terms.end(), [](const Term& a, const Term& b) {
    if (a.seconds != b.seconds) return a.seconds > b.seconds;
    return a.resource < b.resource;
  });
}

std::string bytes_sentence(Count c) {
  return c < Count(1000000) ? c.str() : fmt::format("{:.3g}", c.to_double());
}

}  // namespace

OnChipCapacity on_chip_capacity(const hw::Device& device, tiling::TrafficMode mode) {
  OnChipCapacity c;
  Count total;
  for (const hw::MemorySpec& m : device.memory) {
    if (m.level == hw::MemoryLevel::Dram) continue;
    if (m.capacity && m.capacity->value > 0) {
      // Capacities are whole bytes in every database file; llround guards a YAML value
      // derived in floating point (kib_per_sm x SMs).
      Count bytes(static_cast<std::uint64_t>(std::llround(m.capacity->value)));
      c.levels.push_back(CapacityLevel{m.level, bytes});
      total += bytes;
    } else {
      c.unpublished.push_back(m.level);
    }
  }
  if (c.levels.empty()) {
    c.reason = fmt::format("{} publishes no on-chip memory capacity (no level other than dram "
                           "with a capacity), so no cache-aware level is computed",
                           device.id);
    return c;
  }
  if (mode == tiling::TrafficMode::Provable && !c.unpublished.empty()) {
    std::string names;
    for (hw::MemoryLevel l : c.unpublished)
      names += (names.empty() ? "" : ", ") + std::string(hw::memory_level_name(l));
    c.reason = fmt::format("{} publishes no capacity for its on-chip level(s) {}: a provable bound "
                           "at the capacity of the other levels could exceed what the chip can "
                           "do, so none is computed",
                           device.id, names);
    return c;
  }
  c.bytes = total;
  return c;
}

std::optional<std::string> why_not_cache_aware(const Options& options) {
  switch (options.cache_state) {
    case CacheState::Cold: return std::nullopt;
    case CacheState::Warm:
      return "the cache-aware level models cold DRAM traffic; in the warm state inputs may "
             "already sit on chip, which it does not model (run with --cache-state cold)";
  }
  return std::nullopt;
}

CacheAwareBound cache_aware_bound(const ir::Graph& g, const cost::GraphCost& cost,
                                  const hw::Device& device, const DeviceBounds& bounds,
                                  const tiling::GraphTrafficModel& model,
                                  tiling::TrafficMode mode) {
  SOLAR_CHECK(cost.per_op.size() == g.ops().size() && bounds.per_op.size() == g.ops().size(),
              fmt::format("graph '{}' has {} ops but its cost has {} and its bounds {}", g.name,
                          g.ops().size(), cost.per_op.size(), bounds.per_op.size()));
  CacheAwareBound cb;
  cb.mode = mode;
  if (std::optional<std::string> why = why_not_cache_aware(bounds.options)) {
    cb.reason = *why;
    return cb;
  }
  cb.capacity = on_chip_capacity(device, mode);
  if (!cb.capacity.bytes) {
    cb.reason = cb.capacity.reason;
    return cb;
  }
  const Count capacity = *cb.capacity.bytes;
  tiling::GraphTraffic q = model.at(capacity, mode);
  SOLAR_CHECK(q.op_traffic_bytes.size() == g.ops().size(),
              "graph traffic model returned a per-op split of the wrong size");
  cb.available = true;
  cb.traffic_bytes = q.traffic_bytes;
  cb.groups = std::move(q.groups);
  cb.op_traffic_bytes = std::move(q.op_traffic_bytes);
  cb.exhaustive = q.exhaustive;
  cb.detail = std::move(q.detail);

  // The fused level's compute and link terms: the whole graph's work per unit kind, and its
  // collectives' link time, are the same whatever the capacity.
  for (const Term& t : bounds.fused.terms)
    if (!t.memory) cb.terms.push_back(t);
  // The fused level's compute and link sentences carry over; its memory sentences (each about
  // "bytes", but not about link time) concern the compulsory traffic this level replaces by
  // Q(S).
  for (const std::string& s : bounds.fused.unknown)
    if (s.find("bytes") == std::string::npos || s.find("link time") != std::string::npos)
      cb.unknown.push_back(s);
  cb.ceiling = bounds.fused.ceiling;
  const std::optional<double> beta = bounds.dram_bandwidth;
  if (cb.traffic_bytes != Count(0)) {
    if (beta)
      cb.terms.push_back(
          Term::of_memory(hw::MemoryLevel::Dram, cb.traffic_bytes.to_double() / *beta));
    else
      cb.unknown.push_back(fmt::format("{} bytes of cache-aware traffic: {} publishes no DRAM "
                                       "bandwidth, so their memory time is left out",
                                       bytes_sentence(cb.traffic_bytes), device.id));
  }
  sort_terms(cb.terms);
  bool dram_bound = false;
  if (!cb.terms.empty() && cb.terms[0].seconds > 0) {
    cb.seconds = cb.terms[0].seconds;
    cb.bottleneck = cb.terms[0].resource;
    dram_bound = cb.terms[0].memory == hw::MemoryLevel::Dram;
  } else {
    cb.bottleneck = "none";
  }
  if (bounds.fused.seconds_no_overlap) {
    double local = 0, links = 0;
    for (const Term& t : cb.terms) {
      if (t.link) links += t.seconds;
      else local = std::max(local, t.seconds);
    }
    cb.seconds_no_overlap = std::max(local + links, cb.seconds);
  }
  cb.latency_seconds = bounds.fused.latency_seconds;

  // The no-fusion reference at S, op by op in graph order (the order the fused unit terms
  // were summed in, so rounding keeps cache_aware <= it).
  double no_fusion = 0;
  Count no_fusion_bytes;
  bool fits = true;
  cb.ops_at_compulsory = true;
  for (const ir::Op& op : g.ops()) {
    const cost::Work& w = cost.per_op[op.id.value];
    if (!w.counted()) continue;
    Count q_op = w.bytes();
    if (const tiling::TrafficCurve* curve = model.op_curve(op.id)) {
      std::optional<Count> at = curve->traffic_at(capacity);
      // Below the op's smallest mapping the model costs that mapping (fusion.h); so does
      // this reference, so that Q(S) <= Σ Q_op(S) stays exact.
      q_op = at ? *at : curve->points().front().traffic_bytes;
      if (!at) fits = false;
    }
    if (q_op > w.bytes()) cb.ops_at_compulsory = false;
    no_fusion_bytes += q_op;
    double t = beta ? q_op.to_double() / *beta : 0.0;
    for (const Term& term : bounds.per_op[op.id.value].terms)
      if (!term.memory) t = std::max(t, term.seconds);
    no_fusion += t;
  }
  // cache_aware <= no-fusion holds exactly in integers (Q(S) <= Σ Q_op(S)); only sums
  // rounded in different orders can put it an ulp above, which this removes.
  if (cb.seconds > no_fusion && cb.seconds <= no_fusion * (1 + 1e-12)) no_fusion = cb.seconds;
  cb.no_fusion_seconds = no_fusion;
  cb.no_fusion_traffic_bytes = no_fusion_bytes;
  if (!fits) cb.ops_at_compulsory = false;

  if (bounds.fused.seconds > 0) {
    cb.fusion_gap = bounds.unfused.seconds / bounds.fused.seconds;
    cb.tiling_gap = cb.seconds / bounds.fused.seconds;
  }

  // Each op's part of the bottleneck term.
  if (!(cb.seconds > 0)) {
    cb.share_basis = "the level is 0 s: no split";
  } else if (dram_bound) {
    Count split;
    for (Count c : cb.op_traffic_bytes) split += c;
    if (split == cb.traffic_bytes) {
      cb.op_share.assign(g.ops().size(), 0.0);
      for (std::size_t i = 0; i < cb.op_traffic_bytes.size(); ++i)
        cb.op_share[i] = cb.op_traffic_bytes[i].to_double() / cb.traffic_bytes.to_double();
      cb.share_basis = "each op's part of the cache-aware DRAM traffic Q(S)";
    } else {
      cb.share_basis =
          "DRAM-bound at a traffic no single op's share gives (the whole graph's compulsory "
          "traffic or a bound of the graph as a whole): no per-op split";
    }
  } else {
    std::vector<std::string> fused_routes = routes_of(cb.bottleneck);
    cb.op_share.assign(g.ops().size(), 0.0);
    for (const ir::Op& op : g.ops()) {
      if (!cost.per_op[op.id.value].counted()) continue;
      for (const Term& t : bounds.per_op[op.id.value].terms)
        if (!t.memory && same_kind(t.resource, fused_routes))
          cb.op_share[op.id.value] = t.seconds / cb.seconds;
    }
    cb.share_basis = fmt::format("each op's seconds on the bottleneck unit kind ({})",
                                 cb.bottleneck);
  }
  return cb;
}

SkiSlope ski_slope(const ir::Graph& g, const cost::GraphCost& cost,
                   const tiling::GraphTrafficModel& model,
                   const std::vector<Count>& extra_capacities, int points, int heaviest) {
  if (points < 2)
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("ski-slope needs at least 2 capacities, got {}", points));
  SkiSlope s;
  s.compulsory_bytes = cost.compulsory_bytes();
  const double lo = 1024;  // 1 KiB: below any real on-chip memory
  double hi = 4 * lo;
  for (Count c : extra_capacities) hi = std::max(hi, 4 * c.to_double());
  std::vector<std::pair<Count, ir::OpId>> ranked;
  for (const ir::Op& op : g.ops()) {
    const tiling::TrafficCurve* curve = model.op_curve(op.id);
    if (curve == nullptr || curve->points().empty()) continue;
    hi = std::max(hi, 2 * curve->floor().buffer_bytes.to_double());
    ranked.emplace_back(curve->points().front().traffic_bytes, op.id);
  }
  double step = std::log(hi / lo) / (points - 1);
  for (int i = 0; i < points; ++i) {
    Count c(static_cast<std::uint64_t>(std::llround(lo * std::exp(step * i))));
    if (!s.capacities.empty() && c <= s.capacities.back()) continue;
    s.capacities.push_back(c);
  }
  // One search for every capacity; the extra ones last, so that the model still remembers
  // them when the levels at those capacities are asked for.
  std::vector<Count> query = s.capacities;
  query.insert(query.end(), extra_capacities.begin(), extra_capacities.end());
  const std::vector<tiling::GraphTraffic> prov = model.at(query, tiling::TrafficMode::Provable);
  const std::vector<tiling::GraphTraffic> att = model.at(query, tiling::TrafficMode::Attainable);
  for (std::size_t k = 0; k < s.capacities.size(); ++k) {
    s.attainable.push_back(att[k].traffic_bytes);
    s.provable.push_back(prov[k].traffic_bytes);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    return a.second.value < b.second.value;
  });
  for (const auto& [traffic, id] : ranked) {
    if (static_cast<int>(s.heaviest.size()) >= heaviest) break;
    s.heaviest.push_back(SkiSlopeOp{id, model.op_curve(id)->points()});
  }
  return s;
}

}  // namespace solar::bound
