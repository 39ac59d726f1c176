// The graph-level provable traffic bound (fusion.h, TrafficMode::Provable): the composition of
// docs/cache-aware.md "Fused graphs" that stays sound when the graph is fused.
//
// A schedule of the whole graph may fuse ops, keep intermediates on chip and recompute, so a
// per-op bound survives only when the I/O events its proof counts still happen:
// - full bound (provable.h) for an einsum whose operands are all graph sources (they come
//   from DRAM) and whose output is stored (a graph output);
// - the output-consumed-on-chip form for a GEMM-like product-sum einsum whose operands are
//   graph sources but whose output stays internal (below);
// - nothing for an einsum reading an intermediate: a fused schedule may produce that operand
//   on chip, so the segment argument's "every operand is loaded" fails.
// Bounds of different ops may count the same transfers, so they combine by max, not sum; the
// fused compulsory traffic (every source read once, every output written once) holds for any
// schedule. The result never exceeds the attainable value at the same capacity.
#include <algorithm>
#include <cmath>

#include "fmt/format.h"
#include "fusion_impl.h"
#include "solar/tiling/provable.h"
#include "solar/util/errors.h"

namespace solar::tiling {

namespace {

// The output-consumed-on-chip bound in bytes, or nullopt when it does not apply. For a
// product-sum einsum over two distinct plain operands A, B loaded from DRAM whose ranks are
// M-like (A, Out), N-like (B, Out), K-like (A, B) or batch (all three):
// cut the run into segments of S transfers. During one segment at most 2S elements of A and B
// are in fast memory (S resident at its start, S loaded). A MAC (b, i, j, k) needs A[b,i,k]
// and B[b,k,j] there, so with alpha_{bk} <= M rows of A and beta_{bk} <= N columns of B
// available per (b, k), a segment executes at most
//   sum_{b,k} alpha_{bk} * beta_{bk} <= min(|alpha| * min(N, 2S), |beta| * min(M, 2S))
//                                    <= 2S * min(M, N, 2S)
// distinct MACs, whatever happens to the output (kept on chip, consumed, recomputed). Every
// one of the G MACs with nonzero operands (nonzero_point_fraction: a MAC with a zero operand
// of a sparse tensor may be skipped) runs at least once (the graph's work is not pruned), so
// there are at least G / (2S min(M, N, 2S)) segments, all but the last moving S elements:
//   Q >= G / (2 min(M, N, 2S)) - S   words.
// Words convert as in provable.h: S in words is S_bytes / w_min, the bound in bytes is
// words * w_min (w_min the narrowest width), never above the real bytes.
std::optional<std::pair<Count, std::string>> output_on_chip_bound(const TilingProblem& p,
                                                                  Count capacity) {
  if (p.tensors.size() != 3 || p.tensors[0].name == p.tensors[1].name) return std::nullopt;
  if (!p.tensors[0].plain() || !p.tensors[1].plain()) return std::nullopt;
  double m = 1, n = 1;
  bool has_k = false;
  for (std::size_t r = 0; r < p.ranks.size(); ++r) {
    const RankMask bit = RankMask{1} << r;
    const int sig = ((p.tensors[0].ranks & bit) ? 1 : 0) | ((p.tensors[1].ranks & bit) ? 2 : 0) |
                    ((p.tensors[2].ranks & bit) ? 4 : 0);
    const double e = static_cast<double>(p.ranks[r].extent);
    if (p.ranks[r].extent == 1) continue;
    switch (sig) {
      case 5: m *= e; break;
      case 6: n *= e; break;
      case 3: has_k = true; break;
      case 7: break;  // batch
      default: return std::nullopt;
    }
  }
  if (!has_k) return std::nullopt;
  int min_bits = p.tensors[0].bits;
  for (const TensorAccess& t : p.tensors) min_bits = std::min(min_bits, t.bits);
  const double w = static_cast<double>(min_bits) / 8;
  const double s = capacity.to_double() / w;
  const double g = p.live_points().to_double() * nonzero_point_fraction(p);  // MACs that run
  const double words = g / (2 * std::min({m, n, 2 * s})) - s;
  const double bytes = words * w * (1 - 1e-9);  // rounding only loosens it
  if (!(bytes >= 1)) return std::nullopt;
  return std::make_pair(
      Count(static_cast<std::uint64_t>(std::min(bytes, 1.8e19))),
      fmt::format("G/(2 min(M,N,2S)) - S (output kept on chip) with G = {:.6g} MACs, M = {:.6g}, "
                  "N = {:.6g}, S = {:.6g} words: {:.6g} words x {} B",
                  g, m, n, s, words, w));
}

}  // namespace

GraphTraffic GraphTrafficModel::Impl::provable(Count capacity, Count att) const {
  GraphTraffic r;
  r.mode = TrafficMode::Provable;
  r.capacity_bytes = capacity;
  r.exhaustive = exhaustive;
  r.op_traffic_bytes.assign(graph->ops().size(), Count(0));
  r.traffic_bytes = cost->compulsory_bytes();
  r.detail = fmt::format("fused compulsory traffic: every source read once, every output written "
                         "once ({} B)",
                         r.traffic_bytes.str());
  std::optional<ir::OpId> winner;
  for (const ProvableOp& po : provable_ops) {
    Count bound;
    std::string how;
    if (po.full) {
      ProvableBound b = provable_bound(po.problem, is_product_sum(graph->op(po.op).einsum()),
                                       capacity);
      if (b.formula == BoundFormula::Compulsory) continue;
      bound = b.traffic_bytes;
      how = fmt::format("{} on op {} '{}': {}", bound_formula_name(b.formula), po.op.value,
                        graph->op(po.op).name, b.detail);
    } else {
      auto b = output_on_chip_bound(po.problem, capacity);
      if (!b) continue;
      bound = b->first;
      how = fmt::format("gemm (output on chip) on op {} '{}': {}", po.op.value,
                        graph->op(po.op).name, b->second);
    }
    const Count own = po.problem.compulsory_bits.ceil_div(8);
    if (bound > own) {
      FusionGroup grp;
      grp.ops = {po.op};
      grp.kind = FusionKind::None;
      grp.traffic_bytes = bound;
      grp.buffer_bytes = capacity;
      grp.detail = how;
      r.groups.push_back(std::move(grp));
    }
    if (bound > r.traffic_bytes) {
      r.traffic_bytes = bound;
      r.detail = how;
      winner = po.op;
    }
  }
  // A lower bound above an attained value would be a bug in one of the two models; the
  // attainable value is then the tighter truth, and the clamp is reported.
  if (r.traffic_bytes > att) {
    r.traffic_bytes = att;
    r.detail += "; clamped to the attainable traffic";
  }
  if (winner) r.op_traffic_bytes[winner->value] = r.traffic_bytes;
  return r;
}

}  // namespace solar::tiling
