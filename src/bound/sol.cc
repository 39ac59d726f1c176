#include "solar/bound/sol.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <utility>

#include <fmt/format.h>

#include "solar/util/errors.h"

namespace solar::bound {

namespace {

using ir::DType;

constexpr std::size_t kNumDTypes = std::size(ir::kAllDTypes);
constexpr std::size_t kNumClasses = 4;  // cost::ContractionClass

std::size_t dtype_index(DType d) { return static_cast<std::size_t>(d); }

std::size_t class_index(cost::ContractionClass c) {
  switch (c) {
    case cost::ContractionClass::None: return 0;
    case cost::ContractionClass::Matmul: return 1;
    case cost::ContractionClass::Convolution: return 2;
    case cost::ContractionClass::Attention: return 3;
  }
  return 0;
}

std::string_view class_word(cost::ContractionClass c) {
  switch (c) {
    case cost::ContractionClass::None: return "contraction";
    case cost::ContractionClass::Matmul: return "matmul";
    case cost::ContractionClass::Convolution: return "convolution";
    case cost::ContractionClass::Attention: return "attention";
  }
  return "?";
}

// A large count for a sentence: exact below a million, else three significant digits
// ("2.1e9").
std::string short_count(Count c) {
  if (c < Count(1000000)) return c.str();
  double v = c.to_double();
  int e = static_cast<int>(std::floor(std::log10(v)));
  double m = v / std::pow(10.0, e);
  std::string ms = fmt::format("{:.3g}", m);
  if (ms == "10") {
    ms = "1";
    ++e;
  }
  return fmt::format("{}e{}", ms, e);
}

std::string in_ops(std::int64_t ops) { return ops == 1 ? "" : fmt::format(" in {} ops", ops); }

std::optional<double> positive(const std::optional<hw::Sourced>& s) {
  if (s && s->value > 0) return s->value;
  return std::nullopt;
}

// An interned route: the unit it occupies and its label.
struct RouteInfo {
  const hw::ComputeUnit* unit = nullptr;
  DType rate_dtype = DType::F32;
  bool sparse_2_4 = false;
  double rate = 0;  // FLOP/s (dense-equivalent for a 2:4 route)
  std::string label;
  std::size_t kind = 0;  // the concurrent resource it occupies (RouteTable::kind_of)
  std::string ceiling_basis;  // a ceiling: the unit peaks its rate sums; "" for a route
};

// Every route the device offers under the options, computed once so that bounding an op
// is a few table lookups (compute_bounds is O(ops)).
class RouteTable {
 public:
  RouteTable(const hw::Device& device, MathPolicy policy) {
    for (DType d : ir::kAllDTypes) {
      for (cost::ContractionClass c :
           {cost::ContractionClass::None, cost::ContractionClass::Matmul,
            cost::ContractionClass::Convolution, cost::ContractionClass::Attention}) {
        std::optional<Route> r = contraction_route(device, policy, c, d);
        contraction_[class_index(c)][dtype_index(d)] = intern(r);
        sparse_2_4_[class_index(c)][dtype_index(d)] =
            intern(r ? std::optional<Route>(sparse_2_4_route(*r)) : std::nullopt);
      }
      vector_[dtype_index(d)] = intern(vector_route(device, d));
    }
    special_ = intern(special_route(device));
    // Work of a dtype no legal route publishes a rate for is priced at a ceiling, a rate no
    // unit exceeds for it (docs/bounds.md, "Unknown rates"): elementwise work on the vector
    // units, contractions on the tensor and vector units.
    vector_ceiling_ = intern_ceiling(ceiling_route(device, {hw::UnitKind::Vector}),
                                     "vector.ceiling", kVectorCeiling);
    contraction_ceiling_ = intern_ceiling(
        ceiling_route(device, {hw::UnitKind::Tensor, hw::UnitKind::Vector}),
        "contraction.ceiling", kContractionCeiling);
  }

