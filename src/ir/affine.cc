#include "solar/ir/affine.h"

#include <algorithm>

#include "solar/util/errors.h"

namespace solar::ir {

AffineExpr AffineExpr::index(IndexPos i) { return make({{i, 1}}, 0); }

AffineExpr AffineExpr::constant(std::int64_t c) { return make({}, c); }

AffineExpr AffineExpr::make(std::vector<AffineTerm> terms, std::int64_t constant) {
  // Canonicalized in place: the common plain subscript costs one allocation, not three.
  if (!std::is_sorted(terms.begin(), terms.end(),
                      [](const AffineTerm& a, const AffineTerm& b) { return a.index < b.index; }))
    std::sort(terms.begin(), terms.end(),
              [](const AffineTerm& a, const AffineTerm& b) { return a.index < b.index; });
  std::size_t n = 0;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    const AffineTerm t = terms[i];
    SOLAR_CHECK(t.index >= 0, "negative index position in an affine expression");
    if (n > 0 && terms[n - 1].index == t.index) {
      SOLAR_CHECK(!__builtin_add_overflow(terms[n - 1].coef, t.coef, &terms[n - 1].coef),
                  "affine coefficient overflows 64 bits");
    } else {
      terms[n++] = t;
    }
  }
  terms.resize(n);
  std::erase_if(terms, [](const AffineTerm& t) { return t.coef == 0; });
  AffineExpr e;
  e.terms_ = std::move(terms);
  e.constant_ = constant;
  return e;
}

std::optional<IndexPos> AffineExpr::as_plain_index() const {
  if (terms_.size() == 1 && terms_[0].coef == 1 && constant_ == 0) return terms_[0].index;
  return std::nullopt;
}

namespace {

// Bounds are summed in 128 bits and saturated to the 64-bit range: a huge coefficient or
// extent gives a bound at the limit (still outside any real tensor) instead of wrapping.
std::int64_t saturate(__int128 v) {
  if (v > INT64_MAX) return INT64_MAX;
  if (v < INT64_MIN) return INT64_MIN;
  return static_cast<std::int64_t>(v);
}

__int128 bound(const std::vector<AffineTerm>& terms, std::int64_t constant,
               const std::vector<std::int64_t>& extents, bool upper) {
  __int128 v = constant;
  for (const AffineTerm& t : terms) {
    if ((t.coef > 0) != upper) continue;
    __int128 term = static_cast<__int128>(t.coef) * (extents.at(t.index) - 1);
    v += term;  // |term| < 2^126 and v is back in 64-bit range before each add: no overflow
    if (v > INT64_MAX || v < INT64_MIN) return v;
  }
  return v;
}
}  // namespace

std::int64_t AffineExpr::min_value(const std::vector<std::int64_t>& extents) const {
  return saturate(bound(terms_, constant_, extents, false));
}

std::int64_t AffineExpr::max_value(const std::vector<std::int64_t>& extents) const {
  return saturate(bound(terms_, constant_, extents, true));
}

AffineOverflow::AffineOverflow()
    : UserError(UserError::Kind::InvalidGraph,
                "affine index arithmetic leaves the 64-bit range (a coefficient or offset is too "
                "large)") {}

namespace {

using I128 = __int128;

std::int64_t fit(I128 v) {
  if (v > INT64_MAX || v < INT64_MIN) throw AffineOverflow();
  return static_cast<std::int64_t>(v);
}

// ka * a + kb * b + c, exact: each coefficient and the constant are computed in 128 bits (no
// product or sum of 64-bit values leaves it) and must fit 64 bits at the end.
AffineExpr linear(std::int64_t ka, const AffineExpr& a, std::int64_t kb, const AffineExpr& b,
                  I128 c) {
  std::vector<AffineTerm> terms;
  terms.reserve(a.terms().size() + b.terms().size());
  auto x = a.terms().begin(), y = b.terms().begin();
  while (x != a.terms().end() || y != b.terms().end()) {
    IndexPos i;
    I128 v = 0;
    if (y == b.terms().end() || (x != a.terms().end() && x->index < y->index)) {
      i = x->index;
      v = I128{ka} * x->coef;
      ++x;
    } else if (x == a.terms().end() || y->index < x->index) {
      i = y->index;
      v = I128{kb} * y->coef;
      ++y;
    } else {
      i = x->index;
      v = I128{ka} * x->coef + I128{kb} * y->coef;
      ++x;
      ++y;
    }
    if (v != 0) terms.push_back({i, fit(v)});
  }
  return AffineExpr::make(std::move(terms),
                          fit(I128{ka} * a.constant_term() + I128{kb} * b.constant_term() + c));
}

}  // namespace

AffineExpr operator+(const AffineExpr& a, const AffineExpr& b) { return linear(1, a, 1, b, 0); }
AffineExpr operator-(const AffineExpr& a, const AffineExpr& b) { return linear(1, a, -1, b, 0); }
AffineExpr operator-(const AffineExpr& a) { return linear(-1, a, 0, AffineExpr(), 0); }
AffineExpr operator*(std::int64_t k, const AffineExpr& a) { return linear(k, a, 0, AffineExpr(), 0); }
AffineExpr operator+(const AffineExpr& a, std::int64_t c) { return linear(1, a, 0, AffineExpr(), c); }

AffineExpr operator-(const AffineExpr& a, std::int64_t c) {
  return linear(1, a, 0, AffineExpr(), -I128{c});
}

std::optional<AffineExpr> substitute(const AffineExpr& e,
                                     const std::vector<std::optional<AffineExpr>>& repl) {
  AffineExpr out = AffineExpr::constant(e.constant_term());
  for (const AffineTerm& t : e.terms()) {
    if (t.index >= static_cast<IndexPos>(repl.size()) || !repl[t.index]) return std::nullopt;
    out = out + t.coef * *repl[t.index];
  }
  return out;
}

std::int64_t AffineExpr::evaluate(const std::int64_t* index_values) const {
  std::int64_t v = constant_;
  for (const AffineTerm& t : terms_) v += t.coef * index_values[t.index];
  return v;
}

}  // namespace solar::ir
