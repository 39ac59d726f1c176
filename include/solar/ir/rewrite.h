// Rewriting a graph into a new one, keeping every graph-level field by construction: the one
// way a pass (mask recognition, re-association, unrolling) builds its result.
#pragma once

#include <vector>

#include "solar/ir/graph.h"

namespace solar::ir {

// A graph without tensors or ops that says of itself all that `g` says: every field of
// GraphInfo (name, frontend, source, module classes), copied whole.
Graph empty_like(const Graph& g);

// The rewrite of one graph: a new graph, empty_like the input, into which a pass copies the
// tensors and ops it keeps (changed or not) and adds its own. Tensors kept from the input map
// to their ids in the result; ops are added in order, so the result stays topological when
// the pass adds each op after the producers of its inputs.
class Rewriter {
 public:
  explicit Rewriter(const Graph& in);

  const Graph& in() const { return in_; }
  const Graph& out() const { return out_; }

  // Copies input tensor `t` (name, shape, dtype, role, sparsity); returns its id in the result.
  TensorId keep(TensorId t);
  // The id in the result of input tensor `t`, which must have been kept.
  TensorId map(TensorId t) const;
  // Adds `op`, whose inputs and outputs are input-graph ids (each kept), with those ids mapped.
  OpId keep(Op op);

  // Adds a tensor or op of the result's own (ids of the result).
  TensorId add_tensor(Tensor t) { return out_.add_tensor(std::move(t)); }
  OpId add_op(Op op) { return out_.add_op(std::move(op)); }

  // The result; the rewriter is spent.
  Graph finish() && { return std::move(out_); }

 private:
  const Graph& in_;
  Graph out_;
  std::vector<TensorId> map_;  // by input tensor id; invalid when not kept
};

}  // namespace solar::ir
