#include "solar/tiling/curve.h"

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "hull.h"
#include "solar/cost/affine_values.h"
#include "live.h"
#include "solar/util/errors.h"
#include "storage.h"

namespace solar::tiling {

// ---- TrafficCurve -------------------------------------------------------------------------

TrafficCurve::TrafficCurve(std::vector<CurvePoint> pareto) : points_(std::move(pareto)) {
  for (std::size_t i = 1; i < points_.size(); ++i) {
    SOLAR_CHECK(points_[i - 1].buffer_bytes < points_[i].buffer_bytes,
                "curve buffers must increase strictly");
    SOLAR_CHECK(points_[i - 1].traffic_bytes > points_[i].traffic_bytes,
                "curve traffic must decrease strictly");
  }
}

std::optional<Count> TrafficCurve::traffic_at(Count capacity_bytes) const {
  auto it = std::upper_bound(
      points_.begin(), points_.end(), capacity_bytes,
      [](Count s, const CurvePoint& p) { return s < p.buffer_bytes; });
  if (it == points_.begin()) return std::nullopt;
  return std::prev(it)->traffic_bytes;
}

const CurvePoint& TrafficCurve::floor() const {
  SOLAR_CHECK(!points_.empty(), "empty traffic curve");
  return points_.back();
}

// ---- search -------------------------------------------------------------------------------

namespace {

using Wide = unsigned __int128;

// Keeps the non-dominated (buffer, traffic) pairs seen so far. New points are first tested
// against the envelope of the last compaction (one binary search), so the pending list stays
// short even when millions of mappings are evaluated.
template <class W>
class ParetoCollector {
 public:
  void insert(W buffer, W traffic) {
    auto it = std::upper_bound(env_.begin(), env_.end(), buffer,
                               [](W b, const std::pair<W, W>& e) { return b < e.first; });
    if (it != env_.begin() && std::prev(it)->second <= traffic) return;
    pending_.emplace_back(buffer, traffic);
    if (pending_.size() >= 4096) compact();
  }
  const std::vector<std::pair<W, W>>& envelope() {
    compact();
    return env_;
  }
  // The smallest buffer of a kept point whose traffic is <= `traffic` (none: max W).
  W buffer_reaching(W traffic) const {
    auto it = std::lower_bound(env_.begin(), env_.end(), traffic,
                               [](const std::pair<W, W>& e, W q) { return e.second > q; });
    return it == env_.end() ? ~W{0} : it->first;
  }
  std::uint64_t generation() const { return generation_; }

