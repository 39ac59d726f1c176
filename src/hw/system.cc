// Systems: the inline form NxDEVICE built from a device's interconnect section, the built-in
// system files, and what a --system argument names.
#include "solar/hw/system.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "solar/util/errors.h"
#include "suggest.h"
#include "yaml_reader.h"

namespace solar::hw {
namespace {

using yaml::lower;

// The counts of an inline spec before the device id: "4x4x4xTPU_v5p" -> {4, 4, 4}, "TPU_v5p".
// False when `text` is not of that shape.
bool split_spec(std::string_view text, std::vector<int>& dims, std::string_view& device) {
  dims.clear();
  size_t pos = 0;
  while (true) {
    size_t digits = 0;
    while (pos + digits < text.size() && text[pos + digits] >= '0' && text[pos + digits] <= '9')
      ++digits;
    if (digits == 0 || pos + digits >= text.size()) break;
    const char sep = text[pos + digits];
    if (sep != 'x' && sep != 'X') break;
    // More than 7 digits is no count of devices; reading it would overflow.
    if (digits > 7) return false;
    dims.push_back(std::stoi(std::string(text.substr(pos, digits))));
    pos += digits + 1;
  }
  device = text.substr(pos);
  return !dims.empty() && !device.empty();
}

std::string join_dims(const std::vector<int>& dims) {
  std::string out;
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? "x" : "") + std::to_string(dims[i]);
  return out;
}

// Which axes of a torus slice of shape `dims` wrap around, by the device's rule (interconnect.h).
std::vector<bool> wraparound_of(const DeviceScaleUp& up, const std::vector<int>& dims) {
  // No published rule: every axis wraps (more links, never fewer: still a lower bound).
  if (!up.wraparound_from) return std::vector<bool>(dims.size(), true);
  const int from = static_cast<int>(up.wraparound_from->value);
  std::vector<bool> wrap;
  for (int e : dims) wrap.push_back(e % from == 0);
  switch (up.wraparound_scope) {
    case WrapScope::Axis: return wrap;
    case WrapScope::Slice: {
      const bool all = std::all_of(wrap.begin(), wrap.end(), [](bool w) { return w; });
      return std::vector<bool>(dims.size(), all);
    }
  }
  SOLAR_UNREACHABLE("bad WrapScope");
}

// The keys of `sources` that the links' numbers and claims cite.
std::map<std::string, std::string> cited_sources(const std::map<std::string, std::string>& sources,
                                                 const ScaleUpLink& up,
                                                 const std::optional<ScaleOutLink>& out) {
  std::vector<std::string> keys = {up.bandwidth.source};
  auto add = [&](const std::optional<Sourced>& n) {
    if (n) keys.push_back(n->source);
  };
  auto add_reduction = [&](const std::optional<InNetworkReduction>& r) {
    if (!r) return;
    keys.push_back(r->source);
    add(r->from_devices);
  };
  add(up.links);
  add(up.peer_bandwidth);
  add(up.link_bandwidth);
  add(up.latency);
  add_reduction(up.reduction);
  if (out) {
    keys.push_back(out->bandwidth.source);
    add(out->latency);
    add_reduction(out->reduction);
  }
  std::map<std::string, std::string> cited;
  for (const std::string& k : keys)
    if (auto it = sources.find(k); it != sources.end()) cited.insert(*it);
  return cited;
}

std::string read_system_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw UserError(UserError::Kind::Io, fmt::format("cannot read system file '{}'", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

bool is_system_spec(std::string_view text) {
  std::vector<int> dims;
  std::string_view device;
  return split_spec(text, dims, device);
}

System parse_system_spec(std::string_view spec, int nodes, const DeviceDb& devices) {
  std::vector<int> dims;
  std::string_view device_id;
  if (!split_spec(spec, dims, device_id))
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("'{}' is not of the form NxDEVICE (e.g. 8xH100_SXM)", spec));
  const Device& d = devices.get(device_id);
  auto fail = [&](const std::string& why) {
    throw UserError(UserError::Kind::BadArgument, fmt::format("system '{}': {}", spec, why));
  };
  if (!d.interconnect || !d.interconnect->scale_up)
    fail(fmt::format("device {} has no interconnect.scale_up in {}: its scale-up link is not in "
                     "the database (add the section, docs/devices.md, or describe the system "
                     "in a solar.system.v1 file, docs/parallel.md)", d.id, d.file));
  const DeviceScaleUp& up = *d.interconnect->scale_up;
  const std::string_view topology = topology_name(up.link.topology);
  for (int e : dims)
    if (e < 1) fail("every count must be at least 1");

  System s;
  if (up.link.topology == Topology::Torus) {
    const int axes = static_cast<int>(up.torus_axes->value);
    if (static_cast<int>(dims.size()) != axes)
      fail(fmt::format("{}'s scale-up is a {}-axis torus: give the slice's shape, e.g. {}x{}", d.id,
                       axes, join_dims(std::vector<int>(axes, 4)), d.id));
    s.scale_up.torus_dims = dims;
    s.scale_up.wraparound = wraparound_of(up, dims);
  } else if (dims.size() != 1) {
    fail(fmt::format("{}'s scale-up domain is {}, not a torus: give one count, e.g. 8x{}", d.id,
                     topology, d.id));
  }
  s.scale_up.devices = 1;
  for (int e : dims) s.scale_up.devices *= e;
  if (up.max_devices && s.scale_up.devices > up.max_devices->value)
    fail(fmt::format("a scale-up domain of {} has at most {:g} devices ([{}] {}); use --nodes for "
                     "more domains", d.id, up.max_devices->value, up.max_devices->flag,
                     up.max_devices->source));
  if (up.link.topology == Topology::Mesh &&
      up.link.peer_bandwidth->value * (s.scale_up.devices - 1) >
          up.link.bandwidth.value * (1 + 1e-9))
    fail(fmt::format("a mesh of {} {} needs {} peer links, more than its bandwidth allows",
                     s.scale_up.devices, d.id, s.scale_up.devices - 1));
  s.scale_up.link = up.link;
  s.scale_out = d.interconnect->scale_out;

  s.id = fmt::format("{}x{}", join_dims(dims), d.id);
  s.name = fmt::format("{} x {}", join_dims(dims), d.name);
  s.device = d.id;
  s.sources = cited_sources(d.sources, s.scale_up.link, s.scale_out);
  s.notes = fmt::format("Inline system: one {} scale-up domain of {} built from the interconnect "
                        "section of {} ({}).", topology, s.scale_up.devices, d.id, d.file);
  s.file = "inline:" + s.id;
  return with_nodes(std::move(s), nodes);
}

System with_nodes(System system, int nodes) {
  if (nodes < 1)
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("--nodes {}: a system has at least 1 node", nodes));
  if (nodes > 1 && !system.scale_out)
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("system '{}' has no scale-out link: --nodes {} needs the NICs "
                                "that join its domains ('scale_out' in a system file, "
                                "interconnect.scale_out in a device file)", system.id, nodes));
  system.nodes = nodes;
  return system;
}

