// An abstract domain for static analyses of combine expressions (lower/masks.h uses it): what
// is known of a value at a point of an einsum's iteration space.
//
// Semantics
// - An abstract value is a constant (any double but NaN), finite data, or anything (a NaN, an
//   infinity met by a value of unknown sign, a maximum over no point).
// - The transfer functions assume what the SDPA lowering assumes: data the program computes
//   is finite, so 0 * data = 0 and -inf - data = -inf; and it is far below a mask constant
//   (a finite constant of magnitude at least 2^123, such as JAX's finfo(f32).min * 0.7 or
//   PyTorch's finfo(f32).min): data of magnitude under 2^99 added to one rounds to it in f32
//   and bf16, so c + data = c and exp(c - data) = 0 as for -inf (in f64 the sum differs from
//   c by at most the data, and exp of it is still 0), above it under a max and below it under
//   a min; what may be either a mask constant or data (their join) is anything, and so is a
//   product of one with data; constants fold as the executor computes
//   them, in the einsum's integer type where the IR says so (not(x) is bitwise in an integer
//   type and logical in a bool-only einsum, ir/expr.h).
// - An index value is a value affine in the op's indices (arange and iota, their sums and
//   multiples); a comparison of two index values holds on a region of the iteration space.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "solar/ir/expr.h"
#include "solar/ir/integer_type.h"
#include "solar/ir/region.h"

namespace solar::ir {

struct AbstractValue {
  enum Kind : std::uint8_t { Const, Finite, Any } kind = Finite;
  double c = 0;  // the constant (kind Const)

  // The constant v; anything for a NaN.
  static AbstractValue constant(double v);
  bool finite() const;                  // finite data or a finite constant
  bool is(double v) const { return kind == Const && c == v; }
  bool positive() const;                // a finite constant > 0
  bool mask_constant() const;           // a finite constant of magnitude at least 2^123
  friend bool operator==(const AbstractValue& a, const AbstractValue& b) {
    return a.kind == b.kind && (a.kind != Const || a.c == b.c);
  }
};

// The least value both `a` and `b` are: equal ones stay, finite ones are finite data.
AbstractValue join(AbstractValue a, AbstractValue b);

// lt le gt ge eq ne: a truth value, 1 or 0.
bool is_comparison(ExprOp op);
double compare(ExprOp op, double a, double b);

// A node on known values, as the executor computes it; nullopt for the functions this
// domain does not fold.
std::optional<double> fold(ExprOp op, double a, double b);
std::optional<double> fold(ExprOp op, double a, const IntegerType& t);

// A binary or unary node on abstract values (see Semantics).
AbstractValue abstract_binary(ExprOp op, AbstractValue a, AbstractValue b);
AbstractValue abstract_unary(ExprOp op, AbstractValue a, const IntegerType& t);

// The index value of a combine, from the index values of its operands (operand k:
// `operands[k]`, none when not an index) and integer constants; nullopt when it is not one
// (or leaves 64 bits).
std::optional<AffineExpr> index_value(const Expr& e,
                                      const std::vector<std::optional<AffineExpr>>& operands);

// Where a comparison of two index values holds: a region (canonical over `extents`), and
// whether it holds inside it (false for `ne`, which holds outside the region of `eq`).
struct Truth {
  Region region;
  bool inside = true;
};
std::optional<Truth> comparison_truth(const Expr& e,
                                      const std::vector<std::optional<AffineExpr>>& operands,
                                      const std::vector<std::int64_t>& extents);

}  // namespace solar::ir
