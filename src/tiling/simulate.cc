#include "solar/tiling/simulate.h"

#include <algorithm>
#include <set>
#include <string>

#include "solar/util/errors.h"

namespace solar::tiling {

namespace {

// Odometer over a box: `lo`/`hi` per position (half-open); returns false when done.
bool next(std::vector<std::int64_t>& v, const std::vector<std::int64_t>& lo,
          const std::vector<std::int64_t>& hi) {
  for (std::size_t i = v.size(); i-- > 0;) {
    if (++v[i] < hi[i]) return true;
    v[i] = lo[i];
  }
  return false;
}

}  // namespace

MappingCost simulate_mapping(const TilingProblem& p, const Mapping& m, std::uint64_t max_points) {
  // Validation is shared with the closed form, so both refuse the same mappings.
  evaluate_mapping(p, m);
  if (p.points() > Count(max_points))
    throw UserError(UserError::Kind::BadArgument,
                    "simulate_mapping: " + p.points().str() + " iteration points exceed the " +
                        std::to_string(max_points) + " allowed");
  const int n = static_cast<int>(p.ranks.size());
  const std::size_t nt = p.tensors.size();

  // The DRAM loop nest: the order's ranks, then ranks with one tile (a single iteration).
  std::vector<int> loops = m.order;
  for (int r = 0; r < n; ++r)
    if (std::find(loops.begin(), loops.end(), r) == loops.end()) loops.push_back(r);
  std::vector<std::int64_t> lo(n, 0), hi(n);
  for (int j = 0; j < n; ++j)
    hi[j] = (p.ranks[loops[j]].extent + m.tile[loops[j]] - 1) / m.tile[loops[j]];

  // Iteration points of rank r in tile i.
  auto range = [&](int r, std::int64_t i, std::int64_t* b, std::int64_t* e) {
    *b = i * m.tile[r];
    *e = std::min(*b + m.tile[r], p.ranks[r].extent);
  };

  MappingCost c;
  c.buffer_elements.assign(nt, 0);
  c.access_elements.assign(nt, 0);
  std::vector<std::vector<std::int64_t>> resident(nt);
  std::vector<std::uint64_t> resident_size(nt, 0);
  std::vector<bool> has_resident(nt, false);
  std::set<std::vector<std::int64_t>> visited_out_tiles;
  std::set<std::vector<std::int64_t>> visited_out_elements;
  // Per tensor: the in-range part of the hull of the positions the whole iteration space
  // reads along its 2:4 group dimension (by visiting every point).
  std::vector<std::int64_t> group_lo(nt, INT64_MAX), group_hi(nt, INT64_MIN);
  {
    std::vector<std::int64_t> plo(n, 0), phi(n), pt(n, 0);
    for (int r = 0; r < n; ++r) phi[r] = p.ranks[r].extent;
    do {
      for (std::size_t t = 0; t < nt; ++t) {
        if (p.tensors[t].group_dim < 0) continue;
        const DimAccess& d = p.tensors[t].dims[p.tensors[t].group_dim];
        std::int64_t v = d.constant;
        for (const DimTerm& term : d.terms) v += term.coef * pt[term.rank];
        group_lo[t] = std::min(group_lo[t], v);
        group_hi[t] = std::max(group_hi[t], v);
      }
    } while (next(pt, plo, phi));
    for (std::size_t t = 0; t < nt; ++t)
      if (p.tensors[t].group_dim >= 0) {
        group_lo[t] = std::max<std::int64_t>(group_lo[t], 0);
        group_hi[t] = std::min(group_hi[t], p.tensors[t].dims[p.tensors[t].group_dim].extent - 1);
      }
  }

  // A masked problem skips the steps whose tile box holds no live point, and reloads a
  // tensor whenever the loops outside and at its innermost relevant loop move to another
  // live tuple (mapping.h).
  auto live_point = [&](const std::vector<std::int64_t>& pt) {
    for (const RankConstraint& c : p.mask) {
      std::int64_t v = c.constant;
      for (const DimTerm& term : c.terms) v += term.coef * pt[term.rank];
      if (v < 0) return false;
    }
    return true;
  };
  std::vector<int> inner_pos(nt, -1);  // position in `loops` of the innermost relevant loop
  for (std::size_t t = 0; t < nt; ++t)
    for (int j = 0; j < n; ++j)
      if ((p.tensors[t].ranks & (RankMask{1} << loops[j])) && hi[j] > 1) inner_pos[t] = j;
  std::vector<std::set<std::vector<std::int64_t>>> loaded_tiles(nt);

  std::vector<std::int64_t> tidx(n, 0);  // tile index per rank
  std::vector<std::int64_t> step(n, 0);  // odometer over `loops`
  do {
    for (int j = 0; j < n; ++j) tidx[loops[j]] = step[j];
    if (!p.mask.empty()) {
      std::vector<std::int64_t> plo(n), phi(n), pt(n);
      for (int r = 0; r < n; ++r) range(r, tidx[r], &plo[r], &phi[r]);
      pt = plo;
      bool live = false;
      do {
        live = live_point(pt);
      } while (!live && next(pt, plo, phi));
      if (!live) continue;
    }
    for (std::size_t t = 0; t < nt; ++t) {
      const TensorAccess& x = p.tensors[t];
      const bool bypassed = !m.bypass.empty() && m.bypass[t];
      if (bypassed) {
        // Every iteration point of this step touches one element directly.
        std::vector<std::int64_t> plo(n), phi(n), pt(n);
        for (int r = 0; r < n; ++r) range(r, tidx[r], &plo[r], &phi[r]);
        pt = plo;
        do {
          std::vector<std::int64_t> element;
          bool in_range = true;
          for (const DimAccess& d : x.dims) {
            std::int64_t v = d.constant;
            for (const DimTerm& term : d.terms) v += term.coef * pt[term.rank];
            in_range = in_range && v >= 0 && v < d.extent;
            element.push_back(v);
          }
          if (!in_range) continue;
          if (!x.output) {
            c.access_elements[t] += 1;
          } else {
            if (!visited_out_elements.insert(element).second) c.access_elements[t] += 1;  // read
            c.access_elements[t] += 1;                                                    // write
          }
        } while (next(pt, plo, phi));
        continue;
      }
      std::vector<std::int64_t> key;
      for (int r = 0; r < n; ++r)
        if (x.ranks & (RankMask{1} << r)) key.push_back(tidx[r]);
      std::vector<std::int64_t> reuse = key;  // what must change for a reload
      if (!p.mask.empty()) {
        reuse.assign(step.begin(), step.begin() + (inner_pos[t] + 1));
        reuse.push_back(-1);  // never equal to a tile key
      }
      if (has_resident[t] && reuse == resident[t]) continue;
      if (!p.mask.empty()) loaded_tiles[t].insert(key);
      // Size of the needed tile: the in-range hull of the positions its points read.
      std::vector<int> rs;
      for (int r = 0; r < n; ++r)
        if (x.ranks & (RankMask{1} << r)) rs.push_back(r);
      std::vector<std::int64_t> plo(n, 0), phi(n, 1), pt;
      for (int r : rs) range(r, tidx[r], &plo[r], &phi[r]);
      std::vector<std::int64_t> dmin(x.dims.size(), INT64_MAX), dmax(x.dims.size(), INT64_MIN);
      pt = plo;
      do {
        for (std::size_t d = 0; d < x.dims.size(); ++d) {
          std::int64_t v = x.dims[d].constant;
          for (const DimTerm& term : x.dims[d].terms) v += term.coef * pt[term.rank];
          dmin[d] = std::min(dmin[d], v);
          dmax[d] = std::max(dmax[d], v);
        }
      } while (next(pt, plo, phi));
      std::uint64_t size = 1;
      for (std::size_t d = 0; d < x.dims.size(); ++d) {
        std::int64_t lo = std::max<std::int64_t>(dmin[d], 0);
        std::int64_t hi = std::min(dmax[d], x.dims[d].extent - 1);
        if (static_cast<int>(d) == x.group_dim && lo <= hi) {
          // A 2:4 tile loads the whole groups of 4 it touches, within what the grid reads.
          lo = std::max(lo / 4 * 4, group_lo[t]);
          hi = std::min(hi / 4 * 4 + 3, group_hi[t]);
        }
        size *= static_cast<std::uint64_t>(std::max<std::int64_t>(hi - lo + 1, 0));
      }
      if (x.output && has_resident[t]) c.access_elements[t] += resident_size[t];  // write back
      if (!x.output || !visited_out_tiles.insert(key).second) c.access_elements[t] += size;
      resident[t] = reuse;
      resident_size[t] = size;
      has_resident[t] = true;
      c.buffer_elements[t] = std::max(c.buffer_elements[t], Count(size));
    }
  } while (next(step, lo, hi));
  // Masked: elements in no loaded tile are read once (inputs) or written once (the output's
  // identity). Tiles of a masked problem's plain dimensions partition its tensors.
  for (std::size_t t = 0; t < nt && !p.mask.empty(); ++t) {
    const TensorAccess& x = p.tensors[t];
    std::uint64_t seen = 0;
    for (const std::vector<std::int64_t>& key : loaded_tiles[t]) {
      std::uint64_t size = 1;
      std::size_t i = 0;
      for (int r = 0; r < n; ++r)
        if (x.ranks & (RankMask{1} << r)) {
          std::int64_t b, e;
          range(r, key[i++], &b, &e);
          size *= static_cast<std::uint64_t>(e - b);
        }
      seen += size;
    }
    c.access_elements[t] += x.elements() - Count(seen);
  }
  for (std::size_t t = 0; t < nt; ++t) {
    if (p.tensors[t].output && has_resident[t]) c.access_elements[t] += resident_size[t];
    c.buffer_bits += storage_bits(p.tensors[t], c.buffer_elements[t]);
    c.traffic_bits += storage_bits(p.tensors[t], c.access_elements[t]);
  }
  return c;
}

}  // namespace solar::tiling
