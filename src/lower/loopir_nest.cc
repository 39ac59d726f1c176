// Lifting a loop nest of the loop language to einsums (docs/loop-language.md, "Lifting
// rules"). The recorder (python/solar/frontends/loopir/record.py) writes each nest as its
// loops and statements over JSON expression trees; this file turns them into iteration
// spaces, affine subscripts, masks, combine expressions and reductions, and refuses what it
// cannot express exactly.
#include "loopir_nest.h"

#include "loopir_loops.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "families.h"
#include "solar/cost/work.h"
#include "solar/ir/text.h"
#include "solar/util/errors.h"
#include "solar/util/int_math.h"

namespace solar::lower::detail {
namespace {

using ir::IndexPos;
using namespace loopir;

// Whether an affine subscript takes each value at most once over its indices' box: sorted
// by |coefficient|, each coefficient exceeds the span of the smaller terms (a mixed-radix
// number: `g*G + r` with r over G values). Indices of extent 1 span nothing.
bool writes_once(const AffineExpr& a, const Space& space) {
  std::vector<std::pair<__int128, std::int64_t>> terms;  // (|coef|, extent)
  for (const AffineTerm& t : a.terms()) {
    const std::int64_t n = space.dims[t.index].extent;
    if (n > 1) terms.emplace_back(t.coef < 0 ? -static_cast<__int128>(t.coef) : t.coef, n);
  }
  std::sort(terms.begin(), terms.end());
  // Coefficients and extents are below 2^62, and a term is added only when its coefficient
  // exceeds the span so far: the span stays below 2^62 + 2^124, within 128 bits.
  __int128 span = 0;
  for (const auto& [k, n] : terms) {
    if (k <= span) return false;
    span += k * (n - 1);
  }
  return true;
}

// ---------------------------------------------------------------- reductions

bool is_self(const json& t) { return t.is_object() && t.value("self", false); }

bool has_self(const json& t) {
  if (!t.is_object()) return false;
  if (is_self(t)) return true;
  if (auto a = t.find("args"); a != t.end())
    for (const json& x : *a)
      if (has_self(x)) return true;
  return false;
}

std::string fn_name(const json& t) {
  if (!t.is_object()) return {};
  auto f = t.find("fn");
  return f == t.end() ? std::string() : f->get<std::string>();
}

// The arguments of a function node: its "args" list, or nullptr (a malformed node is left
// to value(), which refuses it).
const json* args_of(const json& t) {
  if (!t.is_object()) return nullptr;
  auto a = t.find("args");
  return a != t.end() && a->is_array() ? &*a : nullptr;
}

void signed_terms(const json& t, int sign, std::vector<std::pair<int, json>>& out) {
  const std::string f = fn_name(t);
  const json* a = args_of(t);
  if ((f == "add" || f == "sub") && a && a->size() == 2) {
    signed_terms((*a)[0], sign, out);
    signed_terms((*a)[1], f == "add" ? sign : -sign, out);
  } else if (f == "neg" && a && a->size() == 1) {
    signed_terms((*a)[0], -sign, out);
  } else {
    out.emplace_back(sign, t);
  }
}

void chain(const json& t, const std::string& op, std::vector<json>& out) {
  const json* a = args_of(t);
  if (fn_name(t) == op && a) {
    for (const json& x : *a) chain(x, op, out);
  } else {
    out.push_back(t);
  }
}

json node(const std::string& f, std::vector<json> args) {
  return json{{"fn", f}, {"args", std::move(args)}};
}

// The sum of signed terms [lo, hi) as a balanced tree of add, sub and neg: depth log2(n), so
// that a sum of many terms stays within the IR's expression depth (the recorder's
// trees.signed_sum builds the same tree). Returns (sign, tree).
std::pair<int, json> signed_sum(const std::vector<std::pair<int, json>>& terms, std::size_t lo,
                                std::size_t hi) {
  if (hi - lo == 1) return terms[lo];
  const std::size_t mid = (lo + hi) / 2;
  auto [sa, a] = signed_sum(terms, lo, mid);
  auto [sb, b] = signed_sum(terms, mid, hi);
  if (sa > 0) return {1, node(sb > 0 ? "add" : "sub", {std::move(a), std::move(b)})};
  if (sb > 0) return {1, node("sub", {std::move(b), std::move(a)})};
  return {-1, node("add", {std::move(a), std::move(b)})};
}

// A chain of one associative function over xs [lo, hi) as a balanced tree (trees.chain).
json balanced(const std::string& f, const std::vector<json>& xs, std::size_t lo, std::size_t hi) {
  if (hi - lo == 1) return xs[lo];
  const std::size_t mid = (lo + hi) / 2;
  return node(f, {balanced(f, xs, lo, mid), balanced(f, xs, mid, hi)});
}

struct Statement {
  Reduce reduce = Reduce::None;
  json body;  // the value without the target's own read
};

// `T[s] = value` as a reduction into T[s] when the value is T[s] op e (op + * max min, in any
// order of an associative chain), else an assignment. `same` tells subscripts equal.
template <typename Same>
Statement recognize(const json& value, Same same) {
  const std::string f = fn_name(value);
  if (f == "add" || f == "sub") {
    std::vector<std::pair<int, json>> terms;
    signed_terms(value, 1, terms);
    int selfs = 0, self_sign = 0;
    json self;
    std::vector<std::pair<int, json>> rest;
    for (auto& [s, t] : terms) {
      if (is_self(t)) ++selfs, self_sign = s, self = t;
      else rest.emplace_back(s, t);
    }
    bool clean = selfs == 1 && self_sign > 0 && same(self["index"]);
    for (auto& [s, t] : rest) clean = clean && !has_self(t);
    if (clean) {
      if (rest.empty()) return {Reduce::Sum, json(0.0)};
      auto [sign, body] = signed_sum(rest, 0, rest.size());
      return {Reduce::Sum, sign > 0 ? std::move(body) : node("neg", {std::move(body)})};
    }
  }
  static const std::map<std::string, std::pair<Reduce, double>> kChains{
      {"mul", {Reduce::Prod, 1.0}},
      {"max", {Reduce::Max, -std::numeric_limits<double>::infinity()}},
      {"min", {Reduce::Min, std::numeric_limits<double>::infinity()}}};
  if (auto it = kChains.find(f); it != kChains.end()) {
    std::vector<json> leaves, rest;
    chain(value, f, leaves);
    int selfs = 0;
    json self;
    for (json& x : leaves) {
      if (is_self(x)) ++selfs, self = x;
      else rest.push_back(x);
    }
    bool clean = selfs == 1 && same(self["index"]);
    for (const json& x : rest) clean = clean && !has_self(x);
    if (clean)
      return {it->second.first,
              rest.empty() ? json(it->second.second) : balanced(f, rest, 0, rest.size())};
  }
  return {Reduce::None, value};
}

double identity(Reduce r) {
  switch (r) {
    case Reduce::Sum: return 0;
    case Reduce::Prod: return 1;
    case Reduce::Max: return -std::numeric_limits<double>::infinity();
    case Reduce::Min: return std::numeric_limits<double>::infinity();
    case Reduce::None: case Reduce::Any: case Reduce::All: return 0;
  }
  return 0;
}

// The elementwise function that folds a reduction's partial result into an earlier value.
ExprOp fold_op(Reduce r) {
  switch (r) {
    case Reduce::Sum: return ExprOp::Add;
    case Reduce::Prod: return ExprOp::Mul;
    case Reduce::Max: return ExprOp::Max;
    case Reduce::Min: return ExprOp::Min;
    case Reduce::None: case Reduce::Any: case Reduce::All: break;
  }
  SOLAR_UNREACHABLE("no fold for this reduction");
}

// ---------------------------------------------------------------- one statement

// The operands of a statement's einsum: one per distinct (tensor, subscript) read.
struct Reads {
  std::vector<TensorId> tensors;
  std::vector<std::vector<AffineExpr>> subs;
  int add(TensorId t, std::vector<AffineExpr> sub) {
    for (std::size_t k = 0; k < tensors.size(); ++k)
      if (tensors[k] == t && subs[k] == sub) return static_cast<int>(k);
    tensors.push_back(t);
    subs.push_back(std::move(sub));
    return static_cast<int>(tensors.size() - 1);
  }
};

class StatementLift {
 public:
  StatementLift(Context& c, const Loops& loops, const json& st, std::size_t k, std::string op)
      : c_(c), loops_(loops), st_(st), k_(k), w_{c, line_field(st, c.op().line), std::move(op)} {}

