#include "solar/tiling/provable.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "fmt/format.h"
#include "solar/util/errors.h"

namespace solar::tiling {

std::string_view bound_formula_name(BoundFormula f) {
  switch (f) {
    case BoundFormula::Compulsory: return "compulsory";
    case BoundFormula::Gemm: return "gemm";
    case BoundFormula::Convolution: return "convolution";
    case BoundFormula::Projective: return "projective";
  }
  return "?";
}

bool is_product_sum(const ir::EinsumOp& e) {
  if (e.reduce != ir::Reduce::Sum || e.operands.size() != 2) return false;
  return e.combine.is_product_of_two_operands();
}

double projective_lp(const std::vector<RankMask>& sets, const std::vector<double>& caps,
                     const std::vector<double>& upper) {
  const int n = static_cast<int>(upper.size());
  SOLAR_CHECK(sets.size() == caps.size(), "one cap per set");
  SOLAR_CHECK(n <= 12, "projective_lp: too many variables for vertex enumeration");
  // Constraint rows a.y <= b: the sets, then y_r <= u_r, then -y_r <= 0.
  std::vector<std::vector<double>> a;
  std::vector<double> b;
  for (std::size_t i = 0; i < sets.size(); ++i) {
    std::vector<double> row(n, 0);
    for (int r = 0; r < n; ++r)
      if (sets[i] & (RankMask{1} << r)) row[r] = 1;
    a.push_back(row);
    b.push_back(caps[i]);
  }
  for (int r = 0; r < n; ++r) {
    std::vector<double> row(n, 0);
    row[r] = 1;
    a.push_back(row);
    b.push_back(upper[r]);
    row[r] = -1;
    a.push_back(row);
    b.push_back(0);
  }
  const int m = static_cast<int>(a.size());
  double best = 0;  // y = 0 is feasible
  if (n == 0) return 0;
  std::vector<int> pick(n);
  std::iota(pick.begin(), pick.end(), 0);
  const double eps = 1e-9;
  while (true) {
    // Solve the n picked rows as equalities (Gaussian elimination, partial pivoting).
    std::vector<std::vector<double>> mat(n, std::vector<double>(n + 1));
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) mat[i][j] = a[pick[i]][j];
      mat[i][n] = b[pick[i]];
    }
    bool singular = false;
    for (int c = 0; c < n && !singular; ++c) {
      int piv = c;
      for (int i = c + 1; i < n; ++i)
        if (std::abs(mat[i][c]) > std::abs(mat[piv][c])) piv = i;
      if (std::abs(mat[piv][c]) < 1e-12) {
        singular = true;
        break;
      }
      std::swap(mat[c], mat[piv]);
      for (int i = 0; i < n; ++i)
        if (i != c) {
          const double f = mat[i][c] / mat[c][c];
          for (int j = c; j <= n; ++j) mat[i][j] -= f * mat[c][j];
        }
    }
    if (!singular) {
      std::vector<double> y(n);
      for (int i = 0; i < n; ++i) y[i] = mat[i][n] / mat[i][i];
      bool feasible = true;
      for (int i = 0; i < m && feasible; ++i) {
        double lhs = 0;
        for (int j = 0; j < n; ++j) lhs += a[i][j] * y[j];
        feasible = lhs <= b[i] + eps * (1 + std::abs(b[i]));
      }
      if (feasible) best = std::max(best, std::accumulate(y.begin(), y.end(), 0.0));
    }
    // Next combination of n rows out of m.
    int i = n - 1;
    while (i >= 0 && pick[i] == m - n + i) --i;
    if (i < 0) break;
    ++pick[i];
    for (int j = i + 1; j < n; ++j) pick[j] = pick[j - 1] + 1;
  }
  return best;
}

