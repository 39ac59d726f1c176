// Tensor parallelism as a graph rewrite: one rank's graph of a captured program, its weights
// split by the plan's rules and the split propagated through the einsum indices
// (docs/parallel.md, "Parallel plans"; src/parallel/README.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "solar/ir/graph.h"

namespace solar::parallel {

// How a rule splits a weight (Megatron-LM's layout): column-parallel splits the output
// features, row-parallel the input features, vocab-parallel the rows of an embedding, head
// the vocabulary rows of the output head.
enum class ShardKind { Column, Row, Vocab, Head };
std::string_view shard_kind_name(ShardKind k);  // column row vocab head

// A weight split in contiguous blocks along dimension `dim`: tp of them (parts 0), or `parts`
// dividing tp, each block shared by tp / parts ranks, rank r holding block r / (tp / parts)
// (Megatron's key/value heads when tp exceeds their number: each rank keeps the head its
// query heads read).
struct WeightRule {
  ShardKind kind = ShardKind::Column;
  int dim = 0;
  std::int64_t parts = 0;
};

// A state input (a KV cache) split along `dim` like a weight (parts as WeightRule's).
struct StateRule {
  int dim = 0;
  std::int64_t parts = 0;
};

struct TensorParallelPlan {
  std::int64_t tp = 1;                        // ranks of the tensor-parallel group, >= 1
  std::int64_t rank = 0;                      // this rank, in [0, tp)
  bool sequence_parallel = false;             // --sp: reduce_scatter along the tokens + all_gather
  ir::CollectiveGroup group;                  // the group of every collective the pass inserts
  std::map<std::string, WeightRule> weights;  // sharded weights by tensor name
  // State inputs (a KV cache) sharded along a dimension; the outputs written into them in
  // place stay sharded.
  std::map<std::string, StateRule> state;
};

// A collective the pass inserted, with the tensor it reads and why.
struct InsertedCollective {
  ir::CollectiveKind kind = ir::CollectiveKind::AllReduce;
  std::string tensor;
  std::string why;
};

struct ShardedGraph {
  ir::Graph graph;
  std::vector<InsertedCollective> collectives;
  std::vector<std::string> replicated_ops;  // "op: reason", ops run whole on every rank
};

// The graph without the ops no output depends on (sends and recvs always kept).
ir::Graph remove_dead_ops(const ir::Graph& g);

// Rank plan.rank's graph of `g` (dead ops removed first; a rule naming a tensor no live op
// reads is ignored). Throws Unsupported when the plan cannot shard the graph: a rank outside
// [0, tp), a sharded dimension that does not divide over tp, offsets into a rank's block that
// would have to be gathered.
ShardedGraph shard_tensor_parallel(const ir::Graph& g, const TensorParallelPlan& plan);

}  // namespace solar::parallel