  void run() {
    try {
      lift();
    } catch (const IndexOverflow&) {
      w_.refuse(Kind::NotAffine, "not affine", kIndexOverflow);
    }
  }

 private:
  void lift() {
    c_.at(w_.line, w_.op);
    space_ = loops_.space;
    mask_ = loops_.mask;
    guards();
    const json& target = st_.at("target");
    out_ = c_.def(k_);
    out_sub_ = subscript(target.at("index"), c_.t(out_).shape, "the target");
    narrow_by_guards();
    widen_partial_output();  // before any read: plain reads see the final extents
    check_target_inside();
    Statement s = recognize(st_.at("value"), [&](const json& index) {
      return subscript_or_empty(index) == out_sub_;
    });
    if (s.reduce == Reduce::None && has_self(st_.at("value")))
      w_.refuse(Kind::OutsideLanguage, "outside the language",
                fmt::format("reads `{}` other than as `T[s] = T[s] op e` (op + * max min): a "
                            "loop-carried dependence", name()));
    Expr combine = value(s.body);
    drop_unused_indices(s.reduce);
    if (s.reduce == Reduce::None) check_assignment();
    emit(s.reduce, std::move(combine));
  }

  std::string name() const { return st_.at("target").value("name", std::string("?")); }

  void guards() {
    for (const json& g : st_.value("guards", json::array())) {
      std::optional<AffineExpr> a = affine_of(g.at("lhs"), loops_),
                                b = affine_of(g.at("rhs"), loops_);
      if (!a || !b)
        w_.refuse(Kind::NotAffine, "not affine", "a guard is not affine in the loop variables");
      const std::string cmp = g.at("cmp").get<std::string>();
      AffineExpr ba = combine(*b, *a, -1), ab = combine(*a, *b, -1);  // b - a, a - b
      if (cmp == "le") mask_.push_back({ba});
      else if (cmp == "lt") mask_.push_back({combine(ba, constant(-1), 1)});
      else if (cmp == "ge") mask_.push_back({ab});
      else if (cmp == "gt") mask_.push_back({combine(ab, constant(-1), 1)});
      else if (cmp == "eq") mask_.push_back({ab}), mask_.push_back({ba});
      else w_.refuse(Kind::OutsideLanguage, "outside the language",
                     fmt::format("a guard compares with `{}` (use < <= > >= ==)", cmp));
    }
  }

