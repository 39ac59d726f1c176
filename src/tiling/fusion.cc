// Whole-graph Q(S): the per-op ski-slopes, the no-fusion sum and the segmentation search over
// fused segments (fusion.h; segments are costed in fusion_segment.cc, the provable mode is in
// fusion_provable.cc).
#include "solar/tiling/fusion.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "fmt/format.h"
#include "fusion_impl.h"
#include "solar/cost/work.h"
#include "solar/ir/attrs.h"
#include "solar/util/errors.h"

namespace solar::tiling {

std::string_view traffic_mode_name(TrafficMode m) {
  switch (m) {
    case TrafficMode::Attainable: return "attainable";
    case TrafficMode::Provable: return "provable";
  }
  return "?";
}

std::optional<TrafficMode> parse_traffic_mode(std::string_view name) {
  if (name == "attainable") return TrafficMode::Attainable;
  if (name == "provable") return TrafficMode::Provable;
  return std::nullopt;
}

std::string_view fusion_kind_name(FusionKind k) {
  switch (k) {
    case FusionKind::None: return "none";
    case FusionKind::Untiled: return "untiled";
    case FusionKind::Tiled: return "tiled";
  }
  return "?";
}

namespace detail {

Count to_count(Wide v) {
  return Count(static_cast<std::uint64_t>(v >> 64)) * Count(std::uint64_t{1} << 32) *
             Count(std::uint64_t{1} << 32) +
         Count(static_cast<std::uint64_t>(v));
}

Wide add_sat(Wide a, Wide b) { return a > kInfinite - b ? kInfinite : a + b; }

Wide mul_sat(Wide a, Wide b) {
  if (a == 0 || b == 0) return 0;
  return a > kInfinite / b ? kInfinite : a * b;
}

std::string problem_key(const TilingProblem& p) {
  std::string k;
  for (const Rank& r : p.ranks) k += fmt::format("{},", r.extent);
  for (const TensorAccess& t : p.tensors) {
    k += fmt::format("|{}{}:", t.bits, t.output ? "o" : "");
    if (t.storage.format != StorageFormat::Dense)
      k += fmt::format("s{}/{}/{}:", static_cast<int>(t.storage.format), t.storage.zero_fraction,
                       t.group_dim);
    for (const DimAccess& d : t.dims) {
      k += fmt::format("{}@{}", d.extent, d.constant);
      for (const DimTerm& term : d.terms) k += fmt::format("+{}*{}", term.coef, term.rank);
      k += ";";
    }
  }
  for (const RankConstraint& c : p.mask) {
    k += fmt::format("|m{}", c.constant);
    for (const DimTerm& term : c.terms) k += fmt::format("+{}*{}", term.coef, term.rank);
  }
  return k;
}

std::string mib(Wide bytes) {
  return fmt::format("{:.4g} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

}  // namespace detail

using detail::kInfinite;
using detail::Wide;

void GraphTrafficModel::Impl::build(const ir::Graph& g, const cost::GraphCost& c,
                                    const GraphCurveOptions& o) {
  graph = &g;
  cost = &c;
  options = o;
  if (c.per_op.size() != g.ops().size())
    throw UserError(UserError::Kind::BadArgument,
                    "GraphTrafficModel: the cost was computed for another graph (" +
                        std::to_string(c.per_op.size()) + " ops, the graph has " +
                        std::to_string(g.ops().size()) + ")");
  if (o.max_segment_ops < 1)
    throw UserError(UserError::Kind::BadArgument,
                    "GraphTrafficModel: max_segment_ops must be >= 1");
  const std::size_t nt = g.tensors().size();
  root.resize(nt);
  view_parent.assign(nt, -1);
  for (std::size_t t = 0; t < nt; ++t) root[t] = static_cast<std::uint32_t>(t);
  users.assign(nt, {});
  used_outside.assign(nt, false);
  unit_of_op.assign(g.ops().size(), -1);
  tensor_size.reserve(nt);
  // At each tensor's storage (2:4 and bitmap formats; a free view's is its source's), as the
  // cost module sizes sources.
  for (const ir::Tensor& t : g.tensors())
    tensor_size.push_back(
        storage_bits(storage_of(g, t.id), ir::dtype_bits(t.dtype), t.num_elements())
            .ceil_div(8)
            .raw());

  // Curves are shared between ops with the same problem (the layers of a model).
  std::map<std::string, std::shared_ptr<const CurveResult>> by_problem;
  std::map<std::string, int> problem_ids;
  using detail::problem_key;

  for (const ir::Op& op : g.ops()) {
    const cost::Work& w = c.per_op[op.id.value];
    if (w.dead) continue;  // moves nothing: no unit, and its inputs need not exist for it
    if (!w.analyzed) {
      // Its inputs must exist in DRAM for it: never kept on chip only.
      for (ir::TensorId in : op.inputs) used_outside[root[in.value]] = true;
      continue;
    }
    // A free view moves nothing: its output is its input's storage under another name.
    if (ir::is_free_view(op) && op.inputs.size() == 1 && op.outputs.size() == 1) {
      root[op.outputs[0].value] = root[op.inputs[0].value];
      view_parent[op.outputs[0].value] = static_cast<int>(op.inputs[0].value);
      continue;
    }
    detail::Unit u;
    u.op = op.id;
    u.read_bytes = w.bytes_read.raw();
    u.write_bytes = w.bytes_written.raw();
    u.own_bytes = w.bytes().raw();
    if (op.kind() == ir::OpKind::Repeat) {
      u.repeat = std::make_shared<const detail::RepeatModel>(op, o);
      evaluated += u.repeat->model->mappings_evaluated();
    }
    if (op.kind() == ir::OpKind::Collective) {
      // A fusion boundary: the links read its input from DRAM and write its result there,
      // so it moves its own bytes and no neighbour keeps either on chip.
      for (ir::TensorId in : op.inputs) used_outside[root[in.value]] = true;
      units.push_back(std::move(u));
      continue;
    }
    try {
      // A masked einsum (causal attention) is tiled by its live tiles, or where the model
      // cannot count them (a window, 2:4 operands) as its full box, attainable only; either
      // way it can take part in tiled fusion (flash attention) instead of streaming through
      // DRAM. Copies, permutes, scans and arg-reductions are tiled as the einsums they read
      // and write like.
      std::optional<TilingProblem> p;
      if (op.kind() == ir::OpKind::Einsum) {
        const ir::EinsumOp& e = op.einsum();
        u.reduce = e.reduce;
        try {
          p = problem_from_einsum(g, op, MaskedEinsum::Live);
        } catch (const Unsupported&) {
          if (e.mask.empty()) throw;
          p = problem_from_einsum(g, op, MaskedEinsum::Box);
          u.attainable_only = true;
        }
        for (std::size_t k = 0; k < op.inputs.size(); ++k) {
          const ir::Tensor& t = g.tensor(op.inputs[k]);
          const Count fp = cost::operand_footprint(e, e.operands[k], t);
          u.operand_bytes.push_back(storage_bits(p->tensors[k], fp).ceil_div(8).raw());
        }
      } else if ((p = problem_from_pattern(g, op))) {
        u.attainable_only = true;
        u.pattern = true;
        u.reduce = ir::Reduce::Max;  // arg-reductions compare, kept online like a running max
        for (ir::TensorId in : op.inputs) u.operand_bytes.push_back(tensor_size[in.value]);
      }
      if (p) {
        const std::string key = problem_key(*p);
        auto it = by_problem.find(key);
        if (it == by_problem.end()) {
          auto r = std::make_shared<const CurveResult>(attainable_curve(*p, o.einsum));
          evaluated += r->evaluated;
          it = by_problem.emplace(key, std::move(r)).first;
          problem_ids.emplace(key, static_cast<int>(problem_ids.size()));
        }
        u.problem_id = problem_ids.at(key);
        if (!it->second->exhaustive) exhaustive = false;
        u.curve = it->second;
        u.has_curve = true;
        for (ir::TensorId in : op.inputs) u.tensor_root.push_back(root[in.value]);
        u.tensor_root.push_back(root[op.outputs[0].value]);
        u.problem = std::move(p);
      }
    } catch (const Unsupported&) {
      // Outside the tiling model: the op costs its own unfused bytes.
      u.attainable_only = false;
    }
    if (!u.has_curve && op.outputs.size() == 1) {
      if (op.kind() == ir::OpKind::Move && op.inputs.size() == 1) {
        u.can_reside = true;
        u.operand_bytes = {u.read_bytes};
      } else if (op.kind() == ir::OpKind::Einsum) {
        // The same footprints the op's own cost reads (docs/cost.md).
        Wide sum = 0;
        for (Wide b : u.operand_bytes) sum += b;
        u.can_reside = sum == u.read_bytes;
      }
      if (u.can_reside) {
        for (ir::TensorId in : op.inputs) u.tensor_root.push_back(root[in.value]);
        u.tensor_root.push_back(root[op.outputs[0].value]);
      }
    }
    // Opaque ops and multi-input moves count their bytes as a whole: what they read must be
    // in DRAM.
    if (!u.has_curve && !u.can_reside)
      for (ir::TensorId in : op.inputs) used_outside[root[in.value]] = true;
    units.push_back(std::move(u));
  }
  order_units(g);
  if (o.memo_segments && o.fuse) build_signatures(g);
  std::vector<bool> output_root(nt, false);
  for (const ir::Tensor& t : g.tensors())
    if (t.role == ir::Role::Output) {
      used_outside[root[t.id.value]] = true;
      output_root[root[t.id.value]] = true;
    }
  // Provable mode: einsums whose operands all come from outside the graph (fusion.h).
  for (const detail::Unit& u : units) {
    if (!u.has_curve || u.attainable_only) continue;  // (tensor_root of can_reside units: unused)
    bool sources = true;
    for (std::size_t t = 0; t + 1 < u.tensor_root.size(); ++t)
      sources = sources && ir::is_graph_source(g.tensor(ir::TensorId{u.tensor_root[t]}).role);
    if (!sources) continue;
    const bool stored = output_root[u.tensor_root.back()];
    provable_ops.push_back({u.op, *u.problem, stored});
  }
}

void GraphTrafficModel::Impl::order_units(const ir::Graph& g) {
  // Units computed from the model's parameters alone (a batch norm's rsqrt(var + eps), a
  // causal mask from ones()) come first, in graph order: between a convolution and the
  // batch norm that reads its output they would end every segment over the batch (they have
  // no batch rank), and run first they cost only their own small traffic.
  std::vector<char> from_params(g.tensors().size(), 0);
  for (const ir::Tensor& t : g.tensors())
    from_params[t.id.value] = t.role == ir::Role::Weight || t.role == ir::Role::Constant;
  std::vector<char> params_only(units.size(), 0);
  for (std::size_t i = 0; i < units.size(); ++i) {
    const ir::Op& op = g.op(units[i].op);
    params_only[i] = std::all_of(op.inputs.begin(), op.inputs.end(),
                                 [&](ir::TensorId in) { return from_params[root[in.value]]; });
    if (params_only[i])
      for (ir::TensorId out : op.outputs) from_params[out.value] = 1;
  }
  std::vector<detail::Unit> ordered;
  ordered.reserve(units.size());
  for (int first : {1, 0})
    for (std::size_t i = 0; i < units.size(); ++i)
      if (params_only[i] == first) ordered.push_back(std::move(units[i]));
  units = std::move(ordered);
  for (std::size_t i = 0; i < units.size(); ++i) {
    const int idx = static_cast<int>(i);
    unit_of_op[units[i].op.value] = idx;
    for (ir::TensorId in : g.op(units[i].op).inputs) {
      auto& us = users[root[in.value]];
      if (us.empty() || us.back() != idx) us.push_back(idx);
    }
  }
}

Wide GraphTrafficModel::Impl::alone(int u, Wide capacity) const {
  const detail::Unit& unit = units[u];
  if (unit.repeat) return std::min(unit.own_bytes, unit.repeat->traffic(capacity, nullptr));
  if (!unit.has_curve) return unit.own_bytes;
  const TrafficCurve& c = unit.curve->curve;
  if (c.points().empty()) return unit.own_bytes;
  // Below the smallest mapping the op still runs; its smallest mapping is the best known.
  std::optional<Count> q = c.traffic_at(detail::to_count(capacity));
  const Wide t = (q ? *q : c.points().front().traffic_bytes).raw();
  return unit.pattern ? std::min(t, unit.own_bytes) : t;
}

detail::SegmentValue GraphTrafficModel::Impl::alone_value(int u, Wide s) const {
  detail::SegmentValue v;
  v.traffic = alone(u, s);
  v.kind = FusionKind::None;
  const detail::Unit& unit = units[u];
  // A pattern streaming its own bytes uses no mapping of its curve.
  const bool on_curve = unit.has_curve && !(unit.pattern && v.traffic == unit.own_bytes);
  if (on_curve) {
    const auto& pts = unit.curve->curve.points();
    auto it = std::upper_bound(
        pts.begin(), pts.end(), s,
        [](Wide x, const CurvePoint& p) { return x < p.buffer_bytes.raw(); });
    if (it == pts.begin()) {
      v.buffer = pts.empty() ? 0 : pts.front().buffer_bytes.raw();
      v.detail = "alone; the capacity is below its smallest mapping (" + detail::mib(v.buffer) +
                 "): that mapping's traffic";
    } else {
      v.buffer = std::prev(it)->buffer_bytes.raw();
      v.detail = "alone: its ski-slope";
    }
  } else if (unit.repeat && v.traffic < unit.own_bytes) {
    unit.repeat->traffic(s, &v.detail);
  } else {
    v.detail = unit.has_curve ? "alone: its own unfused bytes (streamed)"
                              : "alone: its own unfused bytes (no tiling curve)";
  }
  return v;
}

namespace {

// Each op's share of its group's traffic, in proportion to its own unfused bytes (the last
// op takes the rounding remainder; equal shares when no op moves bytes on its own).
void split_shares(const GraphTrafficModel::Impl& m, const FusionGroup& grp,
                  std::vector<Count>& shares) {
  Wide total_own = 0;
  for (ir::OpId op : grp.ops) total_own += m.cost->per_op[op.value].bytes().raw();
  const Wide traffic = grp.traffic_bytes.raw();
  Wide given = 0;
  for (std::size_t i = 0; i < grp.ops.size(); ++i) {
    Wide s;
    if (i + 1 == grp.ops.size()) {
      s = traffic - given;
    } else if (total_own == 0) {
      s = traffic / grp.ops.size();
    } else {
      const Wide own = m.cost->per_op[grp.ops[i].value].bytes().raw();
      // traffic * own / total without overflow for any realistic graph (< 2^64 each).
      s = (traffic <= (~Wide{0}) / (own + 1)) ? traffic * own / total_own
                                               : traffic / total_own * own;
    }
    given += s;
    shares[grp.ops[i].value] = detail::to_count(s);
  }
}

}  // namespace

std::vector<GraphTraffic> GraphTrafficModel::Impl::attainable(
    const std::vector<Count>& capacities) const {
  // Answered from the memo where possible; the rest share one segmentation search, which
  // plans every segment once for all of them (planning dominates on long graphs).
  std::vector<GraphTraffic> out(capacities.size());
  std::vector<std::size_t> todo;
  {
    std::lock_guard<std::mutex> lock(attained_mu);
    for (std::size_t k = 0; k < capacities.size(); ++k) {
      auto it = attained.find(capacities[k].raw());
      if (it != attained.end()) out[k] = it->second;
      else todo.push_back(k);
    }
  }
  if (todo.empty()) return out;
  const int n = static_cast<int>(units.size());
  const std::size_t nc = todo.size();
  const int max_len = options.fuse ? options.max_segment_ops : 1;
  std::vector<Wide> s(nc);
  for (std::size_t k = 0; k < nc; ++k) s[k] = capacities[todo[k]].raw();
  // best[j * nc + k]: least traffic of units [0, j) at capacity k; from: where its last
  // segment starts.
  std::vector<Wide> best((n + 1) * nc, kInfinite);
  std::vector<int> from((n + 1) * nc, -1);
  for (std::size_t k = 0; k < nc; ++k) best[k] = 0;
  // Segments priced once per structure (fusion_memo.cc): per segment key, each capacity's
  // traffic and the budget it was priced under (0: not priced; a budget the search asks is
  // at least 1). A traffic below its budget is exact; one at or above it says only that the
  // segment cannot beat that budget, which answers any smaller budget the same way (the
  // search keeps a segment only when it beats its budget).
  struct Priced {
    std::vector<Wide> traffic, budget;
  };
  std::unordered_map<std::vector<std::uint64_t>, Priced, detail::KeyHash> priced;
  const bool memo = options.fuse && options.memo_segments;
  constexpr std::size_t kMaxPriced = std::size_t{1} << 18;
  std::unique_lock<std::mutex> lock(mu);
  for (int j = 1; j <= n; ++j) {
    Wide* bj = &best[j * nc];
    // Shortest segment first: the op alone sets a budget the longer ones must beat.
    for (int i = j - 1; i >= std::max(0, j - max_len); --i) {
      const Wide* bi = &best[i * nc];
      const detail::SegmentPlan* pl = nullptr;  // planned when a capacity needs it
      Priced* same = nullptr;                   // its structure's prices, when first needed
      bool keyed = false;
      for (std::size_t k = 0; k < nc; ++k) {
        if (bi[k] == kInfinite) continue;
        // A single op may still gain from keeping a source it reads twice, or a dead output,
        // on chip (a "fused" segment of one).
        Wide seg = (j - i == 1) ? alone(i, s[k]) : kInfinite;
        if (options.fuse && (bj[k] == kInfinite || bj[k] > bi[k])) {
          const Wide budget = bj[k] == kInfinite ? kInfinite : bj[k] - bi[k];
          if (memo && !keyed) {
            keyed = true;
            std::vector<std::uint64_t> key = segment_key(i, j);
            auto it = priced.find(key);
            // Bounded memory on graphs without repeats (each key is a few hundred bytes):
            // past the cap, a new structure is priced without being kept.
            if (it == priced.end() && priced.size() < kMaxPriced) {
              it = priced.emplace(std::move(key), Priced{}).first;
              it->second.traffic.assign(nc, kInfinite);
              it->second.budget.assign(nc, 0);
            }
            if (it != priced.end()) same = &it->second;
          }
          Wide f;
          if (same && same->budget[k] != 0 &&
              (same->traffic[k] < same->budget[k] || budget <= same->budget[k])) {
            f = same->traffic[k];
          } else {
            if (!pl) pl = &plan(i, j);
            f = fused(*pl, i, j, s[k], false, std::nullopt, budget).traffic;
            if (same) {
              same->traffic[k] = f;
              same->budget[k] = budget;
            }
          }
          seg = std::min(seg, f);
        }
        const Wide v = detail::add_sat(bi[k], seg);
        if (v < bj[k]) {
          bj[k] = v;
          from[j * nc + k] = i;
        }
      }
    }
  }
  lock.unlock();

  // The groups: each chosen segment's strategy, planned once for all the capacities that
  // chose it (describing costs a plan per segment).
  std::vector<std::vector<std::pair<int, int>>> segs(nc);
  std::map<std::pair<int, int>, std::vector<std::pair<std::size_t, std::size_t>>> chosen;
  for (std::size_t k = 0; k < nc; ++k) {
    SOLAR_CHECK(best[n * nc + k] != kInfinite, "the no-fusion partition is always feasible");
    for (int j = n; j > 0; j = from[j * nc + k]) segs[k].emplace_back(from[j * nc + k], j);
    std::reverse(segs[k].begin(), segs[k].end());
    for (std::size_t i = 0; i < segs[k].size(); ++i) chosen[segs[k][i]].emplace_back(k, i);
  }
  std::vector<std::vector<detail::SegmentValue>> values(nc);
  for (std::size_t k = 0; k < nc; ++k) values[k].resize(segs[k].size());
  std::vector<detail::SegmentValue> whole(nc);
  lock.lock();
  for (const auto& [seg, uses] : chosen) {
    const auto [a, b] = seg;
    const detail::SegmentPlan* pl = options.fuse ? &plan(a, b) : nullptr;
    for (const auto& [k, i] : uses) {
      detail::SegmentValue& v = values[k][i];
      if (b - a == 1) {
        v = alone_value(a, s[k]);
        if (!pl || v.traffic <= fused(*pl, a, b, s[k], false).traffic) continue;
      }
      v = fused(*pl, a, b, s[k], true);
    }
  }
  // The whole graph as one untiled segment: the only strategy that reaches the fused
  // compulsory traffic when the segment length limit splits the graph.
  if (options.fuse && n > max_len) {
    const detail::SegmentPlan& pl = plan(0, n);
    for (std::size_t k = 0; k < nc; ++k) whole[k] = fused(pl, 0, n, s[k], true);
  }
  lock.unlock();

  for (std::size_t k = 0; k < nc; ++k) {
    GraphTraffic& r = out[todo[k]];
    r = describe(capacities[todo[k]], best[n * nc + k], whole[k], segs[k], values[k]);
    std::lock_guard<std::mutex> memo_lock(attained_mu);
    // Each result holds a per-op vector: fewer are kept for long graphs, but always this
    // batch (a provable batch after an attainable one reuses it).
    const std::size_t keep = std::max<std::size_t>(
        {4, nc, kAttainedOps / (graph->ops().size() + 1)});
    while (!attained.empty() && attained.size() >= keep) attained.erase(attained.begin());
    attained.emplace(s[k], r);
  }
  return out;
}

GraphTraffic GraphTrafficModel::Impl::describe(
    Count capacity, Wide best, const detail::SegmentValue& whole,
    const std::vector<std::pair<int, int>>& segs,
    const std::vector<detail::SegmentValue>& values) const {
  const Wide s = capacity.raw();
  GraphTraffic r;
  r.mode = TrafficMode::Attainable;
  r.capacity_bytes = capacity;
  r.exhaustive = exhaustive;
  r.op_traffic_bytes.assign(graph->ops().size(), Count(0));
  auto add_group = [&](int a, int b, const detail::SegmentValue& v) {
    FusionGroup grp;
    for (int u = a; u < b; ++u) grp.ops.push_back(units[u].op);
    grp.kind = v.kind;
    grp.traffic_bytes = detail::to_count(v.traffic);
    grp.buffer_bytes = detail::to_count(std::min(v.buffer, s));
    grp.detail = v.detail;
    split_shares(*this, grp, r.op_traffic_bytes);
    r.groups.push_back(std::move(grp));
  };
  if (whole.traffic < best) {
    r.traffic_bytes = detail::to_count(whole.traffic);
    add_group(0, static_cast<int>(units.size()), whole);
    r.detail = "the whole graph fused into one segment";
  } else {
    r.traffic_bytes = detail::to_count(best);
    int fused_groups = 0;
    for (std::size_t i = 0; i < segs.size(); ++i) {
      add_group(segs[i].first, segs[i].second, values[i]);
      fused_groups += values[i].kind != FusionKind::None;
    }
    r.detail = options.fuse ? fmt::format("segmentation: {} groups, {} fused", segs.size(),
                                          fused_groups)
                            : "no fusion: the sum of each op's traffic";
  }
  // Every strategy reads each source and writes each output at least once; the clamp only
  // guards the footprint conventions (compulsory reads the largest footprint of a source).
  if (r.traffic_bytes < cost->compulsory_bytes()) {
    r.traffic_bytes = cost->compulsory_bytes();
    r.detail += "; raised to the compulsory traffic";
  }
  return r;
}

GraphTrafficModel::GraphTrafficModel(const ir::Graph& g, const cost::GraphCost& cost,
                                     const GraphCurveOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->build(g, cost, options);
}

GraphTrafficModel::~GraphTrafficModel() = default;
GraphTrafficModel::GraphTrafficModel(GraphTrafficModel&&) noexcept = default;
GraphTrafficModel& GraphTrafficModel::operator=(GraphTrafficModel&&) noexcept = default;

GraphTraffic GraphTrafficModel::at(Count capacity_bytes, TrafficMode mode) const {
  return std::move(at(std::vector<Count>{capacity_bytes}, mode).front());
}

std::vector<GraphTraffic> GraphTrafficModel::at(const std::vector<Count>& capacities,
                                                TrafficMode mode) const {
  for (Count c : capacities)
    if (c == Count(0))
      throw UserError(UserError::Kind::BadArgument,
                      "GraphTrafficModel::at: the capacity must be > 0 bytes");
  switch (mode) {
    case TrafficMode::Attainable: return impl_->attainable(capacities);
    case TrafficMode::Provable: {
      // The provable value is clamped to the attainable one: one search for all capacities.
      const std::vector<GraphTraffic> att = impl_->attainable(capacities);
      std::vector<GraphTraffic> out;
      for (std::size_t k = 0; k < capacities.size(); ++k)
        out.push_back(impl_->provable(capacities[k], att[k].traffic_bytes));
      return out;
    }
  }
  SOLAR_UNREACHABLE("unknown traffic mode");
}

std::optional<FusionGroup> GraphTrafficModel::group_at(ir::OpId first, ir::OpId last,
                                                       FusionKind kind,
                                                       Count capacity_bytes) const {
  const Impl& m = *impl_;
  if (capacity_bytes == Count(0))
    throw UserError(UserError::Kind::BadArgument,
                    "GraphTrafficModel::group_at: the capacity must be > 0 bytes");
  if (!(first <= last) || last.value >= m.unit_of_op.size())
    throw UserError(UserError::Kind::BadArgument,
                    "GraphTrafficModel::group_at: need first <= last < number of ops");
  int a = -1, b = -1;
  for (std::uint32_t o = first.value; o <= last.value; ++o)
    if (m.unit_of_op[o] >= 0) {
      if (a < 0) a = m.unit_of_op[o];
      b = m.unit_of_op[o] + 1;
    }
  if (a < 0) return std::nullopt;
  const Wide s = capacity_bytes.raw();
  detail::SegmentValue v;
  switch (kind) {
    case FusionKind::None:
      if (b - a != 1) return std::nullopt;
      v = m.alone_value(a, s);
      break;
    case FusionKind::Untiled:
    case FusionKind::Tiled:
      v = m.fused(a, b, s, true, kind);
      break;
  }
  if (v.traffic == kInfinite) return std::nullopt;
  FusionGroup grp;
  for (int u = a; u < b; ++u) grp.ops.push_back(m.units[u].op);
  grp.kind = v.kind;
  grp.traffic_bytes = detail::to_count(v.traffic);
  grp.buffer_bytes = detail::to_count(std::min(v.buffer, s));
  grp.detail = v.detail;
  return grp;
}

const TrafficCurve* GraphTrafficModel::op_curve(ir::OpId op) const {
  if (op.value >= impl_->unit_of_op.size()) return nullptr;
  const int u = impl_->unit_of_op[op.value];
  if (u < 0 || !impl_->units[u].has_curve) return nullptr;
  return &impl_->units[u].curve->curve;
}

std::uint64_t GraphTrafficModel::mappings_evaluated() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->evaluated + impl_->sub_evaluated;
}

}  // namespace solar::tiling