  int contraction(cost::ContractionClass c, DType d) const {
    return contraction_[class_index(c)][dtype_index(d)];
  }
  // The route of the 2:4-structured MACs of such a contraction: the sparse route, or the
  // dense one when its unit has no 2:4 peak (same id as contraction(c, d)); -1 with it.
  int sparse_2_4(cost::ContractionClass c, DType d) const {
    return sparse_2_4_[class_index(c)][dtype_index(d)];
  }
  int vector(DType d) const { return vector_[dtype_index(d)]; }
  int special() const { return special_; }
  // The ceiling of vector work and of contractions without a route; -1 when the device
  // publishes no rate for any unit that could execute them.
  int vector_ceiling() const { return vector_ceiling_; }
  int contraction_ceiling() const { return contraction_ceiling_; }
  const RouteInfo& route(int id) const { return routes_[static_cast<std::size_t>(id)]; }
  std::size_t size() const { return routes_.size(); }

  // The concurrent resource a route occupies: its unit kind. Units of one kind may be one
  // physical pipe split by clock (H100's tensor_core and tensor_core_fp64), so work on them
  // adds up rather than overlapping. Each ceiling is a resource of its own: the units it sums
  // might run its work beside their priced work, so adding the two would not be a lower bound.
  static constexpr std::size_t kVectorCeiling = 3;
  static constexpr std::size_t kContractionCeiling = 4;
  static constexpr std::size_t kNumKinds = 5;
  std::size_t kind_of(int id) const { return route(id).kind; }
  static std::size_t kind_index(hw::UnitKind k) {
    switch (k) {
      case hw::UnitKind::Tensor: return 0;
      case hw::UnitKind::Vector: return 1;
      case hw::UnitKind::Special: return 2;
    }
    return 0;
  }

 private:
  int intern(const std::optional<Route>& r) {
    if (!r) return -1;
    for (std::size_t i = 0; i < routes_.size(); ++i)
      if (routes_[i].unit == r->unit && routes_[i].rate_dtype == r->rate_dtype &&
          routes_[i].sparse_2_4 == r->sparse_2_4 && routes_[i].ceiling_basis.empty())
        return static_cast<int>(i);
    routes_.push_back(RouteInfo{r->unit, r->rate_dtype, r->sparse_2_4, r->flops_per_s, r->label,
                                kind_index(r->unit->kind), ""});
    return static_cast<int>(routes_.size() - 1);
  }

  int intern_ceiling(const std::optional<Route>& r, std::string label, std::size_t kind) {
    if (!r) return -1;
    routes_.push_back(
        RouteInfo{r->unit, r->rate_dtype, false, r->flops_per_s, std::move(label), kind, r->label});
    return static_cast<int>(routes_.size() - 1);
  }

  std::array<std::array<int, kNumDTypes>, kNumClasses> contraction_{};
  std::array<std::array<int, kNumDTypes>, kNumClasses> sparse_2_4_{};
  std::array<int, kNumDTypes> vector_{};
  int special_ = -1;
  int vector_ceiling_ = -1;
  int contraction_ceiling_ = -1;
  std::vector<RouteInfo> routes_;
};

// The name of a unit kind's term from the routes that put work on it: the route's own
// label when there is one, else the labels joined by '+' ("fp32_simt.f32+fp32_simt.bf16"),
// ordered by unit name and dtype.
std::string kind_label(const RouteTable& table, const std::vector<int>& route_ids) {
  if (route_ids.size() == 1) return table.route(route_ids[0]).label;
  std::vector<int> ids = route_ids;
  std::sort(ids.begin(), ids.end(), [&](int a, int b) {
    const RouteInfo& x = table.route(a);
    const RouteInfo& y = table.route(b);
    if (x.unit->name != y.unit->name) return x.unit->name < y.unit->name;
    if (x.rate_dtype != y.rate_dtype) return x.rate_dtype < y.rate_dtype;
    return x.sparse_2_4 < y.sparse_2_4;
  });
  std::string label;
  for (int id : ids) label += (label.empty() ? "" : "+") + table.route(id).label;
  return label;
}

void sort_terms(std::vector<Term>& terms) {
  std::sort(terms.begin(), terms.end(), [](const Term& a, const Term& b) {
    if (a.seconds != b.seconds) return a.seconds > b.seconds;
    return a.resource < b.resource;
  });
}

// Adds `term`'s seconds to the entry of its resource (few distinct resources: linear search
// is fastest).
void accumulate(std::vector<Term>& sums, const Term& term) {
  for (Term& t : sums)
    if (t.resource == term.resource) {
      t.seconds += term.seconds;
      return;
    }
  sums.push_back(term);
}

// Work left unpriced, summed over ops (an op that runs n times counts n ops).
struct Unpriced {
  Count amount;
  std::int64_t ops = 0;
  void add(Count c, Count runs) {
    amount += c * runs;
    ops += runs.fits_u64() && runs.to_u64() < INT64_MAX / 2 ? static_cast<std::int64_t>(runs.to_u64())
                                                            : INT64_MAX / 2;
  }
};

class Bounder {
 public:
  Bounder(const hw::Device& device, const Options& options, const hw::System* system)
      : device_(device), options_(options), system_(system), table_(device, options.policy) {
    const hw::MemorySpec* dram = device.memory_level(hw::MemoryLevel::Dram);
    if (dram) dram_bw_ = positive(dram->bandwidth);
    const hw::MemorySpec* l2 = device.memory_level(hw::MemoryLevel::L2);
    // Warm state needs to know what fits: an L2 without a published capacity is treated as
    // absent (warm = cold for that device).
    if (options.cache_state == CacheState::Warm && l2 && positive(l2->capacity)) {
      l2_capacity_ = l2->capacity->value;
      l2_bw_ = positive(l2->bandwidth);
    }
    route_used_.assign(table_.size(), false);
  }

