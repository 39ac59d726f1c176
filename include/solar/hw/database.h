// The device database: the built-in arch/*.yaml files (compiled into the library), any
// YAML files in the folders of SOLAR_ARCH_PATH, and the run-time detected `host`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "solar/hw/device.h"

namespace solar::hw {

// Parses one device YAML document; `file` names it in errors (UserError(Parse) with line).
Device parse_device_yaml(std::string_view yaml_text, std::string_view file);

class DeviceDb {
 public:
  // Built-ins, then SOLAR_ARCH_PATH (':'-separated folders; a user file with a built-in's id
  // replaces it).
  static DeviceDb load_default();
  void add(Device d);  // replaces a device with the same id (case-insensitive)

  // Case-insensitive lookup; `host` is detected on first use. Throws
  // UserError(UnknownDevice) listing the known ids.
  const Device& get(std::string_view id) const;
  std::vector<std::string> ids() const;  // sorted, plus "host"

 private:
  std::vector<Device> devices_;
  mutable std::vector<Device> host_;  // detected lazily, at most one
};

}  // namespace solar::hw
