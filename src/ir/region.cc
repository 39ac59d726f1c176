#include "solar/ir/region.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "solar/util/int_math.h"

namespace solar::ir {

namespace {

bool less(const AffineConstraint& a, const AffineConstraint& b) {
  const auto& x = a.expr.terms();
  const auto& y = b.expr.terms();
  for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
    if (x[i].index != y[i].index) return x[i].index < y[i].index;
    if (x[i].coef != y[i].coef) return x[i].coef < y[i].coef;
  }
  if (x.size() != y.size()) return x.size() < y.size();
  return a.expr.constant_term() < b.expr.constant_term();
}

}  // namespace

std::optional<AffineExpr> image_of(const AffineExpr& e, const Substitution& repl) {
  try {
    return substitute(e, repl);
  } catch (const AffineOverflow&) {
    return std::nullopt;
  }
}

AffineConstraint normalized_constraint(const AffineExpr& e) {
  std::int64_t g = 0;
  for (const AffineTerm& t : e.terms()) g = std::gcd(g, t.coef < 0 ? -t.coef : t.coef);
  if (g <= 1) return {e};
  std::vector<AffineTerm> terms = e.terms();
  for (AffineTerm& t : terms) t.coef /= g;
  return {AffineExpr::make(std::move(terms), floor_div(e.constant_term(), g))};
}

AffineConstraint negated(const AffineConstraint& c) { return normalized_constraint(-c.expr - 1); }

Region canonical_region(Region r, const std::vector<std::int64_t>& extents) {
  for (AffineConstraint& c : r) c = normalized_constraint(c.expr);
  std::erase_if(r, [&](const AffineConstraint& c) {
    for (const AffineTerm& t : c.expr.terms())
      if (t.index >= static_cast<IndexPos>(extents.size())) return false;
    return c.expr.min_value(extents) >= 0;
  });
  std::sort(r.begin(), r.end(), less);
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

std::optional<Region> substitute_region(const Region& r, const Substitution& repl) {
  Region out;
  for (const AffineConstraint& c : r) {
    std::optional<AffineExpr> e = image_of(c.expr, repl);
    if (!e) return std::nullopt;
    out.push_back({*e});
  }
  return out;
}

Region substitute_region_part(const Region& r, const Substitution& repl) {
  Region out;
  for (const AffineConstraint& c : r)
    if (std::optional<AffineExpr> e = image_of(c.expr, repl)) out.push_back({*e});
  return out;
}

Region common_constraints(const Region& a, const Region& b) {
  Region out;
  for (const AffineConstraint& c : a)
    if (std::find(b.begin(), b.end(), c) != b.end()) out.push_back(c);
  return out;
}

bool covers_every_assignment(const Region& r, const std::vector<std::int64_t>& extents,
                             const std::vector<bool>& kept) {
  int other = -1;
  for (const AffineConstraint& c : r)
    for (const AffineTerm& t : c.expr.terms())
      if (!kept[t.index]) {
        if (other >= 0 && other != t.index) return false;
        other = t.index;
      }
  std::vector<AffineExpr> lows, highs;
  if (other >= 0) {
    lows.push_back(AffineExpr::constant(0));
    highs.push_back(AffineExpr::constant(extents[other] - 1));
  }
  for (const AffineConstraint& c : r) {
    std::int64_t coef = 0;
    std::vector<AffineTerm> rest;
    for (const AffineTerm& t : c.expr.terms()) (t.index == other ? coef = t.coef : (rest.push_back(t), 0));
    AffineExpr e = AffineExpr::make(std::move(rest), c.expr.constant_term());
    if (coef == 0) {
      if (e.min_value(extents) < 0) return false;  // some assignment fails it outright
    } else if (coef == 1) {
      lows.push_back(-e);  // x >= -e
    } else if (coef == -1) {
      highs.push_back(e);  // x <= e
    } else {
      return false;
    }
  }
  for (const AffineExpr& lo : lows)
    for (const AffineExpr& hi : highs)
      if ((hi - lo).min_value(extents) < 0) return false;
  return true;
}

}  // namespace solar::ir
