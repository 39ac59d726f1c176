// The system section of the report: the first device's bounds as one rank of a system, with
// its links beside DRAM and the compute units (docs/report-json.md, "system").
#include "system.h"

#include <cmath>

#include <fmt/format.h>

#include "format.h"

namespace solar::report::detail {

namespace {

using nlohmann::json;

json number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
json optional_number(const std::optional<double>& v) { return v ? number(*v) : json(nullptr); }

// The figures of one level of one rank: what `seconds` means is the level's.
struct RankLevel {
  std::string level;  // "cache_aware" or "fused"
  double seconds = 0;
  std::optional<double> seconds_no_overlap;
  std::string bottleneck;
  const std::vector<bound::Term>* terms = nullptr;
  Count dram_bytes;
};

// The tighter level that exists: cache-aware when available (it keeps the collectives'
// buffers in DRAM), else fused.
RankLevel rank_level(const Report& r) {
  const bound::DeviceBounds& d = r.devices.front();
  if (!r.cache_aware.empty() && r.cache_aware.front().available) {
    const bound::CacheAwareBound& c = r.cache_aware.front();
    return {"cache_aware", c.seconds, c.seconds_no_overlap, c.bottleneck, &c.terms,
            c.traffic_bytes};
  }
  return {"fused", d.fused.seconds, d.fused.seconds_no_overlap, d.fused.bottleneck,
          &d.fused.terms, r.cost.compulsory_bytes()};
}

json terms_json(const std::vector<bound::Term>& terms) {
  json out = json::object();
  for (const bound::Term& t : terms) out[t.resource] = number(t.seconds);
  return out;
}

}  // namespace

json links_json(const std::vector<bound::LinkUse>& links) {
  json out = json::array();
  for (const bound::LinkUse& u : links)
    out.push_back(json{{"link", std::string(bound::link_kind_name(u.link))},
                       {"bytes", number(u.bytes)},
                       {"seconds", number(u.seconds)},
                       {"collectives", u.collectives}});
  return out;
}

json op_links_json(const std::vector<bound::LinkTerm>& links) {
  json out = json::array();
  for (const bound::LinkTerm& t : links) {
    json j{{"link", std::string(bound::link_kind_name(t.link))},
           {"bytes", number(t.bytes)},
           {"bandwidth", number(t.bandwidth)},
           {"seconds", number(t.seconds)},
           {"algorithm", t.algorithm}};
    if (t.implemented_bytes) j["implemented_bytes"] = number(*t.implemented_bytes);
    if (t.latency_seconds) j["latency_seconds"] = number(*t.latency_seconds);
    out.push_back(std::move(j));
  }
  return out;
}

json comm_bytes_json(const cost::Work& w) {
  json out = json::object();
  for (const auto& [kind, bytes] : w.comm_bytes)
    out[std::string(ir::collective_kind_name(kind))] = count_json(bytes);
  return out;
}

json system_json(const Report& r) {
  const hw::System& s = *r.system;
  const bound::DeviceBounds& d = r.devices.front();
  const RankLevel level = rank_level(r);
  json bytes = json::object();
  bytes["dram"] = count_json(level.dram_bytes);
  for (const bound::LinkUse& u : d.links)
    bytes[std::string(bound::link_kind_name(u.link))] = number(u.bytes);
  json rank{{"graph", r.graph->name},
            {"level", level.level},
            {"seconds", number(level.seconds)},
            {"seconds_no_overlap", optional_number(level.seconds_no_overlap)},
            {"bottleneck", level.bottleneck},
            {"latency_seconds", optional_number(d.fused.latency_seconds)},
            {"bytes", std::move(bytes)},
            {"seconds_by_resource", terms_json(*level.terms)},
            {"links", links_json(d.links)},
            {"fused", json{{"seconds", number(d.fused.seconds)},
                           {"seconds_no_overlap", optional_number(d.fused.seconds_no_overlap)},
                           {"bottleneck", d.fused.bottleneck}}}};
  // One rank graph: the system's step is its time (a plan's slowest rank's, when plans give
  // several).
  json out{{"id", s.id},
           {"name", s.name},
           {"device", s.device},
           {"nodes", s.nodes},
           {"devices_per_node", s.scale_up.devices},
           {"devices", s.devices()},
           {"plan", nullptr},
           {"level", level.level},
           {"seconds", number(level.seconds)},
           {"seconds_no_overlap", optional_number(level.seconds_no_overlap)},
           {"bottleneck", level.bottleneck},
           {"latency_seconds", optional_number(d.fused.latency_seconds)},
           {"ranks", json::array({std::move(rank)})}};
  return out;
}

std::string system_rows(const Report& r) {
  if (!r.system || r.devices.empty()) return "";
  const hw::System& s = *r.system;
  const bound::DeviceBounds& d = r.devices.front();
  std::string out = fmt::format(
      "\nsystem {}: {} x {} ({} node{} of {}), one rank's graph; links are resources beside "
      "DRAM and compute\n",
      s.id, s.devices(), s.device, s.nodes, s.nodes == 1 ? "" : "s", s.scale_up.devices);
  auto row = [&](std::string_view name, double overlap, const std::optional<double>& no_overlap,
                 const std::string& bottleneck) {
    out += fmt::format("  {:<12} {:>12} overlapped  {:>12} not overlapped  bottleneck {}\n", name,
                       human_seconds(overlap),
                       no_overlap ? human_seconds(*no_overlap) : std::string("-"), bottleneck);
  };
  row("fused", d.fused.seconds, d.fused.seconds_no_overlap, d.fused.bottleneck);
  if (!r.cache_aware.empty() && r.cache_aware.front().available) {
    const bound::CacheAwareBound& c = r.cache_aware.front();
    row("cache-aware", c.seconds, c.seconds_no_overlap, c.bottleneck);
  }
  for (const bound::LinkUse& u : d.links)
    out += fmt::format("  {:<12} {} per device per direction, {} in {} collective{}\n",
                       bound::link_kind_name(u.link), si(u.bytes, "B"), human_seconds(u.seconds),
                       u.collectives, u.collectives == 1 ? "" : "s");
  if (d.links.empty()) out += "  no collective uses a link\n";
  if (d.fused.latency_seconds)
    out += fmt::format("  latency floor {} (apart from the bounds)\n",
                       human_seconds(*d.fused.latency_seconds));
  return out;
}

}  // namespace solar::report::detail