  std::vector<AffineExpr> subscript_or_empty(const json& index) const {
    std::vector<AffineExpr> out;
    for (const json& x : index) {
      std::optional<AffineExpr> a = affine_of(x, loops_);
      if (!a) return {};
      out.push_back(std::move(*a));
    }
    return out;
  }

  std::vector<AffineExpr> subscript(const json& index, const std::vector<std::int64_t>& shape,
                                    const std::string& what) const {
    if (!index.is_array() || index.size() != shape.size())
      w_.refuse(Kind::ShapeMismatch, "shape mismatch",
                fmt::format("{} has {} dimensions but {} subscripts", what, shape.size(),
                            index.is_array() ? index.size() : 0));
    std::vector<AffineExpr> out = subscript_or_empty(index);
    if (out.size() != shape.size())
      w_.refuse(Kind::NotAffine, "not affine",
                fmt::format("a subscript of {} is not affine in the loop variables", what));
    return out;
  }

  // The combine expression of a value tree; each tensor element read becomes an operand.
  // Deeper than kMaxValueDepth (the recorder's trees are at most 100 levels and balanced
  // chains) it is refused: the IR's expressions nest at most 256 levels.
  static constexpr int kMaxValueDepth = 200;
  Expr value(const json& t, int depth = 0) {
    if (depth > kMaxValueDepth)
      w_.refuse(Kind::OutsideLanguage, "outside the language",
                fmt::format("an expression nests deeper than {} levels", kMaxValueDepth));
    if (std::optional<double> x = tree_number(t)) return Expr::constant(*x);
    if (!t.is_object())
      w_.refuse(Kind::OutsideLanguage, "outside the language", "a value that is no expression");
    if (t.contains("var"))
      w_.refuse(Kind::NotAffine, "not affine",
                fmt::format("the loop variable `{}` is used as a value",
                            t["var"].get<std::string>()));
    if (t.contains("load")) return load(earlier_version(int_value(t["load"], "load")), t);
    if (is_self(t))
      w_.refuse(Kind::OutsideLanguage, "outside the language",
                fmt::format("reads `{}` while writing it: a loop-carried dependence", name()));
    const std::string f = fn_name(t);
    if (f == "cast") {
      const json& inner = t.at("args").at(0);
      if (!inner.is_object() || !inner.contains("load"))
        w_.refuse(Kind::OutsideLanguage, "outside the language",
                  "cast applies to one element read: cast(T[...], \"bf16\")");
      return load(cast_of(earlier_version(int_value(inner["load"], "load")), t.at("dtype")),
                  inner);
    }
    std::optional<ExprOp> op = ir::parse_expr_op(f);
    if (!op || *op == ExprOp::Operand || *op == ExprOp::Const)
      w_.refuse(Kind::UnknownIntrinsic, "unknown intrinsic",
                fmt::format("`{}` is not a function of the loop language", f));
    std::vector<Expr> args;
    for (const json& a : t.at("args")) args.push_back(value(a, depth + 1));
    if (static_cast<int>(args.size()) != ir::expr_arity(*op))
      w_.refuse(Kind::UnknownIntrinsic, "unknown intrinsic",
                fmt::format("`{}` takes {} arguments, got {}", f, ir::expr_arity(*op),
                            args.size()));
    return Expr::make(*op, std::move(args));
  }

