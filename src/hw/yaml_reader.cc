// The strict YAML reading shared by device and system files: every failure is a
// UserError(Parse) at the file and line of the offending node.
#include "yaml_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "solar/util/errors.h"

namespace solar::hw::yaml {
namespace {

// Provenance flags (docs/devices.md); every flag but V needs a note saying why or how.
constexpr std::string_view kFlags[] = {"V", "V-rev", "D", "E", "M"};

// Every unit key of any number map, so that a key of another kind of number gets its own
// message ("tops" on a floating-point peak, "gb" on a bandwidth).
constexpr std::string_view kAllUnitKeys[] = {
    "value", "tflops", "tops", "tb_per_s", "gb_per_s", "gb", "gib", "mb", "mib", "kb", "kib",
    "kb_per_sm", "kib_per_sm", "mib_per_sm", "us", "ns"};

std::string scale_keys(std::span<const Scale> scales) {
  std::vector<std::string_view> keys;
  for (const Scale& s : scales) keys.push_back(s.key);
  return join(keys, ", ");
}

// The decimal number `text` (already validated by parse_number) times 10^exp10, correctly
// rounded: the exponent is shifted in the text before conversion.
double shifted_decimal(const std::string& text, int exp10) {
  std::size_t e = text.find_first_of("eE");
  long exponent = exp10 + (e == std::string::npos ? 0 : std::strtol(text.c_str() + e + 1, nullptr, 10));
  return std::strtod((text.substr(0, e) + "e" + std::to_string(exponent)).c_str(), nullptr);
}

}  // namespace

std::string join(std::span<const std::string_view> items, std::string_view sep) {
  std::string out;
  for (std::string_view s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool valid_name(std::string_view s, bool allow_upper) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           (allow_upper && ((c >= 'A' && c <= 'Z') || c == '-' || c == '.'));
  });
}

YAML::Node load_document(const Reader& r, std::string_view yaml_text, std::string_view schema) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    r.fail(e.mark, "malformed YAML: " + e.msg);
  }
  if (!root.IsMap())
    r.fail(root.Mark(), fmt::format("expected a YAML mapping (a {} document)", schema));
  return root;
}

std::string parse_schema_and_id(const Reader& r, const Fields& top, std::string_view schema) {
  std::string given = top.require_string("schema");
  if (given != schema)
    r.fail(top.require("schema").Mark(),
           fmt::format("unsupported schema '{}' (expected {})", given, schema));
  std::string id = top.require_string("id");
  if (!valid_name(id, true))
    r.fail(top.require("id").Mark(),
           fmt::format("id '{}' may use only letters, digits, '_', '-' and '.'", id));
  return id;
}

void Reader::fail(const YAML::Mark& mark, const std::string& message) const {
  // yaml-cpp marks are 0-based; a null mark (line -1) becomes "unknown line".
  throw UserError(UserError::Kind::Parse, message,
                  Origin{file_, mark.line >= 0 ? mark.line + 1 : 0, {}});
}

Fields::Fields(const Reader& r, const YAML::Node& node, std::string what,
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

const Fields::Entry* Fields::find(std::string_view key) const {
  for (const Entry& e : entries_)
    if (e.key == key) return &e;
  return nullptr;
}

const YAML::Node& Fields::require(std::string_view key, std::string_view hint) const {
  const Entry* e = find(key);
  if (e == nullptr) r_.fail(node_.Mark(), fmt::format("{}: missing key '{}'{}", what_, key, hint));
  return e->value;
}

std::string Fields::require_string(std::string_view key) const {
  const YAML::Node& v = require(key);
  if (!v.IsScalar() || v.Scalar().empty())
    r_.fail(v.Mark(), fmt::format("{}: '{}' must be a non-empty string", what_, key));
  return v.Scalar();
}

std::string Fields::optional_string(std::string_view key) const {
  return find(key) == nullptr ? std::string() : require_string(key);
}

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

int parse_int(const Reader& r, const YAML::Node& n, const std::string& what, int min) {
  double v = parse_number(r, n, what);
  if (v != std::floor(v) || v < min || v > 1e6)
    r.fail(n.Mark(), fmt::format("{}: '{}' must be a whole number of at least {}", what,
                                 n.Scalar(), min));
  return static_cast<int>(v);
}

void parse_provenance(const Reader& r, const Fields& f, const std::string& what,
                      std::string& source, std::string& flag, std::string& note) {
  const YAML::Node& src = f.require("source", " (every number names a key of the file's "
                                              "'sources:' map)");
  source = src.IsScalar() ? src.Scalar() : "";
  if (r.sources.find(source) == r.sources.end()) {
    std::vector<std::string_view> known;
    for (const auto& [k, _] : r.sources) known.push_back(k);
    r.fail(src.Mark(), fmt::format("{}: unknown source '{}' (not a key of 'sources:'; known: {})",
                                   what, source, join(known, ", ")));
  }
  const YAML::Node& flag_node = f.require("flag", " (one of V, V-rev, D, E, M)");
  flag = flag_node.IsScalar() ? flag_node.Scalar() : "";
  if (std::find(std::begin(kFlags), std::end(kFlags), flag) == std::end(kFlags))
    r.fail(flag_node.Mark(), fmt::format("{}: unknown flag '{}' (one of V, V-rev, D, E, M)", what,
                                         flag));
  note.clear();
  if (const Fields::Entry* n = f.find("note")) {
    if (!n->value.IsScalar()) r.fail(n->value.Mark(), fmt::format("{}: 'note' must be text", what));
    note = n->value.Scalar();
  }
  if (flag != "V" && note.empty())
    r.fail(flag_node.Mark(), fmt::format("{}: flag {} needs a 'note' ({})", what, flag,
                                         flag == "D"       ? "the arithmetic"
                                         : flag == "V-rev" ? "the earlier figure"
                                         : flag == "M"     ? "how it was measured"
                                                           : "why it is an estimate"));
}

Sourced parse_sourced(const Reader& r, const YAML::Node& node, const std::string& what,
                      std::span<const Scale> scales, std::string_view unit_hint) {
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
  parse_provenance(r, f, what, out.source, out.flag, out.note);
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

Sourced parse_count(const Reader& r, const YAML::Node& node, const std::string& what, int min) {
  Sourced s = parse_sourced(r, node, what, kPlainValue);
  if (s.value != std::floor(s.value) || s.value < min || s.value > 1e6)
    r.fail(node.Mark(), fmt::format("{}: must be a whole count of at least {}", what, min));
  return s;
}

void parse_sources(Reader& r, const YAML::Node& node) {
  Fields srcs(r, node, "sources", {});
  if (srcs.entries().empty()) r.fail(node.Mark(), "sources: empty");
  for (const Fields::Entry& e : srcs.entries()) {
    if (!e.value.IsScalar() || e.value.Scalar().empty())
      r.fail(e.value.Mark(), fmt::format("sources: '{}' must be a URL or citation", e.key));
    r.sources[e.key] = e.value.Scalar();
  }
}

}  // namespace solar::hw::yaml