  // The roofline of `w` run `runs` times, each run an op of its own (a repeat op's body op;
  // an op that does not repeat runs once): its terms are one run's times `runs`, and so is
  // what it adds to the graph-level sums.
  OpBound bound_op(const cost::Work& w, Count runs = Count(1)) {
    OpBound ob;
    if (!w.counted()) {
      ob.bottleneck = w.dead ? "dead" : "unanalyzed";
      return ob;
    }
    if (!w.parts.empty()) return bound_parts(w, nullptr);
    const double runs_d = runs.to_double();
    std::fill(unit_seconds_.begin(), unit_seconds_.end(), 0.0);
    for (std::vector<int>& r : unit_routes_) r.clear();

    for (const auto& [dtype, macs] : w.macs) {
      if (macs == Count(0)) continue;
      int id = table_.contraction(w.contraction, dtype);
      if (id < 0 && table_.contraction_ceiling() >= 0) {
        ceiling_macs_[{w.contraction, dtype}].add(macs, runs);
        charge(table_.contraction_ceiling(), 2.0 * macs.to_double());  // 1 MAC = 2 FLOP
        continue;
      }
      if (id < 0) {
        ob.unknown.push_back(contraction_unknown(macs, w.contraction, dtype, 1));
        unknown_macs_[{w.contraction, dtype}].add(macs, runs);
        continue;
      }
      // 1 MAC = 2 FLOP. The 2:4-structured MACs run at the unit's sparse peak when it has
      // one (rates are dense-equivalent, so the MACs are the contraction's as written);
      // else at the dense peak with the rest, in one charge.
      const Count sparse = macs_2_4(w, dtype);
      const int sparse_id = table_.sparse_2_4(w.contraction, dtype);
      if (sparse == Count(0) || sparse_id == id) {
        charge(id, 2.0 * macs.to_double());
        continue;
      }
      if (macs != sparse) charge(id, 2.0 * (macs - sparse).to_double());
      charge(sparse_id, 2.0 * sparse.to_double());
    }
    for (const auto& [dtype, flops] : w.vector_flops) {
      if (flops == Count(0)) continue;
      int id = table_.vector(dtype);
      if (id < 0 && table_.vector_ceiling() >= 0) {
        ceiling_vector_[dtype_index(dtype)].add(flops, runs);
        charge(table_.vector_ceiling(), flops.to_double());
        continue;
      }
      if (id < 0) {
        ob.unknown.push_back(vector_unknown(flops, dtype, 1));
        unknown_vector_[dtype_index(dtype)].add(flops, runs);
        continue;
      }
      charge(id, flops.to_double());
    }
    if (w.special_ops != Count(0)) {
      int id = table_.special();
      if (id < 0) {
        ob.unknown.push_back(special_unknown(w.special_ops, 1));
        unknown_special_.add(w.special_ops, runs);
      } else {
        charge(id, w.special_ops.to_double());
      }
    }

    for (std::size_t u = 0; u < unit_seconds_.size(); ++u) {
      if (unit_routes_[u].empty()) continue;
      ob.terms.push_back(Term{kind_label(table_, unit_routes_[u]), unit_seconds_[u]});
      // Summed op by op, in op order, so that each fused unit term stays <= the unfused sum
      // under floating-point rounding too.
      fused_unit_seconds_[u] += unit_seconds_[u] * runs_d;
      for (int id : unit_routes_[u]) add_unique(fused_unit_routes_[u], id);
    }

    Count bytes = w.bytes();
    if (bytes != Count(0)) {
      bool resident = l2_capacity_ && bytes.to_double() <= *l2_capacity_;
      if (resident) {
        if (l2_bw_) {
          ob.terms.push_back(Term::of_memory(hw::MemoryLevel::L2, bytes.to_double() / *l2_bw_));
          l2_used_ = true;
        } else {
          ob.unknown.push_back(l2_unknown(bytes, 1));
          unknown_l2_.add(bytes, runs);
        }
      } else {
        dram_bytes_ += bytes * runs;
        if (dram_bw_) {
          ob.terms.push_back(
              Term::of_memory(hw::MemoryLevel::Dram, bytes.to_double() / *dram_bw_));
          dram_used_ = true;
        } else {
          ob.unknown.push_back(dram_unknown(bytes, 1));
          unknown_dram_.add(bytes, runs);
        }
      }
    }

    if (w.comm) charge_links(*w.comm, runs, ob);

    if (runs_d != 1)
      for (Term& t : ob.terms) t.seconds *= runs_d;
    sort_terms(ob.terms);
    if (ob.terms.empty() || !(ob.terms[0].seconds > 0)) {
      ob.bottleneck = "none";
    } else {
      ob.seconds = ob.terms[0].seconds;
      ob.bottleneck = ob.terms[0].resource;
    }
    unfused_no_overlap_ += no_overlap(ob.terms);
    return ob;
  }