  // The graph tensor of trace tensor `id`, a version earlier than the nest's own: the
  // recorder never has a nest read what it writes (a trace that does is malformed).
  TensorId earlier_version(std::int64_t id) {
    for (const std::optional<std::int64_t>& out : c_.op().outputs)
      if (out == id)
        throw UserError(Kind::Parse,
                        fmt::format("a malformed loopir::nest op: it reads t{}, which it writes",
                                    id),
                        Origin{c_.op().file, w_.line, w_.op});
    return c_.use(id);
  }

  Expr load(TensorId tensor, const json& t) {
    const ir::Tensor& x = c_.t(tensor);
    std::vector<AffineExpr> sub = subscript(t.at("index"), x.shape, fmt::format("`{}`", x.name));
    tensor = fit_plain_reads(tensor, sub);
    return Expr::operand(reads_.add(tensor, std::move(sub)));
  }

  // The whole tensor at another dtype (one cast per tensor and dtype within the nest).
  TensorId cast_of(TensorId in, const json& dtype) {
    const ir::DType dt = Context::dtype_of(dtype.get<std::string>());
    if (c_.t(in).dtype == dt) return in;
    TensorId out = c_.temp(fmt::format("{}", ir::dtype_name(dt)), c_.t(in).shape, dt);
    c_.move(ir::MoveKind::Cast, {in}, out);
    return out;
  }

