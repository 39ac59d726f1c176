// The SOL levels (docs/bounds.md): per-op roofline, unfused SOL, fused SOL.
//
// Semantics (docs/bounds.md). Times are seconds at dense peak rates, except for 2:4 work:
// - A term is the time one resource needs for its work: FLOP / (FLOP/s) for a compute unit
//   (1 MAC = 2 FLOP), bytes / (bytes/s) for a memory level. Terms are named
//   "<unit>.<rate dtype>" ("tensor_core.bf16"), the special unit by its name ("mufu"), memory
//   "dram" or "l2".
// - A contraction's MACs of dtype d take
//   2 (macs - macs_2_4) / dense peak + 2 macs_2_4 / sparse peak on its route's unit, where
//   macs_2_4 are its 2:4-structured MACs (cost::Work) and the sparse peak is the unit's
//   published 2:4 rate (dense-equivalent; route "<unit>.<rate dtype>.2:4"). A unit without
//   one runs them at the dense peak: nothing is skipped there. Unstructured zeros are never
//   skipped. The concurrent resources are the unit kinds (tensor, vector, special)
//   and memory: work on several routes of one kind (two dtypes, or units of one kind split
//   by clock) adds up, in one term named by the route labels joined with '+'
//   ("fp32_simt.f32+fp32_simt.bf16").
// - Per-op roofline: max over terms (unit kinds and memory run concurrently). A repeat op is
//   the ops of its body, each run an op of its own (cost::Work::parts): its seconds are the
//   sum of their rooflines, its terms their per-resource sums, exactly as its unrolled graph.
// - Unfused SOL: the sum of the per-op rooflines of analyzed ops (the eager reference).
// - Fused SOL: max over units of the whole graph's work, and the compulsory bytes over
//   bandwidth (a hard lower bound for any implementation).
// - Vector work and contractions of a dtype no legal route publishes a rate for are priced at
//   a ceiling, a rate no unit of the device exceeds for them (policy.h, ceiling_route), each
//   ceiling a resource of its own, and described in `ceiling`. Other work whose unit
//   publishes no rate is left out of the max (the result is still a lower bound) and
//   described in `unknown`; nothing is priced at zero silently.
// - Unanalyzed ops: seconds 0, bottleneck "unanalyzed", not in the sums.
// - Links (docs/parallel.md, "Collective ops in the graph"): with a system, each link kind
//   (scale_up, scale_out) is a resource beside DRAM and the compute units; a collective's term
//   on a link is collective_bound's. The per-op roofline is the max over units, memory and
//   links. The fused level's `seconds` is the max over every resource's total (communication
//   fully overlapped: the lower bound); `seconds_no_overlap` the max over compute and memory
//   plus the sum of the link terms. Without a system a collective's link time is unknown:
//   left out of the max and described in `unknown`, as work of unknown rate is.
// - Latency floors are separate (`latency_seconds`), never part of `seconds`.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "solar/bound/collective.h"
#include "solar/bound/policy.h"
#include "solar/cost/graph_cost.h"
#include "solar/hw/device.h"
#include "solar/ir/graph.h"

namespace solar::bound {

// One time term: the time a resource needs for its share of the work.
struct Term {
  std::string resource;  // "tensor_core.bf16", "fp32_simt.f32", "mufu", "dram", "l2"
  double seconds = 0;
  // The memory level of a memory term (`resource` is its name); nullopt for a compute term.
  std::optional<hw::MemoryLevel> memory = std::nullopt;
  // The link of a link term (`resource` is its name, scale_up or scale_out); nullopt for
  // compute and memory terms.
  std::optional<LinkKind> link = std::nullopt;