  // Max over the compute and memory terms plus the sum of the link terms: the time when no
  // communication overlaps computation (docs/parallel.md).
  static double no_overlap(const std::vector<Term>& terms) {
    double local = 0, links = 0;
    for (const Term& t : terms) {
      if (t.link) links += t.seconds;
      else local = std::max(local, t.seconds);
    }
    return local + links;
  }

  // A collective's link terms (one run's, scaled to `runs` with the op's other terms), or its
  // payload as unknown link time without a system.
  void charge_links(const cost::Communication& c, Count runs, OpBound& ob) {
    const double runs_d = runs.to_double();
    if (!system_) {
      ob.unknown.push_back(comm_unknown(c.payload, c.kind, 1));
      unknown_comm_[c.kind].add(c.payload, runs);
      return;
    }
    const CollectiveBound b = collective_bound(*system_, collective_kind(c.kind),
                                               group_layout(*system_, c.group),
                                               c.payload.to_double());
    for (LinkTerm t : b.terms) {
      ob.terms.push_back(Term::of_link(t.link, t.seconds));
      LinkUse& use = link_use(t.link);
      use.bytes += t.bytes * runs_d;
      use.seconds += t.seconds * runs_d;
      use.collectives += static_cast<std::int64_t>(runs_d);
      t.bytes *= runs_d;
      t.seconds *= runs_d;
      if (t.implemented_bytes) *t.implemented_bytes *= runs_d;
      ob.links.push_back(std::move(t));
    }
    ob.latency_seconds = b.latency_seconds;
  }

  LinkUse& link_use(LinkKind link) {
    for (LinkUse& u : links_)
      if (u.link == link) return u;
    links_.push_back(LinkUse{link, 0, 0, 0});
    std::sort(links_.begin(), links_.end(),
              [](const LinkUse& a, const LinkUse& b) { return a.link < b.link; });
    for (LinkUse& u : links_)
      if (u.link == link) return u;
    SOLAR_UNREACHABLE("link use just added");
  }

