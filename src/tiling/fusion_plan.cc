// Planning of fused segments (fusion.h): which intermediates stay on chip, their live ranges,
// and the ranks a run can be tiled by (rows, a batch rank, a flash-style key rank); costed at
// each capacity by fusion_segment.cc.
#include <algorithm>
#include <set>

#include "fmt/format.h"
#include "fusion_impl.h"
#include "solar/cost/work.h"
#include "solar/util/errors.h"
#include "storage.h"

namespace solar::tiling {

using detail::SegmentPlan;
using detail::Wide;

namespace {

constexpr std::size_t kMaxPlans = std::size_t{1} << 16;

// A rank as the elements it walks: `extent` positions `stride` apart in a tensor's row-major
// element order. Fusion follows a rank from a producer's output to its readers as a walk,
// because a reshape renumbers no element: a walk survives a flatten and an unflatten (how a
// permuted view is lowered), where a dimension index would not.
struct Walk {
  std::int64_t extent = 0, stride = 0;
  friend bool operator==(const Walk&, const Walk&) = default;
};

// The walk `w` of root tensor elements as the elements of tensor `v` (a free view of the
// root, possibly through several), or nullopt when a view breaks it. A reshape keeps it; a
// slice or expand view of the same rank keeps a walk inside one dimension it leaves whole.
std::optional<Walk> map_walk(const GraphTrafficModel::Impl& m, std::uint32_t v, Walk w) {
  if (w.stride <= 0) return std::nullopt;  // a part that does not line up: not followed
  const int parent = m.view_parent[v];
  if (parent < 0) return w;
  std::optional<Walk> wp = map_walk(m, static_cast<std::uint32_t>(parent), w);
  if (!wp) return std::nullopt;
  const ir::Tensor& pt = m.graph->tensor(ir::TensorId{static_cast<std::uint32_t>(parent)});
  const ir::Tensor& vt = m.graph->tensor(ir::TensorId{v});
  const auto &in = pt.shape, &out = vt.shape;
  if (pt.num_elements() == vt.num_elements()) return wp;
  if (in.size() != out.size()) return std::nullopt;
  const std::vector<std::int64_t> si = row_major_strides(in), so = row_major_strides(out);
  for (std::size_t d = 0; d < in.size(); ++d)
    if (si[d] > 0 && so[d] > 0 && wp->stride % si[d] == 0 &&
        wp->stride / si[d] * wp->extent <= in[d] && in[d] == out[d])
      return Walk{wp->extent, so[d] * (wp->stride / si[d])};
  return std::nullopt;
}

// A plain dimension of access `a` whose rank walks `w`, or walks it with `scale` times its
// positions (the walk being the rank's outer part: batch ranks merged by a reshape before a
// bmm, [B, H] -> [B*H]); nullopt when none does.
struct Found {
  int dim = -1;
  std::int64_t scale = 1;
};
std::optional<Found> find_walk(const TensorAccess& a, Walk w) {
  const std::vector<std::int64_t> strides = element_strides(a);
  for (std::size_t d = 0; d < a.dims.size(); ++d) {
    const std::int64_t s = strides[d], e = a.dims[d].extent;
    if (!a.dims[d].plain() || s <= 0 || w.stride % s != 0) continue;
    const std::int64_t scale = w.stride / s;
    if (w.extent * scale == e) return Found{static_cast<int>(d), scale};
  }
  return std::nullopt;
}

// The walk of access dimension `d` of `a` at `scale` (its outer part).
Walk walk_of(const TensorAccess& a, int d, std::int64_t scale = 1) {
  return {a.dims[d].extent / scale, element_strides(a)[d] * scale};
}

// Bytes a unit reads of root `r`: the sum of the footprints of its operands naming it (two
// operands may read different parts, as the K and V slices of one QKV tensor do), capped at
// the root's size.
Wide read_of_root(const GraphTrafficModel::Impl& m, int u, std::uint32_t r) {
  const detail::Unit& unit = m.units[u];
  Wide best = 0;
  for (std::size_t k = 0; k < unit.operand_bytes.size(); ++k)
    if (unit.tensor_root[k] == r) best += unit.operand_bytes[k];
  const Wide size = m.tensor_size[r];
  return std::min(size, best);
}

// Bits of one row of one batch slice of tensor `t` (rows and batch: extents it holds) in its
// storage (2:4, bitmap). p rows are reserved as p times that: at least their compressed size,
// the rounding of each row's kept values or bitmap bytes at most added.
Wide row_bits(const ir::Graph& g, const ir::Tensor& t, std::int64_t rows, std::int64_t batch) {
  const Wide elements = static_cast<Wide>(t.num_elements().raw()) /
                        (static_cast<Wide>(rows) * static_cast<Wide>(batch));
  return storage_bits(storage_of(g, t.id), ir::dtype_bits(t.dtype), Count::from_raw(elements))
      .raw();
}

// Candidate fused tile sizes (more than one tile) of a rank of `rows`. Ceil mode:
// ceil(rows / T) for T = 2, 3, 4, 6, 8, 12, ... (powers of two and 1.5 times them, so the trip
// count grows by at most 1.5x per step; a full sweep of all O(sqrt rows) ceil tiles would cost
// one sub-search each). Divisor mode: the divisors below rows, as Orojenesis' FFMT sweeps
// (powers of two for power-of-two extents).
std::vector<std::int64_t> tile_candidates(std::int64_t rows, TileMode mode) {
  std::vector<std::int64_t> out;
  switch (mode) {
    case TileMode::Divisor:
      for (std::int64_t d = 1; d * d <= rows; ++d)
        if (rows % d == 0) {
          if (d < rows) out.push_back(d);
          if (rows / d < rows && rows / d != d) out.push_back(rows / d);
        }
      std::sort(out.begin(), out.end());
      return out;
    case TileMode::Ceil:
      break;
  }
  for (std::int64_t t = 2; t <= rows; t *= 2)
    for (std::int64_t trips : {t, t + t / 2}) {
      if (trips > rows) continue;
      const std::int64_t p = (rows + trips - 1) / trips;
      if (out.empty() || out.back() != p) out.push_back(p);
    }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

std::set<std::uint32_t> GraphTrafficModel::Impl::shared_row_sources(
    int a, int b, const std::vector<int>& rank, const std::vector<std::int64_t>& scale,
    std::int64_t rows, std::int64_t batch, SegmentPlan::Tiled& tl) const {
  std::set<std::uint32_t> produced;
  for (int u = a; u < b; ++u) produced.insert(graph->op(units[u].op).outputs[0].value);
  // Tensors not produced inside (sources, or free views of them), by their readers inside
  // (unit, operand): readers of one tensor share its tiles.
  std::map<std::uint32_t, std::vector<std::pair<int, std::size_t>>> readers;
  for (int u = a; u < b; ++u) {
    const ir::Op& op = graph->op(units[u].op);
    for (std::size_t t = 0; t < op.inputs.size(); ++t)
      if (!produced.count(units[u].tensor_root[t]))
        readers[op.inputs[t].value].emplace_back(u, t);
  }
  std::set<std::uint32_t> held;
  for (const auto& [r, rd] : readers) {
    if (rd.front().first == rd.back().first) continue;  // one reader: its own tile suffices
    const ir::Tensor& read_t = graph->tensor(ir::TensorId{r});
    std::optional<Walk> row_walk;
    bool ok = true;
    Wide load = 0;
    for (const auto& [u, t] : rd) {
      const TensorAccess& x = units[u].problem->tensors[t];
      // Read along the fused rank, the same walk by every reader.
      std::optional<Walk> walk;
      for (std::size_t d = 0; d < x.dims.size(); ++d)
        if (x.dims[d].plain() && x.dims[d].terms[0].rank == rank[u - a])
          walk = walk_of(x, static_cast<int>(d), scale[u - a]);
      ok = walk && walk->stride > 0 && walk->extent == rows && (!row_walk || *row_walk == *walk);
      if (!ok) break;
      row_walk = walk;
      load += units[u].operand_bytes[t];
    }
    if (!ok) continue;
    held.insert(r);
    const Wide per_row = row_bits(*graph, read_t, rows, batch);
    for (int u = rd.front().first; u <= rd.back().first; ++u)
      tl.reserve_bits_per_row[u - a] += per_row;
    tl.fixed += std::min(load, tensor_size[r]);  // each row tile loaded once: the whole once
  }
  return held;
}

SegmentPlan& GraphTrafficModel::Impl::plan(int a, int b) const {
  auto it = plans.find({a, b});
  if (it != plans.end()) return *it->second;
  auto plan = std::make_unique<SegmentPlan>();
  const int len = b - a;
  auto in_seg = [&](int u) { return u >= a && u < b; };

  // Intermediates produced inside: kept on chip when read inside (or read by nobody).
  struct Resident {
    std::uint32_t root;
    int first, last;  // units (absolute) it is live across
    bool written;     // also needed outside: written once
  };
  std::vector<Resident> residents;
  std::set<std::uint32_t> resident_set;
  for (int u = a; u < b; ++u) {
    const detail::Unit& unit = units[u];
    if (!unit.has_curve && !unit.can_reside) continue;
    const std::uint32_t r = graph->op(unit.op).outputs[0].value;
    int last = -1;
    bool outside = used_outside[r];
    for (int c : users[r]) {
      if (in_seg(c)) last = std::max(last, c);
      else outside = true;
    }
    const bool dead = users[r].empty() && !used_outside[r];
    if (last < 0 && !dead) continue;
    residents.push_back({r, u, std::max(last, u), outside});
    resident_set.insert(r);
  }
  // Graph sources read twice or more inside (by two units, or by two operands of one: x + x)
  // (variant 1): loaded once, kept.
  struct Shared {
    std::uint32_t root;
    int first, last;
    Wide load;
  };
  std::vector<Shared> shared;
  {
    std::map<std::uint32_t, std::vector<int>> readers;
    for (int u = a; u < b; ++u)
      for (ir::TensorId in : graph->op(units[u].op).inputs) {
        const std::uint32_t r = root[in.value];
        if (!ir::is_graph_source(graph->tensor(ir::TensorId{r}).role)) continue;
        readers[r].push_back(u);
      }
    for (const auto& [r, us] : readers) {
      if (us.size() < 2) continue;
      bool ok = true;
      Wide load = 0;
      for (std::size_t i = 0; i < us.size(); ++i) {
        const int u = us[i];
        ok = ok && (units[u].has_curve || units[u].can_reside);
        if (ok && (i == 0 || us[i - 1] != u)) load += read_of_root(*this, u, r);
      }
      load = std::min(load, tensor_size[r]);
      if (ok) shared.push_back({r, us.front(), us.back(), load});
    }
  }

  auto size_of = [&](std::uint32_t r) { return tensor_size[r]; };
  // ---- untiled ----
  for (int v = 0; v < 2; ++v) {
    SegmentPlan::Untiled& un = plan->untiled[v];
    if (v == 0 ? residents.empty() : shared.empty()) continue;
    std::set<std::uint32_t> on_chip = resident_set;
    un.reserve.assign(len, 0);
    for (const Resident& r : residents) {
      for (int u = r.first; u <= r.last; ++u) un.reserve[u - a] += size_of(r.root);
      if (r.written) un.fixed += size_of(r.root);
      un.kept.push_back(r.root);
    }
    if (v == 1)
      for (const Shared& s : shared) {
        on_chip.insert(s.root);
        for (int u = s.first; u <= s.last; ++u) un.reserve[u - a] += size_of(s.root);
        un.fixed += s.load;
        un.loaded.push_back(s.root);
      }
    un.ok = true;
    un.curve.assign(len, nullptr);
    un.unit_bytes.assign(len, 0);
    for (int u = a; u < b && un.ok; ++u) {
      const detail::Unit& unit = units[u];
      const ir::Op& op = graph->op(unit.op);
      if (unit.has_curve) {
        std::uint32_t drop = 0;
        for (std::size_t t = 0; t < unit.tensor_root.size(); ++t)
          if (on_chip.count(unit.tensor_root[t])) drop |= 1u << t;
        un.curve[u - a] = sub_curve(u, drop, -1, 0);
        if (!un.curve[u - a]) un.ok = false;
      } else if (unit.can_reside) {
        Wide bytes = on_chip.count(op.outputs[0].value) ? 0 : unit.write_bytes;
        for (std::size_t k = 0; k < unit.operand_bytes.size(); ++k)
          if (!on_chip.count(unit.tensor_root[k])) bytes += unit.operand_bytes[k];
        un.unit_bytes[u - a] = bytes;
      } else {
        un.unit_bytes[u - a] = unit.own_bytes;
      }
    }
  }

  // ---- tiled: one output rank shared by every unit ----
  // The rank of each unit that rank r0 of the first unit's output becomes, following every
  // on-chip intermediate from its producer's output dimension to each reader's operand
  // dimension (through views that keep it), and the on-chip roots that carry it; nullopt when
  // a unit is not reached, or the rank appears in a window or with another extent. Modes:
  // Fused: every unit keeps the rank in its output (no partial sums cross ops: FFMR).
  // Batch: the same, and the rank indexes every tensor of every unit (attention heads).
  // Key: a unit may reduce the rank (sum or max, done online as flash attention does:
  // reads of a running reduction inside the key loop are assumed rescalable, as online
  // softmax is); a value carrying the rank may not leave the run.
  enum class Mode { Fused, Batch, Key };
  std::set<std::uint32_t> kept_inside;  // on chip and never written
  for (const Resident& r : residents)
    if (!r.written) kept_inside.insert(r.root);
  struct Propagated {
    std::vector<int> rank;
    // Per unit: positions of its rank per row (> 1: the rows are the outer part of a rank a
    // reshape merged, Fused mode only).
    std::vector<std::int64_t> scale;
    std::set<std::uint32_t> carriers;
    // Fused: units reducing the rank (a loss's sum over rows) into an output no later unit
    // inside reads; it accumulates on chip across the row loop.
    std::vector<bool> reduces;
    bool any_reduces = false;
  };
  auto propagate = [&](int r0, Mode mode) -> std::optional<Propagated> {
    const std::int64_t rows = units[a].problem->ranks[r0].extent;
    std::map<std::uint32_t, Walk> fused_walk;   // on-chip root -> the rank's walk of it
    std::map<std::uint32_t, Walk> source_walk;  // the same for tensors read from DRAM
    Propagated out;
    out.rank.assign(len, -1);
    out.scale.assign(len, 1);
    out.reduces.assign(len, false);
    for (int u = a; u < b; ++u) {
      const detail::Unit& unit = units[u];
      const TilingProblem& p = *unit.problem;
      const ir::Op& op = graph->op(unit.op);
      int r = (u == a) ? r0 : -1;
      std::int64_t scale = 1;
      // The rank a reader walks `w` of its operand k with (one for all such operands).
      auto reached = [&](std::size_t k, Walk w) {
        std::optional<Found> f = find_walk(p.tensors[k], w);
        if (!f || (f->scale != 1 && mode != Mode::Fused)) return false;
        const int rk = p.tensors[k].dims[f->dim].terms[0].rank;
        if (r >= 0 && (r != rk || scale != f->scale)) return false;
        r = rk;
        scale = f->scale;
        return true;
      };
      for (std::size_t k = 0; k < op.inputs.size(); ++k) {
        auto fw = fused_walk.find(unit.tensor_root[k]);
        if (fw == fused_walk.end()) continue;
        std::optional<Walk> vw = map_walk(*this, op.inputs[k].value, fw->second);
        if (!vw || !reached(k, *vw)) return std::nullopt;
      }
      // Not reached through an intermediate: a sibling reading a source an earlier unit
      // read along the rank (the indices of max(x, dim) beside its values).
      for (std::size_t k = 0; k < op.inputs.size() && r < 0; ++k) {
        auto sw = source_walk.find(op.inputs[k].value);
        if (sw != source_walk.end()) reached(k, sw->second);
      }
      // Reading nothing of the run along the rank, the unit is independent of it: any of its
      // output ranks of the same extent partitions its work into the row tiles (the readers
      // of its output inside check that they agree).
      for (std::size_t d = 0; d < p.output().dims.size() && r < 0 && mode != Mode::Key; ++d)
        if (p.ranks[p.output().dims[d].terms[0].rank].extent == rows &&
            std::none_of(unit.tensor_root.begin(), unit.tensor_root.end() - 1,
                         [&](std::uint32_t t) { return resident_set.count(t) > 0; }))
          r = p.output().dims[d].terms[0].rank;
      if (r < 0 || p.ranks[r].extent != rows * scale) return std::nullopt;
      int out_dim = -1;
      for (std::size_t t = 0; t < p.tensors.size(); ++t) {
        bool found = false;
        for (std::size_t d = 0; d < p.tensors[t].dims.size(); ++d) {
          const DimAccess& dim = p.tensors[t].dims[d];
          bool has = false;
          for (const DimTerm& term : dim.terms) has = has || term.rank == r;
          if (!has) continue;
          if (!dim.plain() || dim.extent != rows * scale) return std::nullopt;
          found = true;
          if (p.tensors[t].output) out_dim = static_cast<int>(d);
        }
        if (mode == Mode::Batch && !found) return std::nullopt;
      }
      if (out_dim < 0) {
        const ir::Reduce red = unit.reduce;
        const bool online = red == ir::Reduce::Sum || red == ir::Reduce::Max;
        const bool read_inside =
            std::any_of(users[op.outputs[0].value].begin(), users[op.outputs[0].value].end(),
                        [&](int c) { return in_seg(c); });
        if (mode == Mode::Fused && options.key_tiling && (online || red == ir::Reduce::Min) &&
            !read_inside) {
          out.reduces[u - a] = true;
          out.any_reduces = true;
        } else if (mode != Mode::Key || !online) {
          return std::nullopt;
        }
      }
      out.rank[u - a] = r;
      out.scale[u - a] = scale;
      const std::uint32_t out_root = op.outputs[0].value;
      // Key tiling streams the key: a value carrying it may not leave the run (it would
      // be written one key at a time); only reductions over it do.
      if (mode == Mode::Key && out_dim >= 0 && !kept_inside.count(out_root)) return std::nullopt;
      if (out_dim >= 0 && resident_set.count(out_root)) {
        fused_walk[out_root] = walk_of(p.output(), out_dim, scale);
        out.carriers.insert(out_root);
      }
      for (std::size_t k = 0; k + 1 < p.tensors.size(); ++k) {
        const std::uint32_t in = op.inputs[k].value;
        if (resident_set.count(root[in])) continue;  // sources (or views of them) only
        for (std::size_t d = 0; d < p.tensors[k].dims.size(); ++d)
          if (p.tensors[k].dims[d].plain() && p.tensors[k].dims[d].terms[0].rank == r)
            source_walk.emplace(in, walk_of(p.tensors[k], static_cast<int>(d), scale));
      }
    }
    // Every on-chip intermediate carrying the rank was read through it by all its readers
    // inside (checked at each read).
    return out;
  };
  // Whether a rank (per unit) is the group dimension of a 2:4 tensor in some unit: a batch or
  // key rank looped one position at a time would split every group, and row tiles along it
  // must be whole groups.
  auto grouped_along = [&](const std::vector<int>& rank) {
    std::vector<char> g(len, 0);
    for (int u = a; u < b; ++u)
      g[u - a] = rank[u - a] >= 0 &&
                 (detail::grouped_ranks(*units[u].problem) & (RankMask{1} << rank[u - a]));
    return g;
  };
  auto any = [](const std::vector<char>& v) {
    return std::any_of(v.begin(), v.end(), [](char c) { return c != 0; });
  };
  bool all_curves = !residents.empty();
  for (int u = a; u < b; ++u) all_curves = all_curves && units[u].has_curve;
  if (all_curves) {
    const TilingProblem& first = *units[a].problem;
    for (const DimAccess& od : first.output().dims) {
      const int r0 = od.terms[0].rank;
      const std::int64_t rows = first.ranks[r0].extent;
      if (rows < 2) continue;
      std::optional<Propagated> fused_rank = propagate(r0, Mode::Fused);
      if (!fused_rank) continue;
      const std::vector<int>& rank = fused_rank->rank;
      // A second output rank indexing every tensor of the run is looped over outermost with
      // tile 1: it multiplies no tensor's traffic and divides every tile by its extent.
      std::vector<int> batch_rank(len, -1);
      std::int64_t batch = 1;
      int first_batch = -1;
      for (const DimAccess& bd : first.output().dims) {
        const int rb = bd.terms[0].rank;
        if (rb == r0 || first.ranks[rb].extent < 2) continue;
        std::optional<Propagated> br = propagate(rb, Mode::Batch);
        if (br && !any(grouped_along(br->rank))) {
          batch_rank = br->rank;
          batch = first.ranks[rb].extent;
          first_batch = rb;
          break;
        }
      }
      // Flash-style key tiling: another output rank of the first unit, looped innermost
      // (one key at a time: the traffic does not depend on the key tile, the buffer grows
      // with it), which later units may reduce online.
      for (const DimAccess& kd : first.output().dims) {
        if (!options.key_tiling || fused_rank->any_reduces) break;
        const int rk = kd.terms[0].rank;
        if (rk == r0 || rk == first_batch || first.ranks[rk].extent < 2) continue;
        std::optional<Propagated> key = propagate(rk, Mode::Key);
        if (!key || any(grouped_along(key->rank))) continue;
        SegmentPlan::Tiled& fl = plan->tiled.emplace_back();
        fl.ok = true;
        fl.rows = rows;
        fl.rank_name = first.ranks[r0].name;
        fl.key_name = first.ranks[rk].name;
        fl.rank = rank;
        fl.scale = fused_rank->scale;
        fl.grouped = grouped_along(rank);
        fl.batch_rank = batch_rank;
        fl.batch = batch;
        if (batch > 1) fl.rank_name += "' and '" + first.ranks[first_batch].name;
        fl.key_rank = key->rank;
        fl.keys = first.ranks[rk].extent;
        fl.reserve_bits_per_row.assign(len, 0);
        for (const Resident& rs : residents) {
          const ir::Tensor& t = graph->tensor(ir::TensorId{rs.root});
          if (rs.written) fl.fixed += size_of(rs.root);
          if (key->carriers.count(rs.root)) {
            // One key's slice, live within a key step.
            const Wide per_row = row_bits(*graph, t, rows, batch * fl.keys);
            for (int u = rs.first; u <= rs.last; ++u) fl.reserve_bits_per_row[u - a] += per_row;
          } else {
            // A running reduction over the key (or a value of one): kept across the key loop.
            fl.held_bits_per_row += row_bits(*graph, t, rows, batch);
          }
        }
        fl.drop[0].assign(len, 0);
        for (int u = a; u < b; ++u) {
          const detail::Unit& unit = units[u];
          const TilingProblem& p = *unit.problem;
          const ir::Op& op = graph->op(unit.op);
          for (std::size_t t = 0; t < unit.tensor_root.size(); ++t) {
            const RankMask rm = p.tensors[t].ranks;
            const bool has_row = rm & (RankMask{1} << rank[u - a]);
            const bool has_key = rm & (RankMask{1} << fl.key_rank[u - a]);
            if (resident_set.count(unit.tensor_root[t])) {
              fl.drop[0][u - a] |= 1u << t;
            } else if (has_row && !has_key) {
              // Held across the key loop (the query rows, the output accumulator): moved once.
              fl.drop[0][u - a] |= 1u << t;
              const ir::Tensor& vt = graph->tensor(p.tensors[t].output ? op.outputs[0]
                                                                       : op.inputs[t]);
              fl.held_bits_per_row += row_bits(*graph, vt, rows, batch);
              fl.held_bytes +=
                  p.tensors[t].output ? tensor_size[vt.id.value] : unit.operand_bytes[t];
            } else if (!has_row && !p.tensors[t].output) {
              fl.streamed_bytes += unit.operand_bytes[t];
            }
          }
        }
        auto& tiles = tiles_by_rows[rows];
        if (tiles.empty()) tiles = tile_candidates(rows, options.einsum.tiles);
        fl.tiles = &tiles;
        break;
      }
      // Sources several units read along the rows are held once per row tile (one load) or
      // re-read by each reader (less reserved): two plans, the cheaper wins at each S.
      for (bool hold : {true, false}) {
        SegmentPlan::Tiled& tl = plan->tiled.emplace_back();
        tl.ok = true;
        tl.rows = rows;
        tl.rank_name = first.ranks[r0].name;
        tl.rank = rank;
        tl.scale = fused_rank->scale;
        tl.grouped = grouped_along(rank);
        tl.batch_rank = batch_rank;
        tl.batch = batch;
        if (batch > 1) tl.rank_name += "' and '" + first.ranks[batch_rank[0]].name;
        tl.reserve_bits_per_row.assign(len, 0);
        for (const Resident& rs : residents) {
          const ir::Tensor& t = graph->tensor(ir::TensorId{rs.root});
          const Wide per_row = row_bits(*graph, t, rows, batch);
          for (int u = rs.first; u <= rs.last; ++u) tl.reserve_bits_per_row[u - a] += per_row;
          if (rs.written) tl.fixed += size_of(rs.root);
        }
        const std::set<std::uint32_t> held =
            hold ? shared_row_sources(a, b, rank, tl.scale, rows, batch, tl)
                 : std::set<std::uint32_t>{};
        if (hold && held.empty()) {
          plan->tiled.pop_back();  // the same as the plan without held sources, next
          continue;
        }
        std::set<std::uint32_t> accumulated;  // outputs reduced over the rows: on chip, once
        for (int u = a; u < b; ++u) {
          if (!fused_rank->reduces[u - a]) continue;
          const std::uint32_t r = graph->op(units[u].op).outputs[0].value;
          accumulated.insert(r);
          const Wide slices = static_cast<Wide>(batch);
          tl.accumulator_bytes += (size_of(r) + slices - 1) / slices;  // one batch slice
          if (used_outside[r] || !users[r].empty()) tl.fixed += size_of(r);
        }
        std::map<std::uint32_t, Wide> weights;
        for (int v = 0; v < 2; ++v) tl.drop[v].assign(len, 0);
        for (int u = a; u < b; ++u) {
          const detail::Unit& unit = units[u];
          const TilingProblem& p = *unit.problem;
          for (std::size_t t = 0; t < unit.tensor_root.size(); ++t) {
            const std::uint32_t r = unit.tensor_root[t];
            const bool held_input =
                !p.tensors[t].output && held.count(graph->op(unit.op).inputs[t].value);
            if (resident_set.count(r) || held_input ||
                (p.tensors[t].output && accumulated.count(r))) {
              tl.drop[0][u - a] |= 1u << t;
              tl.drop[1][u - a] |= 1u << t;
            } else if (!p.tensors[t].output &&
                       !(p.tensors[t].ranks & (RankMask{1} << rank[u - a]))) {
              tl.drop[1][u - a] |= 1u << t;
              // Per operand (read_of_root would add the unit's other operands of the root).
              const Wide fp = unit.operand_bytes[t];
              weights[unit.tensor_root[t]] += fp;
              tl.streamed_bytes += fp;
            }
          }
        }
        // Each root at most once, whole (parts read by several operands may overlap).
        for (const auto& [r, w] : weights) tl.weight_bytes += std::min(w, size_of(r));
        auto& tiles = tiles_by_rows[rows];
        if (tiles.empty()) tiles = tile_candidates(rows, options.einsum.tiles);
        tl.tiles = &tiles;
      }
    }
  }
  // Plans take about 2 KB each; a graph of 100,000 ops would hold 800,000 of them. Past the
  // cap they are rebuilt on demand instead (slower queries, bounded memory).
  if (plans.size() >= kMaxPlans) plans.clear();
  return *plans.emplace(std::make_pair(a, b), std::move(plan)).first->second;
}


}  // namespace solar::tiling
