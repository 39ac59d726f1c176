#include "solar/cost/footprint.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "affine_count.h"
#include "solar/cost/affine_values.h"

namespace solar::cost {

using ir::AffineExpr;
using ir::EinsumOp;
using ir::IndexPos;
using ir::Operand;
using ir::Tensor;

namespace {

using namespace detail;

// Enumeration limits for exact footprints of irregular affine subscripts. Above them the
// footprint is a lower bound (see count_dim and count_group).
constexpr I128 kMaxFootprintBits = I128{1} << 27;       // bitset window: 16 MiB
constexpr I128 kMaxFootprintPoints = I128{1} << 22;     // enumerated points: 32 MiB of offsets


struct PosTerm {
  I128 coef;           // > 0 after normalization
  std::int64_t extent; // >= 2 after normalization
};

// Distinct values of c + a*i, i in [0, extent), that fall in [0, size).
I128 count_one_term(I128 a, std::int64_t extent, I128 c, std::int64_t size) {
  // a > 0 here.
  const I128 lo = std::max<I128>(0, ceil_div(-c, a));
  const I128 hi = std::min<I128>(extent - 1, floor_div(I128{size} - 1 - c, a));
  return hi >= lo ? hi - lo + 1 : 0;
}

// R |= R << shift over a bitset of `nbits` bits (bits beyond nbits dropped).
void shift_or(std::vector<std::uint64_t>& bits, I128 shift, I128 nbits) {
  if (shift >= nbits) return;
  const std::size_t ws = static_cast<std::size_t>(shift / 64);
  const unsigned bs = static_cast<unsigned>(shift % 64);
  // High to low so every source word is read before it is updated.
  for (std::size_t i = bits.size(); i-- > ws;) {
    std::uint64_t v = bits[i - ws] << bs;
    if (bs != 0 && i > ws) v |= bits[i - ws - 1] >> (64 - bs);
    bits[i] |= v;
  }
  const unsigned tail = static_cast<unsigned>(nbits % 64);
  if (tail != 0) bits.back() &= (std::uint64_t{1} << tail) - 1;
}

// Nested progressions (a flat read of a permuted tensor, t[i0*S0 + i1*S1 + i2*S2 + i3]):
// `terms` sorted by step start with a contiguous run [0, M], and each later step exceeds
// every value the smaller ones reach, so every sum is distinct and the sums are ordered by
// the larger steps first (a mixed radix). The values in [v_lo, v_hi] are then counted digit
// by digit, exactly, without enumerating them; nullopt when the terms are not nested.
std::optional<I128> count_nested(const std::vector<PosTerm>& terms, I128 v_lo, I128 v_hi) {
  I128 m = 0;
  std::size_t k = 0;
  for (; k < terms.size() && terms[k].coef <= m + 1; ++k) m += terms[k].coef * (terms[k].extent - 1);
  struct Digit {
    I128 coef;
    std::int64_t extent;
    I128 count;  // distinct sums of the smaller steps
  };
  std::vector<Digit> digits;
  I128 span = m, count = m + 1;  // the largest sum of the steps so far, and their count
  for (; k < terms.size(); ++k) {
    if (terms[k].coef <= span) return std::nullopt;
    digits.push_back({terms[k].coef, terms[k].extent, count});
    span += terms[k].coef * (terms[k].extent - 1);
    count *= terms[k].extent;
  }
  // Sums <= x: for the largest step, every value of its digit below a = min(E-1, x / step)
  // lies wholly below x (its largest sum is (a-1)*step + the smaller steps' span < a*step);
  // then the sums with digit a and the rest <= x - a*step.
  auto at_most = [&](I128 x) -> I128 {
    if (x < 0) return 0;
    I128 n = 0;
    for (std::size_t j = digits.size(); j-- > 0;) {
      const I128 a = std::min<I128>(digits[j].extent - 1, x / digits[j].coef);
      n += a * digits[j].count;
      x -= a * digits[j].coef;
    }
    return n + std::min(x, m) + 1;
  };
  return at_most(v_hi) - at_most(v_lo - 1);
}

// Distinct in-range values [0, size) of c + sum a_k * i_k (distinct_values_in_range).
I128 count_values(const std::vector<ValueTerm>& raw, I128 c, std::int64_t size) {
  // Normalize to positive coefficients: a*i with a < 0 equals a*(E-1) + |a|*(E-1-i), and
  // i -> E-1-i is a bijection of [0, E). Extent-1 indices contribute a constant 0.
  std::vector<PosTerm> terms;
  for (const ValueTerm& t : raw) {
    const std::int64_t e = t.extent;
    if (e == 1) continue;
    I128 a = t.coef;
    if (a < 0) {
      c += a * (e - 1);
      a = -a;
    }
    terms.push_back({a, e});
  }
  if (terms.empty()) return (c >= 0 && c < size) ? 1 : 0;
  if (terms.size() == 1) return count_one_term(terms[0].coef, terms[0].extent, c, size);

  // Values are c + g*v with v in V = sum_k (a_k/g) * [0, E_k) (a Minkowski sum of
  // arithmetic progressions); the window [0, size) is v in [v_lo, v_hi].
  I128 g = 0;
  for (const PosTerm& t : terms) g = std::gcd(g, t.coef);
  I128 v_max = 0;
  for (PosTerm& t : terms) {
    t.coef /= g;
    v_max += t.coef * (t.extent - 1);
  }
  const I128 v_lo = std::max<I128>(0, ceil_div(-c, g));
  const I128 v_hi = std::min<I128>(v_max, floor_div(I128{size} - 1 - c, g));
  if (v_lo > v_hi) return 0;

  // Windows (conv p*stride + r*dilation, grouped channels g*Cg + c) are usually contiguous:
  // adding progression step a to a contiguous [0, M] stays contiguous when a <= M + 1.
  std::sort(terms.begin(), terms.end(),
            [](const PosTerm& x, const PosTerm& y) { return x.coef < y.coef; });
  {
    I128 m = 0;
    bool contiguous = true;
    for (const PosTerm& t : terms) {
      if (t.coef > m + 1) {
        contiguous = false;
        break;
      }
      m += t.coef * (t.extent - 1);
    }
    if (contiguous) return v_hi - v_lo + 1;
  }
  if (std::optional<I128> n = count_nested(terms, v_lo, v_hi)) return *n;

  // Bitset over [0, v_hi]: coefficients are positive, so partial sums above v_hi never come
  // back into the window. Each progression costs log2(E) shift-ors (doubling).
  const I128 nbits = v_hi + 1;
  if (nbits <= kMaxFootprintBits) {
    std::vector<std::uint64_t> bits(static_cast<std::size_t>((nbits + 63) / 64), 0);
    bits[0] = 1;
    for (const PosTerm& t : terms) {
      std::int64_t len = 1;
      while (len <= t.extent / 2) {
        shift_or(bits, t.coef * len, nbits);
        len *= 2;
      }
      // [0, len) u [E-len, E) = [0, E) since E - len <= len.
      if (len < t.extent) shift_or(bits, t.coef * (t.extent - len), nbits);
    }
    I128 n = 0;
    for (I128 v = v_lo; v <= v_hi;) {
      const std::size_t w = static_cast<std::size_t>(v / 64);
      const unsigned b = static_cast<unsigned>(v % 64);
      std::uint64_t word = bits[w] >> b;
      const I128 take = std::min<I128>(64 - b, v_hi - v + 1);
      if (take < 64) word &= (std::uint64_t{1} << static_cast<unsigned>(take)) - 1;
      n += __builtin_popcountll(word);
      v += take;
    }
    return n;
  }

  // A wide window: enumerate the points when there are few.
  I128 points = 1;
  for (const PosTerm& t : terms) {
    points *= t.extent;
    if (points > kMaxFootprintPoints) break;
  }
  if (points <= kMaxFootprintPoints) {
    std::vector<I128> values;
    std::vector<std::int64_t> idx(terms.size(), 0);
    I128 v = 0;
    for (;;) {
      if (v >= v_lo && v <= v_hi) values.push_back(v);
      std::size_t j = 0;
      for (; j < terms.size(); ++j) {
        if (++idx[j] < terms[j].extent) {
          v += terms[j].coef;
          break;
        }
        v -= terms[j].coef * (terms[j].extent - 1);
        idx[j] = 0;
      }
      if (j == terms.size()) break;
    }
    std::sort(values.begin(), values.end());
    return std::unique(values.begin(), values.end()) - values.begin();
  }

  // Too large to enumerate: a lower bound, never an overestimate. Fixing every other index
  // at one value leaves a one-term progression whose values are a subset of the true set.
  I128 best = 0;
  for (std::size_t k = 0; k < terms.size(); ++k) {
    I128 others_max = 0;
    for (std::size_t j = 0; j < terms.size(); ++j)
      if (j != k) others_max += terms[j].coef * (terms[j].extent - 1);
    // In units of g: the window for v is [v_lo, v_hi]; count_one_term works on raw values.
    for (I128 shift : {I128{0}, others_max}) {
      best = std::max(best, count_one_term(terms[k].coef, terms[k].extent, shift - v_lo,
                                           static_cast<std::int64_t>(std::min<I128>(
                                               v_hi - v_lo + 1, INT64_MAX))));
    }
  }
  return best;
}

// Distinct in-range values [0, size) of one dimension's affine expression over the box.
I128 count_dim(const AffineExpr& expr, const std::vector<std::int64_t>& ext, std::int64_t size) {
  std::vector<ValueTerm> terms;
  for (const ir::AffineTerm& t : expr.terms()) terms.push_back({t.coef, ext[t.index]});
  return count_values(terms, expr.constant_term(), size);
}

// Joint footprint of tensor dimensions that share iteration indices (a diagonal a[i,i], or
// a[i, i+j]): the distinct in-range tuples. Exact by enumeration when the group's indices
// span at most kMaxFootprintPoints points; otherwise the largest single dimension's count,
// a lower bound (the tuples project onto each dimension's values).
I128 count_group(const std::vector<const AffineExpr*>& dims,
                 const std::vector<std::int64_t>& sizes, const std::vector<std::int64_t>& ext) {
  std::vector<IndexPos> idx;
  for (const AffineExpr* d : dims)
    for (const ir::AffineTerm& t : d->terms()) idx.push_back(t.index);
  std::sort(idx.begin(), idx.end());
  idx.erase(std::unique(idx.begin(), idx.end()), idx.end());

  I128 points = 1;
  for (IndexPos i : idx) {
    points *= ext[i];
    if (points > kMaxFootprintPoints) break;
  }
  I128 box = 1;  // the group's own sub-box of the tensor, for linear offsets
  for (std::int64_t s : sizes) {
    box *= s;
    if (box > (I128{1} << 100)) break;
  }
  if (points <= kMaxFootprintPoints && box <= (I128{1} << 100)) {
    std::vector<std::int64_t> at(ext.size(), 0);
    std::vector<I128> offsets;
    offsets.reserve(static_cast<std::size_t>(points));
    for (;;) {
      I128 off = 0;
      bool in_range = true;
      for (std::size_t d = 0; d < dims.size() && in_range; ++d) {
        I128 v = dims[d]->constant_term();
        for (const ir::AffineTerm& t : dims[d]->terms()) v += I128{t.coef} * at[t.index];
        in_range = v >= 0 && v < sizes[d];
        off = off * sizes[d] + v;
      }
      if (in_range) offsets.push_back(off);
      std::size_t j = 0;
      for (; j < idx.size(); ++j) {
        if (++at[idx[j]] < ext[idx[j]]) break;
        at[idx[j]] = 0;
      }
      if (j == idx.size()) break;
    }
    std::sort(offsets.begin(), offsets.end());
    return std::unique(offsets.begin(), offsets.end()) - offsets.begin();
  }
  I128 best = 0;
  for (std::size_t d = 0; d < dims.size(); ++d)
    best = std::max(best, count_dim(*dims[d], ext, sizes[d]));
  return best;
}


// The footprint when every dimension is a plain index or a constant and no index repeats:
// the product of min(extent, size) and in-range constants. Allocation-free, since nearly
// every operand of a real graph takes this path; nullopt otherwise.
std::optional<Count> simple_footprint(const EinsumOp& e, const Operand& operand,
                                      const Tensor& tensor) {
  const std::size_t n = e.indices.size();
  Count result = 1;
  for (std::size_t d = 0; d < operand.subscript.size(); ++d) {
    const AffineExpr& x = operand.subscript[d];
    const std::int64_t size = tensor.shape[d];
    if (size < 0) return std::nullopt;
    if (x.is_constant()) {
      if (x.constant_term() < 0 || x.constant_term() >= size) return Count(0);
      continue;
    }
    const std::optional<IndexPos> i = x.as_plain_index();
    if (!i || *i < 0 || static_cast<std::size_t>(*i) >= n || e.indices[*i].extent < 0)
      return std::nullopt;
    for (std::size_t d2 = 0; d2 < d; ++d2)
      if (operand.subscript[d2].as_plain_index() == i) return std::nullopt;  // a diagonal
    result *= Count::from_signed(std::min(e.indices[*i].extent, size));
  }
  for (const ir::IndexDim& idx : e.indices)
    if (idx.extent == 0) return Count(0);  // an empty iteration space reads nothing
  return result;
}


}  // namespace

Count operand_footprint(const EinsumOp& e, const Operand& operand, const Tensor& tensor) {
  if (operand.subscript.size() != tensor.shape.size())
    invalid(fmt::format("operand subscript of tensor '{}' has {} expressions for {} dimensions",
                        tensor.name, operand.subscript.size(), tensor.shape.size()));
  if (std::optional<Count> simple = simple_footprint(e, operand, tensor)) return *simple;
  const std::vector<std::int64_t> ext = checked_extents(e);
  for (const AffineExpr& d : operand.subscript) {
    const std::string where = fmt::format("the subscript of tensor '{}'", tensor.name);
    check_indices(d, ext.size(), where);
    check_magnitude(d, ext, where);
  }
  for (std::int64_t x : ext)
    if (x == 0) return Count(0);  // an empty iteration space reads nothing
  for (std::int64_t s : tensor.shape) {
    if (s < 0) invalid(fmt::format("tensor '{}' has a negative dimension", tensor.name));
    if (s == 0) return Count(0);
  }

  // Dimensions that share an index are read jointly; the others are independent, so the
  // footprint is the product of the groups' counts.
  const std::size_t rank = tensor.shape.size();
  Dsu dsu(rank);
  std::vector<int> dim_of_index(ext.size(), -1);
  for (std::size_t d = 0; d < rank; ++d)
    for (const ir::AffineTerm& t : operand.subscript[d].terms()) {
      if (dim_of_index[t.index] >= 0) dsu.unite(static_cast<int>(d), dim_of_index[t.index]);
      dim_of_index[t.index] = static_cast<int>(d);
    }

  Count result = 1;
  std::vector<bool> done(rank, false);
  for (std::size_t d = 0; d < rank; ++d) {
    if (done[d]) continue;
    std::vector<const AffineExpr*> dims;
    std::vector<std::int64_t> sizes;
    const int root = dsu.find(static_cast<int>(d));
    for (std::size_t d2 = d; d2 < rank; ++d2)
      if (dsu.find(static_cast<int>(d2)) == root) {
        done[d2] = true;
        dims.push_back(&operand.subscript[d2]);
        sizes.push_back(tensor.shape[d2]);
      }
    const I128 n = dims.size() == 1 ? count_dim(*dims[0], ext, sizes[0])
                                    : count_group(dims, sizes, ext);
    result *= to_count(n);
  }
  return result;
}

std::int64_t distinct_values_in_range(const std::vector<ValueTerm>& terms, std::int64_t constant,
                                      std::int64_t size) {
  return static_cast<std::int64_t>(count_values(terms, constant, size));
}

}  // namespace solar::cost
