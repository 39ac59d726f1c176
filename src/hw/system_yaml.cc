// parse_system_yaml: the strict reader of schema solar.system.v1 (docs/parallel.md).
//
// Every check fails with UserError(Parse) at the file and line of the offending node, as the
// device reader does.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "link_yaml.h"
#include "solar/hw/system.h"
#include "yaml_reader.h"

namespace solar::hw {
namespace {

using namespace yaml;  // NOLINT: the shared reader's helpers (src/hw/yaml_reader.h)

constexpr std::string_view kSchema = "solar.system.v1";

bool parse_bool(const Reader& r, const YAML::Node& n, const std::string& what) {
  if (n.IsScalar() && (n.Scalar() == "true" || n.Scalar() == "false")) return n.Scalar() == "true";
  r.fail(n.Mark(), fmt::format("{}: expected true or false", what));
}

// `torus: {dims: [4, 4, 4], wraparound: true | [true, true, false]}`.
void parse_torus(const Reader& r, const YAML::Node& node, const std::string& what,
                 ScaleUpDomain& d) {
  static constexpr std::string_view kKeys[] = {"dims", "wraparound"};
  Fields f(r, node, what, kKeys);
  const YAML::Node& dims = f.require("dims", " (the extent of each axis, e.g. [4, 4, 4])");
  if (!dims.IsSequence() || dims.size() == 0 || dims.size() > 3)
    r.fail(dims.Mark(), what + ": dims must list the extent of 1 to 3 axes, e.g. [4, 4, 4]");
  for (size_t i = 0; i < dims.size(); ++i)
    d.torus_dims.push_back(parse_int(r, dims[i], fmt::format("{}: dims[{}]", what, i), 1));
  const YAML::Node& wrap = f.require("wraparound", " (true, false, or one per axis)");
  if (wrap.IsSequence()) {
    if (wrap.size() != dims.size())
      r.fail(wrap.Mark(), fmt::format("{}: wraparound lists {} axes, dims {}", what, wrap.size(),
                                      dims.size()));
    for (size_t i = 0; i < wrap.size(); ++i)
      d.wraparound.push_back(parse_bool(r, wrap[i], fmt::format("{}: wraparound[{}]", what, i)));
  } else {
    d.wraparound.assign(dims.size(), parse_bool(r, wrap, what + ": wraparound"));
  }
}

ScaleUpDomain parse_domain(const Reader& r, const YAML::Node& node) {
  std::vector<std::string_view> keys(std::begin(kScaleUpCommonKeys), std::end(kScaleUpCommonKeys));
  keys.insert(keys.end(), {"devices", "torus"});
  Fields f(r, node, "scale_up", keys);
  ScaleUpDomain d;
  d.link = parse_scale_up_link(r, f);
  const Fields::Entry* devices = f.find("devices");
  if (devices != nullptr) d.devices = parse_int(r, devices->value, "scale_up: devices", 1);
  if (const Fields::Entry* torus = f.find("torus")) {
    if (d.link.topology != Topology::Torus)
      r.fail(torus->key_node.Mark(), fmt::format("scale_up: 'torus' describes a torus, not a {} "
                                                 "domain", topology_name(d.link.topology)));
    parse_torus(r, torus->value, "scale_up: torus", d);
    int product = 1;
    for (int e : d.torus_dims) product *= e;
    if (devices != nullptr && d.devices != product)
      r.fail(devices->value.Mark(),
             fmt::format("scale_up: devices {} is not the torus's {} (the product of its dims)",
                         d.devices, product));
    d.devices = product;
    // Each axis gives a device two links (one each way round).
    const double links = 2.0 * static_cast<double>(d.torus_dims.size());
    if (d.link.link_bandwidth->value * links > d.link.bandwidth.value * (1 + 1e-9))
      r.fail(f.find("link_bandwidth")->value.Mark(),
             fmt::format("scale_up: {} links x link_bandwidth {:.6g} GB/s is more than the "
                         "device's bandwidth {:.6g} GB/s", links,
                         d.link.link_bandwidth->value / 1e9, d.link.bandwidth.value / 1e9));
  } else if (d.link.topology == Topology::Torus) {
    r.fail(node.Mark(), "scale_up: a torus needs 'torus: {dims: [...], wraparound: ...}'");
  } else if (devices == nullptr) {
    r.fail(node.Mark(), "scale_up: missing key 'devices' (devices per scale-up domain)");
  }
  if (d.link.topology == Topology::Mesh &&
      d.link.peer_bandwidth->value * (d.devices - 1) > d.link.bandwidth.value * (1 + 1e-9))
    r.fail(devices->value.Mark(),
           fmt::format("scale_up: a mesh of {} devices needs {} x peer_bandwidth = {:.6g} GB/s, "
                       "more than the device's bandwidth {:.6g} GB/s (a mesh domain is fully "
                       "connected)", d.devices, d.devices - 1,
                       d.link.peer_bandwidth->value * (d.devices - 1) / 1e9,
                       d.link.bandwidth.value / 1e9));
  return d;
}

}  // namespace

System parse_system_yaml(std::string_view yaml_text, std::string_view file) {
  Reader r(file);
  YAML::Node root = load_document(r, yaml_text, kSchema);

  static constexpr std::string_view kKeys[] = {"schema",  "id",       "name",      "device",
                                               "nodes",   "sources",  "scale_up",  "scale_out",
                                               "notes"};
  Fields top(r, root, "system", kKeys);
  System s;
  s.file = std::string(file);

  s.id = parse_schema_and_id(r, top, kSchema);
  if (is_system_spec(s.id))
    r.fail(top.require("id").Mark(),
           fmt::format("id '{}' reads as the inline form NxDEVICE; choose another", s.id));
  s.name = top.require_string("name");
  s.device = top.require_string("device");
  s.notes = top.optional_string("notes");
  if (const Fields::Entry* nodes = top.find("nodes")) s.nodes = parse_int(r, nodes->value, "nodes", 1);

  parse_sources(r, top.require("sources"));
  s.sources = r.sources;
  s.scale_up = parse_domain(r, top.require("scale_up"));
  if (const Fields::Entry* out = top.find("scale_out"))
    s.scale_out = parse_scale_out(r, out->value, "scale_out");
  if (s.nodes > 1 && !s.scale_out)
    r.fail(top.find("nodes")->value.Mark(),
           fmt::format("nodes: {} scale-up domains need 'scale_out' (the NICs that join them)",
                       s.nodes));
  return s;
}

}  // namespace solar::hw
