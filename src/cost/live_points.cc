// The live-point counter (semantics: solar/cost/live_points.h): constraints are grouped into
// components of linked indices; each component is counted by solving one index as an
// interval per point of the others, or a plane of two in closed form (count_2d).
#include "solar/cost/live_points.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "affine_count.h"
#include "solar/util/errors.h"

namespace solar::cost {

using ir::EinsumOp;
using ir::IndexPos;
using namespace detail;

namespace {

// One group of mask indices linked by constraints, with its constraints as a dense matrix.
struct MaskComponent {
  std::vector<IndexPos> indices;              // the component's indices (einsum positions)
  std::vector<std::vector<I128>> coef;        // [constraint][local index]
  std::vector<I128> constant;                 // [constraint]
  std::size_t solved = 0;                     // local index solved as an interval (x)
  // Local index summed in closed form against x (y), when every coefficient of x is -1, 0
  // or 1: then x's bounds are lines in y and the count is a sum of arithmetic series.
  std::optional<std::size_t> inner;
};

// A line v(y) = slope * y + intercept.
struct Line {
  I128 slope, intercept;
  I128 at(I128 y) const { return slope * y + intercept; }
};

// Points (x, y) in [0, ex) x [0, ey) with a[c]*x + b[c]*y + p[c] >= 0 for every c, where
// every a[c] is -1, 0 or 1. Each x-interval [max lower(y), min upper(y)] is bounded by
// lines; between consecutive integer breakpoints (where two lines cross, or an interval's
// length crosses zero) the active lines are fixed, so each segment is an arithmetic series.
// O(constraints^2 log constraints), independent of the extents.
I128 count_2d(const std::vector<I128>& a, const std::vector<I128>& b, const std::vector<I128>& p,
              I128 ex, I128 ey) {
  std::vector<Line> lower{{0, 0}}, upper{{0, ex - 1}};
  I128 y_lo = 0, y_hi = ey - 1;
  for (std::size_t c = 0; c < a.size(); ++c) {
    if (a[c] == 1) {
      lower.push_back({-b[c], -p[c]});  // x >= -b*y - p
    } else if (a[c] == -1) {
      upper.push_back({b[c], p[c]});  // x <= b*y + p
    } else if (b[c] > 0) {
      y_lo = std::max(y_lo, ceil_div(-p[c], b[c]));
    } else if (b[c] < 0) {
      y_hi = std::min(y_hi, floor_div(p[c], -b[c]));
    } else if (p[c] < 0) {
      return 0;
    }
  }
  if (y_lo > y_hi) return 0;

  // Breakpoints: around every y* where slope*y + offset = 0 for a pair of lines of the same
  // side (which line is active changes) or an upper/lower pair (the length U - L + 1
  // changes sign), split the integers into y <= floor(y*) and y >= floor(y*) + 1.
  std::vector<I128> cuts{y_lo, y_hi + 1};
  auto cut = [&](I128 slope, I128 offset) {
    if (slope == 0) return;
    if (slope < 0) {
      slope = -slope;
      offset = -offset;
    }
    const I128 f = floor_div(-offset, slope) + 1;
    if (f > y_lo && f <= y_hi) cuts.push_back(f);
  };
  for (std::size_t i = 0; i < lower.size(); ++i)
    for (std::size_t j = i + 1; j < lower.size(); ++j)
      cut(lower[i].slope - lower[j].slope, lower[i].intercept - lower[j].intercept);
  for (std::size_t i = 0; i < upper.size(); ++i)
    for (std::size_t j = i + 1; j < upper.size(); ++j)
      cut(upper[i].slope - upper[j].slope, upper[i].intercept - upper[j].intercept);
  for (const Line& u : upper)
    for (const Line& l : lower) cut(u.slope - l.slope, u.intercept - l.intercept + 1);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());

  I128 total = 0;
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
    const I128 s = cuts[k], t = cuts[k + 1] - 1;  // the segment [s, t]
    // Within a segment no two lines cross between integers, so the line that is largest
    // at (s, then t) is the largest throughout; likewise the smallest.
    const Line* lo = &lower[0];
    for (const Line& l : lower)
      if (std::pair(l.at(s), l.at(t)) > std::pair(lo->at(s), lo->at(t))) lo = &l;
    const Line* hi = &upper[0];
    for (const Line& u : upper)
      if (std::pair(u.at(s), u.at(t)) < std::pair(hi->at(s), hi->at(t))) hi = &u;
    const I128 first = hi->at(s) - lo->at(s) + 1, last = hi->at(t) - lo->at(t) + 1;
    if (first >= 0 && last >= 0) total += (t - s + 1) * (first + last) / 2;
  }
  return total;
}

