// Data parallelism and ZeRO for a training step's rank graph (docs/parallel.md, "Data
// parallelism and ZeRO"): the gradient reduction over the dp replicas, and with ZeRO the
// sharded optimizer state, gradients and (stage 3, FSDP) parameters with their all-gathers.
#pragma once

#include <cstdint>

#include "solar/ir/graph.h"

namespace solar::parallel {

struct DataParallelGraph {
  ir::Graph graph;
  std::int64_t gradient_elements = 0;  // of the step's gradients, whole (elements)
};

// Training step g (its outputs: the scalar loss and the gradients) with its gradients reduced
// over dp replicas at ZeRO stage `zero` (0 to 3): ZeRO 0 an all_reduce (avg) of each
// gradient; 1 and 2 a reduce_scatter of it flattened and an all_gather of the updated
// parameters (written over the gradient's shard: the captured step has no optimizer, so it
// is what the gather costs, not what it computes); 3 (FSDP) also each trainable weight held
// as its 1/dp shard, gathered before its first use and again after the loss for the backward
// (Rajbhandari et al., "ZeRO", arXiv:1910.02054, section 7). Throws Unsupported for a graph
// with no gradients or a gradient or weight that does not split over dp.
DataParallelGraph data_parallel(const ir::Graph& g, std::int64_t dp, int zero,
                                const ir::CollectiveGroup& group);

}  // namespace solar::parallel
