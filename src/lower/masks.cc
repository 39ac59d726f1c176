#include "solar/lower/masks.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <variant>

#include "families.h"
#include "solar/cost/work.h"
#include "solar/ir/attrs.h"
#include "solar/ir/dtype.h"
#include "solar/ir/region.h"
#include "solar/ir/rewrite.h"
#include "solar/ir/value_domain.h"
#include "solar/ir/verify.h"
#include "solar/ir/view_map.h"
#include "solar/util/errors.h"

namespace solar::lower {

// In detail: the lowering's vocabulary (context.h) is the pass's.
namespace detail {
namespace {

using ir::IndexPos;

// The IR analyses the pass is built on: regions (over a tensor's dimensions or an einsum's
// indices, ir/region.h), the value domain and index values (ir/value_domain.h), and how
// moves rename elements (ir/view_map.h).
using ir::Region;
using Subst = ir::Substitution;  // variable -> expression
using Val = ir::AbstractValue;
using ir::join;
using ir::Truth;

// ---- facts ------------------------------------------------------------------------------

// What the lowering proves of one tensor's values (over its dimensions d0, d1, ...).
struct Fact {
  std::optional<AffineExpr> index;  // every element is this integer (arange, iota)
  Region region;                    // empty: `inside` holds everywhere
  Val inside;
  Val outside;                      // outside the region (when it is not empty)

  // Known constants on both sides, or an index: a mask's building block (never masked).
  bool structural() const {
    return index || (inside.kind == Val::Const && (region.empty() || outside.kind == Val::Const));
  }
  bool plain() const { return !index && region.empty() && inside.kind == Val::Finite; }
};

// A region fact kept in its most useful form: the side with the known value outside (the
// dead points) when one constraint separates them; sides that agree merge.
Fact tidy(Fact f, const std::vector<std::int64_t>& shape) {
  if (f.index) return f;
  f.region = ir::canonical_region(std::move(f.region), shape);
  if (f.region.empty() || f.inside == f.outside) {
    f.region.clear();
    f.outside = f.inside;
    return f;
  }
  if (f.region.size() == 1 && f.inside.kind == Val::Const && f.outside.kind != Val::Const) {
    f.region = {ir::negated(f.region[0])};
    std::swap(f.inside, f.outside);
  }
  return f;
}

// Whether region `r` holds on every point of the box of `extents` (true), on none (false:
// one of its constraints fails everywhere), or on some (nullopt).
std::optional<bool> whole_box(const Region& r, const std::vector<std::int64_t>& extents) {
  bool all = true;
  for (const AffineConstraint& c : r) {
    for (const AffineTerm& t : c.expr.terms())
      if (t.index >= static_cast<IndexPos>(extents.size())) return std::nullopt;
    if (c.expr.max_value(extents) < 0) return false;
    if (c.expr.min_value(extents) < 0) all = false;
  }
  if (all) return true;
  return std::nullopt;
}

// Whether every value of float type `from` is exact in float type `to`.
bool widening_float(ir::DType from, ir::DType to) {
  if (from == to) return true;
  switch (to) {
    case ir::DType::F64: return from == ir::DType::F32 || widening_float(from, ir::DType::F32);
    case ir::DType::F32:
      return from == ir::DType::BF16 || from == ir::DType::F16 || from == ir::DType::F8E4M3 ||
             from == ir::DType::F8E5M2;
    case ir::DType::TF32: case ir::DType::BF16: case ir::DType::F16: case ir::DType::F8E4M3:
    case ir::DType::F8E5M2: case ir::DType::F6: case ir::DType::F4: case ir::DType::I64:
    case ir::DType::I32: case ir::DType::I16: case ir::DType::I8: case ir::DType::I4:
    case ir::DType::U8: case ir::DType::Bool:
      return false;
  }
  return false;
}

// The largest integer n such that every integer in [-n, n] is exact in `d`.
std::int64_t exact_integers(ir::DType d) {
  switch (d) {
    case ir::DType::F64: return std::int64_t{1} << 53;
    case ir::DType::F32: return std::int64_t{1} << 24;
    case ir::DType::TF32: case ir::DType::F16: return std::int64_t{1} << 11;
    case ir::DType::BF16: return std::int64_t{1} << 8;
    case ir::DType::F8E4M3: return 16;
    case ir::DType::F8E5M2: return 8;
    case ir::DType::F6: case ir::DType::F4: return 2;
    case ir::DType::I64: return std::numeric_limits<std::int64_t>::max();
    case ir::DType::I32: return std::numeric_limits<std::int32_t>::max();
    case ir::DType::I16: return std::numeric_limits<std::int16_t>::max();
    case ir::DType::I8: return 127;
    case ir::DType::I4: return 7;
    case ir::DType::U8: return 0;  // no negative values: not used for indices
    case ir::DType::Bool: return 0;
  }
  return 0;
}

// An index fact over `shape` that `dtype` holds exactly, else none.
std::optional<AffineExpr> exact_index(std::optional<AffineExpr> e, const ir::Tensor& t) {
  if (!e) return std::nullopt;
  for (std::int64_t x : t.shape)
    if (x < 1) return std::nullopt;
  const std::int64_t n = exact_integers(t.dtype);
  if (e->min_value(t.shape) < -n || e->max_value(t.shape) > n) return std::nullopt;
  return e;
}

// ---- the pass ---------------------------------------------------------------------------

class Recognizer {
 public:
  explicit Recognizer(const ir::Graph& g) : g_(g) {}