 private:
  void compact() {
    if (pending_.empty()) return;
    pending_.insert(pending_.end(), env_.begin(), env_.end());
    std::sort(pending_.begin(), pending_.end());
    env_.clear();
    for (const auto& p : pending_)
      if (env_.empty() || p.second < env_.back().second) {
        if (!env_.empty() && env_.back().first == p.first) env_.pop_back();
        env_.push_back(p);
      }
    pending_.clear();
    ++generation_;
  }
  std::uint64_t generation_ = 0;
  std::vector<std::pair<W, W>> env_;
  std::vector<std::pair<W, W>> pending_;
};

struct Candidate {
  std::int64_t tile;
  std::int64_t trips;  // >= 2
};

// Tile candidates with more than one tile. Ceil mode: for every distinct trip count the
// smallest tile (t = ceil(N/T)); each trip count T keeps only its smallest tile, so the list
// is O(2 sqrt N) long. Along a 2:4 group rank (`grouped`) tiles of one trip count differ in
// how many of their boundaries split a group, which depends on t's residue modulo 4
// (boundaries split groups unless t is a multiple of 4; every other one for t = 2 mod 4), so
// each trip count also keeps its smallest even tile and its smallest multiple of 4.
// Divisor mode: the proper divisors.
std::vector<Candidate> candidates(std::int64_t n, TileMode mode, bool grouped) {
  std::vector<Candidate> c;
  switch (mode) {
    case TileMode::Ceil: {
      std::int64_t T = 2;
      while (T <= n) {
        const std::int64_t t = detail::ceil_div(n, T);
        const std::int64_t trips = detail::ceil_div(n, t);  // <= T: the fewest trips for t
        if (!c.empty() && c.back().trips == trips) c.pop_back();  // keep the smaller tile
        if (grouped && trips >= 2) {
          // The largest tile with the same trip count: ceil(n / t') == trips.
          const std::int64_t t_max = (n - 1) / (trips - 1);
          for (std::int64_t align : {detail::kGroup, std::int64_t{2}}) {
            const std::int64_t ta = detail::ceil_div(t, align) * align;
            if (ta != t && ta <= t_max && ta < n) c.push_back({ta, trips});
          }
        }
        c.push_back({t, trips});
        if (t == 1) break;
        T = detail::ceil_div(n, t - 1);  // the first T with a smaller tile
        if (detail::ceil_div(n, T) >= t) ++T;
      }
      break;
    }
    case TileMode::Divisor:
      for (std::int64_t d = 1; d * d <= n; ++d)
        if (n % d == 0) {
          if (d < n) c.push_back({d, n / d});
          if (d != n / d && n / d < n) c.push_back({n / d, d});
        }
      break;
  }
  std::sort(c.begin(), c.end(),
            [](const Candidate& a, const Candidate& b) { return a.tile < b.tile; });
  c.erase(std::unique(c.begin(), c.end(),
                      [](const Candidate& a, const Candidate& b) { return a.tile == b.tile; }),
          c.end());
  return c;
}

// Every other candidate, keeping the first and the last.
void thin(std::vector<Candidate>& c) {
  if (c.size() <= 2) return;
  std::vector<Candidate> out;
  for (std::size_t i = 0; i < c.size(); i += 2) out.push_back(c[i]);
  if (out.back().tile != c.back().tile) out.push_back(c.back());
  c = std::move(out);
}

// The hulls of one window dimension by the tiles of its ranks (a convolution's output and
// kernel positions), and the last one asked for: the odometer asks for it again until one of
// those tiles changes. A dimension of more terms is not cached.
struct HullCache {
  static constexpr std::size_t kMaxTerms = 4;
  using Key = std::array<std::int64_t, kMaxTerms>;
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      std::uint64_t h = 0;
      for (std::int64_t v : k) h = (h ^ static_cast<std::uint64_t>(v)) * 0x9e3779b97f4a7c15ull;
      return static_cast<std::size_t>(h ^ (h >> 29));
    }
  };
  struct KeyEq {  // inline: std::array's == calls memcmp, a tenth of the search's time
    bool operator()(const Key& a, const Key& b) const {
      return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3];
    }
  };
  std::unordered_map<Key, detail::HullStats, KeyHash, KeyEq> seen;
  const std::pair<const Key, detail::HullStats>* last = nullptr;  // node pointers are stable
};

