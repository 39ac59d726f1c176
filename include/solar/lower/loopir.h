// Lifting of a loopir OpTrace — a loop-language program as its recorder writes it
// (python/solar/frontends/loopir/record.py: `loopir::nest` ops and composition intrinsics) —
// to an EinsumGraph (docs/loop-language.md, "Lifting rules").
#pragma once

#include <string_view>

#include "solar/lower/aten.h"
#include "solar/lower/optrace.h"

namespace solar::lower {

// Lifts every op of a trace whose frontend is "loopir", in order. Nothing is left
// unanalyzed: a nest that is not affine, reads outside a tensor, or is otherwise outside the
// language throws UserError with the loop-language kind of its rule and the file:line of
// the statement (docs/loop-language.md, "Refusals"). The graph is verified.
LowerResult lower_loopir(const OpTrace& trace);

// Whether the loopir table has an entry for this op name ("loopir::nest").
bool loopir_op_known(std::string_view op);

// Lowers a trace with the table of its frontend: aten ("torch"), jax or loopir.
LowerResult lower_trace(const OpTrace& trace, const LowerOptions& options = {});

}  // namespace solar::lower
