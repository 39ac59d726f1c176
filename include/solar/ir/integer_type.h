// The integer type an einsum's combine computes in (ir/expr.h, "Integer semantics"): the one
// rule the executor and the analyses of combine expressions share.
#pragma once

#include <cstdint>
#include <vector>

#include "solar/ir/dtype.h"

namespace solar::ir {

struct IntegerType {
  int bits = 64;
  bool is_unsigned = false;
  // A bool-only einsum: width 1, unsigned, not(x) is logical not and other results do not
  // wrap around (a bool sum stays a truth value when stored).
  bool is_bool = false;
};

// The widest integer dtype among the operands and the output (float operands and a float
// output do not count; at equal width a signed type wins); bool when all that count are
// bool; i64 when none is an integer or bool.
IntegerType integer_type(const std::vector<DType>& operand_dtypes, DType output_dtype);

// The value of the low `t.bits` bits of `u` in `t`: sign-extended for a signed type,
// zero-extended for an unsigned one. Inline: the executor's inner loops wrap every integer
// result with it.
inline std::int64_t integer_value(const IntegerType& t, std::uint64_t u) {
  if (t.bits >= 64) return static_cast<std::int64_t>(u);
  const int sh = 64 - t.bits;
  if (t.is_unsigned) return static_cast<std::int64_t>((u << sh) >> sh);
  return static_cast<std::int64_t>(u << sh) >> sh;
}

}  // namespace solar::ir
