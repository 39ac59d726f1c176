// The flat graph a repeat op stands for (docs/ir-text.md, "Repeat").
#pragma once

#include "solar/ir/graph.h"

namespace solar::ir {

// `g` with every repeat op (nested ones too) replaced by `trips` renamed copies of its body.
// Iteration i's sliced params are free views of row i of their inputs (a slice, then a view
// without the axis); invariant params are the op's inputs themselves; carried params are the
// previous iteration's next values (the op's input in iteration 0). A stacked output is the
// concatenation of every iteration's value, each viewed with a unit axis at `axis`; a last
// output is a view of the last iteration's value. Body ops are named `OP#i/BODY_OP` and keep
// their origins. The counts of this graph are those of `g` (docs/cost.md, "Repeat"): tests
// compare the two. Linear in the size of the result.
Graph unroll(const Graph& g);

}  // namespace solar::ir
