// The per-point cost of a combine expression (docs/cost.md, "Function table").
#pragma once

#include <cstdint>

#include "solar/ir/expr.h"

namespace solar::cost {

// Per-live-point cost of a combine expression, from the function table in docs/cost.md:
// arithmetic, comparisons and select are 1 vector FLOP; exp, log, tanh, erf, rsqrt, sqrt,
// recip, sin, cos are 1 special op; sigmoid is 2 special + 1 vector; pow is 2 special +
// 1 vector. Operands and constants are free. A subexpression that occurs several times
// (structurally equal subtrees, e.g. mul(sub($0,$1), sub($0,$1))) is counted once: any
// implementation computes it once and reuses the value.
struct CombineCost {
  std::uint64_t vector_flops = 0;  // vector FLOPs per live point
  std::uint64_t special_ops = 0;   // special-function ops per live point
};
CombineCost combine_cost(const ir::Expr& combine);

}  // namespace solar::cost
