// Runs the graphs of a program's ranks together, as NCCL runs them: each rank's graph on its
// own inputs, its collective ops exchanging the ranks' buffers (docs/executor.md, "Ranks").
#pragma once

#include <vector>

#include "solar/exec/executor.h"
#include "solar/ir/graph.h"

namespace solar::exec {

// Runs `graphs[r]` as rank r on `sources[r]` (one graph run as N ranks: the same graph N
// times), each rank on a thread of its own, in lockstep at its collectives:
// - a collective of group size n runs over the block of n consecutive ranks holding the rank
//   (ranks 0..n-1, n..2n-1, ...; group rank = rank mod n), once every rank of the block has
//   reached one; they must agree on its kind, reduction, axes, root, dtype and shapes;
// - reductions combine the ranks' values in rank order in the dtype's compute representation,
//   then round to the dtype once (avg: the sum divided by n);
// - a send delivers its input to rank `peer` at once (buffered; its result is its input); a
//   recv from rank `peer` takes the oldest message that rank sent it, waiting for one.
// Returns each rank's outputs (and `keep`'s tensors), as run_graph does. Each rank runs with
// `options` (threads 0: one thread per rank; the memory limit shared among the ranks). Throws
// UserError(BadArgument) when graphs and sources differ in number or are empty,
// UserError(InvalidGraph) naming the ranks and ops when collectives do not match, or the ranks
// wait for each other (a recv with no send, a group one rank never joins), or a message is
// never received; a rank's own error is rethrown with its rank.
std::vector<TensorMap> run_ranks(const std::vector<const ir::Graph*>& graphs,
                                 const std::vector<TensorMap>& sources,
                                 const ExecOptions& options = {},
                                 const std::set<std::string>& keep = {});

}  // namespace solar::exec
