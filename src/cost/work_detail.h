// Internal to the cost module: op_work that also reports the bytes read from each input, so
// graph_cost computes every footprint once.
#pragma once

#include <vector>

#include "solar/cost/graph_cost.h"
#include "solar/cost/work.h"

namespace solar::cost::detail {

// op_work(g, op), and when `input_bytes` is not null it receives one entry per op input:
// the bytes the op reads from that input (0 for free views; for opaque ops the input's
// full size, since an opaque cost does not say which bytes it reads).
// `live_outputs` (one flag per op output; null: all live) tells a repeat op which of its
// results the graph uses (a stacked output nobody reads is not stacked).
Work op_work(const ir::Graph& g, const ir::Op& op, std::vector<Count>* input_bytes,
             const std::vector<char>* live_outputs = nullptr);

// The work of a repeat op (repeat.cc; docs/cost.md, "Repeat").
Work repeat_work(const ir::Graph& g, const ir::Op& op, std::vector<Count>* input_bytes,
                 const std::vector<char>* live_outputs);

// graph_cost with the body tensors in `roots` (one flag per tensor) as the only outputs that
// keep ops alive, in place of the tensors with role output.
GraphCost graph_cost_from(const ir::Graph& g, const std::vector<char>& roots);

// Per tensor of `g`, whether it reaches a tensor flagged in `roots` (through any chain of ops).
std::vector<char> live_tensors(const ir::Graph& g, const std::vector<char>& roots);

// Every count of `w` times n (its parts run n times as often).
Work scaled(const Work& w, Count n);

}  // namespace solar::cost::detail
