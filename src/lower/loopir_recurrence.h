// Private to lower/: lifting one `loopir::recurrence` op (a recurrence of the loop language:
// statements that read what they write one step before) to a repeat op
// (docs/loop-language.md, "Recurrences").
#pragma once

#include "context.h"

namespace solar::lower::detail {

// Lifts the current op of `c`, a `loopir::recurrence`: one repeat op whose body is one step
// (the recurrence's nests, lifted as ordinary nests), with the inputs it walks sliced per
// step, the values of the step before carried and each statement's values stacked along its
// step dimension (then joined with the elements the recurrence does not write). Throws
// UserError with a loop-language kind and the statement's line for a recurrence it cannot
// lift exactly.
void lift_recurrence(Context& c);

}  // namespace solar::lower::detail