  // A plain loop variable over part of a dimension reads a free slice view of that part (the
  // IR gives a plain subscript the index's extent); past the dimension it is refused.
  TensorId fit_plain_reads(TensorId tensor, const std::vector<AffineExpr>& sub) {
    const ir::Tensor& x = c_.t(tensor);
    std::vector<std::int64_t> ends = x.shape;
    bool slice = false;
    for (std::size_t d = 0; d < sub.size(); ++d) {
      std::optional<IndexPos> p = sub[d].as_plain_index();
      if (!p) continue;
      const std::int64_t e = space_.dims[*p].extent;
      if (e > x.shape[d])
        w_.refuse(Kind::ShapeMismatch, "shape mismatch",
                  fmt::format("`{}[...]` reads index {} of dimension {} of size {}: `{}` runs "
                              "past it", x.name, e - 1, d, x.shape[d], space_.dims[*p].name));
      if (e < x.shape[d]) ends[d] = e, slice = true;
    }
    if (!slice) return tensor;
    TensorId view = c_.temp("part", ends, x.dtype);
    c_.move(ir::MoveKind::Slice, {tensor}, view,
            {{"starts", std::vector<std::int64_t>(ends.size(), 0)}, {"ends", ends},
             {"steps", std::vector<std::int64_t>(ends.size(), 1)}});
    return view;
  }

  // A loop no subscript of the statement uses would repeat its work: refused, unless it runs
  // once, when its index is dropped (fixed at its first value).
  void drop_unused_indices(Reduce reduce) {
    std::vector<bool> used(space_.dims.size(), false);
    auto mark = [&](const std::vector<AffineExpr>& sub) {
      for (const AffineExpr& a : sub)
        for (const AffineTerm& t : a.terms()) used[t.index] = true;
    };
    for (const auto& s : reads_.subs) mark(s);
    mark(out_sub_);
    std::vector<IndexPos> remap(space_.dims.size(), -1);
    Space kept;
    for (std::size_t i = 0; i < used.size(); ++i) {
      if (used[i]) {
        remap[i] = kept.add(space_.dims[i].name, space_.dims[i].extent);
      } else if (space_.dims[i].extent > 1) {
        w_.refuse(Kind::OutsideLanguage, "outside the language",
                  fmt::format("the loop over `{}` is used by no subscript of this {}: its "
                              "iterations would repeat the same work", space_.dims[i].name,
                              reduce == Reduce::None ? "assignment" : "reduction"));
      }
    }
    if (kept.dims.size() == space_.dims.size()) return;
    auto moved = [&](const AffineExpr& a) {
      std::vector<AffineTerm> terms;
      for (const AffineTerm& t : a.terms())
        if (remap[t.index] >= 0) terms.push_back({remap[t.index], t.coef});
      return AffineExpr::make(std::move(terms), a.constant_term());
    };
    for (auto& sub : reads_.subs)
      for (AffineExpr& a : sub) a = moved(a);
    for (AffineExpr& a : out_sub_) a = moved(a);
    for (AffineConstraint& m : mask_) m.expr = moved(m.expr);
    space_ = std::move(kept);
  }

  // An assignment writes each element once: every loop variable is in the target's
  // subscript, and each dimension's subscript is a mixed-radix number of its variables
  // (`g*G + r` with r over G values; writes_once).
  void check_assignment() const {
    std::vector<int> dim_of(space_.dims.size(), -1);
    for (std::size_t d = 0; d < out_sub_.size(); ++d) {
      if (!writes_once(out_sub_[d], space_))
        w_.refuse(Kind::OutsideLanguage, "outside the language",
                  fmt::format("writes `{}` at a subscript of several loop variables whose "
                              "values overlap: an assignment writes each element once",
                              name()));
      for (const AffineTerm& t : out_sub_[d].terms()) dim_of[t.index] = static_cast<int>(d);
    }
    for (std::size_t i = 0; i < dim_of.size(); ++i)
      if (dim_of[i] < 0)
        w_.refuse(Kind::OutsideLanguage, "outside the language",
                  fmt::format("the assignment to `{}` repeats over `{}` (not in its subscript): "
                              "accumulate with += or max()", name(), space_.dims[i].name));
  }

