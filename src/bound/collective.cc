// Collective lower bounds per link (docs/parallel.md, "Collective bounds", has each formula's
// derivation and source).
#include "solar/bound/collective.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "solar/util/errors.h"

namespace solar::bound {
namespace {

using hw::Topology;

[[noreturn]] void bad(const std::string& message) {
  throw UserError(UserError::Kind::BadArgument, message);
}

bool is_reduction(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllReduce: return true;
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::AllToAll:
    case CollectiveKind::SendRecv:
    case CollectiveKind::Broadcast: return false;
  }
  SOLAR_UNREACHABLE("bad CollectiveKind");
}

// One torus axis a group spans (extent >= 2).
struct Span {
  int axis = 0;
  int extent = 0;
  bool wrap = false;  // the group covers the whole axis and the axis has wraparound links
  // Links per direction a device has toward other members along the axis: 2 (one each way)
  // unless the span is a pair without wraparound.
  int links() const { return extent >= 3 || wrap ? 2 : 1; }
};

// The group's extents on a torus domain: given, or filled axis by axis.
std::vector<int> torus_extents(const hw::System& s, const GroupLayout& g) {
  const std::vector<int>& dims = s.scale_up.torus_dims;
  if (!g.torus_extent.empty()) {
    if (g.torus_extent.size() != dims.size())
      bad(fmt::format("a group on {}'s {}-axis torus needs {} torus extents, not {}", s.id,
                      dims.size(), dims.size(), g.torus_extent.size()));
    int product = 1;
    for (size_t a = 0; a < dims.size(); ++a) {
      if (g.torus_extent[a] < 1 || g.torus_extent[a] > dims[a])
        bad(fmt::format("torus extent {} on axis {} of {} (extent {})", g.torus_extent[a], a,
                        s.id, dims[a]));
      product *= g.torus_extent[a];
    }
    if (product != g.ranks_per_domain)
      bad(fmt::format("torus extents multiply to {}, not the group's {} ranks per domain",
                      product, g.ranks_per_domain));
    return g.torus_extent;
  }
  return contiguous_group(s, g.ranks_per_domain).torus_extent;
}

std::vector<Span> torus_spans(const hw::System& s, const std::vector<int>& extents) {
  std::vector<Span> spans;
  for (size_t a = 0; a < extents.size(); ++a)
    if (extents[a] >= 2)
      spans.push_back(Span{static_cast<int>(a), extents[a],
                           extents[a] == s.scale_up.torus_dims[a] && s.scale_up.wraparound[a]});
  return spans;
}

// Bytes per device per direction on the scale-up link: the intra-domain part of the
// hierarchical algorithm over g ranks per domain and m domains.
double scale_up_bytes(CollectiveKind kind, int g, int m, double S, bool in_switch) {
  if (g < 2) return 0;
  switch (kind) {
    // Reduce-scatter + all-gather inside the domain (ring: 2(g-1)/g S); with the switch
    // reducing, each device sends its S once and receives the result once.
    case CollectiveKind::AllReduce: return in_switch ? S : 2.0 * (g - 1) / g * S;
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter: return (g - 1.0) / g * S;
    // Only the blocks for the g - 1 peers of the same domain stay on the scale-up link.
    case CollectiveKind::AllToAll: return (g - 1.0) / g * (S / m);
    case CollectiveKind::SendRecv:
    case CollectiveKind::Broadcast: return S;
  }
  SOLAR_UNREACHABLE("bad CollectiveKind");
}

// Bytes per device per direction on the scale-out link: the inter-domain part over m domains,
// each device carrying 1/g of its domain's share through its own NIC.
double scale_out_bytes(CollectiveKind kind, int g, int m, double S, bool in_network) {
  if (m < 2) return 0;
  switch (kind) {
    case CollectiveKind::AllReduce: return in_network ? S / g : 2.0 * (m - 1) / m * S / g;
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter: return (m - 1.0) / m * S / g;
    case CollectiveKind::AllToAll: return (m - 1.0) / m * S;
    case CollectiveKind::SendRecv: return S;
    case CollectiveKind::Broadcast: return S / g;
  }
  SOLAR_UNREACHABLE("bad CollectiveKind");
}

// Bytes that must cross, per direction, a cut of a torus group across a span of extent e
// (into its smaller side, `small` = floor(e/2)/e of the ranks): the intra-domain part only.
double cut_bytes(CollectiveKind kind, int e, int g, int m, double S) {
  const double small = std::floor(e / 2.0) / e;
  switch (kind) {
    // Each side needs the other side's contribution to every element: S of information.
    case CollectiveKind::AllReduce:
    case CollectiveKind::Broadcast:
    case CollectiveKind::SendRecv: return S;
    // The smaller side needs the larger side's share of the array (the larger side's blocks,
    // or its partial sums of the smaller side's blocks).
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter: return (1 - small) * S;
    // Every rank of one side sends a block of S/(g m) to every rank of the other.
    case CollectiveKind::AllToAll: return small * (1 - small) * g * (S / m);
  }
  SOLAR_UNREACHABLE("bad CollectiveKind");
}

// Sequential device-to-device hops the intra-domain part needs at the least.
int scale_up_hops(const hw::System& s, CollectiveKind kind, const std::vector<Span>& spans) {
  switch (s.scale_up.link.topology) {
    case Topology::Switched:
    case Topology::Mesh:
    case Topology::Pcie: return 1;
    case Topology::Torus: {
      // Information from every rank reaches every rank: the diameter of the group's sub-torus
      // (a broadcast only the radius, from a root in the middle).
      int hops = 0;
      for (const Span& sp : spans)
        hops += sp.wrap || kind == CollectiveKind::Broadcast ? sp.extent / 2 : sp.extent - 1;
      return std::max(hops, 1);
    }
  }
  SOLAR_UNREACHABLE("bad Topology");
}

LinkTerm scale_up_term(const hw::System& s, CollectiveKind kind, const GroupLayout& group,
                       double S) {
  const int g = group.ranks_per_domain, m = group.domains;
  const hw::ScaleUpLink& link = s.scale_up.link;
  LinkTerm t;
  t.link = LinkKind::ScaleUp;
  const bool in_switch = is_reduction(kind) && link.reduction && g >= link.reduction->min_group();
  t.bytes = scale_up_bytes(kind, g, m, S, in_switch);
  t.algorithm = in_switch ? "in-network reduction"
                : kind == CollectiveKind::AllToAll || kind == CollectiveKind::SendRecv
                    ? "direct"
                    : "ring";
  if (in_switch) t.implemented_bytes = S * (g + 1.0) / g;

  std::vector<Span> spans;
  switch (link.topology) {
    case Topology::Switched:
    case Topology::Pcie: t.bandwidth = link.bandwidth.value; break;
    case Topology::Mesh:
      // Only the links among the group's members: k - 1 peers at the per-peer rate.
      t.bandwidth = std::min(link.bandwidth.value, (g - 1) * link.peer_bandwidth->value);
      break;
    case Topology::Torus: {
      spans = torus_spans(s, torus_extents(s, group));
      int links = 0;
      for (const Span& sp : spans) links += sp.links();
      t.bandwidth = links * link.link_bandwidth->value;
      break;
    }
  }
  t.seconds = t.bytes / t.bandwidth;
  // A torus cut carries every byte that must cross it on its own links.
  for (const Span& sp : spans) {
    const double cut_links = (sp.wrap ? 2.0 : 1.0) * (g / sp.extent);
    const double seconds = cut_bytes(kind, sp.extent, g, m, S) / (cut_links * link.link_bandwidth->value);
    if (seconds > t.seconds * (1 + 1e-12)) {
      t.seconds = seconds;
      t.algorithm = fmt::format("bisection of axis {}", sp.axis);
    }
  }
  if (link.latency) t.latency_seconds = scale_up_hops(s, kind, spans) * link.latency->value;
  return t;
}

LinkTerm scale_out_term(const hw::System& s, CollectiveKind kind, const GroupLayout& group,
                        double S) {
  const int g = group.ranks_per_domain, m = group.domains;
  const hw::ScaleOutLink& link = *s.scale_out;
  LinkTerm t;
  t.link = LinkKind::ScaleOut;
  const bool in_network = is_reduction(kind) && link.reduction && m >= link.reduction->min_group();
  t.bytes = scale_out_bytes(kind, g, m, S, in_network);
  t.algorithm = in_network ? "in-network reduction"
                : kind == CollectiveKind::AllToAll || kind == CollectiveKind::SendRecv
                    ? "direct"
                    : "ring";
  if (in_network) t.implemented_bytes = S / g * (m + 1.0) / m;
  t.bandwidth = link.bandwidth.value;
  t.seconds = t.bytes / t.bandwidth;
  if (link.latency) t.latency_seconds = link.latency->value;  // one traversal of the network
  return t;
}

}  // namespace

