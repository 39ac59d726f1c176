// A number with where it comes from: the provenance every figure of a device or system file
// carries (docs/devices.md, "Flags").
#pragma once

#include <string>

namespace solar::hw {

// A number with where it comes from. `flag` is V (vendor), V-rev (vendor revised the figure;
// the old one in `note`), D (derived, arithmetic in `note`), E (estimate or third party,
// reason in `note`) or M (measured or read on this machine, how in `note`).
struct Sourced {
  double value = 0;    // in the unit the field states (FLOP/s, bytes/s, bytes, MHz, s, a count)
  std::string source;  // a key of the file's `sources:` map
  std::string flag;
  std::string note;
};

}  // namespace solar::hw
