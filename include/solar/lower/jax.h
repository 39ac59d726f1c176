// Lowering of a jax-level OpTrace (one op per jaxpr equation, `jax::dot_general` ...) to an
// EinsumGraph: the jax/lax dialect table (docs/jax-frontend.md).
#pragma once

#include <string_view>

#include "solar/lower/aten.h"
#include "solar/lower/optrace.h"

namespace solar::lower {

// Lowers every op of a trace whose frontend is "jax" in order. Nested jaxprs are inlined by
// the recorder; a loop it kept as a loop (`jax::scan_repeat`, its body a nested trace) becomes
// one repeat op, one it unrolled is its iterations' ops. An op the table does not know, or
// whose parameters it cannot model, becomes an `unanalyzed` op with the reason (or, with `strict`, throws
// Unsupported). The graph is verified before it is returned.
LowerResult lower_jax(const OpTrace& trace, const LowerOptions& options = {});

// Whether the jax table has an entry for this op name ("jax::dot_general").
bool jax_op_known(std::string_view op);

}  // namespace solar::lower
