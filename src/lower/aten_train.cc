// The training half of the aten table: backward ops recorded by autograd and the update
// ops of optimizer steps (captured by `solar analyze --train`).
#include "families.h"

namespace solar::lower::detail {

void register_training_ops(const Register& reg) { (void)reg; }

}  // namespace solar::lower::detail
