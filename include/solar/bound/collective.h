// Lower bounds on collective communication: the bytes each device must move on each link of a
// system (scale-up, scale-out) under the best algorithm the topology allows, and the time at
// that link's bandwidth (docs/parallel.md, "Collective bounds").
//
// Semantics:
// - S, the payload, is in bytes as nccl-tests defines it (doc/PERFORMANCE.md): the buffer of an
//   all-reduce or broadcast; the whole array of a reduce-scatter (n x each output) or an
//   all-gather (n x each input); each rank's buffer of an all-to-all; the message of a send.
// - `bytes` counts what one device sends (and, at the same time, receives) on a link: per
//   device, per direction. Bandwidths are bytes/s per device per direction; times in seconds.
// - Each link kind is a resource of its own, like DRAM and the compute units: a collective
//   gives one term per link it uses. The terms of a hierarchical collective overlap (its
//   phases pipeline), so its bandwidth time is their max.
// - Latency floors are a separate term, never added to the bandwidth time; present only where
//   a source publishes the per-hop latency.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "solar/hw/system.h"
#include "solar/ir/graph.h"

namespace solar::bound {

enum class CollectiveKind { AllReduce, AllGather, ReduceScatter, AllToAll, SendRecv, Broadcast };
// all_reduce all_gather reduce_scatter all_to_all send_recv broadcast
std::string_view collective_kind_name(CollectiveKind k);
std::optional<CollectiveKind> parse_collective_kind(std::string_view name);

enum class LinkKind { ScaleUp, ScaleOut };
std::string_view link_kind_name(LinkKind k);  // scale_up scale_out: the names of the resources

// How a group of ranks lies on a system: `ranks_per_domain` ranks (g) in each of `domains`
// scale-up domains (m); n = g x m ranks in all.
struct GroupLayout {
  int ranks_per_domain = 1;
  int domains = 1;
  // Torus domains: the group's extent along each axis of the domain (1 on an axis it does not
  // span), whose product is ranks_per_domain. An extent equal to the axis's uses its wraparound
  // links; a shorter one is a line. Empty on other topologies.
  std::vector<int> torus_extent;

  int size() const { return ranks_per_domain * domains; }
};

// The layout of `size` ranks numbered consecutively on `system`: they fill one domain first
// (on a torus axis 0 first, then axis 1, ...), then whole domains. Throws UserError(BadArgument)
// when the group does not fit the system, or neither fits within one domain nor is made of
// whole domains (on a torus: whole axes).
GroupLayout contiguous_group(const hw::System& system, int size);

// One link's share of a collective.
struct LinkTerm {
  LinkKind link = LinkKind::ScaleUp;
  double bytes = 0;      // per device per direction at the minimum (S-scaled formula, docs)
  double bandwidth = 0;  // bytes/s per device per direction the group gets on this link
  // The time term: bytes / bandwidth, or more where a cut of a torus carries more than the
  // devices' links can inject (a bisection bound, `algorithm` says so).
  double seconds = 0;
  std::string algorithm;  // "ring", "in-network reduction", "direct", "bisection" ...
  // With in-network reduction: the bytes per direction NCCL's NVLS algorithm moves,
  // S (n + 1) / n, for comparison with the ideal; not a bound.
  std::optional<double> implemented_bytes;
  // hops x the published latency of one hop; nullopt where it is not published.
  std::optional<double> latency_seconds;
};

struct CollectiveBound {
  CollectiveKind kind = CollectiveKind::AllReduce;
  double payload = 0;  // S, bytes
  GroupLayout group;
  std::vector<LinkTerm> terms;  // one per link kind used (none for a group of one)
  double seconds = 0;           // max over terms: the bandwidth lower bound (links overlap)
  // The latency floor: the max over the terms' latencies (the phases on different links can
  // overlap); nullopt when no link used publishes one. Never part of `seconds`.
  std::optional<double> latency_seconds;

  const LinkTerm* term(LinkKind link) const;  // nullptr when the collective does not use it
};

// The bound's kind of a graph's collective op: send and recv are the two ends of a send_recv.
CollectiveKind collective_kind(ir::CollectiveKind k);

// How a graph's collective group lies on `system`: its ranks_per_domain and torus_extent where
// the graph states them, else numbered consecutively (contiguous_group). Throws
// UserError(BadArgument) when it does not fit the system.
GroupLayout group_layout(const hw::System& system, const ir::CollectiveGroup& group);

// The bound of one collective of `kind` with payload `payload` bytes over `group` on `system`.
// Throws UserError(BadArgument) when the group does not fit the system (more ranks per domain
// than it has, more domains than nodes, a torus extent that is not the group's) or a send_recv
// group is not a pair.
CollectiveBound collective_bound(const hw::System& system, CollectiveKind kind,
                                 const GroupLayout& group, double payload);

// The bytes each of n ranks sends (and receives) per direction on a network of point-to-point
// links, at the minimum (docs/parallel.md): 2(n-1)/n S for an all-reduce (Patarasuk & Yuan
// 2009), (n-1)/n S for an all-gather, reduce-scatter or all-to-all, S for a broadcast or send.
// 0 for n = 1.
double point_to_point_bytes(CollectiveKind kind, int n, double payload);

}  // namespace solar::bound
