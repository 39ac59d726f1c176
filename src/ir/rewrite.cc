#include "solar/ir/rewrite.h"

#include "solar/util/errors.h"

namespace solar::ir {

Graph empty_like(const Graph& g) {
  Graph out;
  static_cast<GraphInfo&>(out) = static_cast<const GraphInfo&>(g);
  return out;
}

Rewriter::Rewriter(const Graph& in)
    : in_(in), out_(empty_like(in)), map_(in.tensors().size()) {}

TensorId Rewriter::keep(TensorId t) {
  SOLAR_CHECK(t.value < map_.size() && !map_[t.value].valid(), "a tensor kept twice or unknown");
  map_[t.value] = out_.add_tensor(in_.tensor(t));
  return map_[t.value];
}

TensorId Rewriter::map(TensorId t) const {
  SOLAR_CHECK(t.value < map_.size() && map_[t.value].valid(), "a rewrite uses a tensor it dropped");
  return map_[t.value];
}

OpId Rewriter::keep(Op op) {
  for (TensorId& t : op.inputs) t = map(t);
  for (TensorId& t : op.outputs) t = map(t);
  return out_.add_op(std::move(op));
}

}  // namespace solar::ir