  // A repeat op (docs/bounds.md, "Repeat"): each run of each body op is an op of its own, so
  // the seconds are the sum of the parts' rooflines and the terms their per-resource sums
  // (seconds is then not the largest term); the bottleneck is the largest summed term.
  // `by_bottleneck`, when given, gets the parts' seconds added by their own bottlenecks.
  OpBound bound_parts(const cost::Work& w, std::vector<Term>* by_bottleneck) {
    OpBound ob;
    for (const cost::WorkPart& p : w.parts) {
      OpBound pb = bound_op(p.work, p.runs);
      ob.seconds += pb.seconds;
      for (const Term& t : pb.terms) accumulate(ob.terms, t);
      if (by_bottleneck && pb.seconds > 0)
        accumulate(*by_bottleneck, Term{pb.bottleneck, pb.seconds});
      for (std::string& u : pb.unknown)
        if (std::find(ob.unknown.begin(), ob.unknown.end(), u) == ob.unknown.end())
          ob.unknown.push_back(std::move(u));
      for (const LinkTerm& t : pb.links) {
        auto same = std::find_if(ob.links.begin(), ob.links.end(),
                                 [&](const LinkTerm& x) { return x.link == t.link; });
        if (same == ob.links.end()) {
          ob.links.push_back(t);
          continue;
        }
        same->bytes += t.bytes;
        same->seconds += t.seconds;
        if (same->algorithm != t.algorithm) same->algorithm = "mixed";
      }
      // One run of the part's collective at least: a floor that holds however the runs
      // overlap.
      if (pb.latency_seconds)
        ob.latency_seconds = std::max(ob.latency_seconds.value_or(0), *pb.latency_seconds);
    }
    sort_terms(ob.terms);
    ob.bottleneck = ob.terms.empty() || !(ob.seconds > 0) ? "none" : ob.terms[0].resource;
    return ob;
  }

  // The whole graph as one kernel: per-unit sums of the work, compulsory bytes.
  LevelBound fused(const cost::GraphCost& cost, const LevelBound& unfused) {
    LevelBound lb;
    for (std::size_t u = 0; u < fused_unit_seconds_.size(); ++u)
      if (!fused_unit_routes_[u].empty())
        lb.terms.push_back(Term{kind_label(table_, fused_unit_routes_[u]), fused_unit_seconds_[u]});
    // Each link's collectives in sequence: their terms add up (a link is one resource).
    for (const LinkUse& u : links_) lb.terms.push_back(Term::of_link(u.link, u.seconds));

    // Memory. Cold: every compulsory byte from DRAM. Warm: compulsory bytes that fit in L2
    // stream at L2 bandwidth; when they do not fit, the graph as one kernel still cannot need
    // more DRAM traffic than the op-by-op schedule does under the same cache model, so at most
    // the DRAM bytes of the ops that did not fit come from DRAM and the rest from L2.
    Count compulsory = cost.compulsory_bytes();
    Count from_dram = compulsory;
    Count from_l2 = 0;
    if (l2_capacity_) {
      if (compulsory.to_double() <= *l2_capacity_) {
        from_dram = 0;
        from_l2 = compulsory;
      } else {
        from_dram = std::min(compulsory, dram_bytes_);
        from_l2 = compulsory - from_dram;
      }
    }
    if (from_dram != Count(0)) {
      if (dram_bw_) {
        lb.terms.push_back(
            Term::of_memory(hw::MemoryLevel::Dram, from_dram.to_double() / *dram_bw_));
        dram_used_ = true;
      } else {
        fused_unknown_memory_.push_back(dram_unknown(from_dram, 1, "compulsory "));
      }
    }
    if (from_l2 != Count(0)) {
      if (l2_bw_) {
        lb.terms.push_back(Term::of_memory(hw::MemoryLevel::L2, from_l2.to_double() / *l2_bw_));
        l2_used_ = true;
      } else {
        fused_unknown_memory_.push_back(l2_unknown(from_l2, 1, "compulsory "));
      }
    }
    sort_terms(lb.terms);
    if (!lb.terms.empty() && lb.terms[0].seconds > 0) {
      // fused <= unfused holds by construction; only floating-point rounding of sums taken in
      // different orders can put fused an ulp above, which this removes.
      if (lb.terms[0].seconds > unfused.seconds &&
          lb.terms[0].seconds <= unfused.seconds * (1 + 1e-12))
        lb.terms[0].seconds = unfused.seconds;
      lb.seconds = lb.terms[0].seconds;
      lb.bottleneck = lb.terms[0].resource;
    } else {
      lb.bottleneck = "none";
    }
    lb.unknown = compute_unknowns(lb.seconds);
    for (const std::string& s : fused_unknown_memory_) lb.unknown.push_back(s);
    lb.ceiling = ceilings();
    if (system_) lb.seconds_no_overlap = std::max(no_overlap(lb.terms), lb.seconds);
    return lb;
  }