template <class W>
struct Searcher {
  Searcher(const TilingProblem& problem, const CurveOptions& options) : q(problem), opt(options) {}
  const TilingProblem& q;
  const CurveOptions& opt;
  int n = 0;
  std::size_t nt = 0;
  RankMask affine = 0;
  RankMask grouped = 0;  // ranks of 2:4 group dimensions
  // Ranks read only through plain dimensions (no window, no 2:4 group): a larger tile of one
  // never shrinks a tensor's tile. A window's largest in-range hull can shrink (a larger tile
  // meets the padding at both ends), and so can a group dimension's largest cover.
  RankMask monotone = 0;
  std::vector<std::vector<Candidate>> cand;
  std::vector<std::int64_t> extent;
  W points = 1;
  W batch = 1;  // traffic of the reduced problem counts batch times (reduce_problem)
  std::vector<detail::StorageRule> rule;  // per tensor
  // Per dense tensor: bits per element, and per element of the reduced problem's traffic
  // (bits x batch); 0 for sparse tensors (their rule is not linear).
  std::vector<W> dense_bits, dense_traffic_bits;
  std::vector<W> bypass_access_bits;  // per tensor, when bypassed
  std::vector<bool> can_bypass;
  std::vector<W> compulsory_bits;  // per tensor: its whole-access traffic, 0 when affine
  std::vector<std::uint32_t> bypass_masks;  // non-empty sets of bypassable tensors
  std::vector<W> min_traffic, threshold;  // per bypass mask
  // The least traffic any mapping moves (without bypass; 0: not known), and the envelope's
  // smallest buffer reaching it: a mapping needing as much buffer is dominated.
  W floor = 0;
  W floor_buffer = ~W{0};
  std::uint64_t threshold_generation = ~std::uint64_t{0};
  // Window hulls by the tiles of their dimension's ranks, one cache per (tensor, dim),
  // flattened through dim_base.
  std::vector<HullCache> hull_cache;
  std::vector<std::size_t> dim_base;
  ParetoCollector<W> pareto;
  std::uint64_t evaluated = 0;
  // A masked problem: its live tiles (nullopt without a mask).
  std::optional<detail::LiveTiles> live;

  // Working state for one order.
  std::vector<std::int64_t> tile, T;
  std::vector<RankMask> mult_mask;  // per tensor
  RankMask active = 0;              // ranks with more than one tile
  // Ranks whose tile changed since the last evaluation, and whether every tensor is to be
  // repriced (a new order: a rankless tensor's bits included).
  RankMask changed = 0;
  bool refresh = true;
  std::vector<W> kept_buf, kept_acc;  // per tensor: its bits at the current tiles

  void set_tile(int r, const Candidate& c) {
    if (tile[r] != c.tile) changed |= RankMask{1} << r;
    tile[r] = c.tile;
    T[r] = c.trips;
  }

  detail::HullStats hull(std::size_t t, std::size_t d) {
    const DimAccess& dim = q.tensors[t].dims[d];
    const std::int64_t group = static_cast<int>(d) == q.tensors[t].group_dim ? detail::kGroup : 1;
    if (dim.plain() || dim.terms.size() > HullCache::kMaxTerms)
      return detail::hull_stats(dim, tile, extent, group);
    HullCache::Key key{};
    for (std::size_t i = 0; i < dim.terms.size(); ++i) key[i] = tile[dim.terms[i].rank];
    HullCache& cache = hull_cache[dim_base[t] + d];
    if (cache.last && HullCache::KeyEq{}(cache.last->first, key)) return cache.last->second;
    auto it = cache.seen.find(key);
    if (it == cache.seen.end())
      it = cache.seen.emplace(key, detail::hull_stats(dim, tile, extent, group)).first;
    cache.last = &*it;
    return it->second;
  }

  // Tensor t's buffer and traffic bits at the current tiles.
  void price(std::size_t t) {
    const TensorAccess& x = q.tensors[t];
    W tile_el = 1, touched = 1;
    for (std::size_t d = 0; d < x.dims.size(); ++d) {
      const DimAccess& dim = x.dims[d];
      if (dim.plain() && static_cast<int>(d) != x.group_dim) {
        const int r = dim.terms[0].rank;
        tile_el *= static_cast<W>(std::min(tile[r], dim.extent));
        touched *= static_cast<W>(std::min(extent[r], dim.extent));
      } else {
        detail::HullStats s = hull(t, d);
        tile_el *= static_cast<W>(s.max);
        touched *= static_cast<W>(s.sum);
      }
    }
    W acc;
    if (live) {
      // The loops that reload x: those outside its innermost one, and its own tiled ranks.
      acc = static_cast<W>(detail::masked_access(*live, q, t, tile, T,
                                                 mult_mask[t] | (x.ranks & active), active));
    } else {
      W mult = 1;
      for (RankMask m = mult_mask[t]; m; m &= m - 1) mult *= static_cast<W>(T[__builtin_ctz(m)]);
      acc = x.output ? 2 * touched * mult - touched : touched * mult;
    }
    if (dense_bits[t] != 0) {  // the common case: a multiply each
      kept_buf[t] = tile_el * dense_bits[t];
      kept_acc[t] = acc * dense_traffic_bits[t];
    } else {
      kept_buf[t] = static_cast<W>(rule[t].bits(tile_el));
      kept_acc[t] = static_cast<W>(rule[t].bits(acc * batch));
    }
  }

