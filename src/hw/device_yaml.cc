// parse_device_yaml: the strict reader of schema solar.device.v1 (docs/devices.md).
//
// Every check fails with UserError(Parse) at the file and line of the offending node, so a
// user editing a device file is pointed at the exact key to fix.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <span>

#include <fmt/format.h>

#include "solar/hw/database.h"
#include "device_yaml.h"
#include "solar/util/errors.h"

namespace solar::hw {
namespace {

constexpr std::string_view kSchema = "solar.device.v1";

// Provenance flags (docs/devices.md); every flag but V needs a note saying why or how.
constexpr std::string_view kFlags[] = {"V", "V-rev", "D", "E", "M"};

// A unit key of a number map and its factor to the stored unit (bytes, bytes/s, FLOP/s,
// MHz). `per_sm` values are multiplied by the device's SM count.
struct Scale {
  std::string_view key;
  double factor;
  bool per_sm = false;
  // Decimal exponent of `factor` (12 for tflops), or -1 when it is not a power of ten. The
  // stored value is then read from the text with the exponent shifted (3.35 tb_per_s reads
  // "3.35e12"), so 4.18 tops is exactly 4.18e12, not 4.18 * 1e12 = 4179999999999.9995.
  int exp10 = -1;
  std::string_view display = {};  // for the per-SM note
};

constexpr Scale kPlainValue[] = {{"value", 1.0}};
constexpr Scale kFlopsScale[] = {{"tflops", 1e12, false, 12}};
constexpr Scale kOpsScale[] = {{"tops", 1e12, false, 12}};
constexpr Scale kBandwidthScales[] = {{"tb_per_s", 1e12, false, 12}, {"gb_per_s", 1e9, false, 9}};
constexpr Scale kCapacityScales[] = {
    {"gb", 1e9, false, 9},
    {"gib", 1073741824.0},
    {"mb", 1e6, false, 6},
    {"mib", 1048576.0},
    {"kb", 1e3, false, 3},
    {"kib", 1024.0},
    {"kb_per_sm", 1e3, true, 3, "KB"},
    {"kib_per_sm", 1024.0, true, -1, "KiB"},
    {"mib_per_sm", 1048576.0, true, -1, "MiB"},
};

std::string join(std::span<const std::string_view> items, std::string_view sep) {
  std::string out;
  for (std::string_view s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

std::string scale_keys(std::span<const Scale> scales) {
  std::vector<std::string_view> keys;
  for (const Scale& s : scales) keys.push_back(s.key);
  return join(keys, ", ");
}

class Reader {
 public:
  explicit Reader(std::string_view file) : file_(file) {}

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& message) const {
    // yaml-cpp marks are 0-based; a null mark (line -1) becomes "unknown line".
    throw UserError(UserError::Kind::Parse, message,
                    Origin{file_, mark.line >= 0 ? mark.line + 1 : 0, {}});
  }

  const std::string& file() const { return file_; }
  std::map<std::string, std::string> sources;
  int sms = 0;
  // What `sms` counts, for notes: SMs (NVIDIA), CUs (AMD), TensorCores (TPU), cores (CPU).
  std::string sm_singular = "SM", sm_plural = "SMs";

 private:
  std::string file_;
};

// The entries of one YAML mapping, checked against the allowed keys (no unknown or
// duplicate keys; yaml-cpp itself keeps duplicates silently).
class Fields {
 public:
  Fields(const Reader& r, const YAML::Node& node, std::string what,
         std::span<const std::string_view> allowed)
      : r_(r), node_(node), what_(std::move(what)) {
    if (!node.IsMap()) r.fail(node.Mark(), fmt::format("{}: expected a mapping", what_));
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (!it->first.IsScalar())
        r.fail(it->first.Mark(), fmt::format("{}: a key must be a plain name", what_));
      std::string key = it->first.Scalar();
      if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), key) == allowed.end())
        r.fail(it->first.Mark(), fmt::format("{}: unknown key '{}' (allowed: {})", what_, key,
                                             join(allowed, ", ")));
      for (const Entry& e : entries_)
        if (e.key == key)
          r.fail(it->first.Mark(), fmt::format("{}: duplicate key '{}'", what_, key));
      entries_.push_back(Entry{key, it->first, it->second});
    }
  }

  struct Entry {
    std::string key;
    YAML::Node key_node;
    YAML::Node value;
  };

  const Entry* find(std::string_view key) const {
    for (const Entry& e : entries_)
      if (e.key == key) return &e;
    return nullptr;
  }
  const YAML::Node& require(std::string_view key, std::string_view hint = {}) const {
    const Entry* e = find(key);
    if (e == nullptr)
      r_.fail(node_.Mark(), fmt::format("{}: missing key '{}'{}", what_, key, hint));
    return e->value;
  }
  std::string require_string(std::string_view key) const {
    const YAML::Node& v = require(key);
    if (!v.IsScalar() || v.Scalar().empty())
      r_.fail(v.Mark(), fmt::format("{}: '{}' must be a non-empty string", what_, key));
    return v.Scalar();
  }
  const std::vector<Entry>& entries() const { return entries_; }
  const YAML::Node& node() const { return node_; }
  const std::string& what() const { return what_; }

 private:
  const Reader& r_;
  YAML::Node node_;
  std::string what_;
  std::vector<Entry> entries_;
};