  // The unfused level's time with no overlap of communication: each op's, summed.
  double unfused_no_overlap() const { return unfused_no_overlap_; }
  const std::vector<LinkUse>& links() const { return links_; }

  // Sentences for the unpriced work summed over the graph (both levels share them). With the
  // fused level's `seconds` (a max over resources), each says how much that work could move
  // it: nothing unless the work runs slower than its amount over those seconds.
  std::vector<std::string> compute_unknowns(std::optional<double> fused = std::nullopt) const {
    auto moves = [&](double amount, std::string_view unit) -> std::string {
      if (!fused || !(*fused > 0)) return "";
      return fmt::format("; it raises the fused SOL ({:.4g} s) only if it runs below {:.3g} {}",
                         *fused, amount / *fused, unit);
    };
    std::vector<std::string> out;
    for (const auto& [key, u] : unknown_macs_)
      out.push_back(contraction_unknown(u.amount, key.first, key.second, u.ops) +
                    moves(2 * u.amount.to_double(), "FLOP/s"));  // 1 MAC = 2 FLOP
    for (std::size_t d = 0; d < kNumDTypes; ++d)
      if (unknown_vector_[d].ops > 0)
        out.push_back(vector_unknown(unknown_vector_[d].amount, ir::kAllDTypes[d],
                                     unknown_vector_[d].ops) +
                      moves(unknown_vector_[d].amount.to_double(), "FLOP/s"));
    if (unknown_special_.ops > 0)
      out.push_back(special_unknown(unknown_special_.amount, unknown_special_.ops) +
                    moves(unknown_special_.amount.to_double(), "ops/s"));
    for (const auto& [kind, u] : unknown_comm_)
      out.push_back(comm_unknown(u.amount, kind, u.ops) +
                    moves(u.amount.to_double(), "bytes/s"));
    return out;
  }

  // Sentences for the work priced at a ceiling, summed over the graph (both levels share them).
  std::vector<std::string> ceilings() const {
    std::vector<std::string> out;
    for (const auto& [key, u] : ceiling_macs_)
      out.push_back(contraction_unknown(u.amount, key.first, key.second, u.ops) + "; " +
                    ceiling_words(table_.contraction_ceiling(), "tensor and vector unit"));
    for (std::size_t d = 0; d < kNumDTypes; ++d)
      if (ceiling_vector_[d].ops > 0)
        out.push_back(vector_unknown(ceiling_vector_[d].amount, ir::kAllDTypes[d],
                                     ceiling_vector_[d].ops) +
                      "; " + ceiling_words(table_.vector_ceiling(), "vector unit"));
    return out;
  }

  std::vector<std::string> unfused_memory_unknowns() const {
    std::vector<std::string> out;
    if (unknown_dram_.ops > 0) out.push_back(dram_unknown(unknown_dram_.amount, unknown_dram_.ops));
    if (unknown_l2_.ops > 0) out.push_back(l2_unknown(unknown_l2_.amount, unknown_l2_.ops));
    return out;
  }

  std::map<std::string, double> peaks_used() const {
    std::map<std::string, double> out;
    for (std::size_t i = 0; i < route_used_.size(); ++i)
      if (route_used_[i]) {
        const RouteInfo& r = table_.route(static_cast<int>(i));
        out[r.label] = r.rate;
      }
    if (dram_used_) out[std::string(hw::memory_level_name(hw::MemoryLevel::Dram))] = *dram_bw_;
    if (l2_used_) out[std::string(hw::memory_level_name(hw::MemoryLevel::L2))] = *l2_bw_;
    return out;
  }

  std::optional<double> dram_bandwidth() const { return dram_bw_; }

 private:
  void charge(int id, double flops) {
    const RouteInfo& r = table_.route(id);
    std::size_t k = table_.kind_of(id);
    unit_seconds_[k] += flops / r.rate;
    add_unique(unit_routes_[k], id);
    route_used_[static_cast<std::size_t>(id)] = true;
  }