  // Guards narrow a loop where a subscript needs it: a plain loop-variable subscript over more
  // values than its dimension holds (`for t in range(D + 1): if t < D: x[b, t]`), or a
  // target subscript that leaves its tensor over the loops' ranges (`if t >= 1: y[b, t - 1]
  // = ...`). Each index of such a subscript takes the range its guards on it alone leave
  // (the points outside are masked out anyway): the extent shrinks, a lower bound shifts the
  // index (the loop variables, the target's subscript and the mask follow), and those
  // guards, now true on every point, are dropped. What still leaves its tensor is refused
  // by the reads and the write as before.
  void narrow_by_guards() {
    std::vector<bool> want(space_.dims.size(), false);
    auto visit = [&](const json& index, const std::vector<std::int64_t>& shape) {
      if (!index.is_array() || index.size() != shape.size()) return;  // refused later
      for (std::size_t d = 0; d < shape.size(); ++d)
        if (std::optional<AffineExpr> a = affine_of(index[d], loops_))
          if (std::optional<IndexPos> p = a->as_plain_index())
            if (space_.dims[*p].extent > shape[d]) want[*p] = true;
    };
    visit(st_.at("target").at("index"), c_.t(out_).shape);
    visit_loads(st_.at("value"), visit, 0);
    const std::vector<std::int64_t>& shape = c_.t(out_).shape;
    std::vector<std::int64_t> ext = extents(space_);
    for (std::size_t d = 0; d < out_sub_.size(); ++d)
      if (out_sub_[d].min_value(ext) < 0 || out_sub_[d].max_value(ext) >= shape[d])
        for (const AffineTerm& t : out_sub_[d].terms()) want[t.index] = true;
    for (std::size_t i = 0; i < want.size(); ++i) {
      if (!want[i]) continue;
      const IndexPos p = static_cast<IndexPos>(i);
      std::int64_t lo = 0, hi = space_.dims[p].extent - 1;  // the values the guards leave
      for (const AffineConstraint& m : mask_) {
        if (m.expr.terms().size() != 1 || m.expr.terms()[0].index != p) continue;
        const std::int64_t k = m.expr.terms()[0].coef, c = m.expr.constant_term();
        if (k > 0) lo = std::max(lo, solar::ceil_div(-c, k));  // k p + c >= 0
        if (k < 0) hi = std::min(hi, solar::floor_div(c, -k));
      }
      if (hi < lo || (lo == 0 && hi == space_.dims[p].extent - 1)) continue;
      if (lo > 0) shift_index(p, lo);
      space_.dims[p].extent = hi - lo + 1;
      ext = extents(space_);
      std::erase_if(mask_, [&](const AffineConstraint& m) {
        return m.expr.terms().size() == 1 && m.expr.terms()[0].index == p &&
               m.expr.min_value(ext) >= 0;
      });
    }
  }

  // Index p becomes p + by everywhere it stands: the loop variables, the mask and the
  // target's subscript (reads are built from the loop variables afterwards).
  void shift_index(IndexPos p, std::int64_t by) {
    auto shifted = [&](const AffineExpr& e) {
      for (const AffineTerm& t : e.terms()) {
        if (t.index != p) continue;
        std::int64_t delta;
        if (__builtin_mul_overflow(t.coef, by, &delta)) index_overflow();
        return combine(e, constant(delta), 1);
      }
      return e;
    };
    for (auto& [var, e] : loops_.vars) e = shifted(e);
    for (AffineConstraint& m : mask_) m.expr = shifted(m.expr);
    for (AffineExpr& a : out_sub_) a = shifted(a);
  }

  // Calls visit(index, shape) for each element read of a value tree (casts included).
  template <typename Visit>
  void visit_loads(const json& t, const Visit& visit, int depth) const {
    if (depth > kMaxValueDepth || !t.is_object()) return;  // value() refuses it
    if (auto l = t.find("load"); l != t.end() && t.contains("index")) {
      visit(t["index"], c_.shape(int_value(*l, "load")));
      return;
    }
    if (const json* a = args_of(t))
      for (const json& x : *a) visit_loads(x, visit, depth + 1);
  }

