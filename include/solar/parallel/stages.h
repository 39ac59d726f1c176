// Pipeline stages of a rank graph: the model's layers cut into pp contiguous parts, the
// activations that cross a cut sent and received (docs/parallel.md, "Parallel plans").
#pragma once

#include <cstdint>
#include <vector>

#include "solar/ir/graph.h"

namespace solar::parallel {

// The number of layers of the graph's module tree (module paths `...layers.N`); 0 if none.
std::int64_t layer_count(const ir::Graph& g);

// The stage of layer n of `layers` over pp stages: contiguous blocks, the first
// (layers mod pp) of them one layer longer.
std::int64_t stage_of_layer(std::int64_t n, std::int64_t layers, std::int64_t pp);

// The pp stage graphs of rank graph g (tp rank tp_rank of each stage; peer ranks numbered
// stage x tp + tp rank, devices_per_domain of them per scale-up domain). An op belongs to
// the stage of the layer whose module ran it; one outside every layer follows its inputs
// (the final norm and the head: the last stage), and one whose inputs are all graph sources
// runs in every stage that reads it. A tensor one stage makes and a later one reads is sent
// by the first (`send`, its result an output of that stage) and received by the second.
// Throws UserError(BadArgument) when the graph has fewer layers than pp.
std::vector<ir::Graph> split_stages(const ir::Graph& g, std::int64_t pp, std::int64_t tp,
                                    std::int64_t tp_rank, std::int64_t devices_per_domain);

}  // namespace solar::parallel