  MaskRecognition run(ir::Graph& g, const std::vector<KnownValues>& known);

 private:
  // One side of a region of an einsum's iteration space, for evaluating its combine.
  // The points inside a region (fail = -1: every constraint holds) or where its constraint
  // `fail` fails (the others may hold or not); region nullptr: every point.
  struct Side {
    const Region* region = nullptr;
    int fail = -1;
  };
  // An einsum's operands seen in its iteration space.
  struct Operands {
    std::vector<std::optional<AffineExpr>> index;  // per operand: its index fact, mapped
    std::vector<std::optional<Region>> region;     // per operand: its fact's region, mapped
    std::vector<const Fact*> fact;
    std::vector<std::vector<bool>> reads;          // per operand: the indices its subscript uses
    ir::IntegerType integer;                       // the type its combine's integers have
  };

  Operands operands_of(const ir::Op& op) const;
  Val value(const Operands& o, std::size_t k, Side s) const;
  Val eval(const Expr& e, const ir::EinsumOp& es, const Operands& o, Side s) const;
  // The combine outside a region: joined over the ways of leaving it.
  Val eval_outside(const Expr& e, const ir::EinsumOp& es, const Operands& o, const Region& r) const;
  // Whether the points of a side lie inside `r` (true), outside it (false), or either.
  static std::optional<bool> within(const Region& r, Side s);
  // Indices an expression's operands read.
  std::vector<bool> reads_of(const Expr& e, const Operands& o, std::size_t n) const;
  void forward_einsum(const ir::Op& op);
  void forward_move(const ir::Op& op);
  void forward_opaque(const ir::Op& op);
  // The region (over the op's indices) where `k` is observed at most, for the demand.
  Region branch_region(const ir::EinsumOp& e, const Operands& o, std::size_t k) const;
  void backward_op(const ir::Op& op);
  // The points of input k an einsum's live points read (its final mask and select branches),
  // over the input's dimensions.
  Region read_region(const ir::Op& op, std::size_t k, const Operands& o) const;
  // Whether every point einsum `op` reads of input k lies in region `d`.
  bool reads_within(const ir::Op& op, std::size_t k, const Region& d) const {
    const Region r = read_region(op, k, operands_of(op));
    return std::all_of(d.begin(), d.end(), [&](const AffineConstraint& c) {
      return std::find(r.begin(), r.end(), c) != r.end();
    });
  }
  void observe(TensorId t, Region r);
  bool try_mask(const ir::Op& op, Region add, bool forward);