  // Evaluates the mapping at the current tiles and its bypass variants; returns whether all
  // of them needed at least the buffer at which the envelope reaches their least possible
  // traffic (then so does every mapping with larger tiles of monotone ranks: enumerate).
  bool evaluate() {
    // A tensor's bits depend on the tiles of its own ranks and the trip counts of the loops
    // that reload it (a masked problem's live tiles: on every tile), so one changed rank
    // reprices only the tensors it touches.
    for (std::size_t t = 0; t < nt; ++t)
      if (refresh || live || ((q.tensors[t].ranks | mult_mask[t]) & changed)) price(t);
    changed = 0;
    refresh = false;
    W buf0 = 0, acc0 = 0;
    for (std::size_t t = 0; t < nt; ++t) {
      buf0 += kept_buf[t];
      acc0 += kept_acc[t];
    }
    ++evaluated;
    pareto.insert(buf0, acc0);
    // A bypass variant moves at least min_traffic[B]; once the envelope reaches that traffic
    // at buffer threshold[B], variants needing as much buffer are dominated and skipped
    // (thresholds only fall as the envelope improves, so skipping stays exact).
    if (threshold_generation != pareto.generation()) {
      if (floor != 0) floor_buffer = pareto.buffer_reaching(floor);
      for (std::size_t i = 0; i < bypass_masks.size(); ++i)
        threshold[i] = pareto.buffer_reaching(min_traffic[i]);
      threshold_generation = pareto.generation();
    }
    bool dominated = buf0 >= floor_buffer;
    for (std::size_t i = 0; i < bypass_masks.size(); ++i) {
      const std::uint32_t b = bypass_masks[i];
      W buf = 0, acc = 0;
      for (std::size_t t = 0; t < nt; ++t)
        if (!(b & (1u << t))) buf += kept_buf[t];
      if (buf >= threshold[i]) continue;
      dominated = false;
      for (std::size_t t = 0; t < nt; ++t)
        acc += (b & (1u << t)) ? bypass_access_bits[t] : kept_acc[t];
      ++evaluated;
      pareto.insert(buf, acc);
    }
    return dominated;
  }

  // The candidates of rank r of at most one 2:4 group (tiles 1 to 4).
  std::vector<Candidate> small_candidates(int r) const {
    std::vector<Candidate> c;
    for (const Candidate& x : cand[r])
      if (x.tile <= detail::kGroup) c.push_back(x);
    return c;
  }

