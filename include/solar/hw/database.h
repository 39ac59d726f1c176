// The device database: the built-in arch/*.yaml files (compiled into the library), any
// YAML files in the folders of SOLAR_ARCH_PATH, and the run-time detected `host`.
//
// The file format (schema `solar.device.v1`) is documented in docs/devices.md.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "solar/hw/device.h"

namespace solar::hw {

// Parses one device YAML document (schema solar.device.v1) and validates it strictly;
// `file` names it in errors. Throws UserError(Parse) with file:line for malformed YAML,
// unknown keys, a number without `source`/`flag`, a source key missing from `sources:`,
// an unknown dtype, unit or memory level, a non-positive value, or a missing dram
// bandwidth. Implemented in src/hw/device_yaml.cc.
Device parse_device_yaml(std::string_view yaml_text, std::string_view file);

// The built-in arch/*.yaml files as (file name, YAML text), sorted by name; generated at
// build time by cmake/embed_arch.cmake.
const std::vector<std::pair<std::string_view, std::string_view>>& builtin_arch_files();

class DeviceDb {
 public:
  // Built-ins, then SOLAR_ARCH_PATH (':'-separated folders; a user file with a built-in's id
  // replaces it).
  static DeviceDb load_default();
  // Built-ins, then every *.yaml in `user_folders` (in order; files sorted by name). Two
  // built-ins or two user files with one id are a UserError(Parse); a folder that does not
  // exist is a UserError(Io).
  static DeviceDb load(const std::vector<std::string>& user_folders);
  void add(Device d);  // replaces a device with the same id (case-insensitive)

  // Case-insensitive lookup; `host` is detected on first use (once per process). Throws
  // UserError(UnknownDevice) listing the known ids and suggesting the closest one.
  const Device& get(std::string_view id) const;
  std::vector<std::string> ids() const;  // sorted (case-insensitively), then "host"

 private:
  std::vector<Device> devices_;
};

}  // namespace solar::hw
