// parse_device_yaml: the strict reader of schema solar.device.v1 (docs/devices.md).
//
// Every check fails with UserError(Parse) at the file and line of the offending node, so a
// user editing a device file is pointed at the exact key to fix.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <span>

#include <fmt/format.h>

#include "solar/hw/database.h"
#include "device_yaml.h"
#include "link_yaml.h"
#include "solar/util/errors.h"
#include "yaml_reader.h"

namespace solar::hw {
namespace {

using namespace yaml;  // NOLINT: the shared reader's helpers (src/hw/yaml_reader.h)

constexpr std::string_view kSchema = "solar.device.v1";

// A map of dtype to rate (`peak`, `sparse_2_4_peak`) of unit `u`, as Sourced in FLOP/s
// (ops/s for integer dtypes and special-function units).
std::map<ir::DType, Sourced> parse_rates(const Reader& r, const YAML::Node& node,
                                         const ComputeUnit& u, const std::string& what,
                                         std::string_view key) {
  Fields rates(r, node, fmt::format("{}: {}", what, key), {});
  if (rates.entries().empty()) r.fail(node.Mark(), fmt::format("{}: {} is empty", what, key));
  std::map<ir::DType, Sourced> out;
  for (const Fields::Entry& e : rates.entries()) {
    std::optional<ir::DType> d = ir::parse_dtype(e.key);
    if (!d) {
      std::vector<std::string_view> names;
      for (ir::DType t : ir::kAllDTypes) names.push_back(ir::dtype_name(t));
      r.fail(e.key_node.Mark(), fmt::format("{}: unknown dtype '{}' (known: {})", what, e.key,
                                            join(names, " ")));
    }
    if (out.count(*d))
      r.fail(e.key_node.Mark(), fmt::format("{}: {} dtype {} given twice (an alias names it "
                                            "again)", what, key, ir::dtype_name(*d)));
    // FLOP/s for floating point on tensor and vector units; integer and special-function
    // rates are operations (results) per second, so the key says which one the number is.
    bool ops = u.kind == UnitKind::Special || !ir::is_float(*d);
    out[*d] = parse_sourced(
        r, e.value, fmt::format("{}: {} {}", what, key, e.key),
        ops ? std::span<const Scale>(kOpsScale) : std::span<const Scale>(kFlopsScale),
        " (tflops for floating-point dtypes on tensor and vector units; tops for integer "
        "dtypes and for special-function units)");
  }
  return out;
}

ComputeUnit parse_unit(const Reader& r, const YAML::Node& node, size_t index) {
  static constexpr std::string_view kKeys[] = {"name", "kind", "clock_mhz", "peak",
                                               "sparse_2_4_peak"};
  Fields f(r, node, fmt::format("units[{}]", index), kKeys);
  ComputeUnit u;
  u.name = f.require_string("name");
  if (!valid_name(u.name, false))
    r.fail(f.require("name").Mark(),
           fmt::format("units[{}]: name '{}' must be lower_snake_case", index, u.name));
  std::string what = fmt::format("unit '{}'", u.name);

  const YAML::Node& kind = f.require("kind");
  std::optional<UnitKind> k = kind.IsScalar() ? parse_unit_kind(kind.Scalar()) : std::nullopt;
  if (!k) r.fail(kind.Mark(), fmt::format("{}: kind must be tensor, vector or special", what));
  u.kind = *k;

  if (const Fields::Entry* clock = f.find("clock_mhz"))
    u.clock_mhz = parse_sourced(r, clock->value, what + ": clock_mhz", kPlainValue);

  u.peak = parse_rates(r, f.require("peak"), u, what, "peak");

  // 2:4 structured-sparse peaks: a tensor unit's rate for a contraction with a 2:4 operand,
  // dense-equivalent. Skipping the zeros of a 2:4 operand halves the products at most, so a
  // sparse peak lies in (dense, 2 x dense]; one at or below dense gains nothing and is left
  // out instead.
  if (const Fields::Entry* sp = f.find("sparse_2_4_peak")) {
    if (u.kind != UnitKind::Tensor)
      r.fail(sp->key_node.Mark(),
             fmt::format("{}: sparse_2_4_peak on a {} unit (only tensor units run 2:4 "
                         "structured-sparse contractions)", what, unit_kind_name(u.kind)));
    u.sparse_2_4_peak = parse_rates(r, sp->value, u, what, "sparse_2_4_peak");
    Fields entries(r, sp->value, what + ": sparse_2_4_peak", {});
    for (const Fields::Entry& e : entries.entries()) {
      ir::DType d = *ir::parse_dtype(e.key);
      const std::string_view name = ir::dtype_name(d);
      auto dense = u.peak.find(d);
      if (dense == u.peak.end())
        r.fail(e.key_node.Mark(),
               fmt::format("{}: sparse_2_4_peak {} has no dense peak of the same dtype (give "
                           "peak.{} as well: the sparse rate is checked against it)",
                           what, name, name));
      const double sparse = u.sparse_2_4_peak.at(d).value;
      const double dense_value = dense->second.value;
      // Shown in the file's own unit key (tflops or tops, both 1e12).
      const std::string_view unit = ir::is_float(d) ? "tflops" : "tops";
      if (!(sparse > dense_value))
        r.fail(e.key_node.Mark(),
               fmt::format("{}: sparse_2_4_peak {} = {:.6g} {} is not above the dense peak "
                           "{:.6g} {} (a unit that gains nothing from 2:4 sparsity has no "
                           "sparse peak: leave it out)",
                           what, name, sparse / 1e12, unit, dense_value / 1e12, unit));
      if (sparse > 2 * dense_value)
        r.fail(e.key_node.Mark(),
               fmt::format("{}: sparse_2_4_peak {} = {:.6g} {} is above 2x the dense peak "
                           "{:.6g} {} (2:4 sparsity skips at most half the products; a "
                           "datasheet figure above 2x dense is a rounding: store 2x dense, "
                           "{:.6g}, with flag D)",
                           what, name, sparse / 1e12, unit, dense_value / 1e12, unit,
                           2 * dense_value / 1e12));
    }
  }
  return u;
}

// Memory level names (docs/devices.md, hw::MemoryLevel): "dram, llc, ...".
std::string memory_level_names() {
  std::vector<std::string_view> names;
  for (MemoryLevel l : kAllMemoryLevels) names.push_back(memory_level_name(l));
  return join(names, ", ");
}

MemorySpec parse_memory(const Reader& r, const YAML::Node& node, size_t index) {
  static constexpr std::string_view kKeys[] = {"name", "capacity", "bandwidth"};
  Fields f(r, node, fmt::format("memory[{}]", index), kKeys);
  MemorySpec m;
  const std::string name = f.require_string("name");
  std::optional<MemoryLevel> level = parse_memory_level(name);
  if (!level)
    r.fail(f.require("name").Mark(),
           fmt::format("memory[{}]: unknown level '{}' (one of {})", index, name,
                       memory_level_names()));
  m.level = *level;
  std::string what = fmt::format("memory '{}'", m.name());
  if (const Fields::Entry* c = f.find("capacity"))
    m.capacity = parse_sourced(r, c->value, what + ": capacity", kCapacityScales);
  if (const Fields::Entry* b = f.find("bandwidth"))
    m.bandwidth = parse_sourced(r, b->value, what + ": bandwidth", kBandwidthScales);
  if (!m.capacity && !m.bandwidth)
    r.fail(node.Mark(), what + ": give a capacity, a bandwidth or both");
  if (m.level == MemoryLevel::Dram && !m.bandwidth)
    r.fail(node.Mark(), "memory 'dram': missing bandwidth (required: the SOL memory term "
                        "divides by it)");
  return m;
}

}  // namespace

Device parse_device_yaml(std::string_view yaml_text, std::string_view file) {
  Reader r(file);
  YAML::Node root = load_document(r, yaml_text, kSchema);

  static constexpr std::string_view kKeys[] = {"schema", "id",      "name",  "vendor",
                                               "kind",   "sms",     "notes", "sources",
                                               "units",  "memory",  "interconnect"};
  Fields top(r, root, "device", kKeys);
  Device d;
  d.file = std::string(file);

  d.id = parse_schema_and_id(r, top, kSchema);
  if (lower(d.id) == "host")
    r.fail(top.require("id").Mark(), "id 'host' is reserved for the detected host CPU");
  d.name = top.require_string("name");
  d.vendor = top.require_string("vendor");
  d.kind = top.require_string("kind");
  if (d.kind != "gpu" && d.kind != "tpu" && d.kind != "cpu")
    r.fail(top.require("kind").Mark(), fmt::format("kind '{}' must be gpu, tpu or cpu", d.kind));
  if (const Fields::Entry* n = top.find("notes")) {
    if (!n->value.IsScalar()) r.fail(n->value.Mark(), "notes must be text");
    d.notes = n->value.Scalar();
  }

  // Sources first: every number below refers to them.
  parse_sources(r, top.require("sources"));
  d.sources = r.sources;

  const YAML::Node& sms_node = top.require("sms");
  Sourced sms = parse_sourced(r, sms_node, "sms", kPlainValue);
  if (sms.value != std::floor(sms.value) || sms.value > 1e6)
    r.fail(sms_node.Mark(), "sms: must be a whole count");
  d.num_sms = static_cast<int>(sms.value);
  d.num_sms_source = sms;
  r.sms = d.num_sms;
  if (d.kind == "tpu") {
    r.sm_singular = "TensorCore", r.sm_plural = "TensorCores";
  } else if (d.kind == "cpu") {
    r.sm_singular = "core", r.sm_plural = "cores";
  } else if (d.vendor == "AMD") {
    r.sm_singular = "CU", r.sm_plural = "CUs";
  }

  const YAML::Node& units = top.require("units");
  if (!units.IsSequence() || units.size() == 0)
    r.fail(units.Mark(), "units: expected a non-empty list of compute units");
  for (size_t i = 0; i < units.size(); ++i) {
    ComputeUnit u = parse_unit(r, units[i], i);
    for (const ComputeUnit& o : d.units)
      if (o.name == u.name)
        r.fail(units[i].Mark(), fmt::format("units[{}]: duplicate unit name '{}'", i, u.name));
    d.units.push_back(std::move(u));
  }

  const YAML::Node& memory = top.require("memory");
  if (!memory.IsSequence() || memory.size() == 0)
    r.fail(memory.Mark(), "memory: expected a non-empty list of levels, dram first");
  for (size_t i = 0; i < memory.size(); ++i) {
    MemorySpec m = parse_memory(r, memory[i], i);
    if (i == 0 && m.level != MemoryLevel::Dram)
      r.fail(memory[i].Mark(), fmt::format("memory[0] is '{}': list the levels outermost "
                                           "first, starting with dram", m.name()));
    for (const MemorySpec& o : d.memory)
      if (o.level == m.level)
        r.fail(memory[i].Mark(), fmt::format("memory[{}]: duplicate level '{}'", i, m.name()));
    d.memory.push_back(std::move(m));
  }

  if (const Fields::Entry* ic = top.find("interconnect"))
    d.interconnect = parse_interconnect(r, ic->value);
  return d;
}

int device_id_line(std::string_view yaml_text) {
  try {
    YAML::Node root = YAML::Load(std::string(yaml_text));
    if (!root.IsMap()) return 0;
    for (auto it = root.begin(); it != root.end(); ++it)
      if (it->first.IsScalar() && it->first.Scalar() == "id") return it->first.Mark().line + 1;
  } catch (const YAML::Exception&) {
  }
  return 0;
}

}  // namespace solar::hw
