// Private helpers of the device YAML reader shared with the database (not installed).
#pragma once

#include <string_view>

namespace solar::hw {

// The 1-based line of the top-level `id:` key of a device document; 0 when there is none.
int device_id_line(std::string_view yaml_text);

}  // namespace solar::hw