std::string_view collective_kind_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllReduce: return "all_reduce";
    case CollectiveKind::AllGather: return "all_gather";
    case CollectiveKind::ReduceScatter: return "reduce_scatter";
    case CollectiveKind::AllToAll: return "all_to_all";
    case CollectiveKind::SendRecv: return "send_recv";
    case CollectiveKind::Broadcast: return "broadcast";
  }
  SOLAR_UNREACHABLE("bad CollectiveKind");
}

std::optional<CollectiveKind> parse_collective_kind(std::string_view name) {
  for (CollectiveKind k : {CollectiveKind::AllReduce, CollectiveKind::AllGather,
                           CollectiveKind::ReduceScatter, CollectiveKind::AllToAll,
                           CollectiveKind::SendRecv, CollectiveKind::Broadcast})
    if (collective_kind_name(k) == name) return k;
  return std::nullopt;
}

std::string_view link_kind_name(LinkKind k) {
  switch (k) {
    case LinkKind::ScaleUp: return "scale_up";
    case LinkKind::ScaleOut: return "scale_out";
  }
  SOLAR_UNREACHABLE("bad LinkKind");
}

GroupLayout contiguous_group(const hw::System& s, int size) {
  const int per_domain = s.scale_up.devices;
  if (size < 1 || size > s.devices())
    bad(fmt::format("a group of {} ranks does not fit {} ({} devices)", size, s.id, s.devices()));
  GroupLayout g;
  if (size <= per_domain) {
    g.ranks_per_domain = size;
  } else {
    if (size % per_domain != 0)
      bad(fmt::format("a group of {} ranks on {} is neither within one scale-up domain nor whole "
                      "domains of {}", size, s.id, per_domain));
    g.ranks_per_domain = per_domain;
    g.domains = size / per_domain;
  }
  if (s.scale_up.link.topology == Topology::Torus) {
    int rest = g.ranks_per_domain;
    for (int dim : s.scale_up.torus_dims) {
      const int e = std::min(dim, rest);
      if (rest > dim && rest % dim != 0)
        bad(fmt::format("a group of {} ranks does not fill {}'s torus axis by axis", size, s.id));
      g.torus_extent.push_back(e);
      rest /= e;
    }
  }
  return g;
}