  // A target dimension written by a plain loop variable over part of it: the index takes
  // the dimension's extent and a mask keeps its own range (the rest is not written).
  void widen_partial_output() {
    const std::vector<std::int64_t>& shape = c_.t(out_).shape;
    for (std::size_t d = 0; d < out_sub_.size(); ++d) {
      std::optional<IndexPos> p = out_sub_[d].as_plain_index();
      if (!p) continue;
      ir::IndexDim& dim = space_.dims[*p];
      if (dim.extent > shape[d])
        w_.refuse(Kind::ShapeMismatch, "shape mismatch",
                  fmt::format("writes `{}` at index {} of dimension {} of size {}", name(),
                              dim.extent - 1, d, shape[d]));
      if (dim.extent < shape[d]) {
        mask_.push_back({combine(constant(dim.extent - 1), AffineExpr::index(*p), -1)});
        dim.extent = shape[d];
        widened_ = true;
      }
    }
  }

  // A write's affine subscript stays inside its tensor over the loops' ranges (narrowed by
  // the guards on single loop variables, narrow_by_guards): the IR has no pad value for an
  // output, and a guard over several variables does not narrow their ranges.
  void check_target_inside() const {
    const std::vector<std::int64_t>& shape = c_.t(out_).shape;
    const std::vector<std::int64_t> ext = extents(space_);
    for (std::size_t d = 0; d < out_sub_.size(); ++d) {
      const std::int64_t lo = out_sub_[d].min_value(ext), hi = out_sub_[d].max_value(ext);
      if (lo < 0 || hi >= shape[d])
        w_.refuse(Kind::ShapeMismatch, "shape mismatch",
                  fmt::format("writes `{}` at `{}` in dimension {}, which ranges over [{}, {}] "
                              "outside its size {} (narrow the loop's range, or guard its "
                              "loop variables one by one)",
                              name(), ir::print_affine(out_sub_[d], space_.dims), d, lo, hi,
                              shape[d]));
    }
  }

  // Every element of the target is written (assignments): plain subscripts, no mask.
  bool covers_target() const {
    if (widened_ || !mask_.empty()) return false;
    for (const AffineExpr& a : out_sub_)
      if (!a.as_plain_index()) return false;
    return true;
  }

  // Operands whose affine subscript can leave their tensor: allowed where the mask excludes
  // those points (then a pad value stands there, never read); refused otherwise.
  std::vector<std::optional<double>> pads() const {
    std::vector<std::optional<double>> out(reads_.tensors.size());
    const std::vector<std::int64_t> ext = extents(space_);
    for (std::size_t k = 0; k < reads_.tensors.size(); ++k) {
      const ir::Tensor& x = c_.t(reads_.tensors[k]);
      for (std::size_t d = 0; d < x.shape.size(); ++d) {
        const AffineExpr& a = reads_.subs[k][d];
        if (a.as_plain_index()) continue;
        const std::int64_t lo = a.min_value(ext), hi = a.max_value(ext);
        if (lo >= 0 && hi < x.shape[d]) continue;
        if ((lo < 0 && !excluded(combine(constant(-1), a, -1))) ||                    // a <= -1
            (hi >= x.shape[d] && !excluded(combine(a, constant(x.shape[d]), -1))))  // a >= size
          w_.refuse(Kind::ShapeMismatch, "shape mismatch",
                    fmt::format("`{}` is read at `{}` in dimension {}, which ranges over [{}, "
                                "{}] outside its size {}, and no guard excludes those points",
                                x.name, ir::print_affine(a, space_.dims), d, lo, hi,
                                x.shape[d]));
        out[k] = 0.0;
      }
    }
    return out;
  }

  // Whether no live point of the statement satisfies `e >= 0`.
  bool excluded(const AffineExpr& e) const {
    const std::vector<std::int64_t> ext = extents(space_);
    for (const AffineConstraint& m : mask_) {
      // m >= 0 on live points and m + e <= -1 everywhere in the box: e < 0 on live points.
      if (combine(m.expr, e, 1).max_value(ext) <= -1) return true;
    }
    ir::EinsumOp probe;
    probe.indices = space_.dims;
    probe.mask = mask_;
    probe.mask.push_back({e});
    try {
      return cost::live_points(probe) == Count(0);
    } catch (const Unsupported&) {
      return false;  // too large to enumerate: not proven
    }
  }

