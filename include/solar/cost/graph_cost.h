// Whole-graph work and traffic: per-op work, totals, and compulsory (fused) traffic.
#pragma once

#include <vector>

#include "solar/cost/work.h"
#include "solar/ir/graph.h"

namespace solar::cost {

struct GraphCost {
  std::vector<Work> per_op;  // indexed by OpId
  Work total;                // sum over analyzed ops (bytes = unfused traffic)
  // Compulsory DRAM traffic of the whole graph fused into one kernel with unlimited
  // on-chip memory: each graph input/weight/constant read once (its largest footprint
  // over its consumers, through free views) + each graph output written once.
  Count compulsory_bytes_read;
  Count compulsory_bytes_written;
  int num_unanalyzed = 0;  // dead ops excluded
  int num_dead = 0;
  Work dead_total;  // the dead ops' counts summed: what the program computes and drops
  // Indexed by TensorId: the compulsory bytes read of each graph source (0 for the others).
  std::vector<Count> source_bytes_read;
  Count compulsory_bytes() const { return compulsory_bytes_read + compulsory_bytes_written; }
};

// Per-op work, totals and compulsory traffic of `g` in O(ops + tensors + edges). When the
// graph marks outputs, an op none of whose results reaches one (through any chain of ops) is
// dead (Work::dead): counted in num_dead, not in `total`, and its reads add no compulsory
// bytes; a graph that marks no output keeps every op. An einsum
// whose mask cannot be counted (Unsupported) is recorded as unanalyzed with the reason. A
// source read only by unanalyzed ops adds 0 compulsory bytes (unknown: see
// num_unanalyzed). Throws UserError(InvalidGraph) when ops are not in topological order.
GraphCost graph_cost(const ir::Graph& g);

}  // namespace solar::cost
