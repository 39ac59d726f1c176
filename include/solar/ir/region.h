// Regions of an index space: conjunctions of affine constraints over the indices of an op or
// the dimensions of a tensor, kept in a canonical form so that equal regions compare equal.
//
// Semantics
// - A region is the set of integer points of a box [0, extent_0) x [0, extent_1) x ... where
//   every constraint `expr >= 0` holds; no constraint: the whole box.
// - The canonical form (canonical_region) divides each constraint by the common divisor of
//   its coefficients (2i - 2j - 1 >= 0 is i - j - 1 >= 0), drops the constraints that hold
//   on the whole box, and sorts the rest without duplicates. A region that holds nowhere keeps
//   its constraints.
// - A substitution maps the variables of one space to affine expressions over another
//   (variable v -> repl[v]; none: v has no image there).
// Arithmetic that leaves 64 bits throws ir::AffineOverflow, except where a function says it
// gives nothing instead.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "solar/ir/affine.h"

namespace solar::ir {

using Region = std::vector<AffineConstraint>;
using Substitution = std::vector<std::optional<AffineExpr>>;

// e >= 0 with the coefficients' common divisor taken out (the constant rounded down).
AffineConstraint normalized_constraint(const AffineExpr& e);
// The complement of c over the integers: -expr - 1 >= 0, normalized.
AffineConstraint negated(const AffineConstraint& c);
// The canonical form of `r` over the box of `extents` (see above).
Region canonical_region(Region r, const std::vector<std::int64_t>& extents);

// substitute(e, repl) (ir/affine.h), with an image that leaves 64 bits taken as none.
std::optional<AffineExpr> image_of(const AffineExpr& e, const Substitution& repl);
// The constraints of `r` over the variables of another space; nullopt when one of them
// uses a variable without an image (or its image leaves 64 bits).
std::optional<Region> substitute_region(const Region& r, const Substitution& repl);
// The constraints of `r` that map, the others dropped: a region that holds `r`'s image.
Region substitute_region_part(const Region& r, const Substitution& repl);
// The constraints `a` and `b` share: a region that holds both.
Region common_constraints(const Region& a, const Region& b);

// Whether every assignment of the variables flagged in `kept` (within `extents`) has a point
// of `r`: solved for the one other variable the constraints use (with coefficients +-1), each
// lower bound against each upper bound over the box. False when that cannot be shown (two or
// more other variables, other coefficients).
bool covers_every_assignment(const Region& r, const std::vector<std::int64_t>& extents,
                             const std::vector<bool>& kept);

}  // namespace solar::ir