double parse_number(const Reader& r, const YAML::Node& n, const std::string& what) {
  if (!n.IsScalar()) r.fail(n.Mark(), fmt::format("{}: expected a number", what));
  const std::string& text = n.Scalar();
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
    r.fail(n.Mark(), fmt::format("{}: '{}' is not a number (write plain decimals: 1978.9, not "
                                 "1,978.9)", what, text));
  return v;
}

// The decimal number `text` (already validated by parse_number) times 10^exp10, correctly
// rounded: the exponent is shifted in the text before conversion.
double shifted_decimal(const std::string& text, int exp10) {
  std::size_t e = text.find_first_of("eE");
  long exponent = exp10 + (e == std::string::npos ? 0 : std::strtol(text.c_str() + e + 1, nullptr, 10));
  return std::strtod((text.substr(0, e) + "e" + std::to_string(exponent)).c_str(), nullptr);
}

// A number map `{<unit>: x, source: k, flag: F, note: "..."}` -> Sourced in stored units.
constexpr std::string_view kAllUnitKeys[] = {
    "value", "tflops", "tops", "tb_per_s", "gb_per_s", "gb", "gib", "mb", "mib", "kb", "kib",
    "kb_per_sm", "kib_per_sm", "mib_per_sm"};

Sourced parse_sourced(const Reader& r, const YAML::Node& node, const std::string& what,
                      std::span<const Scale> scales, std::string_view unit_hint = {}) {
  // A unit key that belongs to another kind of number gets its own message ("tops" on a
  // floating-point peak, "gb" on a bandwidth).
  if (node.IsMap()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      std::string key = it->first.IsScalar() ? it->first.Scalar() : "";
      bool is_unit = std::find(std::begin(kAllUnitKeys), std::end(kAllUnitKeys), key) !=
                     std::end(kAllUnitKeys);
      bool allowed_here = std::any_of(scales.begin(), scales.end(),
                                      [&](const Scale& s) { return s.key == key; });
      if (is_unit && !allowed_here)
        r.fail(it->first.Mark(), fmt::format("{}: '{}' is not a unit for this number; give one "
                                             "of {}{}", what, key, scale_keys(scales), unit_hint));
    }
  }
  std::vector<std::string_view> allowed;
  for (const Scale& s : scales) allowed.push_back(s.key);
  allowed.insert(allowed.end(), {"source", "flag", "note"});
  Fields f(r, node, what, allowed);

  const Scale* scale = nullptr;
  const YAML::Node* value_node = nullptr;
  for (const Scale& s : scales) {
    if (const Fields::Entry* e = f.find(s.key)) {
      if (scale != nullptr)
        r.fail(e->key_node.Mark(), fmt::format("{}: give one of {}, not both '{}' and '{}'", what,
                                               scale_keys(scales), scale->key, s.key));
      scale = &s;
      value_node = &e->value;
    }
  }
  if (scale == nullptr)
    r.fail(node.Mark(), fmt::format("{}: missing the value; give one of {} (the key names the "
                                    "unit)", what, scale_keys(scales)));
  double v = parse_number(r, *value_node, what);
  if (!(v > 0))
    r.fail(value_node->Mark(),
           fmt::format("{}: value {} must be positive (leave an unpublished number out instead "
                       "of writing 0)", what, value_node->Scalar()));

  Sourced out;
  const YAML::Node& src = f.require("source", " (every number names a key of the file's "
                                              "'sources:' map)");
  out.source = src.IsScalar() ? src.Scalar() : "";
  if (r.sources.find(out.source) == r.sources.end()) {
    std::vector<std::string_view> known;
    for (const auto& [k, _] : r.sources) known.push_back(k);
    r.fail(src.Mark(), fmt::format("{}: unknown source '{}' (not a key of 'sources:'; known: {})",
                                   what, out.source, join(known, ", ")));
  }
  const YAML::Node& flag = f.require("flag", " (one of V, V-rev, D, E, M)");
  out.flag = flag.IsScalar() ? flag.Scalar() : "";
  if (std::find(std::begin(kFlags), std::end(kFlags), out.flag) == std::end(kFlags))
    r.fail(flag.Mark(), fmt::format("{}: unknown flag '{}' (one of V, V-rev, D, E, M)", what,
                                    out.flag));
  if (const Fields::Entry* note = f.find("note")) {
    if (!note->value.IsScalar())
      r.fail(note->value.Mark(), fmt::format("{}: 'note' must be text", what));
    out.note = note->value.Scalar();
  }
  if (out.flag != "V" && out.note.empty())
    r.fail(flag.Mark(), fmt::format("{}: flag {} needs a 'note' ({})", what, out.flag,
                                    out.flag == "D"       ? "the arithmetic"
                                    : out.flag == "V-rev" ? "the earlier figure"
                                    : out.flag == "M"     ? "how it was measured"
                                                          : "why it is an estimate"));

  out.value = scale->exp10 >= 0 ? shifted_decimal(value_node->Scalar(), scale->exp10)
                                : v * scale->factor;
  if (scale->per_sm) {
    SOLAR_CHECK(r.sms > 0, "sms parsed before per-SM capacities");
    out.value *= r.sms;
    std::string per_sm =
        fmt::format("per {}: {} {} x {} {}", r.sm_singular, value_node->Scalar(),
                    scale->display, r.sms, r.sms == 1 ? r.sm_singular : r.sm_plural);
    out.note = out.note.empty() ? per_sm : out.note + "; " + per_sm;
  }
  return out;
}

