// Test helpers: small random einsum problems (plain and sliding-window) and mappings.
#pragma once

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "solar/tiling/mapping.h"
#include "solar/tiling/problem.h"

namespace solar::tiling::testing {

// Ranks with extents 1..max_extent; two inputs over random rank subsets, the output over
// another; with `window`, input 0 also reads one dimension at s*p + d*r - pad. With `sparse`,
// each tensor is dense, 2:4 (groups along its last dimension) or a bitmap (zero fraction
// 0.3, 0.75, 0.9 or 1e-05), a third of the time each.
inline TilingProblem random_problem(std::mt19937& rng, bool window, int max_extent = 5,
                                    bool sparse = false) {
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  TilingProblem p;
  const int n = uni(2, 4) + (window ? 2 : 0);
  for (int r = 0; r < n; ++r)
    p.ranks.push_back({std::string(1, char('a' + r)), uni(1, max_extent)});
  const int bits[] = {8, 16, 32};
  int first_plain = 0;
  TensorAccess in0{"x", bits[uni(0, 2)], false, {}, 0};
  if (window) {
    // Ranks 0 and 1 form the window; the output indexes rank 0.
    DimAccess d;
    const int s = uni(1, 2), dil = uni(1, 2), pad = uni(0, 1);
    d.terms = {{0, s}, {1, dil}};
    d.constant = -pad;
    const std::int64_t span = s * (p.ranks[0].extent - 1) + dil * (p.ranks[1].extent - 1) + 1;
    d.extent = std::max<std::int64_t>(1, span - uni(0, 2 * pad));
    in0.dims.push_back(d);
    in0.ranks = 0b11;
    first_plain = 2;
  }
  TensorAccess in1{"y", bits[uni(0, 2)], false, {}, 0};
  TensorAccess out{"z", bits[uni(0, 2)], true, {}, 0};
  for (int r = first_plain; r < n; ++r) {
    const int where = uni(1, 7);  // bit 0: in0, bit 1: in1, bit 2: out
    auto add = [&](TensorAccess& t) {
      t.dims.push_back({{{r, 1}}, 0, p.ranks[r].extent});
      t.ranks |= RankMask{1} << r;
    };
    if (where & 1) add(in0);
    if (where & 2) add(in1);
    if (where & 4) add(out);
  }
  if (window) {
    out.dims.push_back({{{0, 1}}, 0, p.ranks[0].extent});
    out.ranks |= 1;
    // The filter rank goes to the other input, as in a convolution.
    in1.dims.push_back({{{1, 1}}, 0, p.ranks[1].extent});
    in1.ranks |= 2;
  }
  std::shuffle(in0.dims.begin(), in0.dims.end(), rng);
  p.tensors = {in0, in1, out};
  if (sparse)
    for (TensorAccess& t : p.tensors) {
      const double fractions[] = {0.3, 0.75, 0.9, 1e-05};
      switch (uni(0, 2)) {
        case 0: break;
        case 1:
          t.storage = {StorageFormat::Compressed24, 0.5};
          t.group_dim = static_cast<int>(t.dims.size()) - 1;
          break;
        case 2: t.storage = {StorageFormat::Bitmap, fractions[uni(0, 3)]}; break;
      }
    }
  // Compulsory: in-range elements each tensor touches, by enumeration.
  for (const TensorAccess& t : p.tensors) {
    std::set<std::vector<std::int64_t>> seen;
    std::vector<std::int64_t> pt(n, 0);
    while (true) {
      std::vector<std::int64_t> el;
      bool in = true;
      for (const DimAccess& d : t.dims) {
        std::int64_t v = d.constant;
        for (const DimTerm& term : d.terms) v += term.coef * pt[term.rank];
        in = in && v >= 0 && v < d.extent;
        el.push_back(v);
      }
      if (in) seen.insert(el);
      int i = 0;
      for (; i < n; ++i) {
        if (++pt[i] < p.ranks[i].extent) break;
        pt[i] = 0;
      }
      if (i == n) break;
    }
    p.compulsory_bits += storage_bits(t, Count(seen.size()));
  }
  p.check();
  return p;
}

// A random mapping; only plain dense tensors may be bypassed.
inline Mapping random_mapping(std::mt19937& rng, const TilingProblem& p) {
  Mapping m;
  for (const Rank& r : p.ranks)
    m.tile.push_back(std::uniform_int_distribution<std::int64_t>(1, r.extent)(rng));
  m.order.resize(p.ranks.size());
  std::iota(m.order.begin(), m.order.end(), 0);
  std::shuffle(m.order.begin(), m.order.end(), rng);
  for (const TensorAccess& t : p.tensors)
    m.bypass.push_back(t.plain() && std::uniform_int_distribution<int>(0, 4)(rng) == 0 &&
                       t.storage.format == StorageFormat::Dense);
  return m;
}

}  // namespace solar::tiling::testing
