// Private helpers of the strict YAML readers of device and system files (not installed): the
// reader that fails at file:line, a mapping checked against its allowed keys, and sourced
// numbers whose key names their unit (docs/devices.md, "Schema").
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "solar/hw/sourced.h"

namespace solar::hw::yaml {

// A unit key of a number map and its factor to the stored unit (bytes, bytes/s, FLOP/s, MHz,
// seconds). `per_sm` values are multiplied by the device's SM count.
struct Scale {
  std::string_view key;
  double factor;
  bool per_sm = false;
  // Decimal exponent of `factor` (12 for tflops), or -1 when it is not a non-negative power of
  // ten. The stored value is then read from the text with the exponent shifted (3.35 tb_per_s
  // reads "3.35e12"), so 4.18 tops is exactly 4.18e12, not 4.18 * 1e12 = 4179999999999.9995.
  int exp10 = -1;
  std::string_view display = {};  // for the per-SM note
};

inline constexpr Scale kPlainValue[] = {{"value", 1.0}};
inline constexpr Scale kFlopsScale[] = {{"tflops", 1e12, false, 12}};
inline constexpr Scale kOpsScale[] = {{"tops", 1e12, false, 12}};
inline constexpr Scale kBandwidthScales[] = {{"tb_per_s", 1e12, false, 12},
                                             {"gb_per_s", 1e9, false, 9}};
inline constexpr Scale kCapacityScales[] = {
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
inline constexpr Scale kLatencyScales[] = {{"us", 1e-6}, {"ns", 1e-9}};

std::string join(std::span<const std::string_view> items, std::string_view sep);
std::string lower(std::string_view s);
// Letters (lower case unless allow_upper), digits, '_' (and '-', '.' with allow_upper).
bool valid_name(std::string_view s, bool allow_upper);

class Reader {
 public:
  explicit Reader(std::string_view file) : file_(file) {}

  // Throws UserError(Parse) at the node's file:line.
  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& message) const;

  const std::string& file() const { return file_; }
  std::map<std::string, std::string> sources;
  int sms = 0;
  // What `sms` counts, for notes: SMs (NVIDIA), CUs (AMD), TensorCores (TPU), cores (CPU).
  std::string sm_singular = "SM", sm_plural = "SMs";

 private:
  std::string file_;
};

// The root mapping of a `schema` document (solar.device.v1, solar.system.v1); UserError(Parse)
// at the YAML's line for malformed YAML or a root that is not a mapping.
YAML::Node load_document(const Reader& r, std::string_view yaml_text, std::string_view schema);

// The entries of one YAML mapping, checked against the allowed keys (no unknown or
// duplicate keys; yaml-cpp itself keeps duplicates silently). Empty `allowed`: any key.
class Fields {
 public:
  Fields(const Reader& r, const YAML::Node& node, std::string what,
         std::span<const std::string_view> allowed);

  struct Entry {
    std::string key;
    YAML::Node key_node;
    YAML::Node value;
  };

  const Entry* find(std::string_view key) const;
  const YAML::Node& require(std::string_view key, std::string_view hint = {}) const;
  std::string require_string(std::string_view key) const;
  // The text of an optional key; "" when absent.
  std::string optional_string(std::string_view key) const;
  const std::vector<Entry>& entries() const { return entries_; }
  const YAML::Node& node() const { return node_; }
  const std::string& what() const { return what_; }

 private:
  const Reader& r_;
  YAML::Node node_;
  std::string what_;
  std::vector<Entry> entries_;
};

double parse_number(const Reader& r, const YAML::Node& n, const std::string& what);

// A whole number >= `min` written plainly (`nodes: 2`).
int parse_int(const Reader& r, const YAML::Node& n, const std::string& what, int min);

// A number map `{<unit>: x, source: k, flag: F, note: "..."}` -> Sourced in stored units.
Sourced parse_sourced(const Reader& r, const YAML::Node& node, const std::string& what,
                      std::span<const Scale> scales, std::string_view unit_hint = {});

// A sourced whole count (`{value: 8, source: k, flag: V}`) no smaller than `min`.
Sourced parse_count(const Reader& r, const YAML::Node& node, const std::string& what, int min);

// The provenance keys `source`, `flag`, `note` of a map that states a fact rather than a number
// (an in-network reduction); checked as for numbers.
void parse_provenance(const Reader& r, const Fields& f, const std::string& what,
                      std::string& source, std::string& flag, std::string& note);

// The `sources:` map into r.sources (every number below refers to it).
void parse_sources(Reader& r, const YAML::Node& node);

// The document's `id`, once its `schema` is `schema` and the id a valid name (letters,
// digits, '_', '-' and '.').
std::string parse_schema_and_id(const Reader& r, const Fields& top, std::string_view schema);

}  // namespace solar::hw::yaml
