// A system: devices of one kind in scale-up domains (NVLink, Infinity Fabric, ICI), the
// domains joined by their NICs; the built-in systems (arch/systems/*.yaml, schema
// solar.system.v1), user system files and the inline form "NxDEVICE" (docs/parallel.md).
//
// Units as in interconnect.h: bytes/s per device per direction, seconds. The counts that
// define a system (devices per domain, torus shape, nodes) are plain numbers: they are what the
// system is, not measurements; every rate carries its source and flag.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "solar/hw/database.h"
#include "solar/hw/interconnect.h"

namespace solar::hw {

// One scale-up domain: `devices` devices joined by `link`.
struct ScaleUpDomain {
  int devices = 1;  // devices per domain (the product of torus_dims on a torus)
  std::vector<int> torus_dims;   // Torus only: the extent of each axis
  std::vector<bool> wraparound;  // Torus only: whether each axis has wraparound links
  ScaleUpLink link;
};

struct System {
  std::string id;      // "DGX_H100", "8xH100_SXM"
  std::string name;    // "NVIDIA DGX H100"
  std::string device;  // the id of its device in the DeviceDb ("H100_SXM")
  int nodes = 1;       // scale-up domains, joined by scale_out
  ScaleUpDomain scale_up;
  std::optional<ScaleOutLink> scale_out;  // required when nodes > 1
  std::map<std::string, std::string> sources;  // key -> URL or citation
  std::string notes;
  std::string file;  // "builtin:arch/systems/DGX_H100.yaml", a path, or "inline:8xH100_SXM"

  int devices() const { return nodes * scale_up.devices; }
};

// Parses one system YAML document (schema solar.system.v1, docs/parallel.md) and validates it
// strictly; `file` names it in errors. Throws UserError(Parse) with file:line for malformed
// YAML, unknown or duplicate keys, a number without `source`/`flag`, a source key missing from
// `sources:`, a key that does not fit the topology (peer_bandwidth off a mesh, torus off a
// torus, in-network reduction on a domain that has no switch), a torus shape that does not
// multiply to `devices`, rates that contradict each other, or nodes > 1 without scale_out.
System parse_system_yaml(std::string_view yaml_text, std::string_view file);

// The inline form: "NxDEVICE" (one scale-up domain of N devices with the device's own
// `interconnect:` section), "AxBxDEVICE" or "AxBxCxDEVICE" for a torus device (the slice's
// shape), with `nodes` such domains over its NICs. Throws UserError(UnknownDevice) for an
// unknown device, UserError(BadArgument) for a device without an interconnect section (naming
// the part that is missing), a size above the device's largest domain, a shape that does not
// fit its topology, or nodes > 1 without a scale-out link.
System parse_system_spec(std::string_view spec, int nodes, const DeviceDb& devices);

// True when `text` has the inline form's shape ("8xH100_SXM", "4x4x4xTPU_v5p"), whether or not
// the device exists.
bool is_system_spec(std::string_view text);

// `system` with `nodes` scale-up domains. Throws UserError(BadArgument) when nodes < 1, or
// nodes > 1 and the system has no scale-out link.
System with_nodes(System system, int nodes);

// The built-in arch/systems/*.yaml files as (file name, YAML text), sorted by name; generated
// at build time by cmake/embed_arch.cmake.
const std::vector<std::pair<std::string_view, std::string_view>>& builtin_system_files();

// The built-in systems.
class SystemDb {
 public:
  // Parses every built-in system file; two with one id are a UserError(Parse).
  static SystemDb builtin();

  // Case-insensitive lookup; nullptr when there is none.
  const System* find(std::string_view id) const;
  // Throws UserError(UnknownDevice) listing the known systems and the other forms of --system.
  const System& get(std::string_view id) const;
  std::vector<std::string> ids() const;  // sorted case-insensitively

 private:
  std::vector<System> systems_;
};

// What a `--system ARG [--nodes K]` names: a built-in id, a solar.system.v1 file (ARG ends in
// .yaml or .yml), or the inline form. Checks that its device is in `devices`; `nodes`, when
// given, replaces its number of scale-up domains (with_nodes).
System resolve_system(std::string_view arg, std::optional<int> nodes, const DeviceDb& devices,
                      const SystemDb& systems);

}  // namespace solar::hw
