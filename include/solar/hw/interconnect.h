// Interconnects: the links that join devices, a scale-up fabric inside a domain (NVLink,
// Infinity Fabric, ICI, PCIe) and a scale-out network between domains (the NICs), with their
// sources (docs/devices.md, "Interconnects"; docs/parallel.md).
//
// Units: every bandwidth is in bytes/s per device and per direction (what one device can send,
// and at the same time receive). Vendors headline bidirectional sums, twice as large; the
// files store half of them (flag D). Latencies in seconds. Counts are plain numbers.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "solar/hw/sourced.h"

namespace solar::hw {

// How the devices of one scale-up domain are joined. The collective bounds (bound/collective.h)
// switch over it.
enum class Topology {
  // Every device links to non-blocking switches (NVSwitch, the NVL72 switch trays): any subset
  // of the domain gets each member's full scale-up bandwidth.
  Switched,
  // Point-to-point links, one set per peer, no switch (AMD Infinity Fabric on MI300X, Gaudi's
  // on-die RoCE ports): a group of k devices gets (k - 1) x the per-peer bandwidth.
  Mesh,
  // Nearest-neighbour links along 2 or 3 axes (TPU ICI): a group gets the links of the axes
  // it spans, two per axis with wraparound.
  Torus,
  // PCIe only (no device-to-device fabric): each device's PCIe link to the host's PCIe
  // switches, treated as a switched domain of that bandwidth.
  Pcie,
};
std::string_view topology_name(Topology t);  // switched mesh torus pcie
std::optional<Topology> parse_topology(std::string_view name);

// A switch that reduces (adds) the operands of an all-reduce itself, so that each device sends
// and receives its buffer about once (NVLink SHARP in NVSwitch gen3 and later, InfiniBand
// SHARP). The claim carries its own source and flag.
struct InNetworkReduction {
  std::string name;  // "NVLink SHARP (NVSwitch gen3)"
  std::string source;
  std::string flag;
  std::string note;
  // The smallest group it serves, where a source says (a count); absent: any group of 2 or more.
  std::optional<Sourced> from_devices;

  int min_group() const { return from_devices ? static_cast<int>(from_devices->value) : 2; }
};

// The scale-up link of one device, as a system's domain uses it.
struct ScaleUpLink {
  std::string fabric;  // "NVLink 4 (18 links) to 4 NVSwitch gen3"
  Topology topology = Topology::Switched;
  Sourced bandwidth;               // bytes/s per device per direction over all its scale-up links
  std::optional<Sourced> links;    // links (ports) per device, a count
  std::optional<Sourced> peer_bandwidth;  // Mesh (required): bytes/s per direction to one peer
  std::optional<Sourced> link_bandwidth;  // Torus (required): bytes/s per direction of one link
  std::optional<InNetworkReduction> reduction;  // Switched only: the switch reduces
  std::optional<Sourced> latency;  // seconds per hop (device to device), only where published
};

// The scale-out link of one device: its share of the NICs that join domains.
struct ScaleOutLink {
  std::string fabric;  // "ConnectX-7, one 400 Gb/s NDR port per GPU"
  Sourced bandwidth;   // bytes/s per device per direction (its NIC)
  std::optional<InNetworkReduction> reduction;  // the network reduces (InfiniBand SHARP)
  std::optional<Sourced> latency;  // seconds per traversal of the network, only where published
};

// When a torus axis has wraparound links, for a device whose slices come in many shapes.
enum class WrapScope {
  Axis,   // an axis wraps when its extent is a multiple of `wraparound_from` (TPU v5e: 16)
  Slice,  // every axis wraps when every extent is a multiple of it, none otherwise (v5p: 4)
};
std::string_view wrap_scope_name(WrapScope s);  // axis slice
std::optional<WrapScope> parse_wrap_scope(std::string_view name);

// A device's scale-up link and the domains it can form (arch/*.yaml `interconnect.scale_up`).
struct DeviceScaleUp {
  ScaleUpLink link;
  std::optional<Sourced> max_devices;  // the largest scale-up domain it forms, where published
  // Torus only: the number of axes (2 or 3), and from which extent an axis has wraparound
  // links. Without a published rule every axis is taken to wrap: more links, never fewer,
  // so the bounds stay lower bounds.
  std::optional<Sourced> torus_axes;
  std::optional<Sourced> wraparound_from;
  WrapScope wraparound_scope = WrapScope::Axis;
};

// A device's `interconnect:` section: what an inline system "NxDEVICE" is built from. At least
// one part is present.
struct Interconnect {
  std::optional<DeviceScaleUp> scale_up;
  // Its NIC in the vendor's reference system (DGX, a cloud instance); the note says which.
  std::optional<ScaleOutLink> scale_out;
};

}  // namespace solar::hw