namespace {

// How many tuples of a dimension's rank values can name one position: 1 for a single term;
// for two terms c_a*a + c_b*b the solutions differ by multiples of (c_b/g, -c_a/g), so at most
// min(N_a, N_b, ceil(N_b*g/|c_a|), ceil(N_a*g/|c_b|)); otherwise fixing all but one term.
double dim_multiplicity(const DimAccess& d, const TilingProblem& p) {
  const std::size_t k = d.terms.size();
  if (k <= 1) return 1;
  if (k == 2) {
    const double na = static_cast<double>(p.ranks[d.terms[0].rank].extent);
    const double nb = static_cast<double>(p.ranks[d.terms[1].rank].extent);
    const std::int64_t ca = std::abs(d.terms[0].coef), cb = std::abs(d.terms[1].coef);
    const double g = static_cast<double>(std::gcd(ca, cb));
    return std::min({na, nb, std::ceil(nb * g / static_cast<double>(ca)),
                     std::ceil(na * g / static_cast<double>(cb))});
  }
  double best = INFINITY;
  for (std::size_t i = 0; i < k; ++i) {
    double prod = 1;
    for (std::size_t j = 0; j < k; ++j)
      if (j != i) prod *= static_cast<double>(p.ranks[d.terms[j].rank].extent);
    best = std::min(best, prod);
  }
  return best;
}

// Positions of the access's hull box that lie outside the tensor (padding reads, which
// move nothing): hull volume minus in-range volume.
double padding_positions(const TensorAccess& x, const TilingProblem& p) {
  double hull = 1, inside = 1;
  for (const DimAccess& d : x.dims) {
    std::int64_t lo = d.constant, hi = d.constant;
    for (const DimTerm& t : d.terms) {
      const std::int64_t span = t.coef * (p.ranks[t.rank].extent - 1);
      (span > 0 ? hi : lo) += span;
    }
    hull *= static_cast<double>(hi - lo + 1);
    inside *= static_cast<double>(std::max<std::int64_t>(
        0, std::min(hi, d.extent - 1) - std::max<std::int64_t>(lo, 0) + 1));
  }
  return std::max(0.0, hull - inside);
}

double multiplicity(const TensorAccess& x, const TilingProblem& p) {
  double u = 1;
  for (const DimAccess& d : x.dims) u *= dim_multiplicity(d, p);
  return u;
}

}  // namespace

double nonzero_point_fraction(const TilingProblem& p) {
  double zeros = 0;
  for (const TensorAccess& t : p.tensors)
    if (!t.output) zeros += t.storage.zero_fraction;
  return std::max(0.0, 1 - zeros);
}