// Points of one component: enumerate every local index but `solved` (and `inner`), and
// count the solved index's values as the intersection of one integer interval per
// constraint (or, with `inner`, the (solved, inner) plane with count_2d). `T` is int64
// when every constraint value fits (the common case: 128-bit division is several times
// slower) and I128 otherwise.
template <typename T>
I128 count_component(const MaskComponent& m, const std::vector<std::int64_t>& ext) {
  const std::size_t nc = m.constant.size();
  std::vector<std::size_t> others;
  for (std::size_t j = 0; j < m.indices.size(); ++j)
    if (j != m.solved && j != m.inner) others.push_back(j);
  const T solved_extent = static_cast<T>(ext[m.indices[m.solved]]);

  std::vector<T> a(nc), partial(nc);  // partial: constraint value without the solved term
  std::vector<std::vector<T>> step(others.size(), std::vector<T>(nc));
  std::vector<I128> a2(nc), b2(nc), p2(nc);  // count_2d's view of the constraints
  for (std::size_t c = 0; c < nc; ++c) {
    a[c] = static_cast<T>(m.coef[c][m.solved]);
    a2[c] = m.coef[c][m.solved];
    if (m.inner) b2[c] = m.coef[c][*m.inner];
    partial[c] = static_cast<T>(m.constant[c]);
    for (std::size_t j = 0; j < others.size(); ++j)
      step[j][c] = static_cast<T>(m.coef[c][others[j]]);
  }
  std::vector<std::int64_t> value(others.size(), 0);
  I128 total = 0;
  for (;;) {
    if (m.inner) {
      for (std::size_t c = 0; c < nc; ++c) p2[c] = partial[c];
      total += count_2d(a2, b2, p2, solved_extent, ext[m.indices[*m.inner]]);
    } else {
      T lo = 0, hi = solved_extent - 1;
      for (std::size_t c = 0; c < nc && lo <= hi; ++c) {
        const T ac = a[c], pc = partial[c];
        if (ac == 0) {
          if (pc < 0) hi = lo - 1;
        } else if (ac == 1) {  // x + p >= 0: no division
          lo = std::max(lo, -pc);
        } else if (ac == -1) {
          hi = std::min(hi, pc);
        } else if (ac > 0) {
          lo = std::max(lo, static_cast<T>(ceil_div(-pc, ac)));  // x >= ceil(-p/a)
        } else {
          hi = std::min(hi, static_cast<T>(floor_div(pc, -ac)));  // x <= floor(p/|a|)
        }
      }
      if (lo <= hi) total += static_cast<I128>(hi) - lo + 1;
    }

    std::size_t j = 0;
    for (; j < others.size(); ++j) {
      const std::int64_t e = ext[m.indices[others[j]]];
      if (++value[j] < e) {
        for (std::size_t c = 0; c < nc; ++c) partial[c] += step[j][c];
        break;
      }
      for (std::size_t c = 0; c < nc; ++c) partial[c] -= step[j][c] * static_cast<T>(e - 1);
      value[j] = 0;
    }
    if (j == others.size()) break;
  }
  return total;
}

// Chooses how to count `m` (sets solved and inner) and returns the enumeration steps.
// Solved: the largest index, preferring one whose coefficients are all -1, 0 or 1, which
// lets the largest remaining index be summed in closed form (inner) as well.
I128 plan_component(MaskComponent& m, const std::vector<std::int64_t>& ext) {
  auto unit = [&](std::size_t j) {
    for (const auto& row : m.coef)
      if (row[j] < -1 || row[j] > 1) return false;
    return true;
  };
  std::optional<std::size_t> best_unit;
  m.solved = 0;
  for (std::size_t j = 0; j < m.indices.size(); ++j) {
    if (ext[m.indices[j]] > ext[m.indices[m.solved]]) m.solved = j;
    if (unit(j) && (!best_unit || ext[m.indices[j]] > ext[m.indices[*best_unit]])) best_unit = j;
  }
  m.inner.reset();
  if (best_unit && m.indices.size() >= 2) {
    m.solved = *best_unit;
    for (std::size_t j = 0; j < m.indices.size(); ++j)
      if (j != m.solved && (!m.inner || ext[m.indices[j]] > ext[m.indices[*m.inner]])) m.inner = j;
  }
  I128 steps = 1;
  for (std::size_t j = 0; j < m.indices.size() && steps <= I128{kMaxMaskEnumeration}; ++j)
    if (j != m.solved && j != m.inner) steps *= ext[m.indices[j]];
  return steps;
}

