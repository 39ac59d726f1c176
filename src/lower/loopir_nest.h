// Private to lower/: lifting one `loopir::nest` op (a loop nest of the loop language) to
// einsum ops, the heart of the loopir table (docs/loop-language.md, "Lifting rules").
#pragma once

#include "context.h"

namespace solar::lower::detail {

// Lifts the current op of `c`, a `loopir::nest`: each statement becomes one einsum (plus one
// elementwise op where it combines with an earlier value). Throws UserError with a loop-
// language kind (NotAffine, ShapeMismatch, OutsideLanguage, ...) and the statement's line
// for a nest that cannot be lifted exactly: never an approximation, never a dropped statement.
void lift_nest(Context& c);

}  // namespace solar::lower::detail
