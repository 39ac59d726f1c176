// The link sections of device and system files: topology, per-direction rates, in-network
// reduction and published latencies, each checked against the topology it belongs to.
#include "link_yaml.h"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

namespace solar::hw::yaml {
namespace {

constexpr std::string_view kBandwidthHint =
    " (bytes/s per device per direction: half of a vendor's bidirectional figure)";

std::optional<Sourced> optional_sourced(const Reader& r, const Fields& f, std::string_view key,
                                        std::span<const Scale> scales,
                                        std::string_view hint = {}) {
  const Fields::Entry* e = f.find(key);
  if (e == nullptr) return std::nullopt;
  return parse_sourced(r, e->value, fmt::format("{}: {}", f.what(), key), scales, hint);
}

InNetworkReduction parse_reduction(const Reader& r, const YAML::Node& node,
                                   const std::string& what) {
  static constexpr std::string_view kKeys[] = {"name", "source", "flag", "note", "from_devices"};
  Fields f(r, node, what, kKeys);
  InNetworkReduction out;
  out.name = f.require_string("name");
  parse_provenance(r, f, what, out.source, out.flag, out.note);
  if (const Fields::Entry* from = f.find("from_devices"))
    out.from_devices = parse_count(r, from->value, what + ": from_devices", 2);
  return out;
}

// Rates are per device and direction, so a part can never exceed the whole.
void check_not_above(const Reader& r, const Fields& f, std::string_view part_key,
                     const Sourced& part, double factor, const Sourced& whole,
                     std::string_view why) {
  if (part.value * factor > whole.value * (1 + 1e-9))
    r.fail(f.find(part_key)->value.Mark(),
           fmt::format("{}: {} x {} = {:.6g} GB/s is more than the device's bandwidth {:.6g} "
                       "GB/s ({})", f.what(), factor, part_key, part.value * factor / 1e9,
                       whole.value / 1e9, why));
}

}  // namespace

ScaleUpLink parse_scale_up_link(const Reader& r, const Fields& f) {
  ScaleUpLink link;
  link.fabric = f.require_string("fabric");
  const YAML::Node& topo = f.require("topology", " (switched, mesh, torus or pcie)");
  std::optional<Topology> t = topo.IsScalar() ? parse_topology(topo.Scalar()) : std::nullopt;
  if (!t)
    r.fail(topo.Mark(), fmt::format("{}: topology must be switched, mesh, torus or pcie",
                                    f.what()));
  link.topology = *t;
  link.bandwidth = parse_sourced(r, f.require("bandwidth"), f.what() + ": bandwidth",
                                 kBandwidthScales, kBandwidthHint);
  if (const Fields::Entry* links = f.find("links"))
    link.links = parse_count(r, links->value, f.what() + ": links", 1);
  link.peer_bandwidth = optional_sourced(r, f, "peer_bandwidth", kBandwidthScales, kBandwidthHint);
  link.link_bandwidth = optional_sourced(r, f, "link_bandwidth", kBandwidthScales, kBandwidthHint);
  link.latency = optional_sourced(r, f, "latency", kLatencyScales);

  const std::string_view name = topology_name(link.topology);
  if (link.topology == Topology::Mesh && !link.peer_bandwidth)
    r.fail(f.node().Mark(), fmt::format("{}: a mesh needs 'peer_bandwidth' (bytes/s per "
                                        "direction to any one peer)", f.what()));
  if (link.topology != Topology::Mesh && link.peer_bandwidth)
    r.fail(f.find("peer_bandwidth")->key_node.Mark(),
           fmt::format("{}: 'peer_bandwidth' is for a mesh, not a {} domain", f.what(), name));
  if (link.topology == Topology::Torus && !link.link_bandwidth)
    r.fail(f.node().Mark(), fmt::format("{}: a torus needs 'link_bandwidth' (bytes/s per "
                                        "direction of one link)", f.what()));
  if (link.topology != Topology::Torus && link.link_bandwidth)
    r.fail(f.find("link_bandwidth")->key_node.Mark(),
           fmt::format("{}: 'link_bandwidth' is for a torus, not a {} domain", f.what(), name));
  if (link.peer_bandwidth)
    check_not_above(r, f, "peer_bandwidth", *link.peer_bandwidth, 1, link.bandwidth,
                    "one peer's share of it");
  if (link.link_bandwidth)
    check_not_above(r, f, "link_bandwidth", *link.link_bandwidth, 1, link.bandwidth,
                    "one link's share of it");
  if (const Fields::Entry* red = f.find("in_network_reduction")) {
    if (link.topology != Topology::Switched)
      r.fail(red->key_node.Mark(),
             fmt::format("{}: 'in_network_reduction' needs a switch, and a {} domain has none",
                         f.what(), name));
    link.reduction = parse_reduction(r, red->value, f.what() + ": in_network_reduction");
  }
  return link;
}

ScaleOutLink parse_scale_out(const Reader& r, const YAML::Node& node, const std::string& what) {
  static constexpr std::string_view kKeys[] = {"fabric", "bandwidth", "in_network_reduction",
                                               "latency"};
  Fields f(r, node, what, kKeys);
  ScaleOutLink out;
  out.fabric = f.require_string("fabric");
  out.bandwidth = parse_sourced(r, f.require("bandwidth"), what + ": bandwidth", kBandwidthScales,
                                kBandwidthHint);
  if (const Fields::Entry* red = f.find("in_network_reduction"))
    out.reduction = parse_reduction(r, red->value, what + ": in_network_reduction");
  out.latency = optional_sourced(r, f, "latency", kLatencyScales);
  return out;
}

Interconnect parse_interconnect(const Reader& r, const YAML::Node& node) {
  static constexpr std::string_view kKeys[] = {"scale_up", "scale_out"};
  Fields top(r, node, "interconnect", kKeys);
  Interconnect out;
  if (const Fields::Entry* up = top.find("scale_up")) {
    std::vector<std::string_view> keys(std::begin(kScaleUpCommonKeys),
                                       std::end(kScaleUpCommonKeys));
    keys.insert(keys.end(), {"max_devices", "torus"});
    Fields f(r, up->value, "interconnect: scale_up", keys);
    DeviceScaleUp s;
    s.link = parse_scale_up_link(r, f);
    if (const Fields::Entry* max = f.find("max_devices"))
      s.max_devices = parse_count(r, max->value, f.what() + ": max_devices", 1);
    if (const Fields::Entry* torus = f.find("torus")) {
      if (s.link.topology != Topology::Torus)
        r.fail(torus->key_node.Mark(),
               fmt::format("{}: 'torus' describes a torus, not a {} domain", f.what(),
                           topology_name(s.link.topology)));
      static constexpr std::string_view kTorusKeys[] = {"axes", "wraparound_from",
                                                        "wraparound_scope"};
      Fields t(r, torus->value, f.what() + ": torus", kTorusKeys);
      s.torus_axes = parse_count(r, t.require("axes"), t.what() + ": axes", 1);
      if (const Fields::Entry* from = t.find("wraparound_from"))
        s.wraparound_from = parse_count(r, from->value, t.what() + ": wraparound_from", 2);
      if (const Fields::Entry* scope = t.find("wraparound_scope")) {
        std::optional<WrapScope> w =
            scope->value.IsScalar() ? parse_wrap_scope(scope->value.Scalar()) : std::nullopt;
        if (!w) r.fail(scope->value.Mark(), t.what() + ": wraparound_scope must be axis or slice");
        s.wraparound_scope = *w;
      }
      // Each axis gives a device two links (one each way round); more would contradict the rate.
      check_not_above(r, f, "link_bandwidth", *s.link.link_bandwidth, 2 * s.torus_axes->value,
                      s.link.bandwidth, "two links per torus axis");
    } else if (s.link.topology == Topology::Torus) {
      r.fail(f.node().Mark(), fmt::format("{}: a torus needs 'torus: {{axes: ...}}' (the number "
                                          "of axes, sourced)", f.what()));
    }
    if (s.link.topology == Topology::Mesh && s.max_devices)
      check_not_above(r, f, "peer_bandwidth", *s.link.peer_bandwidth, s.max_devices->value - 1,
                      s.link.bandwidth, "a fully connected mesh of max_devices");
    out.scale_up = std::move(s);
  }
  if (const Fields::Entry* so = top.find("scale_out"))
    out.scale_out = parse_scale_out(r, so->value, "interconnect: scale_out");
  if (!out.scale_up && !out.scale_out)
    r.fail(node.Mark(), "interconnect: give scale_up, scale_out or both");
  return out;
}

}  // namespace solar::hw::yaml
