// How `solar arch list` and `solar arch show` present devices: JSON, text and a table.
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "solar/cli/cli.h"
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

}  // namespace solar::cli
