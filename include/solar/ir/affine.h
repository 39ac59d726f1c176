// Affine index expressions: the subscripts of extended-einsum operands.
//
// Semantics: an expression is sum_i coef_i * index_i + constant over the op's iteration
// indices (each index i ranges over [0, extent_i)). A plain subscript `k` is the expression
// with one term of coefficient 1 and constant 0. Convolution input access is
// `p*stride + r*dilation - pad`; a sliding window is `i + w`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "solar/util/errors.h"

namespace solar::ir {

// Position of an index in its op's index list.
using IndexPos = int;

struct AffineTerm {
  IndexPos index;
  std::int64_t coef;  // never 0 in a canonical expression
  friend bool operator==(const AffineTerm&, const AffineTerm&) = default;
};

// An immutable affine expression. Built through the factories, which canonicalize: terms
// sorted by index, like terms merged, zero coefficients dropped.
class AffineExpr {
 public:
  AffineExpr() = default;  // the constant 0
  static AffineExpr index(IndexPos i);
  static AffineExpr constant(std::int64_t c);
  static AffineExpr make(std::vector<AffineTerm> terms, std::int64_t constant);

  const std::vector<AffineTerm>& terms() const { return terms_; }
  std::int64_t constant_term() const { return constant_; }

  // The index when the expression is exactly one index with coefficient 1 and no offset.
  std::optional<IndexPos> as_plain_index() const;
  bool is_constant() const { return terms_.empty(); }

  // Smallest and largest value over the box [0, extents[i]) (inclusive); requires every
  // extent >= 1.
  std::int64_t min_value(const std::vector<std::int64_t>& extents) const;
  std::int64_t max_value(const std::vector<std::int64_t>& extents) const;

  std::int64_t evaluate(const std::int64_t* index_values) const;

  friend bool operator==(const AffineExpr&, const AffineExpr&) = default;

 private:
  std::vector<AffineTerm> terms_;
  std::int64_t constant_ = 0;
};

// Raised by the arithmetic below when a coefficient or the constant of an exact result leaves
// 64 bits: the index arithmetic of the graph or program cannot be represented. A caller that
// can do without the expression (an analysis that then knows nothing of it) catches it.
class AffineOverflow : public UserError {
 public:
  AffineOverflow();
};

// Exact arithmetic on affine expressions (intermediates in 128 bits): the result is
// canonical, and a result that does not fit 64 bits throws AffineOverflow.
AffineExpr operator+(const AffineExpr& a, const AffineExpr& b);
AffineExpr operator-(const AffineExpr& a, const AffineExpr& b);
AffineExpr operator-(const AffineExpr& a);
AffineExpr operator*(std::int64_t k, const AffineExpr& a);
inline AffineExpr operator*(const AffineExpr& a, std::int64_t k) { return k * a; }
AffineExpr operator+(const AffineExpr& a, std::int64_t c);
AffineExpr operator-(const AffineExpr& a, std::int64_t c);

// `e` with every index i replaced by `repl[i]` (an expression over other indices); nullopt
// when `e` uses an index that `repl` leaves empty. Throws AffineOverflow as the operators do.
std::optional<AffineExpr> substitute(const AffineExpr& e,
                                     const std::vector<std::optional<AffineExpr>>& repl);

// An affine constraint `expr >= 0` on the iteration space; points where it fails are not
// part of the op (causal: `i - j >= 0`).
struct AffineConstraint {
  AffineExpr expr;
  friend bool operator==(const AffineConstraint&, const AffineConstraint&) = default;
};

}  // namespace solar::ir