SystemDb SystemDb::builtin() {
  SystemDb db;
  for (const auto& [name, text] : builtin_system_files()) {
    System s = parse_system_yaml(text, fmt::format("builtin:arch/systems/{}", name));
    if (const System* other = db.find(s.id))
      throw UserError(UserError::Kind::Parse,
                      fmt::format("duplicate system id '{}' (also defined in {})", s.id,
                                  other->file),
                      Origin{s.file, 0, {}});
    db.systems_.push_back(std::move(s));
  }
  return db;
}

const System* SystemDb::find(std::string_view id) const {
  const std::string want = lower(id);
  for (const System& s : systems_)
    if (lower(s.id) == want) return &s;
  return nullptr;
}

const System& SystemDb::get(std::string_view id) const {
  if (const System* s = find(id)) return *s;
  std::vector<std::string> known = ids();
  std::string message = fmt::format("unknown system '{}'", id);
  message += did_you_mean(suggestions(id, known));
  message += "; known systems: ";
  for (size_t i = 0; i < known.size(); ++i) message += (i ? ", " : "") + known[i];
  message += "; or give NxDEVICE (e.g. 8xH100_SXM) or a solar.system.v1 file (docs/parallel.md)";
  throw UserError(UserError::Kind::UnknownDevice, message);
}

std::vector<std::string> SystemDb::ids() const {
  std::vector<std::string> out;
  for (const System& s : systems_) out.push_back(s.id);
  std::sort(out.begin(), out.end(),
            [](const std::string& a, const std::string& b) { return lower(a) < lower(b); });
  return out;
}

System resolve_system(std::string_view arg, std::optional<int> nodes, const DeviceDb& devices,
                      const SystemDb& systems) {
  System s;
  if (arg.ends_with(".yaml") || arg.ends_with(".yml")) {
    const std::string path(arg);
    s = parse_system_yaml(read_system_file(path), path);
  } else if (is_system_spec(arg)) {
    s = parse_system_spec(arg, 1, devices);
  } else {
    s = systems.get(arg);
  }
  try {
    s.device = devices.get(s.device).id;  // the id as the database spells it
  } catch (const UserError& e) {
    throw UserError(e.kind(), fmt::format("system '{}' ({}): {}", s.id, s.file, e.message()));
  }
  return nodes ? with_nodes(std::move(s), *nodes) : s;
}

}  // namespace solar::hw