  // Enumerates tiles of `free_ranks` (odometer; each rank's tiles in increasing order) with
  // the other ranks fixed in `tile`/`T`; rank `small` (-1: none) takes only tiles of at most
  // one group. The monotone ranks go fastest: when a mapping is dominated by its buffer
  // alone (evaluate), so is every later tile of the monotone ranks it is the first of (their
  // larger tiles only grow buffers), and those are skipped.
  void enumerate(std::vector<int> free_ranks, int small) {
    std::stable_partition(free_ranks.begin(), free_ranks.end(),
                          [&](int r) { return (monotone >> r) & 1; });
    std::size_t skippable = 0;
    while (skippable < free_ranks.size() && ((monotone >> free_ranks[skippable]) & 1))
      ++skippable;
    const std::vector<Candidate> own = small >= 0 ? small_candidates(small)
                                                  : std::vector<Candidate>{};
    std::vector<const std::vector<Candidate>*> list(free_ranks.size());
    for (std::size_t i = 0; i < free_ranks.size(); ++i) {
      if (free_ranks[i] == small) {
        if (own.empty()) return;
        list[i] = &own;
      } else {
        list[i] = &cand[free_ranks[i]];
      }
    }
    std::vector<std::size_t> idx(free_ranks.size(), 0);
    for (std::size_t i = 0; i < free_ranks.size(); ++i) set_tile(free_ranks[i], (*list[i])[0]);
    while (true) {
      std::size_t i = 0;
      if (evaluate() && skippable > 0) {
        // Ranks 0..j-1 are at their first tile: every later tile of ranks 0..j is dominated.
        std::size_t j = 0;
        while (j + 1 < skippable && idx[j] == 0) ++j;
        for (std::size_t k = 0; k <= j; ++k) {
          idx[k] = 0;
          set_tile(free_ranks[k], (*list[k])[0]);
        }
        i = j + 1;
      }
      for (; i < free_ranks.size(); ++i) {
        const std::vector<Candidate>& c = *list[i];
        if (++idx[i] < c.size()) {
          set_tile(free_ranks[i], c[idx[i]]);
          break;
        }
        idx[i] = 0;
        set_tile(free_ranks[i], c[0]);
      }
      if (i >= free_ranks.size()) return;
    }
  }

  // One distinct loop order of an active set: which loops multiply each tensor, the rank
  // pinned to tile 1 (-1: none), the ranks whose tiles are enumerated, and among them the
  // innermost when it is a 2:4 group rank (`small`, -1: none). The innermost loop's trip
  // count multiplies no tensor, so a larger tile of it only costs buffer; along a group rank
  // a tile of 4 loads each group once, so of its tiles only 1 to 4 can be on the envelope.
  struct Plan {
    std::vector<int> active;
    std::vector<RankMask> mult;
    int pinned = -1;
    std::vector<int> free_ranks;
    int small = -1;
  };

  static constexpr std::size_t kMaxOrderedLoops = 8;
  mutable bool truncated = false;  // plan() left some ranks untiled

  // The plans of this problem's loop orders. They depend only on the ranks each tensor reads,
  // the affine and 2:4 group ranks and the ranks tiled, which every convolution of a network
  // shares: they are made once per process for each such structure.
  std::shared_ptr<const std::vector<Plan>> plan() const {
    std::vector<int> activatable;
    for (int r = 0; r < n; ++r)
      if (extent[r] > 1 && !cand[r].empty()) activatable.push_back(r);
    if (activatable.size() > kMaxOrderedLoops) {
      // Too many loops to order (8! orders per subset already): the longest ranks are tiled,
      // the others kept whole (one trip). Every mapping is still real, so the curve stays
      // attainable, only less tight (a 3-D transposed convolution's kernel taps).
      std::stable_sort(activatable.begin(), activatable.end(),
                       [&](int x, int y) { return extent[x] > extent[y]; });
      activatable.resize(kMaxOrderedLoops);
      std::sort(activatable.begin(), activatable.end());
      truncated = true;
    }
    // The tensor count first: without it a problem of more tensors could share the key of
    // one of fewer tensors whose activatable ranks continue where the other's masks stop.
    std::vector<std::uint32_t> key{affine, grouped, static_cast<std::uint32_t>(q.tensors.size())};
    for (const TensorAccess& x : q.tensors) key.push_back(x.ranks);
    key.insert(key.end(), activatable.begin(), activatable.end());
    static std::mutex mutex;
    static std::map<std::vector<std::uint32_t>, std::shared_ptr<const std::vector<Plan>>> made;
    const std::lock_guard lock(mutex);
    auto& plans = made[key];
    if (!plans) plans = std::make_shared<const std::vector<Plan>>(orders(activatable));
    return plans;
  }

