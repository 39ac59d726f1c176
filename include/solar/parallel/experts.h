// Expert parallelism as a graph rewrite: a mixture-of-experts layer's experts split over the
// ep ranks, the (token, expert) pairs dispatched to them and combined back by all-to-alls
// (docs/parallel.md, "Expert parallelism").
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "solar/ir/graph.h"

namespace solar::parallel {

// {weight name: experts module path} of the experts modules: a module whose class ends in
// `Experts`, its 3-D [experts, ...] weights.
std::map<std::string, std::string> expert_weights(const ir::Graph& g);

struct ExpertParallelGraph {
  ir::Graph graph;
  std::int64_t all_to_alls = 0;  // inserted
};

// Rank `rank`'s graph of g with its experts split over ep ranks (transformers' batched_mm
// experts: each pair gathers its expert's weights by index and multiplies by them). The pairs'
// activations are dispatched before the first expert matmul of a module and combined after
// the last, the expert ids sent with them and made local, under uniform routing: T x K / ep
// pairs to each rank (stated; a real router's imbalance only slows the busiest rank). Throws
// Unsupported without experts, when the experts do not split over ep, or when the pairs do
// not.
ExpertParallelGraph expert_parallel(const ir::Graph& g, std::int64_t ep, std::int64_t rank,
                                    const ir::CollectiveGroup& group);

}  // namespace solar::parallel