  const ir::Graph& g_;
  std::vector<Fact> facts_;                       // by tensor id
  std::vector<std::optional<Region>> demand_;     // by tensor id: nullopt until a reader says
  std::vector<bool> read_;                        // by tensor id: some op reads it
  std::vector<Region> added_;                     // by op id: constraints added to its mask
  std::vector<std::uint8_t> how_;                 // by op id: 0 none, 1 forward, 2 backward
};

Recognizer::Operands Recognizer::operands_of(const ir::Op& op) const {
  const ir::EinsumOp& e = op.einsum();
  Operands o;
  const std::size_t n = e.indices.size();
  std::vector<ir::DType> dtypes;
  for (TensorId t : op.inputs) dtypes.push_back(g_.tensor(t).dtype);
  o.integer = ir::integer_type(dtypes, g_.tensor(op.outputs[0]).dtype);
  for (std::size_t k = 0; k < e.operands.size(); ++k) {
    const ir::Operand& opd = e.operands[k];
    const Fact& f = facts_[op.inputs[k].value];
    o.fact.push_back(&f);
    Subst sub(opd.subscript.begin(), opd.subscript.end());
    std::vector<bool> reads(n, false);
    for (const AffineExpr& x : opd.subscript)
      for (const AffineTerm& t : x.terms()) reads[t.index] = true;
    o.reads.push_back(std::move(reads));
    // A padded read yields its pad outside the tensor, where no fact speaks.
    if (opd.pad) {
      o.index.push_back(std::nullopt);
      o.region.push_back(std::nullopt);
      continue;
    }
    o.index.push_back(f.index ? ir::image_of(*f.index, sub) : std::nullopt);
    std::optional<Region> r = f.region.empty() ? std::nullopt : ir::substitute_region(f.region, sub);
    o.region.push_back(r ? std::optional<Region>(ir::canonical_region(std::move(*r), e.extents())) : r);
  }
  return o;
}

std::optional<bool> Recognizer::within(const Region& r, Side s) {
  if (!s.region) return std::nullopt;
  const Region& side = *s.region;
  auto has = [](const Region& x, const AffineConstraint& c) {
    return std::find(x.begin(), x.end(), c) != x.end();
  };
  if (s.fail < 0) {
    if (std::all_of(r.begin(), r.end(), [&](const AffineConstraint& c) { return has(side, c); }))
      return true;
    for (const AffineConstraint& c : r)
      if (has(side, ir::negated(c))) return false;
    return std::nullopt;
  }
  const AffineConstraint& f = side[static_cast<std::size_t>(s.fail)];
  if (has(r, f)) return false;
  if (r.size() == 1 && r[0] == ir::negated(f)) return true;
  return std::nullopt;
}

Val Recognizer::value(const Operands& o, std::size_t k, Side s) const {
  const Fact& f = *o.fact[k];
  if (f.index) return {Val::Finite};
  if (f.region.empty()) return f.inside;
  if (o.region[k])
    if (std::optional<bool> in = within(*o.region[k], s)) return *in ? f.inside : f.outside;
  return join(f.inside, f.outside);
}

Val Recognizer::eval_outside(const Expr& e, const ir::EinsumOp& es, const Operands& o,
                             const Region& r) const {
  Val v = eval(e, es, o, Side{&r, 0});
  for (std::size_t i = 1; i < r.size(); ++i) v = join(v, eval(e, es, o, Side{&r, static_cast<int>(i)}));
  return v;
}

std::vector<bool> Recognizer::reads_of(const Expr& e, const Operands& o, std::size_t n) const {
  std::vector<bool> r(n, false);
  if (e.op() == ExprOp::Operand) return o.reads[e.operand_index()];
  for (const Expr& c : e.children()) {
    std::vector<bool> x = reads_of(c, o, n);
    for (std::size_t i = 0; i < n; ++i) r[i] = r[i] || x[i];
  }
  return r;
}

Val Recognizer::eval(const Expr& e, const ir::EinsumOp& es, const Operands& o, Side s) const {
  switch (e.op()) {
    case ExprOp::Operand: return value(o, static_cast<std::size_t>(e.operand_index()), s);
    case ExprOp::Const: return Val::constant(e.value());
    case ExprOp::Select: {
      const Val c = eval(e.children()[0], es, o, s);
      if (c.kind == Val::Const) return eval(e.children()[c.c != 0 ? 1 : 2], es, o, s);
      return join(eval(e.children()[1], es, o, s), eval(e.children()[2], es, o, s));
    }
    default: break;
  }
  if (ir::is_comparison(e.op())) {
    if (std::optional<Truth> t = ir::comparison_truth(e, o.index, es.extents())) {
      // A comparison that holds (or fails) on the whole box is a constant: a window wider
      // than the keys, (k > q - W) with W past the context, leaves the causal half alone.
      if (std::optional<bool> all = whole_box(t->region, es.extents()))
        return Val::constant(*all == t->inside ? 1 : 0);
      if (s.region) {
        if (std::optional<bool> in = within(t->region, s)) return Val::constant(*in == t->inside ? 1 : 0);
        return {Val::Finite};
      }
    }
  }
  const std::vector<Expr>& ch = e.children();
  if (ch.size() == 1) return ir::abstract_unary(e.op(), eval(ch[0], es, o, s), o.integer);
  if (ch.size() == 2) {
    const Val a = eval(ch[0], es, o, s), b = eval(ch[1], es, o, s);
    // In a bool-only einsum every value is 0 or 1: min is `and`, max is `or` (JAX's lowering).
    if (o.integer.is_bool && e.op() == ExprOp::Min && (a.is(0) || b.is(0))) return Val::constant(0);
    if (o.integer.is_bool && e.op() == ExprOp::Max && (a.is(1) || b.is(1))) return Val::constant(1);
    if (e.op() == ExprOp::Div && a.is(0) && b.kind == Val::Finite && s.region && s.fail >= 0) {
      // 0 / d at a dead point: d is the value it has at some live point reading the same
      // elements, where the program's quotient is finite (the assumption), so d != 0.
      if (ir::covers_every_assignment(*s.region, es.extents(), reads_of(ch[1], o, es.indices.size())))
        return Val::constant(0);
      return {Val::Finite};
    }
    return ir::abstract_binary(e.op(), a, b);
  }
  Val v = eval(ch[0], es, o, s);
  for (std::size_t i = 1; i < ch.size(); ++i) v = join(v, eval(ch[i], es, o, s));
  return v.finite() ? Val{Val::Finite} : Val{Val::Any};
}

// Regions of the comparisons of indices in a combine, in the op's index space.
void truths(const Expr& e, const std::vector<std::optional<AffineExpr>>& idx,
            const std::vector<std::int64_t>& extents, std::vector<Region>& out) {
  if (std::optional<Truth> t = ir::comparison_truth(e, idx, extents)) {
    out.push_back(t->region);
    return;
  }
  for (const Expr& c : e.children()) truths(c, idx, extents, out);
}

// The regions to split an einsum's iteration space by: each operand's region and each
// comparison's, with the complement of those of one constraint, and the pairs of them (a
// band is two fills).
std::vector<Region> candidates(const std::vector<Region>& found,
                               const std::vector<std::int64_t>& extents) {
  std::vector<Region> base;
  auto add = [&](std::vector<Region>& to, Region r) {
    r = ir::canonical_region(std::move(r), extents);
    if (!r.empty() && std::find(to.begin(), to.end(), r) == to.end()) to.push_back(std::move(r));
  };
  for (const Region& r : found) {
    add(base, r);
    if (r.size() == 1) add(base, {ir::negated(r[0])});
  }
  std::vector<Region> all = base;
  for (std::size_t i = 0; i < base.size(); ++i)
    for (std::size_t j = i + 1; j < base.size(); ++j) {
      Region u = base[i];
      u.insert(u.end(), base[j].begin(), base[j].end());
      add(all, std::move(u));
    }
  return all;
}

bool Recognizer::try_mask(const ir::Op& op, Region add, bool forward) {
  const ir::EinsumOp& e = op.einsum();
  std::erase_if(add, [&](const AffineConstraint& c) {
    return std::find(e.mask.begin(), e.mask.end(), c) != e.mask.end();
  });
  if (add.empty()) return false;
  ir::EinsumOp masked = e;
  masked.mask.insert(masked.mask.end(), add.begin(), add.end());
  try {
    (void)cost::live_points(masked);  // a mask the cost module cannot count is not added
  } catch (const Unsupported&) {
    return false;
  }
  added_[op.id.value] = std::move(add);
  how_[op.id.value] = forward ? 1 : 2;
  return true;
}

void Recognizer::forward_einsum(const ir::Op& op) {
  const ir::EinsumOp& e = op.einsum();
  const ir::Tensor& out = g_.tensor(op.outputs[0]);
  Fact& f = facts_[out.id.value];
  const std::vector<std::int64_t> ext = e.extents();
  const std::size_t n = e.indices.size();
  for (std::int64_t x : ext)
    if (x < 1) return;
  // Output dimension -> index: the substitution from the op's space to the output's dims.
  Subst to_out(n);
  bool plain_out = e.output.size() == out.shape.size();
  std::vector<bool> in_out(n, false);
  for (std::size_t d = 0; d < e.output.size(); ++d) {
    if (std::optional<IndexPos> i = e.output[d].as_plain_index()) {
      if (in_out[*i]) plain_out = false;
      in_out[*i] = true;
      to_out[*i] = AffineExpr::index(static_cast<IndexPos>(d));
    } else if (!e.output[d].is_constant()) {
      plain_out = false;
    }
  }
  const bool elementwise =
      plain_out && e.reduce == Reduce::None && std::all_of(in_out.begin(), in_out.end(), [](bool b) { return b; });
  const Operands o = operands_of(op);

  if (elementwise && e.mask.empty()) {
    if (auto idx = ir::index_value(e.combine, o.index)) {
      f.index = exact_index(ir::image_of(*idx, to_out), out);
      if (f.index) return;
    }
  }
  // The regions to split the iteration space by: the op's own mask, else those its operands
  // and comparisons suggest.
  std::vector<Region> cands;
  if (!e.mask.empty()) {
    cands.push_back(ir::canonical_region(e.mask, ext));
  } else {
    std::vector<Region> found;
    for (std::size_t k = 0; k < o.region.size(); ++k)
      if (o.region[k]) found.push_back(*o.region[k]);
    truths(e.combine, o.index, ext, found);
    if (!found.empty()) cands = candidates(found, ext);
  }
  const Val whole = eval(e.combine, e, o, Side{});

  if (e.reduce == Reduce::None) {
    if (!elementwise) {
      f.inside = whole.kind == Val::Any ? whole : Val{Val::Finite};
      return;
    }
    // The best split: dead points computed as 0 (a mask), else any known dead value; the
    // smaller live region first.
    const Region* best = nullptr;
    Val best_in, best_out;
    int best_rank = -1;
    // The exact split (a constant on both sides: a mask's value, such as the band
    // `(j <= i) & (j > i - W)`), the one with the most constraints.
    const Region* exact = nullptr;
    Val exact_in, exact_out;
    for (const Region& r : cands) {
      const Val in = eval(e.combine, e, o, Side{&r, -1});
      const Val outv = e.mask.empty() ? eval_outside(e.combine, e, o, r) : Val::constant(0);
      if (outv.kind != Val::Const && in.kind != Val::Const) continue;
      const int rank = (outv.is(0) && in.kind != Val::Const ? 2 : outv.kind == Val::Const ? 1 : 0) *
                           1000 + static_cast<int>(r.size());
      if (rank > best_rank) {
        best = &r;
        best_in = in;
        best_out = outv;
        best_rank = rank;
      }
      if (in.kind == Val::Const && outv.kind == Val::Const && !(in == outv) &&
          (!exact || r.size() > exact->size())) {
        exact = &r;
        exact_in = in;
        exact_out = outv;
      }
    }
    if (!best) {
      f.inside = whole;
      return;
    }
    // Dead points the op computes as 0: its masked form writes 0 there.
    if (e.mask.empty() && best_out.is(0) && best_in.kind != Val::Const) try_mask(op, *best, true);
    // The value it holds: the exact split when there is one (a band's two constraints say
    // more than the mask's one, which leaves the other side unknown), else the mask's.
    if (exact && best_in.kind != Val::Const) {
      best = exact;
      best_in = exact_in;
      best_out = exact_out;
    }
    f = tidy(Fact{std::nullopt, ir::substitute_region_part(*best, to_out), best_in, best_out}, out.shape);
    return;
  }
  // A reduction: masked by a region outside which the combine gives the reduction's identity
  // (the smallest such live region).
  const bool has_identity =
      e.reduce == Reduce::Sum || e.reduce == Reduce::Max || e.reduce == Reduce::Min;
  const double identity = e.reduce == Reduce::Sum ? 0 : e.reduce == Reduce::Max ? -kInf : kInf;
  const Region* chosen = nullptr;
  for (const Region& r : cands) {
    if (!has_identity || (chosen && chosen->size() >= r.size())) continue;
    if (e.mask.empty()) {
      const Val dead = eval_outside(e.combine, e, o, r);
      // A mask constant below the data under a max (above it under a min) changes no row
      // that has a live point: it acts as the identity when every row has one.
      const bool below = dead.mask_constant() && ((e.reduce == Reduce::Max && dead.c < 0) ||
                                                  (e.reduce == Reduce::Min && dead.c > 0));
      if (!dead.is(identity) && !(below && ir::covers_every_assignment(r, ext, in_out))) continue;
    }
    chosen = &r;
  }
  Val result = whole;
  if (chosen && (!e.mask.empty() || try_mask(op, *chosen, true))) {
    result = eval(e.combine, e, o, Side{chosen, -1});
    // A row without a live point holds the identity: -inf or +inf for max and min.
    if (e.reduce != Reduce::Sum && !ir::covers_every_assignment(*chosen, ext, in_out)) result = {Val::Any};
  }
  f.inside = result.finite() ? Val{Val::Finite} : Val{Val::Any};
}

void Recognizer::forward_move(const ir::Op& op) {
  std::optional<ir::MovePaths> p = ir::move_paths(g_, op);
  if (!p) return;
  const Fact& in = facts_[op.inputs[0].value];
  const ir::Tensor& out = g_.tensor(op.outputs[0]);
  Fact f;
  f.inside = in.inside;
  f.outside = in.outside;
  if (op.move().kind == ir::MoveKind::Cast) {
    // A cast keeps 0, 1 and infinities in a float type, truth values in bool.
    auto cast = [&](Val v) -> Val {
      if (v.kind != Val::Const) return v;
      if (out.dtype == ir::DType::Bool) return Val::constant(v.c != 0);
      if (ir::is_float(out.dtype) && (v.c == 0 || v.c == 1 || std::isinf(v.c))) return v;
      // A widening float cast (bf16 or f16 to f32, f32 to f64) is exact: an eager attention's
      // bf16 fill of finfo.min stays that fill in the f32 softmax transformers upcasts to.
      if (ir::is_float(out.dtype) && ir::is_float(g_.tensor(op.inputs[0]).dtype) &&
          widening_float(g_.tensor(op.inputs[0]).dtype, out.dtype))
        return v;
      if (ir::is_integer(out.dtype) && (v.c == 0 || v.c == 1)) return v;
      return {Val::Finite};
    };
    f.inside = cast(f.inside);
    f.outside = cast(f.outside);
    if (in.index && out.dtype != ir::DType::Bool)
      f.index = exact_index(ir::image_of(*in.index, p->forward), out);
  } else if (in.index) {
    f.index = exact_index(ir::image_of(*in.index, p->forward), out);
  }
  if (!in.region.empty()) {
    std::optional<Region> r = ir::substitute_region(in.region, p->forward);
    if (!r) {
      f.region.clear();
      f.inside = join(f.inside, f.outside);
    } else {
      f.region = std::move(*r);
    }
  }
  facts_[out.id.value] = tidy(std::move(f), out.shape);
}

void Recognizer::forward_opaque(const ir::Op& op) {
  // arange / iota: start + i * step along the output's one dimension. (A repeat op's
  // outputs have no known structure.)
  if (op.kind() != ir::OpKind::Opaque) return;
  const ir::OpaqueOp& o = op.opaque();
  if (o.function != "arange" || op.outputs.size() != 1) return;
  const ir::Tensor& out = g_.tensor(op.outputs[0]);
  if (out.shape.size() != 1) return;
  auto num = [&](const char* name) -> std::optional<std::int64_t> {
    const std::optional<double> v = ir::find_number(o.attrs, name);
    if (!v || *v != std::floor(*v) || std::fabs(*v) > 1e15) return std::nullopt;
    return static_cast<std::int64_t>(*v);
  };
  const auto start = num("start"), step = num("step");
  if (!start || !step) return;
  facts_[out.id.value].index = exact_index(AffineExpr::make({{0, *step}}, *start), out);
}

void Recognizer::observe(TensorId t, Region r) {
  std::optional<Region>& d = demand_[t.value];
  read_[t.value] = true;
  if (!d) d = std::move(r);
  else if (!d->empty()) d = ir::common_constraints(*d, r);
}

Region Recognizer::branch_region(const ir::EinsumOp& e, const Operands& o, std::size_t k) const {
  // select(c, a, b): an operand that only a branch reads is observed where the branch is taken.
  const Expr& x = e.combine;
  if (x.op() != ExprOp::Select) return {};
  auto mentions = [&](const Expr& s, auto&& self) -> bool {
    if (s.op() == ExprOp::Operand) return static_cast<std::size_t>(s.operand_index()) == k;
    for (const Expr& c : s.children())
      if (self(c, self)) return true;
    return false;
  };
  const Expr& c = x.children()[0];
  const bool in_a = mentions(x.children()[1], mentions), in_b = mentions(x.children()[2], mentions);
  if (mentions(c, mentions) || in_a == in_b) return {};
  // The condition's truth: a comparison of indices, or an operand holding a mask.
  std::optional<Truth> t = ir::comparison_truth(c, o.index, e.extents());
  if (!t && c.op() == ExprOp::Operand) {
    const std::size_t j = static_cast<std::size_t>(c.operand_index());
    const Fact& f = *o.fact[j];
    if (o.region[j] && f.inside.kind == Val::Const && f.outside.kind == Val::Const &&
        (f.inside.c != 0) != (f.outside.c != 0))
      t = Truth{ir::canonical_region(*o.region[j], e.extents()), f.inside.c != 0};
    // A condition known on one side only (a causal mask and an input's padding mask): there
    // it takes one branch, so the other branch is observed only on the unknown side.
    if (!t && o.region[j] && (f.inside.kind == Val::Const) != (f.outside.kind == Val::Const)) {
      const Region r = ir::canonical_region(*o.region[j], e.extents());
      const bool known_inside = f.inside.kind == Val::Const;
      const bool known_truth = (known_inside ? f.inside.c : f.outside.c) != 0;
      if (in_a == known_truth) return {};  // the operand's branch is taken on the known side
      if (!known_inside) return r;
      if (r.size() == 1) return {ir::negated(r[0])};
      return {};
    }
  }
  if (!t || t->region.empty()) return {};
  const bool taken_inside = in_a == t->inside;
  if (taken_inside) return t->region;
  if (t->region.size() == 1) return {ir::negated(t->region[0])};
  return {};
}

// Index -> the dimension of operand k that reads it plainly (none for others).
Subst dims_of(const ir::EinsumOp& e, std::size_t k) {
  Subst to_dim(e.indices.size());
  const auto& sub = e.operands[k].subscript;
  for (std::size_t d = 0; d < sub.size(); ++d)
    if (std::optional<IndexPos> i = sub[d].as_plain_index())
      to_dim[*i] = AffineExpr::index(static_cast<IndexPos>(d));
  return to_dim;
}

Region Recognizer::read_region(const ir::Op& op, std::size_t k, const Operands& o) const {
  const ir::EinsumOp& e = op.einsum();
  Region r = e.mask;
  r.insert(r.end(), added_[op.id.value].begin(), added_[op.id.value].end());
  const Region b = branch_region(e, o, k);
  r.insert(r.end(), b.begin(), b.end());
  return ir::canonical_region(ir::substitute_region_part(r, dims_of(e, k)), g_.tensor(op.inputs[k]).shape);
}

void Recognizer::backward_op(const ir::Op& op) {
  const std::optional<Region> none;
  // The demand of the op's output: what its readers observe (everything for a program
  // output or an unread tensor).
  auto demand_of = [&](TensorId t) -> Region {
    const ir::Tensor& x = g_.tensor(t);
    if (x.role == ir::Role::Output || !read_[t.value] || !demand_[t.value]) return {};
    return *demand_[t.value];
  };
  switch (op.kind()) {
    case ir::OpKind::Einsum: {
      const ir::EinsumOp& e = op.einsum();
      const ir::Tensor& out = g_.tensor(op.outputs[0]);
      const Region d = demand_of(out.id);
      Subst from_out(e.output.begin(), e.output.end());
      Region space = ir::substitute_region_part(d, from_out);  // every output subscript maps
      if (!space.empty() && !facts_[out.id.value].structural() && how_[op.id.value] == 0)
        try_mask(op, ir::canonical_region(space, e.extents()), false);
      // The op's live points after masking, and the output demand, bound what it reads.
      const Operands o = operands_of(op);
      for (std::size_t k = 0; k < e.operands.size(); ++k) {
        Region r = read_region(op, k, o);
        const Region extra = ir::canonical_region(ir::substitute_region_part(space, dims_of(e, k)), g_.tensor(op.inputs[k]).shape);
        r.insert(r.end(), extra.begin(), extra.end());
        observe(op.inputs[k], ir::canonical_region(std::move(r), g_.tensor(op.inputs[k]).shape));
      }
      return;
    }
    case ir::OpKind::Move: {
      std::optional<ir::MovePaths> p = ir::move_paths(g_, op);
      for (TensorId t : op.inputs) {
        Region r;
        if (p) r = ir::canonical_region(ir::substitute_region_part(demand_of(op.outputs[0]), p->backward), g_.tensor(t).shape);
        observe(t, std::move(r));
      }
      return;
    }
    case ir::OpKind::Opaque: case ir::OpKind::Unanalyzed: case ir::OpKind::Repeat:
    case ir::OpKind::Collective:
      for (TensorId t : op.inputs) observe(t, {});
      return;
  }
}

MaskRecognition Recognizer::run(ir::Graph& g, const std::vector<KnownValues>& known) {
  const std::size_t nt = g_.tensors().size(), no = g_.ops().size();
  facts_.assign(nt, Fact{});
  demand_.assign(nt, std::nullopt);
  read_.assign(nt, false);
  added_.assign(no, {});
  how_.assign(no, 0);
  bool any_mask = false;
  for (const ir::Op& op : g_.ops()) {
    if (op.kind() == ir::OpKind::Einsum && !op.einsum().mask.empty()) any_mask = true;
    if (op.kind() == ir::OpKind::Opaque && op.opaque().function == "arange") any_mask = true;
    if (op.kind() == ir::OpKind::Einsum) {
      // Constant fills are facts too (ones, -inf).
      const Expr& c = op.einsum().combine;
      if (c.op() == ExprOp::Const && op.einsum().mask.empty()) {
        facts_[op.outputs[0].value].inside = Val::constant(c.value());
        continue;
      }
    }
  }
  for (const KnownValues& k : known) {
    const ir::Tensor& t = g_.tensor(k.tensor);
    facts_[t.id.value] = tidy(Fact{std::nullopt, k.region, Val::constant(k.inside),
                                   Val::constant(k.outside)}, t.shape);
    any_mask = true;
  }
  MaskRecognition result;
  if (!any_mask) return result;  // no structure to start from: nothing to do

  for (const ir::Op& op : g_.ops()) {
    switch (op.kind()) {
      case ir::OpKind::Einsum:
        if (op.outputs.size() == 1 && !(op.einsum().combine.op() == ExprOp::Const && op.einsum().mask.empty()))
          forward_einsum(op);
        break;
      case ir::OpKind::Move: forward_move(op); break;
      case ir::OpKind::Opaque: case ir::OpKind::Repeat: case ir::OpKind::Collective:
        forward_opaque(op);
        break;
      case ir::OpKind::Unanalyzed: break;
    }
  }
  for (std::size_t i = no; i-- > 0;) backward_op(g_.ops()[i]);

  for (std::size_t i = 0; i < no; ++i) {
    if (how_[i] == 1) result.forward.push_back(ir::OpId{static_cast<std::uint32_t>(i)});
    if (how_[i] == 2) result.backward.push_back(ir::OpId{static_cast<std::uint32_t>(i)});
  }
  if (result.forward.empty() && result.backward.empty()) return result;

  // Values that may differ: a backward-masked op's output, an op's output where it is not
  // wholly observed and it reads changed values there, and moves of changed values. (An op
  // reads its inputs only where they are observed, so a wholly observed output is unchanged.)
  std::vector<bool> changed(nt, false);
  for (const ir::Op& op : g_.ops()) {
    bool c = how_[op.id.value] == 2;
    for (std::size_t k = 0; k < op.inputs.size() && !c; ++k) {
      const TensorId t = op.inputs[k];
      if (!changed[t.value]) continue;
      // An einsum reading it only where it is observed (the demand's constraints all hold
      // there) computes what it did; its output changes only where it is not observed.
      c = op.kind() != ir::OpKind::Einsum ||
          !reads_within(op, k, demand_[t.value] ? *demand_[t.value] : Region{});
    }
    if (!c) continue;
    for (TensorId t : op.outputs) {
      if (g_.tensor(t).role == ir::Role::Output) continue;
      changed[t.value] = true;
      result.changed.push_back(t);
    }
  }

  // Rewrite the graph with the new masks (ids and names kept).
  ir::Rewriter rw(g);
  for (const ir::Tensor& t : g.tensors()) rw.keep(t.id);
  for (const ir::Op& op : g.ops()) {
    ir::Op copy = op;
    if (!added_[op.id.value].empty()) {
      ir::EinsumOp& e = std::get<ir::EinsumOp>(copy.body);
      e.mask.insert(e.mask.end(), added_[op.id.value].begin(), added_[op.id.value].end());
    }
    rw.keep(std::move(copy));
  }
  g = std::move(rw).finish();
  return result;
}

}  // namespace
}  // namespace detail

MaskRecognition recognize_masks(ir::Graph& g, const std::vector<KnownValues>& known) {
  detail::Recognizer r(g);
  try {
    return r.run(g, known);
  } catch (const ir::AffineOverflow&) {
    return {};  // index arithmetic past 64 bits: no structure is known (the graph is as it was)
  }
}

namespace detail {

void recognize_masks_in(LowerResult& r, const OpTrace* trace) {
  // Constant tensors whose values the frontend read (TraceBand): regions over their last
  // two dimensions (r, c), lower <= c - r <= upper.
  std::vector<KnownValues> known;
  if (trace) {
    for (std::size_t i = 0; i < r.trace_ids.size() && i < r.graph.tensors().size(); ++i) {
      const std::int64_t id = r.trace_ids[i];
      if (id < 0 || static_cast<std::size_t>(id) >= trace->index_.size() || trace->index_[id] == 0)
        continue;
      const TraceTensor& tt = trace->tensor(id);
      const ir::Tensor& t = r.graph.tensors()[i];
      if (!tt.band || t.shape != tt.shape || t.shape.size() < 2) continue;
      if (tt.role != TraceRole::Buffer && tt.role != TraceRole::Constant) continue;
      const auto col = static_cast<IndexPos>(t.shape.size() - 1);
      const auto row = static_cast<IndexPos>(col - 1);
      KnownValues k{t.id, {}, tt.band->inside, tt.band->outside};
      if (tt.band->lower)  // c - r - lower >= 0
        k.region.push_back({AffineExpr::make({{col, 1}, {row, -1}}, -*tt.band->lower)});
      if (tt.band->upper)  // upper - (c - r) >= 0
        k.region.push_back({AffineExpr::make({{col, -1}, {row, 1}}, *tt.band->upper)});
      known.push_back(std::move(k));
    }
  }
  const MaskRecognition m = recognize_masks(r.graph, known);
  if (m.forward.empty() && m.backward.empty()) return;
  // A changed tensor no longer holds the framework's values everywhere: it is not compared.
  for (TensorId t : m.changed)
    if (t.value < r.trace_ids.size()) r.trace_ids[t.value] = -1;
  ir::verify(r.graph);
}

}  // namespace detail

}  // namespace solar::lower
