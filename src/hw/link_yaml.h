// Private readers of the link sections shared by device files (`interconnect:`) and system
// files (`scale_up:`, `scale_out:`), docs/devices.md and docs/parallel.md (not installed).
#pragma once

#include <string>

#include "solar/hw/interconnect.h"
#include "yaml_reader.h"

namespace solar::hw::yaml {

// The keys every scale-up section has, in either file.
inline constexpr std::string_view kScaleUpCommonKeys[] = {
    "fabric", "topology", "bandwidth", "links", "peer_bandwidth", "link_bandwidth",
    "in_network_reduction", "latency"};

// The link part of a scale-up section `f` (whose allowed keys the caller chose): fabric,
// topology and rates, each key checked against the topology.
ScaleUpLink parse_scale_up_link(const Reader& r, const Fields& f);

// A `scale_out:` section.
ScaleOutLink parse_scale_out(const Reader& r, const YAML::Node& node, const std::string& what);

// A device's `interconnect:` section.
Interconnect parse_interconnect(const Reader& r, const YAML::Node& node);

}  // namespace solar::hw::yaml
