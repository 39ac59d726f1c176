// Structural masks built in a program (tril/triu, masked_fill with -inf, where on index
// comparisons, iota comparisons) recognized as masks on the einsums they make dead.
//
// Semantics
// - A tensor value is *structural* where the lowering proves it from the trace alone: the
//   indices of arange/iota (affine in the position), comparisons of them (a region: a
//   conjunction of affine constraints over the tensor's dimensions), constants, and the
//   points a masked einsum (tril, triu) leaves at 0.
// - Forward: an einsum whose operands hold a known value outside a region R, such that the
//   op yields what its masked form yields there (0 for an elementwise op: exp(-inf - m),
//   0 / s; the reduction's identity: -inf under a max, 0 under a sum or a product-sum), gets
//   R as its mask. Every tensor keeps its values.
// - Backward: an einsum none of whose readers observes its output outside a region (the
//   readers are masked there, or a select takes the other branch there) gets that region as
//   its mask: what it computed there was dead. Values outside the region may change (the
//   masked op writes 0); no program output or observed value does.
// - The analysis is the IR's (ir/region.h, ir/value_domain.h, ir/view_map.h); this pass
//   gathers its facts over the graph and adds the masks.
// - Assumption (the one the SDPA lowering makes): the values the program computes at live
//   points are finite (0 * v = 0, -inf - m = -inf for a finite m) unless the structure says
//   otherwise (an -inf constant, a maximum over a row with no live point).
#pragma once

#include <vector>

#include "solar/ir/graph.h"
#include "solar/ir/region.h"

namespace solar::lower {

struct MaskRecognition {
  std::vector<ir::OpId> forward;   // ops given a mask because their masked points are known
  std::vector<ir::OpId> backward;  // ops given a mask because nothing reads those points
  // Tensors whose values may differ from the unmasked program at points no reader observes
  // (never a graph output): they are not the framework's values there.
  std::vector<ir::TensorId> changed;
};

// A tensor whose values are known from outside the graph (a constant buffer the frontend
// read, such as a causal mask built in a module's constructor): `inside` on `region` (over the
// tensor's dimensions; empty: everywhere), `outside` elsewhere.
struct KnownValues {
  ir::TensorId tensor;
  ir::Region region;
  double inside = 0, outside = 0;
};

// Adds the masks above to the einsums of `g` (op and tensor ids and names are kept, and every
// graph-level field: the graph is rewritten with ir::Rewriter). A mask that the cost module
// could not count is not added; index arithmetic past 64 bits leaves `g` as it is. Runs in
// O(ops + edges) plus the masked ops' constraints.
// `known` seeds the facts of constant tensors (their values are structural as a built
// mask's are).
MaskRecognition recognize_masks(ir::Graph& g, const std::vector<KnownValues>& known = {});

}  // namespace solar::lower