bool valid_name(std::string_view s, bool allow_upper) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           (allow_upper && ((c >= 'A' && c <= 'Z') || c == '-' || c == '.'));
  });
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

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
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    r.fail(e.mark, "malformed YAML: " + e.msg);
  }
  if (!root.IsMap())
    r.fail(root.Mark(), fmt::format("expected a YAML mapping (a {} document)", kSchema));

  static constexpr std::string_view kKeys[] = {"schema", "id",    "name",   "vendor", "kind",
                                               "sms",    "notes", "sources", "units", "memory"};
  Fields top(r, root, "device", kKeys);
  Device d;
  d.file = std::string(file);

  std::string schema = top.require_string("schema");
  if (schema != kSchema)
    r.fail(top.require("schema").Mark(),
           fmt::format("unsupported schema '{}' (expected {})", schema, kSchema));

  d.id = top.require_string("id");
  if (!valid_name(d.id, true))
    r.fail(top.require("id").Mark(),
           fmt::format("id '{}' may use only letters, digits, '_', '-' and '.'", d.id));
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
  const YAML::Node& sources = top.require("sources");
  Fields srcs(r, sources, "sources", {});
  if (srcs.entries().empty()) r.fail(sources.Mark(), "sources: empty");
  for (const Fields::Entry& e : srcs.entries()) {
    if (!e.value.IsScalar() || e.value.Scalar().empty())
      r.fail(e.value.Mark(), fmt::format("sources: '{}' must be a URL or citation", e.key));
    r.sources[e.key] = e.value.Scalar();
  }
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