  std::vector<Plan> orders(const std::vector<int>& activatable) const {
    const std::size_t k = activatable.size();
    std::vector<Plan> plans;
    for (std::uint32_t subset = 0; subset < (1u << k); ++subset) {
      std::vector<int> active;
      for (std::size_t i = 0; i < k; ++i)
        if (subset & (1u << i)) active.push_back(activatable[i]);
      if (active.empty()) {
        plans.push_back({active, std::vector<RankMask>(nt, 0), -1, {}, -1});
        continue;
      }
      std::set<std::vector<RankMask>> seen;
      std::vector<int> perm = active;  // sorted: next_permutation visits all orders
      do {
        // Which loops multiply each tensor, and the innermost rank when it is plain (it
        // then gets tile 1: its trip count multiplies nothing).
        std::vector<RankMask> key(nt + 2, 0);
        for (std::size_t t = 0; t < nt; ++t) {
          const RankMask rel = q.tensors[t].ranks;
          int inner = -1;
          for (int j = 0; j < static_cast<int>(perm.size()); ++j)
            if (rel & (RankMask{1} << perm[j])) inner = j;
          for (int j = 0; j < inner; ++j)
            if (!(rel & (RankMask{1} << perm[j]))) key[t] |= RankMask{1} << perm[j];
        }
        const int innermost = perm.back();
        const RankMask bit = RankMask{1} << innermost;
        const bool pin = !(affine & bit) && !(grouped & bit);
        const bool small = !(affine & bit) && (grouped & bit);
        key[nt] = pin ? bit : 0;
        key[nt + 1] = small ? bit : 0;
        if (!seen.insert(key).second) continue;
        Plan pl{active, std::vector<RankMask>(key.begin(), key.begin() + nt),
                pin ? innermost : -1, {}, small ? innermost : -1};
        for (int r : perm)
          if (r != pl.pinned) pl.free_ranks.push_back(r);
        plans.push_back(std::move(pl));
      } while (std::next_permutation(perm.begin(), perm.end()));
    }
    return plans;
  }

  // Mappings the plans evaluate without bypass variants.
  double planned(const std::vector<Plan>& plans) const {
    double total = 0;
    for (const Plan& pl : plans) {
      double grid = 1;
      for (int r : pl.free_ranks)
        grid *= static_cast<double>(r == pl.small ? small_candidates(r).size() : cand[r].size());
      total += grid;
    }
    return total;
  }

  void run(const std::vector<Plan>& plans) {
    tile = extent;
    T.assign(n, 1);
    mult_mask.assign(nt, 0);
    kept_buf.assign(nt, 0);
    kept_acc.assign(nt, 0);
    for (const Plan& pl : plans) {
      refresh = true;  // every tile reset
      for (int r = 0; r < n; ++r) {
        tile[r] = extent[r];
        T[r] = 1;
      }
      mult_mask = pl.mult;
      active = 0;
      for (int r : pl.active) active |= RankMask{1} << r;
      if (pl.pinned >= 0) {
        tile[pl.pinned] = 1;
        T[pl.pinned] = extent[pl.pinned];
      }
      enumerate(pl.free_ranks, pl.small);
    }
  }
};

// How many positions of `d` (within 0..extent-1) its terms reach: a lower bound on the
// in-range length its tiles' hulls add up to, whatever the tiles.
std::int64_t distinct_positions(const DimAccess& d, const std::vector<std::int64_t>& extent) {
  std::vector<cost::ValueTerm> terms;
  for (const DimTerm& term : d.terms) terms.push_back({term.coef, extent[term.rank]});
  return cost::distinct_values_in_range(terms, d.constant, d.extent);
}