  // The 2:4-structured part of the op's MACs of `dtype` (cost::Work::macs_2_4).
  static Count macs_2_4(const cost::Work& w, DType dtype) {
    auto it = w.macs_2_4.find(dtype);
    if (it == w.macs_2_4.end()) return Count(0);
    SOLAR_CHECK(it->second <= w.macs.at(dtype),
                fmt::format("{} 2:4 MACs exceed the op's {} MACs of {}", it->second.str(),
                            w.macs.at(dtype).str(), ir::dtype_name(dtype)));
    return it->second;
  }

  static void add_unique(std::vector<int>& v, int id) {
    if (std::find(v.begin(), v.end(), id) == v.end()) v.push_back(id);
  }

  std::string contraction_unknown(Count macs, cost::ContractionClass cls, DType dtype,
                                  int ops) const {
    return fmt::format(
        "{} MACs {} ({}){}: {} publishes no rate for {} or any wider legal route under the {} "
        "policy",
        short_count(macs), ir::dtype_name(dtype), class_word(cls), in_ops(ops), device_.id,
        ir::dtype_name(dtype), policy_name(options_.policy));
  }

  // "priced at the ceiling 133.8 TFLOP/s (fp32_simt.bf16: the fastest published rate of each
  // vector unit, summed)".
  std::string ceiling_words(int id, std::string_view units) const {
    const RouteInfo& r = table_.route(id);
    return fmt::format("priced at the ceiling {:.4g} TFLOP/s ({}: the fastest published rate of "
                       "each {}, summed)",
                       r.rate / 1e12, r.ceiling_basis, units);
  }

  std::string vector_unknown(Count flops, DType dtype, int ops) const {
    bool f32_fallback = ir::dtype_bits(dtype) <= 32 && dtype != DType::F32;
    return fmt::format("{} vector FLOPs {}{}: {} publishes no vector rate for {}{}",
                       short_count(flops), ir::dtype_name(dtype), in_ops(ops), device_.id,
                       ir::dtype_name(dtype), f32_fallback ? " or f32" : "");
  }

  // Worded "link time is left out": the cache-aware level keeps the sentences that say so
  // (it drops the fused level's memory sentences).
  std::string comm_unknown(Count payload, ir::CollectiveKind kind, int ops) const {
    return fmt::format("{} bytes of {} payload{}: no system gives its links (--system), so their "
                       "link time is left out",
                       short_count(payload), ir::collective_kind_name(kind), in_ops(ops));
  }

  std::string special_unknown(Count n, int ops) const {
    return fmt::format("{} special-function ops{}: {} publishes no special-function unit rate",
                       short_count(n), in_ops(ops), device_.id);
  }

  std::string l2_unknown(Count bytes, int ops, std::string_view what = "") const {
    return fmt::format(
        "{} {}bytes L2-resident (warm cache){}: {} publishes no L2 bandwidth, so their memory "
        "time is left out",
        short_count(bytes), what, in_ops(ops), device_.id);
  }

  std::string dram_unknown(Count bytes, int ops, std::string_view what = "") const {
    return fmt::format("{} {}bytes{}: {} publishes no DRAM bandwidth, so their memory time is "
                       "left out",
                       short_count(bytes), what, in_ops(ops), device_.id);
  }

  const hw::Device& device_;
  Options options_;
  const hw::System* system_ = nullptr;
  RouteTable table_;
  std::optional<double> dram_bw_;
  std::optional<double> l2_capacity_;  // set only in warm state with a usable L2
  std::optional<double> l2_bw_;

  // Scratch for one op: seconds and routes per unit kind.
  std::array<double, RouteTable::kNumKinds> unit_seconds_{};
  std::array<std::vector<int>, RouteTable::kNumKinds> unit_routes_;

