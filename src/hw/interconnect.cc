#include "solar/hw/interconnect.h"

#include "solar/util/errors.h"

namespace solar::hw {

std::string_view topology_name(Topology t) {
  switch (t) {
    case Topology::Switched: return "switched";
    case Topology::Mesh: return "mesh";
    case Topology::Torus: return "torus";
    case Topology::Pcie: return "pcie";
  }
  SOLAR_UNREACHABLE("bad Topology");
}

std::optional<Topology> parse_topology(std::string_view name) {
  for (Topology t : {Topology::Switched, Topology::Mesh, Topology::Torus, Topology::Pcie})
    if (topology_name(t) == name) return t;
  return std::nullopt;
}

std::string_view wrap_scope_name(WrapScope s) {
  switch (s) {
    case WrapScope::Axis: return "axis";
    case WrapScope::Slice: return "slice";
  }
  SOLAR_UNREACHABLE("bad WrapScope");
}

std::optional<WrapScope> parse_wrap_scope(std::string_view name) {
  for (WrapScope s : {WrapScope::Axis, WrapScope::Slice})
    if (wrap_scope_name(s) == name) return s;
  return std::nullopt;
}

}  // namespace solar::hw