// Whether every number the search forms fits in 64 bits (it then runs on uint64_t, about a
// fifth faster than on 128 bits): a tensor's tile is at most its accessed box, and its
// traffic at most twice its touched elements (each dimension: at most one hull of the
// dimension's extent per tile of its ranks) times the trips of the loops that reload it
// (the ranks it does not read), as bits of the reduced problem times its batch; a bypassed
// tensor moves at most twice the points. Masked and sparse problems take 128 bits.
bool fits_in_64_bits(const TilingProblem& q, Wide batch) {
  if (!q.mask.empty()) return false;
  auto mul = [](Wide a, Wide b) {  // saturating: ~0 fails the test below
    Wide r;
    return __builtin_mul_overflow(a, b, &r) ? ~Wide{0} : r;
  };
  auto add = [](Wide a, Wide b) {
    Wide r;
    return __builtin_add_overflow(a, b, &r) ? ~Wide{0} : r;
  };
  Wide points = 1;
  for (const Rank& r : q.ranks) points = mul(points, static_cast<Wide>(r.extent));
  Wide bound = 0;
  for (const TensorAccess& x : q.tensors) {
    if (!detail::StorageRule(x).dense()) return false;
    Wide box = 1;
    for (const DimAccess& d : x.dims) {
      box = mul(box, static_cast<Wide>(d.extent));
      for (const DimTerm& term : d.terms)
        box = mul(box, static_cast<Wide>(q.ranks[term.rank].extent));
    }
    Wide reloads = 1;
    for (std::size_t r = 0; r < q.ranks.size(); ++r)
      if (!(x.ranks & (RankMask{1} << r)))
        reloads = mul(reloads, static_cast<Wide>(q.ranks[r].extent));
    const Wide elements = add(add(mul(mul(2, box), reloads), mul(2, points)), box);
    bound = add(bound, mul(elements, mul(static_cast<Wide>(x.bits), batch)));
  }
  return bound < (Wide{1} << 63);
}