ProvableBound provable_bound(const TilingProblem& p, bool product_sum, Count capacity_bytes) {
  p.check();
  if (capacity_bytes == Count(0))
    throw UserError(UserError::Kind::BadArgument, "provable_bound: capacity must be > 0 bytes");
  ProvableBound result;
  result.traffic_bytes = p.compulsory_bits.ceil_div(8);
  result.formula = BoundFormula::Compulsory;
  result.detail = fmt::format("compulsory traffic {} B", result.traffic_bytes.str());
  if (!product_sum) return result;

  int min_bits = p.tensors[0].bits;
  for (const TensorAccess& t : p.tensors) min_bits = std::min(min_bits, t.bits);
  const double w = static_cast<double>(min_bits) / 8;           // bytes per word
  const double s = capacity_bytes.to_double() / w;               // words that fit, at most
  // MACs that must run: the live points (a masked op's others run nowhere), less those with
  // a zero operand.
  const double g = p.live_points().to_double() * nonzero_point_fraction(p);
  if (!(g > 0)) return result;
  const double out = p.output().elements().to_double();
  // Rounding of the doubles must only loosen the bound: shave a relative 1e-9.
  auto consider = [&](BoundFormula f, double words, std::string detail) {
    const double bytes = words * w * (1 - 1e-9);
    if (!(bytes > 0)) return;
    const Count c = Count(static_cast<std::uint64_t>(std::min(bytes, 1.8e19)));
    if (c > result.traffic_bytes) {
      result.traffic_bytes = c;
      result.formula = f;
      result.formula_words = words;
      result.detail = std::move(detail);
    }
  };

  const std::size_t nt = p.tensors.size();
  // The GEMM and convolution arguments share one budget of resident elements between the
  // two operands; when both name the same tensor (x @ x.T) an element counts in both roles,
  // so only the per-tensor projective bound applies.
  const bool distinct_operands = nt == 3 && p.tensors[0].name != p.tensors[1].name;
  // GEMM / BMM classification by rank signatures.
  if (distinct_operands && p.tensors[0].plain() && p.tensors[1].plain()) {
    bool gemm = true, has_k = false;
    for (std::size_t r = 0; r < p.ranks.size(); ++r) {
      const RankMask bit = RankMask{1} << r;
      const int sig = ((p.tensors[0].ranks & bit) ? 1 : 0) | ((p.tensors[1].ranks & bit) ? 2 : 0) |
                      ((p.tensors[2].ranks & bit) ? 4 : 0);
      if (p.ranks[r].extent == 1) continue;
      if (sig == 3) has_k = true;
      if (sig != 5 && sig != 6 && sig != 3 && sig != 7) gemm = false;
    }
    if (gemm && has_k) {
      // Smith et al. bound C := AB + C, where C is read as well: Q >= 2G/sqrt(S) - 2S. Any
      // schedule of C = AB becomes one of C := AB + C by reading each C element at its first
      // update (|Out| more transfers), so here Q >= 2G/sqrt(S) - 2S - |Out|. The
      // "2G/sqrt(S) + |Out| - 2S" form of cache-aware.md §2.3 is not a bound: a 1024x1024x8
      // GEMM at S = 935 words attains 1.14e6 words where it claims 1.6e6 (provable_test).
      const double words = 2 * g / std::sqrt(s) - 2 * s - out;
      consider(BoundFormula::Gemm, words,
               fmt::format("2*G/sqrt(S) - 2S - |Out| with G = {:.6g} MACs, S = {:.6g} words, "
                           "|Out| = {:.6g}: {:.6g} words x {} B",
                           g, s, out, words, w));
    }
  }
  // Convolution (im2col triple): window input, plain filter, plain output.
  if (distinct_operands && !p.tensors[0].plain() && p.tensors[1].plain()) {
    const double u = multiplicity(p.tensors[0], p);
    const double pad = padding_positions(p.tensors[0], p);
    // Per segment of S transfers: im2col entries <= u*(2S + padding positions), filter
    // values <= 2S, outputs <= 3S; Loomis-Whitney gives MACs <= sqrt of their product.
    const double f = std::sqrt(u * (2 * s + pad) * 2 * s * 3 * s);
    const double words = s * g / f - s;
    consider(BoundFormula::Convolution, words,
             fmt::format("S*G/sqrt(u*(2S+pad)*2S*3S) - S with G = {:.6g}, u = {:.6g}, "
                         "pad = {:.6g}, S = {:.6g} words: {:.6g} words x {} B",
                         g, u, pad, s, words, w));
  }
  // Projective (HBL) bound: per segment, coordinate projections are capped per tensor.
  {
    std::map<std::uint64_t, double> group_log;  // rank signature -> sum of log extents
    for (std::size_t r = 0; r < p.ranks.size(); ++r) {
      std::uint64_t sig = 0;
      for (std::size_t t = 0; t < nt; ++t)
        if (p.tensors[t].ranks & (RankMask{1} << r)) sig |= std::uint64_t{1} << t;
      group_log[sig] += std::log(static_cast<double>(p.ranks[r].extent));
    }
    if (group_log.size() <= 12) {
      std::vector<double> upper;
      std::vector<std::uint64_t> sigs;
      for (const auto& [sig, lg] : group_log) {
        sigs.push_back(sig);
        upper.push_back(lg);
      }
      std::vector<RankMask> sets(nt, 0);
      std::vector<double> caps(nt);
      for (std::size_t t = 0; t < nt; ++t) {
        for (std::size_t v = 0; v < sigs.size(); ++v)
          if (sigs[v] & (std::uint64_t{1} << t)) sets[t] |= RankMask{1} << v;
        const TensorAccess& x = p.tensors[t];
        const double cap = x.output ? 3 * s
                                    : multiplicity(x, p) * (2 * s + padding_positions(x, p));
        caps[t] = std::log(cap);
      }
      const double log_f = projective_lp(sets, caps, upper) + 1e-9;
      const double words = s * g / std::exp(log_f) - s;
      consider(BoundFormula::Projective, words,
               fmt::format("S*G/F - S with G = {:.6g}, F = {:.6g} (HBL LP), S = {:.6g} words: "
                           "{:.6g} words x {} B",
                           g, std::exp(log_f), s, words, w));
    }
  }
  return result;
}

ProvableBound provable_bound(const ir::Graph& g, const ir::Op& op, Count capacity_bytes) {
  TilingProblem p = problem_from_einsum(g, op, MaskedEinsum::Live);
  return provable_bound(p, is_product_sum(op.einsum()), capacity_bytes);
}

}  // namespace solar::tiling