  // The term of `level` moving its bytes in `seconds`.
  static Term of_memory(hw::MemoryLevel level, double seconds) {
    return Term{std::string(hw::memory_level_name(level)), seconds, level};
  }
  // The term of `link` carrying its bytes in `seconds`.
  static Term of_link(LinkKind link, double seconds) {
    return Term{std::string(link_kind_name(link)), seconds, std::nullopt, link};
  }
};

// What a graph's collectives move on one link of a system, summed over its ops (an op that
// runs n times counts n times).
struct LinkUse {
  LinkKind link = LinkKind::ScaleUp;
  double bytes = 0;    // per device per direction (collective_bound's bytes)
  double seconds = 0;  // the sum of the ops' time terms on the link
  std::int64_t collectives = 0;  // collective runs that used the link
};

struct OpBound {
  double seconds = 0;           // max over terms (units run concurrently)
  std::string bottleneck;       // the resource of the largest term; "none" for an op with no
                                // work and no bytes (a free view); "unanalyzed"
  std::vector<Term> terms;      // nonzero terms, largest first
  std::vector<std::string> unknown;  // work whose unit has no published rate (left out)
  double share = 0;             // seconds / unfused seconds (0 when the unfused SOL is 0)
  // A collective's share of each link it uses (with a system): bytes per device per
  // direction, the group's bandwidth, the time term and the algorithm; a repeat op's summed
  // over its runs. Empty for other ops.
  std::vector<LinkTerm> links;
  // The collective's latency floor (collective_bound), where its links publish a hop latency.
  std::optional<double> latency_seconds;
};

struct LevelBound {
  double seconds = 0;
  // Unfused: the resource that bounds the ops carrying the most time (op seconds grouped by
  // each op's bottleneck). Fused: the largest term. "none" when the level is 0.
  std::string bottleneck;
  std::vector<Term> terms;   // per resource: summed over ops (unfused) or whole graph (fused);
                             // largest first
  std::vector<std::string> unknown;  // one sentence per kind of unpriced work, graph totals
  // One sentence per kind of work the device publishes no rate for that is priced at a
  // ceiling instead (a rate no unit exceeds for it: policy.h, ceiling_route), graph totals.
  // Its term ("vector.ceiling", "contraction.ceiling") is in `terms`: the level is complete.
  std::vector<std::string> ceiling;
  // With a system: communication not overlapped with computation, max(compute and memory
  // terms) + the sum of the link terms (unfused: that per op, summed). nullopt without one.
  std::optional<double> seconds_no_overlap;
  // With a system whose links publish a hop latency: the latency floor of the collectives, the
  // largest sum of their floors along a chain of dependent ops. Never part of `seconds`.
  std::optional<double> latency_seconds;
};

struct DeviceBounds {
  std::string device_id;
  std::string device_name;  // "NVIDIA H100 SXM5 80GB"
  Options options;
  // The peak of every route that priced some work: "tensor_core.bf16" -> FLOP/s,
  // "tensor_core.bf16.2:4" -> its 2:4 sparse peak (dense-equivalent FLOP/s), "dram"/"l2" ->
  // bytes/s.
  std::map<std::string, double> peaks_used;
  std::optional<double> dram_bandwidth;  // bytes/s, when published
  std::vector<OpBound> per_op;  // indexed by OpId; unanalyzed ops: seconds 0, bottleneck
                                // "unanalyzed"
  LevelBound unfused;           // sum over ops of the per-op roofline
  LevelBound fused;             // whole graph, compulsory traffic
  std::string system_id;        // the system whose links priced the collectives; empty: none
  std::vector<LinkUse> links;   // per link the collectives use, scale_up first (with a system)
};

// Bounds `g` (whose per-op work is `cost`, indexed by OpId) on `device`, its collectives on
// the links of `system` when given (one rank of it: `device` is the system's device). O(ops).
// Throws InternalError when `cost` does not match `g`, UserError(BadArgument) when `device`
// is not the system's or a collective's group does not fit the system (naming the op).
DeviceBounds compute_bounds(const ir::Graph& g, const cost::GraphCost& cost,
                            const hw::Device& device, const Options& options,
                            const hw::System* system = nullptr);

}  // namespace solar::bound