template <class W>
CurveResult search(const TilingProblem& p, const ReducedProblem& red,
                   const CurveOptions& options) {
  const TilingProblem& q = red.problem;
  Searcher<W> s(q, options);
  s.n = static_cast<int>(q.ranks.size());
  s.nt = q.tensors.size();
  s.affine = affine_ranks(q);
  s.grouped = detail::grouped_ranks(q);
  if (options.skip_dominated) {
    RankMask windowed = 0;
    for (const TensorAccess& x : q.tensors)
      for (std::size_t d = 0; d < x.dims.size(); ++d)
        if (!x.dims[d].plain() || static_cast<int>(d) == x.group_dim)
          for (const DimTerm& term : x.dims[d].terms) windowed |= RankMask{1} << term.rank;
    for (int r = 0; r < s.n; ++r)
      if (!(windowed & (RankMask{1} << r))) s.monotone |= RankMask{1} << r;
  }
  s.batch = static_cast<W>(red.batch.raw());
  if (!q.mask.empty()) s.live.emplace(q);
  for (const TensorAccess& x : q.tensors) {
    s.rule.emplace_back(x);
    const W w = s.rule.back().dense() ? static_cast<W>(x.bits) : 0;
    s.dense_bits.push_back(w);
    s.dense_traffic_bits.push_back(w * s.batch);
  }
  for (const Rank& r : q.ranks) {
    s.extent.push_back(r.extent);
    s.points *= static_cast<W>(r.extent);
    s.cand.push_back(candidates(
        r.extent, options.tiles,
        s.grouped & (RankMask{1} << static_cast<int>(s.cand.size()))));
  }
  CurveResult result;
  // Bypass variants are mostly skipped by a comparison, so they are not counted here.
  const auto planned = s.plan();
  const auto& plans = *planned;
  if (s.truncated) result.exhaustive = false;
  while (s.planned(plans) > static_cast<double>(options.max_evaluations)) {
    std::size_t longest = 0;
    for (std::size_t r = 1; r < s.cand.size(); ++r)
      if (s.cand[r].size() > s.cand[longest].size()) longest = r;
    if (s.cand[longest].size() <= 2) break;
    thin(s.cand[longest]);
    result.exhaustive = false;
  }
  for (std::size_t t = 0; t < s.nt; ++t) {
    const TensorAccess& x = q.tensors[t];
    // A sparse tensor is read as its compressed tiles, never element by element; a masked
    // problem's tensors move as live tiles.
    s.can_bypass.push_back(x.plain() && s.rule[t].dense() && q.mask.empty());
    W touched = 1;
    for (const DimAccess& d : x.dims)
      touched *= static_cast<W>(
          d.plain() ? std::min(s.extent[d.terms[0].rank], d.extent) : d.extent);
    const W el = x.output ? 2 * s.points - touched : s.points;
    s.bypass_access_bits.push_back(el * s.batch * static_cast<W>(x.bits));
    s.compulsory_bits.push_back(x.plain() ? static_cast<W>(s.rule[t].bits(touched * s.batch)) : 0);
    s.dim_base.push_back(s.hull_cache.size());
    s.hull_cache.resize(s.hull_cache.size() + x.dims.size());
  }
  if (options.bypass && s.nt <= 12)
    for (std::uint32_t b = 1; b < (1u << s.nt); ++b) {
      bool ok = true;
      W lo = 0;
      for (std::size_t t = 0; t < s.nt; ++t) {
        if ((b & (1u << t)) && !s.can_bypass[t]) ok = false;
        lo += (b & (1u << t)) ? s.bypass_access_bits[t] : s.compulsory_bits[t];
      }
      if (!ok) continue;
      s.bypass_masks.push_back(b);
      s.min_traffic.push_back(lo);
    }
  s.threshold.assign(s.bypass_masks.size(), 0);
  // The least traffic of any mapping: each tensor moves at least the positions its
  // dimensions reach, once (price() counts every dimension's in-range hulls, times the
  // reloads). A masked problem moves only its live tiles: not bounded so.
  if (!s.live)
    for (std::size_t t = 0; t < s.nt; ++t) {
      W least = 1;
      for (const DimAccess& d : q.tensors[t].dims)
        least *= static_cast<W>(d.plain() ? std::min(s.extent[d.terms[0].rank], d.extent)
                                          : distinct_positions(d, s.extent));
      s.floor += s.dense_bits[t] != 0 ? least * s.dense_traffic_bits[t]
                                      : static_cast<W>(s.rule[t].bits(least * s.batch));
    }
  s.run(plans);

  // Round bits up to bytes (the traffic already counts the batch: storage is not linear in
  // the elements); rounding can merge neighbours, so the envelope is taken again.
  std::vector<CurvePoint> pts;
  for (const auto& [buf_bits, acc_bits] : s.pareto.envelope()) {
    const Count b = Count::from_raw((buf_bits + 7) / 8);
    const Count a = Count::from_raw((acc_bits + 7) / 8);
    if (!pts.empty() && pts.back().buffer_bytes == b) pts.pop_back();
    if (pts.empty() || a < pts.back().traffic_bytes) pts.push_back({b, a});
  }
  result.curve = TrafficCurve(std::move(pts));
  result.compulsory_bytes = p.compulsory_bits.ceil_div(8);
  result.evaluated = s.evaluated;
  return result;
}

}  // namespace

CurveResult attainable_curve(const TilingProblem& p, const CurveOptions& options) {
  p.check();
  if (p.tensors.size() > 16)
    throw Unsupported("the tiling search handles at most 16 tensors per einsum");
  const ReducedProblem red =
      reduce_problem(p, options.merge_ranks && options.tiles == TileMode::Ceil);
  return !options.wide_numbers && fits_in_64_bits(red.problem, red.batch.raw())
             ? search<std::uint64_t>(p, red, options)
             : search<Wide>(p, red, options);
}

}  // namespace solar::tiling