  void emit(Reduce reduce, Expr combine) {
    const json& prior = st_.at("target").at("prior");
    const bool from_fill = prior.contains("fill");
    const double fill = from_fill ? number_value(prior["fill"]).value_or(0) : 0;
    auto einsum_into = [&](TensorId dst, Expr comb, Reduce r) {
      c_.einsum(reads_.tensors, dst, space_, reads_.subs, out_sub_, std::move(comb), r, mask_,
                pads());
    };
    if (reduce == Reduce::None) {
      if (!covers_target() && !(from_fill && fill == 0))
        w_.refuse(Kind::OutsideLanguage, "outside the language",
                  fmt::format("writes only part of `{}`, whose other elements hold {}: the "
                              "lifted graph cannot keep them; write every element, or start "
                              "from a tensor with fill 0", name(),
                              from_fill ? fmt::format("its fill {}", fill) : "an earlier value"));
      return einsum_into(out_, std::move(combine), Reduce::None);
    }
    if (from_fill && fill == identity(reduce)) return einsum_into(out_, std::move(combine), reduce);
    if (covers_target() && reduced_none()) {  // nothing reduced: one elementwise op folds
      Expr earlier = from_fill ? Expr::constant(fill)
                               : Expr::operand(reads_.add(
                                     earlier_version(int_value(prior.at("tensor"), "prior")),
                                     out_sub_));
      return einsum_into(out_, Expr::make(fold_op(reduce), {earlier, std::move(combine)}),
                         Reduce::None);
    }
    TensorId partial = c_.temp("partial", c_.t(out_).shape, c_.t(out_).dtype);
    einsum_into(partial, std::move(combine), reduce);
    if (from_fill)
      return c_.elementwise({partial}, out_, Expr::make(fold_op(reduce),
                                                         {Expr::operand(0), Expr::constant(fill)}));
    c_.elementwise({earlier_version(int_value(prior.at("tensor"), "prior")), partial}, out_,
                   Expr::make(fold_op(reduce), {Expr::operand(0), Expr::operand(1)}));
  }

  bool reduced_none() const {
    std::vector<bool> in_out(space_.dims.size(), false);
    for (const AffineExpr& a : out_sub_)
      for (const AffineTerm& t : a.terms()) in_out[t.index] = true;
    return std::all_of(in_out.begin(), in_out.end(), [](bool b) { return b; });
  }

  Context& c_;
  Loops loops_;  // the nest's, narrowed for this statement (narrow_by_guards)
  const json& st_;
  std::size_t k_;
  Where w_;
  Space space_;
  std::vector<AffineConstraint> mask_;
  TensorId out_;
  std::vector<AffineExpr> out_sub_;
  Reads reads_;
  bool widened_ = false;
};

}  // namespace

void lift_nest(Context& c) {
  const json& args = c.op().args;
  const std::string op = fmt::format("loopir::{}", args.value("kernel", std::string("nest")));
  Where w{c, c.op().line, op};
  if (!args.contains("loops") || !args["loops"].is_array() || args["loops"].empty() ||
      !args.contains("statements") || !args["statements"].is_array())
    w.refuse(Kind::OutsideLanguage, "outside the language", "a nest needs loops and statements");
  Loops loops;
  try {
    loops = loops_of(args["loops"], w);
  } catch (const IndexOverflow&) {
    w.refuse(Kind::NotAffine, "not affine", kIndexOverflow);
  }
  const json& statements = args["statements"];
  if (statements.size() != c.op().outputs.size())
    w.refuse(Kind::OutsideLanguage, "outside the language",
             "a nest writes one new version per statement");
  for (std::size_t k = 0; k < statements.size(); ++k)
    StatementLift(c, loops, statements[k], k, op).run();
}

}  // namespace solar::lower::detail