  // Whole-graph accumulators.
  std::array<double, RouteTable::kNumKinds> fused_unit_seconds_{};
  std::array<std::vector<int>, RouteTable::kNumKinds> fused_unit_routes_;
  std::vector<bool> route_used_;
  bool dram_used_ = false;
  bool l2_used_ = false;
  Count dram_bytes_;         // bytes of analyzed ops priced (or unpriced) at DRAM
  std::map<std::pair<cost::ContractionClass, DType>, Unpriced> unknown_macs_;
  std::map<std::pair<cost::ContractionClass, DType>, Unpriced> ceiling_macs_;
  std::array<Unpriced, kNumDTypes> ceiling_vector_{};
  std::array<Unpriced, kNumDTypes> unknown_vector_{};
  Unpriced unknown_special_;
  Unpriced unknown_l2_;
  Unpriced unknown_dram_;
  std::map<ir::CollectiveKind, Unpriced> unknown_comm_;
  std::vector<std::string> fused_unknown_memory_;
  std::vector<LinkUse> links_;      // with a system: per link, summed over ops
  double unfused_no_overlap_ = 0;   // each analyzed op's no-overlap time, summed
};

// The latency floor of the graph's collectives: the largest sum of op floors along a chain of
// dependent ops (a critical path, so independent collectives may overlap); nullopt when no op
// has one.
std::optional<double> latency_floor(const ir::Graph& g, const std::vector<OpBound>& per_op) {
  bool any = false;
  for (const OpBound& b : per_op) any = any || b.latency_seconds.has_value();
  if (!any) return std::nullopt;
  std::vector<double> ready(g.tensors().size(), 0.0);
  double floor = 0;
  for (const ir::Op& op : g.ops()) {
    double start = 0;
    for (ir::TensorId in : op.inputs) start = std::max(start, ready[in.value]);
    const double end = start + per_op[op.id.value].latency_seconds.value_or(0);
    for (ir::TensorId out : op.outputs) ready[out.value] = end;
    floor = std::max(floor, end);
  }
  return floor;
}

}  // namespace

DeviceBounds compute_bounds(const ir::Graph& g, const cost::GraphCost& cost,
                            const hw::Device& device, const Options& options,
                            const hw::System* system) {
  SOLAR_CHECK(cost.per_op.size() == g.ops().size(),
              fmt::format("graph '{}' has {} ops but its cost has {}", g.name, g.ops().size(),
                          cost.per_op.size()));
  if (system && system->device != device.id)
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("system {} is made of {}, not {}", system->id, system->device,
                                device.id));
  DeviceBounds db;
  db.device_id = device.id;
  db.device_name = device.name;
  db.options = options;
  if (system) db.system_id = system->id;

  Bounder bounder(device, options, system);
  db.per_op.reserve(cost.per_op.size());
  std::vector<Term> unfused_terms;
  std::vector<Term> by_bottleneck;  // op seconds grouped by each op's bottleneck
  for (const cost::Work& w : cost.per_op) {
    // A repeat op's seconds count under its parts' own bottlenecks (docs/bounds.md).
    const bool parts = w.counted() && !w.parts.empty();
    OpBound ob;
    try {
      ob = parts ? bounder.bound_parts(w, &by_bottleneck) : bounder.bound_op(w);
    } catch (const UserError& e) {
      // A collective whose group does not fit the system: say which op.
      const ir::Op& op = g.ops()[db.per_op.size()];
      throw UserError(e.kind(), fmt::format("op '{}': {}", op.name, e.message()),
                      ir::op_origin(op));
    }
    if (w.counted()) {
      db.unfused.seconds += ob.seconds;
      for (const Term& t : ob.terms) accumulate(unfused_terms, t);
      if (!parts && ob.seconds > 0) accumulate(by_bottleneck, Term{ob.bottleneck, ob.seconds});
    }
    db.per_op.push_back(std::move(ob));
  }

  sort_terms(unfused_terms);
  db.unfused.terms = std::move(unfused_terms);
  sort_terms(by_bottleneck);
  db.unfused.bottleneck = by_bottleneck.empty() ? "none" : by_bottleneck[0].resource;
  db.unfused.unknown = bounder.compute_unknowns();
  db.unfused.ceiling = bounder.ceilings();
  for (std::string& s : bounder.unfused_memory_unknowns())
    db.unfused.unknown.push_back(std::move(s));

  db.fused = bounder.fused(cost, db.unfused);
  if (db.unfused.seconds > 0)
    for (OpBound& ob : db.per_op) ob.share = ob.seconds / db.unfused.seconds;
  db.peaks_used = bounder.peaks_used();
  db.dram_bandwidth = bounder.dram_bandwidth();
  if (system) {
    db.links = bounder.links();
    db.unfused.seconds_no_overlap = std::max(bounder.unfused_no_overlap(), db.unfused.seconds);
    db.unfused.latency_seconds = db.fused.latency_seconds = latency_floor(g, db.per_op);
  }
  return db;
}

}  // namespace solar::bound
