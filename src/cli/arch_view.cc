// How `solar arch list` and `solar arch show` present devices and systems: JSON, text and
// tables.
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "solar/cli/cli.h"
#include "solar/hw/system.h"
#include "solar/ir/dtype.h"

namespace solar::cli {
namespace {

using nlohmann::json;

// `value` with a decimal SI prefix (vendors publish decimal units), 4 significant digits.
std::string si(double value, std::string_view unit) {
  static constexpr const char* kPrefixes[] = {"", "K", "M", "G", "T", "P", "E"};
  int i = 0;
  double v = value;
  while (std::abs(v) >= 1000 && i < 6) {
    v /= 1000;
    ++i;
  }
  return fmt::format("{:.4g} {}{}", v, kPrefixes[i], unit);
}

json sourced_json(const hw::Sourced& s, std::string_view unit) {
  json j = {{"value", s.value}, {"unit", unit}, {"source", s.source}, {"flag", s.flag}};
  if (!s.note.empty()) j["note"] = s.note;
  return j;
}

std::string sourced_text(const hw::Sourced& s, std::string_view unit) {
  std::string out = fmt::format("{:<16} [{}] {}", si(s.value, unit), s.flag, s.source);
  if (!s.note.empty()) out += fmt::format(" ({})", s.note);
  return out;
}

// Integer units (int8 TOPS) count operations, float units FLOPs.
std::string_view rate_unit(ir::DType d) { return ir::is_float(d) ? "FLOP/s" : "OP/s"; }

std::string peak_cell(const hw::Device& d, hw::UnitKind kind, ir::DType dtype) {
  std::optional<double> p = d.peak(kind, dtype);
  return p ? si(*p, "FLOP/s") : "-";
}

// ---- interconnects ----------------------------------------------------------------------

json reduction_json(const hw::InNetworkReduction& r) {
  json j = {{"name", r.name}, {"source", r.source}, {"flag", r.flag}};
  if (!r.note.empty()) j["note"] = r.note;
  if (r.from_devices) j["from_devices"] = sourced_json(*r.from_devices, "count");
  return j;
}

json scale_up_link_json(const hw::ScaleUpLink& l) {
  json j = {{"fabric", l.fabric},
            {"topology", hw::topology_name(l.topology)},
            {"bandwidth", sourced_json(l.bandwidth, "bytes/s")}};
  if (l.links) j["links"] = sourced_json(*l.links, "count");
  if (l.peer_bandwidth) j["peer_bandwidth"] = sourced_json(*l.peer_bandwidth, "bytes/s");
  if (l.link_bandwidth) j["link_bandwidth"] = sourced_json(*l.link_bandwidth, "bytes/s");
  if (l.reduction) j["in_network_reduction"] = reduction_json(*l.reduction);
  if (l.latency) j["latency"] = sourced_json(*l.latency, "s");
  return j;
}

json scale_out_json(const hw::ScaleOutLink& l) {
  json j = {{"fabric", l.fabric}, {"bandwidth", sourced_json(l.bandwidth, "bytes/s")}};
  if (l.reduction) j["in_network_reduction"] = reduction_json(*l.reduction);
  if (l.latency) j["latency"] = sourced_json(*l.latency, "s");
  return j;
}

json interconnect_json(const hw::Interconnect& ic) {
  json j = json::object();
  if (ic.scale_up) {
    json up = scale_up_link_json(ic.scale_up->link);
    if (ic.scale_up->max_devices) up["max_devices"] = sourced_json(*ic.scale_up->max_devices, "count");
    if (ic.scale_up->torus_axes) {
      json t = {{"axes", sourced_json(*ic.scale_up->torus_axes, "count")}};
      if (ic.scale_up->wraparound_from) {
        t["wraparound_from"] = sourced_json(*ic.scale_up->wraparound_from, "count");
        t["wraparound_scope"] = hw::wrap_scope_name(ic.scale_up->wraparound_scope);
      }
      up["torus"] = t;
    }
    j["scale_up"] = up;
  }
  if (ic.scale_out) j["scale_out"] = scale_out_json(*ic.scale_out);
  return j;
}

// A latency in microseconds (si() has no prefixes below 1).
std::string latency_text(const hw::Sourced& s) {
  hw::Sourced us = s;
  us.value *= 1e6;
  return sourced_text(us, "us");
}

// The lines of a scale-up link, indented by two spaces.
std::string scale_up_link_text(const hw::ScaleUpLink& l) {
  std::string out;
  out += fmt::format("  {:<14} {}\n", "bandwidth", sourced_text(l.bandwidth, "B/s"));
  if (l.peer_bandwidth)
    out += fmt::format("  {:<14} {}\n", "to one peer", sourced_text(*l.peer_bandwidth, "B/s"));
  if (l.link_bandwidth)
    out += fmt::format("  {:<14} {}\n", "per link", sourced_text(*l.link_bandwidth, "B/s"));
  if (l.links) out += fmt::format("  {:<14} {}\n", "links", sourced_text(*l.links, ""));
  if (l.reduction) {
    out += fmt::format("  {:<14} {} [{}] {}{}\n", "reduction", l.reduction->name, l.reduction->flag,
                       l.reduction->source,
                       l.reduction->note.empty() ? "" : " (" + l.reduction->note + ")");
    if (l.reduction->from_devices)
      out += fmt::format("  {:<14} {}\n", "  from", sourced_text(*l.reduction->from_devices, "devices"));
  }
  out += l.latency ? fmt::format("  {:<14} {}\n", "latency/hop", latency_text(*l.latency))
                   : fmt::format("  {:<14} not published\n", "latency/hop");
  return out;
}

std::string scale_out_text(const hw::ScaleOutLink& l) {
  std::string out = fmt::format("scale-out: {}\n", l.fabric);
  out += fmt::format("  {:<14} {}\n", "bandwidth", sourced_text(l.bandwidth, "B/s"));
  if (l.reduction)
    out += fmt::format("  {:<14} {} [{}] {}\n", "reduction", l.reduction->name, l.reduction->flag,
                       l.reduction->source);
  out += l.latency ? fmt::format("  {:<14} {}\n", "latency", latency_text(*l.latency))
                   : fmt::format("  {:<14} not published\n", "latency");
  return out;
}

std::string interconnect_text(const hw::Interconnect& ic) {
  std::string out = "\ninterconnect (bandwidths per device, per direction)\n";
  if (ic.scale_up) {
    const hw::DeviceScaleUp& up = *ic.scale_up;
    out += fmt::format("scale-up, {}: {}\n", hw::topology_name(up.link.topology), up.link.fabric);
    out += scale_up_link_text(up.link);
    if (up.max_devices)
      out += fmt::format("  {:<14} {}\n", "max devices", sourced_text(*up.max_devices, ""));
    if (up.torus_axes) {
      out += fmt::format("  {:<14} {}\n", "torus axes", sourced_text(*up.torus_axes, ""));
      if (up.wraparound_from)
        out += fmt::format("  {:<14} {} (scope: {})\n", "wraps from",
                           sourced_text(*up.wraparound_from, ""),
                           hw::wrap_scope_name(up.wraparound_scope));
    }
  }
  if (ic.scale_out) out += scale_out_text(*ic.scale_out);
  return out;
}

std::string domain_shape(const hw::System& s) {
  if (s.scale_up.link.topology != hw::Topology::Torus) return std::to_string(s.scale_up.devices);
  std::string out;
  for (size_t i = 0; i < s.scale_up.torus_dims.size(); ++i)
    out += (i ? "x" : "") + std::to_string(s.scale_up.torus_dims[i]);
  return out;
}

}  // namespace

json device_to_json(const hw::Device& d) {
  json units = json::array();
  for (const hw::ComputeUnit& u : d.units) {
    json peak = json::object();
    for (const auto& [dtype, s] : u.peak)
      peak[std::string(ir::dtype_name(dtype))] = sourced_json(s, rate_unit(dtype));
    json sparse = json::object();
    for (const auto& [dtype, s] : u.sparse_2_4_peak)
      sparse[std::string(ir::dtype_name(dtype))] = sourced_json(s, rate_unit(dtype));
    json ju = {{"name", u.name},
               {"kind", hw::unit_kind_name(u.kind)},
               {"peak", peak},
               {"sparse_2_4_peak", sparse}};
    if (u.clock_mhz) ju["clock_mhz"] = sourced_json(*u.clock_mhz, "MHz");
    units.push_back(ju);
  }
  json memory = json::array();
  for (const hw::MemorySpec& m : d.memory) {
    json jm = {{"name", m.name()}};
    if (m.capacity) jm["capacity"] = sourced_json(*m.capacity, "bytes");
    if (m.bandwidth) jm["bandwidth"] = sourced_json(*m.bandwidth, "bytes/s");
    memory.push_back(jm);
  }
  return {{"schema", "solar.device.v1"},
          {"id", d.id},
          {"name", d.name},
          {"vendor", d.vendor},
          {"kind", d.kind},
          {"num_sms", d.num_sms_source ? sourced_json(*d.num_sms_source, "count")
                                       : json{{"value", d.num_sms}}},
          {"units", units},
          {"memory", memory},
          {"interconnect", d.interconnect ? interconnect_json(*d.interconnect) : json(nullptr)},
          {"sources", d.sources},
          {"notes", d.notes},
          {"file", d.file}};
}

std::string device_text(const hw::Device& d) {
  std::string out = fmt::format("{}: {}\n", d.id, d.name);
  out += fmt::format("  vendor {}, kind {}\n", d.vendor, d.kind);
  if (d.num_sms_source)
    out += fmt::format("  {:<10} {:<16} [{}] {}\n", "SMs/cores", d.num_sms, d.num_sms_source->flag,
                       d.num_sms_source->source);
  else
    out += fmt::format("  {:<10} {}\n", "SMs/cores", d.num_sms);
  out += fmt::format("  loaded from {}\n", d.file);
  out += "\ncompute units (dense peaks, 2:4-sparse ones apart; 1 MAC = 2 FLOP)   [flag] source\n";
  for (const hw::ComputeUnit& u : d.units) {
    out += fmt::format("  {} ({})\n", u.name, hw::unit_kind_name(u.kind));
    if (u.clock_mhz) {
      hw::Sourced hz = *u.clock_mhz;  // shown in Hz with a prefix, stored in MHz
      hz.value *= 1e6;
      out += fmt::format("    {:<8} {}\n", "clock", sourced_text(hz, "Hz"));
    }
    for (const auto& [dtype, s] : u.peak)
      out += fmt::format("    {:<8} {}\n", ir::dtype_name(dtype), sourced_text(s, rate_unit(dtype)));
    if (!u.sparse_2_4_peak.empty()) {
      out += "    2:4 structured-sparse peaks (dense-equivalent: zeros counted as done)\n";
      for (const auto& [dtype, s] : u.sparse_2_4_peak)
        out += fmt::format("      {:<8} {}\n", ir::dtype_name(dtype),
                           sourced_text(s, rate_unit(dtype)));
    }
  }
  out += "\nmemory\n";
  for (const hw::MemorySpec& m : d.memory) {
    out += fmt::format("  {}\n", m.name());
    if (m.capacity) out += fmt::format("    {:<10} {}\n", "capacity", sourced_text(*m.capacity, "B"));
    if (m.bandwidth)
      out += fmt::format("    {:<10} {}\n", "bandwidth", sourced_text(*m.bandwidth, "B/s"));
  }
  if (d.interconnect) out += interconnect_text(*d.interconnect);
  if (!d.sources.empty()) {
    out += "\nsources\n";
    for (const auto& [key, where] : d.sources) out += fmt::format("  {}: {}\n", key, where);
  }
  if (!d.notes.empty()) out += fmt::format("\nnotes: {}\n", d.notes);
  out += "\nflags: V vendor, V-rev vendor (revised), D derived, E estimate, M measured here\n";
  return out;
}

std::string device_list_table(const hw::DeviceDb& db) {
  static constexpr const char* kRow = "{:<14} {:<34} {:>16} {:>16} {:>16} {:>14}\n";
  std::string out = fmt::format(kRow, "ID", "NAME", "TENSOR BF16", "TENSOR FP8", "VECTOR FP32",
                                "DRAM BW");
  for (const std::string& id : db.ids()) {
    if (id == "host") {
      out += fmt::format("{:<14} {}\n", id,
                         "this machine's CPU, detected at run time (`solar arch show host`)");
      continue;
    }
    const hw::Device& d = db.get(id);
    const hw::MemorySpec* dram = d.memory_level(hw::MemoryLevel::Dram);
    std::string bw = dram && dram->bandwidth ? si(dram->bandwidth->value, "B/s") : "-";
    out += fmt::format(kRow, d.id, d.name,
                       peak_cell(d, hw::UnitKind::Tensor, ir::DType::BF16),
                       peak_cell(d, hw::UnitKind::Tensor, ir::DType::F8E4M3),
                       peak_cell(d, hw::UnitKind::Vector, ir::DType::F32), bw);
  }
  out += "Peaks are dense FLOP/s; `solar arch show ID` gives every number with its source.\n";
  return out;
}

json system_to_json(const hw::System& s) {
  json up = scale_up_link_json(s.scale_up.link);
  up["devices"] = s.scale_up.devices;
  if (s.scale_up.link.topology == hw::Topology::Torus)
    up["torus"] = {{"dims", s.scale_up.torus_dims}, {"wraparound", s.scale_up.wraparound}};
  return {{"schema", "solar.system.v1"},
          {"id", s.id},
          {"name", s.name},
          {"device", s.device},
          {"nodes", s.nodes},
          {"devices", s.devices()},
          {"scale_up", up},
          {"scale_out", s.scale_out ? scale_out_json(*s.scale_out) : json(nullptr)},
          {"sources", s.sources},
          {"notes", s.notes},
          {"file", s.file}};
}

std::string system_text(const hw::System& s) {
  std::string out = fmt::format("{}: {}\n", s.id, s.name);
  out += fmt::format("  {} node{} x {} {} = {} devices\n", s.nodes, s.nodes == 1 ? "" : "s",
                     s.scale_up.devices, s.device, s.devices());
  out += fmt::format("  loaded from {}\n", s.file);
  out += "\nbandwidths per device, per direction   [flag] source\n";
  out += fmt::format("scale-up domain: {} {}, {}\n", domain_shape(s),
                     hw::topology_name(s.scale_up.link.topology), s.scale_up.link.fabric);
  if (s.scale_up.link.topology == hw::Topology::Torus) {
    std::string wrap;
    for (size_t i = 0; i < s.scale_up.wraparound.size(); ++i)
      wrap += (i ? ", " : "") + std::string(s.scale_up.wraparound[i] ? "yes" : "no");
    out += fmt::format("  {:<14} {}\n", "wraparound", wrap);
  }
  out += scale_up_link_text(s.scale_up.link);
  out += s.scale_out ? scale_out_text(*s.scale_out) : "scale-out: none\n";
  if (!s.sources.empty()) {
    out += "\nsources\n";
    for (const auto& [key, where] : s.sources) out += fmt::format("  {}: {}\n", key, where);
  }
  if (!s.notes.empty()) out += fmt::format("\nnotes: {}\n", s.notes);
  out += "\nflags: V vendor, V-rev vendor (revised), D derived, E estimate, M measured here\n";
  return out;
}

std::string system_list_table(const hw::SystemDb& db) {
  static constexpr const char* kRow = "{:<14} {:<40} {:<16} {:<14} {:>22} {:>12}  {}\n";
  std::string out = fmt::format(kRow, "ID", "NAME", "DEVICES", "DOMAIN", "SCALE-UP/DEV/DIR",
                                "SCALE-OUT", "IN-NETWORK REDUCTION");
  for (const std::string& id : db.ids()) {
    const hw::System& s = db.get(id);
    const hw::ScaleUpLink& l = s.scale_up.link;
    std::string up = si(l.bandwidth.value, "B/s");
    if (l.peer_bandwidth) up += fmt::format(" ({:g}/peer)", l.peer_bandwidth->value / 1e9);
    if (l.link_bandwidth) up += fmt::format(" ({:g}/link)", l.link_bandwidth->value / 1e9);
    std::string reduction = "-";
    if (l.reduction)
      reduction = l.reduction->name +
                  (l.reduction->from_devices
                       ? fmt::format(", from {:g}", l.reduction->from_devices->value)
                       : "");
    out += fmt::format(kRow, s.id, s.name,
                       fmt::format("{}x {}", s.devices(), s.device),
                       fmt::format("{} {}", domain_shape(s), hw::topology_name(l.topology)), up,
                       s.scale_out ? si(s.scale_out->bandwidth.value, "B/s") : "-", reduction);
  }
  out += "Bandwidths per device and direction (GB/s in parentheses); `solar arch show ID` gives "
         "every number with its source.\n";
  return out;
}

}  // namespace solar::cli