CollectiveKind collective_kind(ir::CollectiveKind k) {
  switch (k) {
    case ir::CollectiveKind::AllReduce: return CollectiveKind::AllReduce;
    case ir::CollectiveKind::AllGather: return CollectiveKind::AllGather;
    case ir::CollectiveKind::ReduceScatter: return CollectiveKind::ReduceScatter;
    case ir::CollectiveKind::AllToAll: return CollectiveKind::AllToAll;
    case ir::CollectiveKind::Send: case ir::CollectiveKind::Recv: return CollectiveKind::SendRecv;
    case ir::CollectiveKind::Broadcast: return CollectiveKind::Broadcast;
  }
  SOLAR_UNREACHABLE("bad ir::CollectiveKind");
}

GroupLayout group_layout(const hw::System& s, const ir::CollectiveGroup& group) {
  if (group.size < 1 || group.size > s.devices())
    bad(fmt::format("a group of {} ranks does not fit {} ({} devices)", group.size, s.id,
                    s.devices()));
  const int size = static_cast<int>(group.size);
  if (group.ranks_per_domain <= 0) return contiguous_group(s, size);
  if (size % group.ranks_per_domain != 0)
    bad(fmt::format("{} ranks per domain do not divide a group of {}", group.ranks_per_domain,
                    size));
  GroupLayout g;
  g.ranks_per_domain = static_cast<int>(group.ranks_per_domain);
  g.domains = size / g.ranks_per_domain;
  for (std::int64_t e : group.torus_extent)
    g.torus_extent.push_back(static_cast<int>(std::min<std::int64_t>(e, size)));
  return g;
}

const LinkTerm* CollectiveBound::term(LinkKind link) const {
  for (const LinkTerm& t : terms)
    if (t.link == link) return &t;
  return nullptr;
}

double point_to_point_bytes(CollectiveKind kind, int n, double payload) {
  return scale_up_bytes(kind, n, 1, payload, false);
}

CollectiveBound collective_bound(const hw::System& system, CollectiveKind kind,
                                 const GroupLayout& group, double payload) {
  const int g = group.ranks_per_domain, m = group.domains;
  if (g < 1 || m < 1) bad("a group has at least one rank per domain and one domain");
  if (g > system.scale_up.devices)
    bad(fmt::format("{} ranks per domain on {}, whose scale-up domains have {} devices", g,
                    system.id, system.scale_up.devices));
  if (m > system.nodes)
    bad(fmt::format("a group over {} domains on {}, which has {} (give --nodes)", m, system.id,
                    system.nodes));
  if (system.scale_up.link.topology != Topology::Torus && !group.torus_extent.empty())
    bad(fmt::format("torus extents for {}, whose scale-up domain is {}", system.id,
                    hw::topology_name(system.scale_up.link.topology)));
  if (kind == CollectiveKind::SendRecv && group.size() != 2)
    bad(fmt::format("send_recv is between 2 ranks, not {}", group.size()));
  if (!(payload >= 0) || !std::isfinite(payload))
    bad(fmt::format("payload {} bytes: must be finite and not negative", payload));

  CollectiveBound b;
  b.kind = kind;
  b.payload = payload;
  b.group = group;
  if (g >= 2) b.terms.push_back(scale_up_term(system, kind, group, payload));
  if (m >= 2) {
    // Files and with_nodes refuse nodes > 1 without a scale-out link; a hand-built value may not.
    if (!system.scale_out)
      bad(fmt::format("a group over {} domains on {}, which has no scale-out link", m, system.id));
    b.terms.push_back(scale_out_term(system, kind, group, payload));
  }
  for (const LinkTerm& t : b.terms) {
    b.seconds = std::max(b.seconds, t.seconds);
    if (t.latency_seconds) b.latency_seconds = std::max(b.latency_seconds.value_or(0), *t.latency_seconds);
  }
  return b;
}

}  // namespace solar::bound