// The largest |value| any constraint of `m` can take over the box.
I128 component_magnitude(const MaskComponent& m, const std::vector<std::int64_t>& ext) {
  I128 worst = 0;
  for (std::size_t c = 0; c < m.constant.size(); ++c) {
    I128 v = m.constant[c] < 0 ? -m.constant[c] : m.constant[c];
    for (std::size_t j = 0; j < m.indices.size(); ++j) {
      const I128 k = m.coef[c][j] < 0 ? -m.coef[c][j] : m.coef[c][j];
      v += k * (ext[m.indices[j]] - 1);
    }
    worst = std::max(worst, v);
  }
  return worst;
}

}  // namespace

Count live_points(const EinsumOp& e) {
  if (e.mask.empty()) {  // the common case, kept allocation-free
    Count n = 1;
    for (const ir::IndexDim& d : e.indices) {
      if (d.extent < 0)
        invalid(fmt::format("einsum index '{}' has a negative extent {}", d.name, d.extent));
      n *= Count(static_cast<std::uint64_t>(d.extent));
    }
    return n;
  }
  const std::vector<std::int64_t> ext = checked_extents(e);
  for (std::int64_t x : ext)
    if (x == 0) return Count(0);

  std::vector<bool> constrained(ext.size(), false);
  Dsu dsu(ext.size());
  for (const ir::AffineConstraint& c : e.mask) {
    check_indices(c.expr, ext.size(), "a mask constraint");
    check_magnitude(c.expr, ext, "a mask constraint");
    if (c.expr.is_constant() && c.expr.constant_term() < 0) return Count(0);
    const auto& terms = c.expr.terms();
    for (const ir::AffineTerm& t : terms) constrained[t.index] = true;
    for (std::size_t k = 1; k < terms.size(); ++k) dsu.unite(terms[0].index, terms[k].index);
  }

  Count result = 1;
  std::vector<int> component_of(ext.size(), -1);
  std::vector<MaskComponent> components;
  for (std::size_t i = 0; i < ext.size(); ++i) {
    if (!constrained[i]) {
      result *= Count::from_signed(ext[i]);
      continue;
    }
    const int root = dsu.find(static_cast<int>(i));
    if (component_of[root] < 0) {
      component_of[root] = static_cast<int>(components.size());
      components.emplace_back();
    }
    components[component_of[root]].indices.push_back(static_cast<IndexPos>(i));
  }
  if (components.empty()) return result;

  for (const ir::AffineConstraint& c : e.mask) {
    if (c.expr.is_constant()) continue;
    MaskComponent& m = components[component_of[dsu.find(c.expr.terms()[0].index)]];
    std::vector<I128> row(m.indices.size(), 0);
    for (const ir::AffineTerm& t : c.expr.terms()) {
      const auto at = std::find(m.indices.begin(), m.indices.end(), t.index) - m.indices.begin();
      row[at] += t.coef;
    }
    m.coef.push_back(std::move(row));
    m.constant.push_back(c.expr.constant_term());
  }

  // Each component costs the product of the extents it enumerates (plan_component).
  I128 steps = 0;
  for (MaskComponent& m : components) {
    steps += plan_component(m, ext);
    if (steps > I128{kMaxMaskEnumeration}) {
      std::string names;
      for (const MaskComponent& mc : components)
        for (std::size_t j = 0; j < mc.indices.size(); ++j)
          if (j != mc.solved && j != mc.inner)
            names += (names.empty() ? "" : ", ") + e.indices[mc.indices[j]].name;
      throw Unsupported(fmt::format(
          "cannot count the live points of this einsum's mask exactly: the enumeration over "
          "indices {} exceeds the limit of {} steps (2^27); split the op or simplify the mask",
          names, kMaxMaskEnumeration));
    }
  }
  for (const MaskComponent& m : components) {
    // Bounded by 2^62, int64 partial sums and interval ends cannot overflow.
    const bool fits_64 = component_magnitude(m, ext) < (I128{1} << 62);
    result *= to_count(fits_64 ? count_component<std::int64_t>(m, ext)
                               : count_component<I128>(m, ext));
  }
  return result;
}

}  // namespace solar::cost
