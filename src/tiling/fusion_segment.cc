// Fused segments of units (fusion.h) at one capacity: untiled fusion (whole intermediates on
// chip) and tiled fusion (FFMT/FFMR rows, batch and key ranks; docs/cache-aware.md
// §1.5), each op costed by the ski-slope of its problem with the on-chip tensors taken out
// (the sub-searches, cached). Plans come from fusion_plan.cc.
#include <algorithm>

#include "fmt/format.h"
#include "fusion_impl.h"
#include "solar/util/errors.h"
#include "solar/util/int_math.h"
#include "storage.h"

namespace solar::tiling {

using detail::kInfinite;
using detail::SegmentPlan;
using detail::SegmentValue;
using detail::Wide;

namespace {

// The names of some roots, for details: the first four, then how many more.
std::string names(const GraphTrafficModel::Impl& m, const std::vector<std::uint32_t>& roots) {
  std::string s;
  for (std::size_t i = 0; i < roots.size(); ++i) {
    if (i == 4) {
      s += fmt::format(" and {} more", roots.size() - 4);
      break;
    }
    s += (i ? ", " : "") + m.graph->tensor(ir::TensorId{roots[i]}).name;
  }
  return s;
}

// Bytes of a problem's output tile in one step of tiled fusion: `tile` positions of the
// fused rank, one of the batch and key ranks, the other ranks whole.
Wide output_step_bytes(const TilingProblem& p, int rank, std::int64_t tile, int batch_rank,
                       int key_rank) {
  const TensorAccess& out = p.output();
  Wide n = 1;
  for (const DimAccess& d : out.dims) {
    const int r = d.terms[0].rank;
    n *= static_cast<Wide>(r == rank ? tile : r == batch_rank || r == key_rank ? 1 : d.extent);
  }
  return ceil_div(detail::StorageRule(out).bits(n), Wide{8});
}

}  // namespace

const TrafficCurve* GraphTrafficModel::Impl::sub_curve(int u, std::uint32_t drop, int rank,
                                                       std::int64_t tile, int batch_rank,
                                                       int key_rank) const {
  const detail::Unit& unit = units[u];
  if (drop == 0 && rank < 0 && batch_rank < 0 && key_rank < 0) return &unit.curve->curve;
  const SubKey sk{unit.problem_id, drop, rank, rank < 0 ? 0 : tile, batch_rank, key_rank};
  if (auto hit = sub_by_key.find(sk); hit != sub_by_key.end()) return hit->second;
  const TrafficCurve* c = search_sub_curve(u, drop, rank, tile, batch_rank, key_rank);
  sub_by_key.emplace(sk, c);
  return c;
}

const TrafficCurve* GraphTrafficModel::Impl::search_sub_curve(int u, std::uint32_t drop, int rank,
                                                              std::int64_t tile,
                                                              int batch_rank,
                                                              int key_rank) const {
  const detail::Unit& unit = units[u];
  const TilingProblem& p = *unit.problem;
  const std::size_t nt = p.tensors.size();
  TilingProblem q;
  // Ranks no kept tensor indexes are left untiled: tiling them only adds loops.
  RankMask used = 0;
  for (std::size_t t = 0; t < nt; ++t)
    if (!(drop & (1u << t))) used |= p.tensors[t].ranks;
  std::vector<int> index(p.ranks.size(), -1);
  for (std::size_t r = 0; r < p.ranks.size(); ++r)
    if (used & (RankMask{1} << r)) {
      index[r] = static_cast<int>(q.ranks.size());
      Rank rk = p.ranks[r];
      if (static_cast<int>(r) == rank) rk.extent = tile;
      if (static_cast<int>(r) == batch_rank || static_cast<int>(r) == key_rank) rk.extent = 1;
      q.ranks.push_back(rk);
    }
  for (std::size_t t = 0; t < nt; ++t) {
    const TensorAccess& x = p.tensors[t];
    if (drop & (1u << t)) {
      // An output kept on chip becomes a one-byte scalar output (no ranks: one element,
      // moved once, kept once), subtracted again below: the search needs an output.
      if (x.output) q.tensors.push_back({"on-chip", 8, true, {}, 0});
      continue;
    }
    TensorAccess a = x;
    a.ranks = 0;
    for (DimAccess& d : a.dims) {
      for (DimTerm& term : d.terms) {
        // Planned only for plain dims of the rank's full extent.
        if (term.rank == rank) d.extent = tile;
        if (term.rank == batch_rank || term.rank == key_rank) d.extent = 1;
        term.rank = index[term.rank];
        a.ranks |= RankMask{1} << term.rank;
      }
    }
    q.tensors.push_back(std::move(a));
  }
  // The mask's constraints stay over the ranks kept whole; those naming a rank set to a tile
  // (or removed) would need the tile's position, so they go: the slice's box, and the steps
  // without a live point are left out by live_steps.
  for (const RankConstraint& c : p.mask) {
    RankConstraint nc{{}, c.constant};
    bool keep = true;
    for (const DimTerm& term : c.terms) {
      const int r = term.rank;
      keep = keep && index[r] >= 0 && r != rank && r != batch_rank && r != key_rank;
      if (keep) nc.terms.push_back({index[r], term.coef});
    }
    if (keep) q.mask.push_back(std::move(nc));
  }
  const bool dummy = (drop >> (nt - 1)) & 1u;
  for (const TensorAccess& t : q.tensors)
    if (!(dummy && t.output))
      q.compulsory_bits += storage_bits(t, t.elements());
  if (q.tensors.size() == 1 && dummy) {
    // Nothing moves: every tensor is on chip.
    auto& c = sub_curves["nothing moves"];
    if (!c) c = std::make_unique<TrafficCurve>(std::vector<CurvePoint>{{Count(0), Count(0)}});
    return c.get();
  }
  const std::string key = detail::problem_key(q) + (dummy ? "#d" : "");
  auto it = sub_curves.find(key);
  if (it != sub_curves.end()) return it->second ? it->second.get() : nullptr;
  CurveOptions o = options.einsum;
  // Bypass variants would also bypass the scalar stand-in, whose byte is then not in the
  // buffer; they only matter below three words of buffer, never for a fused segment.
  o.bypass = false;
  o.max_evaluations = std::min<std::uint64_t>(o.max_evaluations, std::uint64_t{1} << 16);
  std::unique_ptr<TrafficCurve> curve;
  try {
    CurveResult r = attainable_curve(q, o);
    sub_evaluated += r.evaluated;
    std::vector<CurvePoint> pts = r.curve.points();
    if (dummy)
      for (CurvePoint& pt : pts) {
        pt.buffer_bytes -= Count(1);  // the stand-in's 8 bits, added before rounding
        pt.traffic_bytes -= Count(1);
      }
    curve = std::make_unique<TrafficCurve>(std::move(pts));
  } catch (const Unsupported&) {
    // Refused by the search (more than 16 tensors): this fused variant is not offered.
  }
  const TrafficCurve* ptr = curve.get();
  sub_curves.emplace(key, std::move(curve));
  return ptr;
}

std::optional<std::pair<Wide, Wide>> GraphTrafficModel::Impl::live_steps(
    int u, int rank, std::int64_t scale, std::int64_t p, std::int64_t rows, int batch_rank,
    int key_rank) const {
  const TilingProblem& q = *units[u].problem;
  const RankMask named = q.mask_ranks();
  auto bit = [](int r) { return r >= 0 ? RankMask{1} << r : RankMask{0}; };
  if (!(named & (bit(rank) | bit(key_rank)))) return std::nullopt;
  // Units with equal problems (a model's repeated layers) count the same live tiles: one
  // counter, and its memo, serves them all.
  auto& live = live_tiles[units[u].problem_id];
  if (!live) live = std::make_unique<detail::LiveTiles>(q);
  std::vector<std::int64_t> tile(q.ranks.size()), extent(q.ranks.size());
  for (std::size_t r = 0; r < q.ranks.size(); ++r) extent[r] = tile[r] = q.ranks[r].extent;
  tile[rank] = p * scale;
  Wide other = 1;  // steps of the key and batch loops outside the mask: all live
  for (int r : {key_rank, batch_rank}) {
    if (r < 0) continue;
    tile[r] = 1;
    if (!(named & bit(r))) other *= static_cast<Wide>(q.ranks[r].extent);
  }
  const RankMask tiled = (bit(rank) | bit(key_rank) | bit(batch_rank)) & named;
  const Wide all = live->sum(tile, extent, tiled, 0);
  const auto full_rows =
      static_cast<std::int64_t>(ceil_div(static_cast<Wide>(rows), static_cast<Wide>(p)) - 1) * p;
  Wide full = 0;
  if (full_rows > 0) {
    extent[rank] = full_rows * scale;
    full = live->sum(tile, extent, tiled, 0);
  }
  return std::make_pair(full * other, (all - full) * other);
}

SegmentValue GraphTrafficModel::Impl::fused(int a, int b, Wide s, bool describe,
                                            std::optional<FusionKind> only, Wide budget) const {
  std::lock_guard<std::mutex> lock(mu);
  return fused(plan(a, b), a, b, s, describe, only, budget);
}

SegmentValue GraphTrafficModel::Impl::fused(const SegmentPlan& pl, int a, int b, Wide s,
                                            bool describe, std::optional<FusionKind> only,
                                            Wide budget) const {
  const int len = b - a;
  SegmentValue best;
  auto lookup = [](const TrafficCurve& c, Wide cap, Wide& buf) -> Wide {
    const auto& pts = c.points();
    auto it = std::upper_bound(
        pts.begin(), pts.end(), cap,
        [](Wide x, const CurvePoint& p) { return x < p.buffer_bytes.raw(); });
    if (it == pts.begin()) return kInfinite;
    --it;
    buf = it->buffer_bytes.raw();
    return it->traffic_bytes.raw();
  };
  for (int v = 0; v < 2; ++v) {
    const SegmentPlan::Untiled& un = pl.untiled[v];
    if (!un.ok || (only && *only != FusionKind::Untiled)) continue;
    Wide total = un.fixed, buf = 0;
    for (int i = 0; i < len && total != kInfinite; ++i) {
      if (un.reserve[i] > s) {
        total = kInfinite;
        break;
      }
      if (!un.curve[i]) {
        total = detail::add_sat(total, un.unit_bytes[i]);
        buf = std::max(buf, un.reserve[i]);
        continue;
      }
      Wide b_used = 0;
      const Wide q = lookup(*un.curve[i], s - un.reserve[i], b_used);
      total = detail::add_sat(total, q);
      buf = std::max(buf, un.reserve[i] + b_used);
    }
    if (total < best.traffic) {
      best.traffic = total;
      best.buffer = buf;
      best.kind = FusionKind::Untiled;
      if (describe) {
        Wide peak = 0;
        for (Wide r : un.reserve) peak = std::max(peak, r);
        std::string what;
        if (!un.kept.empty()) what = "intermediates on chip: " + names(*this, un.kept);
        if (!un.loaded.empty())
          what += (what.empty() ? "" : "; ") + std::string("sources loaded once and kept: ") +
                  names(*this, un.loaded);
        best.detail = fmt::format("{} ({} reserved at most)", what, detail::mib(peak));
      }
    }
  }
  for (const SegmentPlan::Tiled& tl : pl.tiled) {
    if (only && *only != FusionKind::Tiled) break;
    const bool flash = tl.keys > 1;
    for (int v = 0; v < (flash ? 1 : 2); ++v) {
      // Resident weights are loaded once in all; with a batch rank outermost only the
      // current slice of them is held.
      const Wide loaded = v == 1 ? tl.weight_bytes : 0;
      if (v == 1 && loaded == 0) continue;  // no weights: the same as variant 0
      const Wide base = ceil_div(loaded, static_cast<Wide>(tl.batch)) + tl.accumulator_bytes;
      if (base > s || detail::add_sat(tl.fixed, loaded) >= std::min(budget, best.traffic)) continue;
      // Largest tiles first: the fewest row tiles, so the streamed weights' lower bound
      // T * streamed only grows and ends the sweep.
      const std::vector<std::int64_t>& tiles = *tl.tiles;
      for (auto pt = tiles.rbegin(); pt != tiles.rend(); ++pt) {
        const std::int64_t p = *pt;
        // Row tiles along a 2:4 group dimension start and end on whole groups (the last may
        // end with the tensor).
        bool whole_groups = true;
        for (int i = 0; i < len; ++i)
          whole_groups = whole_groups && (!tl.grouped[i] || p * tl.scale[i] % detail::kGroup == 0);
        if (!whole_groups) continue;
        const Wide row_tiles = ceil_div(static_cast<Wide>(tl.rows), static_cast<Wide>(p));
        const Wide fixed = detail::add_sat(tl.fixed, tl.held_bytes);
        if (v == 0 && detail::add_sat(fixed, detail::mul_sat(row_tiles, tl.streamed_bytes)) >=
                          std::min(budget, best.traffic))
          break;
        Wide total = detail::add_sat(fixed, loaded), buf = base;
        auto reserve = [&](int i) {
          return ceil_div((tl.reserve_bits_per_row[i] + tl.held_bits_per_row) *
                              static_cast<Wide>(p), Wide{8});
        };
        bool fits = true;
        for (int i = 0; i < len && fits; ++i) fits = reserve(i) + base <= s;
        if (!fits) continue;
        // The last row tile has the remaining rows; it is costed with its own problem, at
        // the capacity a full tile leaves (it needs no more).
        const std::int64_t last = tl.rows - static_cast<std::int64_t>(row_tiles - 1) * p;
        const Wide slices = static_cast<Wide>(tl.batch) * static_cast<Wide>(tl.keys);
        for (int i = 0; i < len && total != kInfinite; ++i) {
          const Wide res = reserve(i);
          const int key = flash ? tl.key_rank[i] : -1;
          const std::int64_t k = tl.scale[i];
          std::vector<SegmentPlan::Tiled::SubCurves>& memo = tl.curves[v];
          if (memo.empty()) memo.resize(tiles.size() * static_cast<std::size_t>(len));
          const auto tile_index = static_cast<std::size_t>(tiles.rend() - pt) - 1;
          SegmentPlan::Tiled::SubCurves& sc = memo[tile_index * static_cast<std::size_t>(len) + i];
          if (!sc.known) {
            sc.full = sub_curve(a + i, tl.drop[v][i], tl.rank[i], p * k, tl.batch_rank[i], key);
            sc.last = last == p ? sc.full
                                : sub_curve(a + i, tl.drop[v][i], tl.rank[i], last * k,
                                            tl.batch_rank[i], key);
            sc.known = true;
          }
          const TrafficCurve* c = sc.full;
          const TrafficCurve* c_last = sc.last;
          if (!c || !c_last) {
            total = kInfinite;
            break;
          }
          Wide b_used = 0, b_last = 0;
          const Wide q = lookup(*c, s - base - res, b_used);
          const Wide q_last = lookup(*c_last, s - base - res, b_last);
          // A masked unit (causal attention) runs only the steps with a live point; a step
          // without one still writes its output tile (the reduction's identity) when the
          // output goes to DRAM.
          Wide steps = (row_tiles - 1) * slices, steps_last = slices;
          const TilingProblem* up = units[a + i].problem ? &*units[a + i].problem : nullptr;
          if (up && !up->mask.empty())
            if (auto ls = live_steps(a + i, tl.rank[i], k, p, tl.rows, tl.batch_rank[i], key)) {
              const std::size_t nt = up->tensors.size();
              if (!((tl.drop[v][i] >> (nt - 1)) & 1u)) {
                const Wide dead = (row_tiles - 1) * slices - ls->first;
                const Wide dead_last = slices - ls->second;
                const Wide out = output_step_bytes(*up, tl.rank[i], p * k, tl.batch_rank[i], key);
                const Wide out_last =
                    output_step_bytes(*up, tl.rank[i], last * k, tl.batch_rank[i], key);
                total = detail::add_sat(total, detail::mul_sat(dead, out));
                total = detail::add_sat(total, detail::mul_sat(dead_last, out_last));
              }
              steps = ls->first;
              steps_last = ls->second;
            }
          total = detail::add_sat(total, detail::mul_sat(steps, q));
          total = detail::add_sat(total, detail::mul_sat(steps_last, q_last));
          buf = std::max(buf, base + res + std::max(b_used, b_last));
        }
        if (total < best.traffic) {
          best.traffic = total;
          best.buffer = buf;
          best.kind = FusionKind::Tiled;
          if (describe)
            best.detail = fmt::format(
                "rank '{}' ({} rows) tiled by {} ({} tiles{}){}, intermediate tiles on chip; {}{}",
                tl.rank_name, tl.rows, p, static_cast<std::uint64_t>(row_tiles),
                tl.batch > 1 ? fmt::format(" x {} batch slices", tl.batch) : std::string(),
                flash ? fmt::format(", flash-style over key rank '{}' ({} keys, one at a time; "
                                    "{} held per row tile)",
                                    tl.key_name, tl.keys,
                                    detail::mib(ceil_div(tl.held_bits_per_row * p, Wide{8})))
                      : std::string(),
                v == 1 ? fmt::format("weights resident ({} held, read once)",
                                     detail::mib(base - tl.accumulator_bytes))
                       : std::string("weights re-read per tile"),
                tl.accumulator_bytes > 0
                    ? fmt::format("; reductions over the rows accumulate on chip ({})",
                                  detail::mib(tl.accumulator_bytes))
                    : std::string());
        }
      }
    }
  }
  return best;
}


}  // namespace solar::tiling
