#include "solar/ir/affine.h"

#include <algorithm>

#include "solar/util/errors.h"

namespace solar::ir {

AffineExpr AffineExpr::index(IndexPos i) { return make({{i, 1}}, 0); }

AffineExpr AffineExpr::constant(std::int64_t c) { return make({}, c); }

AffineExpr AffineExpr::make(std::vector<AffineTerm> terms, std::int64_t constant) {
  std::sort(terms.begin(), terms.end(),
            [](const AffineTerm& a, const AffineTerm& b) { return a.index < b.index; });
  AffineExpr e;
  e.constant_ = constant;
  for (const AffineTerm& t : terms) {
    SOLAR_CHECK(t.index >= 0, "negative index position in an affine expression");
    if (!e.terms_.empty() && e.terms_.back().index == t.index) {
      e.terms_.back().coef += t.coef;
    } else {
      e.terms_.push_back(t);
    }
  }
  std::erase_if(e.terms_, [](const AffineTerm& t) { return t.coef == 0; });
  return e;
}

std::optional<IndexPos> AffineExpr::as_plain_index() const {
  if (terms_.size() == 1 && terms_[0].coef == 1 && constant_ == 0) return terms_[0].index;
  return std::nullopt;
}

std::int64_t AffineExpr::min_value(const std::vector<std::int64_t>& extents) const {
  std::int64_t v = constant_;
  for (const AffineTerm& t : terms_)
    if (t.coef < 0) v += t.coef * (extents.at(t.index) - 1);
  return v;
}

std::int64_t AffineExpr::max_value(const std::vector<std::int64_t>& extents) const {
  std::int64_t v = constant_;
  for (const AffineTerm& t : terms_)
    if (t.coef > 0) v += t.coef * (extents.at(t.index) - 1);
  return v;
}

std::int64_t AffineExpr::evaluate(const std::int64_t* index_values) const {
  std::int64_t v = constant_;
  for (const AffineTerm& t : terms_) v += t.coef * index_values[t.index];
  return v;
}

}  // namespace solar::ir
