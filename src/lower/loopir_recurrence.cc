// Lifting a recurrence of the loop language (docs/loop-language.md, "Recurrences"). The
// recorder (python/solar/frontends/loopir/recurrence.py) writes it as one
// `loopir::recurrence` op: the step loop, its nests' own loops, and the statements (each
// naming its nest), where a read of a tensor the recurrence writes names the recurrence's
// new version of it. Here it becomes ONE repeat op (ir/graph.h RepeatOp) whose body is one
// step, lifted by this same table from a body trace of its own:
//   - each statement writes its target at `t + a` in one dimension (its step dimension); in
//     the body it writes its step's slice (the target without that dimension), a body
//     output stacked along the step dimension;
//   - a read of what the recurrence writes at `t + a - 1` reads the step before: a carried
//     param (its first value the target's earlier value at the element before the first
//     step, its next the step's output); at `t + a`, from a later nest, the step's output;
//   - a read of any other tensor walks `t` in at most one dimension (`k*t + c`, k >= 1):
//     a sliced param (the elements the steps read, a slice of it); without `t` it is
//     invariant;
//   - a guard on `t` alone chooses the steps (the same for every statement); other guards
//     stay in the body.
// After the repeat, each target's elements the steps do not write keep their earlier value
// (a concat of the earlier value's parts and the stacked steps). Counts are then exact: the
// body's work once per step.
#include "loopir_recurrence.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "loopir_loops.h"
#include "solar/ir/text.h"
#include "solar/lower/loopir.h"
#include "solar/util/int_math.h"

namespace solar::lower::detail {
namespace {

using namespace loopir;

constexpr int kMaxValueDepth = 200;  // as a nest's value trees (loopir_nest.cc)

// A param of the step body and how the repeat op's input reaches it.
struct Param {
  ir::LoopInput how = ir::LoopInput::Invariant;
  std::int64_t outer = -1;                // Invariant, Sliced: the trace tensor read
  std::int64_t axis = 0;                  // Sliced: its dimension walked by the steps
  std::int64_t coef = 1, offset = 0;      // Sliced: element coef * p + offset at step p
  std::size_t statement = 0;              // Carried: the statement whose target it carries
  int line = 0;                           // the read that made it (for refusals)
  std::int64_t body = -1;                 // its id in the body trace
};

// A statement of the recurrence.
struct Statement {
  const json* st = nullptr;
  Loops loops;              // the step variable at index position 0, then its nest's loops
  std::size_t nest = 0;
  std::int64_t dim = 0;     // the target's step dimension
  std::int64_t offset = 0;  // step p writes element p + offset of it
  std::int64_t lo = 0, hi = 0;  // the steps it runs on (index positions of the step loop)
  json guards = json::array();  // the guards without the step variable
  std::int64_t out = -1;        // the trace id of its new version
  std::int64_t body = -1;       // the body trace id of its step's value
  int line = 0;
};

bool uses_step(const AffineExpr& e) {
  return std::any_of(e.terms().begin(), e.terms().end(),
                     [](const AffineTerm& t) { return t.index == 0; });
}

// `e` is exactly p + k (the step index with coefficient 1, nothing else): k; else nullopt.
std::optional<std::int64_t> step_plus(const AffineExpr& e) {
  if (e.terms().size() == 1 && e.terms()[0].index == 0 && e.terms()[0].coef == 1)
    return e.constant_term();
  return std::nullopt;
}

json without(const json& index, std::int64_t dim) {
  json out = json::array();
  for (std::size_t d = 0; d < index.size(); ++d)
    if (static_cast<std::int64_t>(d) != dim) out.push_back(index[d]);
  return out;
}

std::vector<std::int64_t> drop(std::vector<std::int64_t> shape, std::int64_t dim) {
  shape.erase(shape.begin() + dim);
  return shape;
}

class RecurrenceLift {
 public:
  explicit RecurrenceLift(Context& c)
      : c_(c),
        args_(c.op().args),
        w_{c, c.op().line,
           fmt::format("loopir::{}", args_.value("kernel", std::string("recurrence")))} {}

  void run() {
    try {
      read_statements();
      build_body();
      lower_body();
      emit();
    } catch (const IndexOverflow&) {
      w_.refuse(Kind::NotAffine, "not affine", kIndexOverflow);
    }
  }

 private:
  // ------------------------------------------------------------ the steps and statements

  void read_statements() {
    if (!args_.contains("step") || !args_["step"].is_object() || !args_.contains("nests") ||
        !args_["nests"].is_array() || !args_.contains("statements") ||
        !args_["statements"].is_array() || args_["statements"].empty())
      w_.refuse(Kind::OutsideLanguage, "outside the language",
                "a recurrence needs its step loop, nests and statements");
    const json& statements = args_["statements"];
    if (statements.size() != c_.op().outputs.size())
      w_.refuse(Kind::OutsideLanguage, "outside the language",
                "a recurrence writes one new version per statement");
    const json& step = args_["step"];
    var_ = step.at("var").get<std::string>();
    Where at{c_, line_field(step, w_.line), w_.op};
    w_.line = at.line;
    if (int_field(step, "step", 1) != 1)
      at.refuse(Kind::NonConstantBound, "non-constant bound",
                fmt::format("the recurrence over `{}` steps {} at a time: a recurrence runs its "
                            "steps one by one", var_, int_field(step, "step", 1)));
    Loops alone = loops_of(json::array({step}), at);
    if (!alone.mask.empty())
      at.refuse(Kind::NonConstantBound, "non-constant bound",
                fmt::format("the bounds of the recurrence over `{}` are not constants", var_));
    steps_ = alone.space.dims[0].extent;
    for (std::size_t k = 0; k < statements.size(); ++k) read_statement(statements[k], k);
    for (const Statement& s : stmts_)
      if (s.lo != stmts_[0].lo || s.hi != stmts_[0].hi)
        Where{c_, s.line, w_.op}.refuse(
            Kind::OutsideLanguage, "outside the language",
            fmt::format("`{}` is written on the steps {}..{} of the recurrence over `{}`, `{}` "
                        "on {}..{}: the statements of a recurrence run on the same steps (give "
                        "them the same guards on `{}`, or split the recurrence)",
                        name(s), step_value(s.lo), step_value(s.hi), var_, name(stmts_[0]),
                        step_value(stmts_[0].lo), step_value(stmts_[0].hi), var_));
    lo_ = stmts_[0].lo;
    trips_ = stmts_[0].hi - lo_ + 1;
    // Each statement writes elements lo + offset .. hi + offset of its step dimension: inside
    // its target (an output has no pad value), as a nest's write.
    for (const Statement& s : stmts_) {
      const std::int64_t size = c_.shape(s.out)[s.dim];
      const std::int64_t first = checked_add(lo_, s.offset),
                         last = checked_add(first, trips_ - 1);
      if (first < 0 || last >= size)
        Where{c_, s.line, w_.op}.refuse(
            Kind::ShapeMismatch, "shape mismatch",
            fmt::format("writes `{}` at indices {}..{} of dimension {} on the steps {}..{} of "
                        "the recurrence over `{}`, outside its size {} (narrow the loop, or "
                        "guard `{}`)", name(s), first, last, s.dim, step_value(lo_),
                        step_value(stmts_[0].hi), var_, size, var_));
    }
  }

  // The value of the step variable at index position p.
  std::int64_t step_value(std::int64_t p) const {
    return checked_add(int_field(args_["step"], "start", 0), p);
  }

  std::string name(const Statement& s) const {
    return s.st->at("target").value("name", std::string("?"));
  }

  void read_statement(const json& st, std::size_t k) {
    Statement s;
    s.st = &st;
    s.line = line_field(st, w_.line);
    Where sw{c_, s.line, w_.op};
    const std::int64_t nest = int_field(st, "nest", -1);
    if (nest < 0 || nest >= static_cast<std::int64_t>(args_["nests"].size()))
      throw UserError(Kind::Parse, fmt::format("a malformed loopir::recurrence op: statement {} "
                                               "names nest {}", k, nest));
    s.nest = static_cast<std::size_t>(nest);
    json loops = json::array({args_["step"]});
    for (const json& lp : args_["nests"][s.nest].at("loops")) loops.push_back(lp);
    s.loops = loops_of(loops, sw);
    for (const AffineConstraint& m : s.loops.mask)
      if (uses_step(m.expr))
        sw.refuse(Kind::NonConstantBound, "non-constant bound",
                  fmt::format("a loop of the recurrence over `{}` has bounds that depend on "
                              "`{}`: every step runs the same loops", var_, var_));
    std::optional<std::int64_t> out = c_.out_id(k);
    if (!out) throw UserError(Kind::Parse, "a malformed loopir::recurrence op: an output is None");
    s.out = *out;
    const std::vector<std::int64_t>& shape = c_.shape(s.out);
    // The recorder's versions of a tensor share its shape and dtype (the earlier version's
    // elements the steps do not write are joined with theirs).
    if (const json& prior = st.at("target").at("prior");
        prior.is_object() && prior.contains("tensor")) {
      const std::int64_t before = int_value(prior["tensor"], "prior");
      if (c_.shape(before) != shape || c_.tt(before).dtype != c_.tt(s.out).dtype)
        throw UserError(Kind::Parse, fmt::format("a malformed loopir::recurrence op: statement "
                                                 "{} writes a new version of another shape or "
                                                 "dtype than its earlier one", k));
    }
    const json& index = st.at("target").at("index");
    if (!index.is_array() || index.size() != shape.size())
      sw.refuse(Kind::ShapeMismatch, "shape mismatch",
                fmt::format("the target `{}` has {} dimensions but {} subscripts",
                            st.at("target").value("name", std::string("?")), shape.size(),
                            index.is_array() ? index.size() : 0));
    std::optional<std::int64_t> dim;
    for (std::size_t d = 0; d < index.size(); ++d) {
      std::optional<AffineExpr> a = affine_of(index[d], s.loops);
      if (!a)
        sw.refuse(Kind::NotAffine, "not affine",
                  "a subscript of the target is not affine in the loop variables");
      if (!uses_step(*a)) continue;
      std::optional<std::int64_t> at = step_plus(*a);
      if (dim || !at)
        sw.refuse(Kind::OutsideLanguage, "outside the language",
                  fmt::format("writes `{}` at `{}` in dimension {}: each statement of the "
                              "recurrence over `{}` writes its step's element, `{}` plus a "
                              "constant in one dimension of its target",
                              st.at("target").value("name", std::string("?")),
                              ir::print_affine(*a, s.loops.space.dims), d, var_, var_));
      dim = static_cast<std::int64_t>(d), s.offset = *at;
    }
    if (!dim)
      sw.refuse(Kind::OutsideLanguage, "outside the language",
                fmt::format("writes `{}` at a subscript without `{}`: each statement of a "
                            "recurrence writes its step's element (accumulate across steps "
                            "after the recurrence)",
                            st.at("target").value("name", std::string("?")), var_));
    s.dim = *dim;
    read_guards(s, sw);
    stmts_.push_back(std::move(s));
  }

  // The guards on the step variable alone choose the steps; the others stay in the body.
  void read_guards(Statement& s, const Where& sw) {
    s.lo = 0, s.hi = steps_ - 1;
    for (const json& g : s.st->value("guards", json::array())) {
      std::optional<AffineExpr> a = affine_of(g.at("lhs"), s.loops),
                                b = affine_of(g.at("rhs"), s.loops);
      if (!a || !b)
        sw.refuse(Kind::NotAffine, "not affine", "a guard is not affine in the loop variables");
      const bool on_step = uses_step(*a) || uses_step(*b);
      AffineExpr ba = combine(*b, *a, -1), ab = combine(*a, *b, -1);  // b - a, a - b
      std::vector<AffineExpr> cs;  // each >= 0
      const std::string cmp = g.at("cmp").get<std::string>();
      if (cmp == "le") cs = {ba};
      else if (cmp == "lt") cs = {combine(ba, constant(-1), 1)};
      else if (cmp == "ge") cs = {ab};
      else if (cmp == "gt") cs = {combine(ab, constant(-1), 1)};
      else if (cmp == "eq") cs = {ab, ba};
      else sw.refuse(Kind::OutsideLanguage, "outside the language",
                     fmt::format("a guard compares with `{}` (use < <= > >= ==)", cmp));
      if (!on_step) {
        s.guards.push_back(g);
        continue;
      }
      for (const AffineExpr& e : cs) {
        if (e.terms().size() != 1)
          sw.refuse(Kind::OutsideLanguage, "outside the language",
                    fmt::format("a guard compares `{}`, the step of a recurrence, with other "
                                "loop variables: the steps run the same loops (guard `{}` "
                                "alone)", var_, var_));
        const std::int64_t k = e.terms()[0].coef, c = e.constant_term();  // k p + c >= 0
        if (k > 0) s.lo = std::max(s.lo, solar::ceil_div(-c, k));
        if (k < 0) s.hi = std::min(s.hi, solar::floor_div(c, -k));
      }
    }
    if (s.hi < s.lo)
      sw.refuse(Kind::ShapeMismatch, "shape mismatch",
                fmt::format("the guards of `{}` leave no step of the recurrence over `{}`",
                            name(s), var_));
  }

  // ------------------------------------------------------------ the body trace

  std::int64_t add_body_tensor(std::string name, std::vector<std::int64_t> shape,
                               const TraceTensor& like, TraceRole role) {
    while (!names_.insert(name).second) name += "'";
    TraceTensor t = like;
    t.id = static_cast<std::int64_t>(body_.tensors.size());
    t.name = std::move(name);
    t.shape = std::move(shape);
    t.strides.clear();
    t.storage = t.id;
    t.storage_offset = 0;
    t.role = role;
    t.dims.clear();
    body_.tensors.push_back(std::move(t));
    body_.index_.push_back(body_.tensors.size());
    return body_.tensors.back().id;
  }

  void build_body() {
    body_.name = fmt::format("{}.step", args_.value("kernel", std::string("recurrence")));
    body_.frontend = "loopir";
    body_.source = c_.trace().source;
    for (Statement& s : stmts_) {
      const TraceTensor& x = c_.tt(s.out);
      s.body = add_body_tensor(x.name.empty() ? name(s) : x.name, drop(x.shape, s.dim), x,
                               TraceRole::Output);
    }
    for (std::size_t j = 0; j < args_["nests"].size(); ++j) {
      json statements = json::array();
      std::vector<std::optional<std::int64_t>> outputs;
      for (std::size_t k = 0; k < stmts_.size(); ++k) {
        if (stmts_[k].nest != j) continue;
        statements.push_back(body_statement(k));
        outputs.push_back(stmts_[k].body);
      }
      if (statements.empty()) continue;
      // A nest of the step loop alone (`for i in range(N): y[i] = y[i - 1] + x[i]`) is a
      // step of one point: a loop of one iteration that no subscript uses, which the nest's
      // lifting drops.
      json loops = args_["nests"][j].at("loops");
      if (loops.is_array() && loops.empty())
        loops.push_back({{"var", "(step)"}, {"start", 0}, {"stop", 1}, {"step", 1},
                         {"line", line_field(args_["step"], w_.line)}});
      TraceOp op;
      op.op = "loopir::nest";
      op.args = {{"kernel", args_.value("kernel", std::string("recurrence"))},
                 {"loops", std::move(loops)},
                 {"statements", std::move(statements)}};
      op.outputs = std::move(outputs);
      op.file = c_.op().file;
      op.line = line_field(op.args["statements"][0], w_.line);
      body_.ops.push_back(std::move(op));
    }
  }

  json body_statement(std::size_t k) {
    Statement& s = stmts_[k];
    const json& target = s.st->at("target");
    json prior = target.at("prior");
    if (prior.is_object() && prior.contains("tensor"))  // the earlier value of each step's slice
      prior = {{"tensor", sliced(int_value(prior["tensor"], "prior"), s.dim, 1, s.offset, s.line)}};
    return {{"line", s.line},
            {"target", {{"name", target.value("name", std::string("?"))},
                        {"index", without(target.at("index"), s.dim)},
                        {"prior", prior}}},
            {"value", rewrite(s.st->at("value"), k, 0)},
            {"guards", s.guards}};
  }

  // A value tree of statement k over the body's tensors.
  json rewrite(const json& t, std::size_t k, int depth) {
    const Statement& s = stmts_[k];
    Where sw{c_, s.line, w_.op};
    if (depth > kMaxValueDepth)
      sw.refuse(Kind::OutsideLanguage, "outside the language",
                fmt::format("an expression nests deeper than {} levels", kMaxValueDepth));
    if (!t.is_object()) return t;
    if (t.contains("self")) {
      const json& index = t.at("index");
      const json& own = s.st->at("target").at("index");
      if (!index.is_array() || index.size() != own.size()) return t;  // the nest refuses it
      std::optional<AffineExpr> at = affine_of(index[s.dim], s.loops);
      if (!at || step_plus(*at) != s.offset)
        sw.refuse(Kind::OutsideLanguage, "outside the language",
                  fmt::format("reads `{}` other than at its own element or the step before: a "
                              "loop-carried dependence", name(s)));
      return {{"self", true}, {"index", without(index, s.dim)}};
    }
    if (t.contains("load")) return load(t, k, sw);
    json out = t;
    if (auto a = t.find("args"); a != t.end() && a->is_array()) {
      json args = json::array();
      for (const json& x : *a) args.push_back(rewrite(x, k, depth + 1));
      out["args"] = std::move(args);
    }
    return out;
  }

  json load(const json& t, std::size_t k, const Where& sw) {
    const Statement& s = stmts_[k];
    const std::int64_t id = int_value(t["load"], "load");
    const json& index = t.at("index");
    const std::vector<std::int64_t>& shape = c_.shape(id);
    const std::string what = c_.tt(id).name;
    if (!index.is_array() || index.size() != shape.size())
      sw.refuse(Kind::ShapeMismatch, "shape mismatch",
                fmt::format("`{}` has {} dimensions but {} subscripts", what, shape.size(),
                            index.is_array() ? index.size() : 0));
    std::vector<AffineExpr> sub;
    for (const json& x : index) {
      std::optional<AffineExpr> a = affine_of(x, s.loops);
      if (!a)
        sw.refuse(Kind::NotAffine, "not affine",
                  fmt::format("a subscript of `{}` is not affine in the loop variables", what));
      sub.push_back(std::move(*a));
    }
    auto writer = std::find_if(stmts_.begin(), stmts_.end(),
                               [&](const Statement& x) { return x.out == id; });
    if (writer != stmts_.end()) {
      const Statement& w = *writer;
      for (std::size_t d = 0; d < sub.size(); ++d)
        if (static_cast<std::int64_t>(d) != w.dim && uses_step(sub[d]))
          sw.refuse(Kind::OutsideLanguage, "outside the language",
                    fmt::format("reads `{}` at `{}` in dimension {}: a recurrence reads what "
                                "it writes at `{}` in its step dimension only (dimension {})",
                                name(w), ir::print_affine(sub[d], s.loops.space.dims), d, var_,
                                w.dim));
      std::optional<std::int64_t> at = step_plus(sub[w.dim]);
      if (!at || (*at != w.offset && *at != w.offset - 1))
        sw.refuse(Kind::OutsideLanguage, "outside the language",
                  fmt::format("reads `{}` at `{}` in its step dimension: a recurrence reads what "
                              "it writes at the step before or, from a later nest, at the step "
                              "itself", name(w), ir::print_affine(sub[w.dim], s.loops.space.dims)));
      const std::size_t wk = static_cast<std::size_t>(writer - stmts_.begin());
      std::int64_t body;
      if (*at == w.offset) {
        if (w.nest >= s.nest)
          sw.refuse(Kind::OutsideLanguage, "outside the language",
                    fmt::format("reads `{}` at the step it writes, in the nest that writes it or "
                                "an earlier one: read the step before, or write it in an "
                                "earlier nest of the step loop", name(w)));
        body = w.body;
      } else {
        body = carried(wk, s.line);
      }
      return {{"load", body}, {"index", without(index, w.dim)}};
    }
    std::optional<std::int64_t> walked;
    for (std::size_t d = 0; d < sub.size(); ++d) {
      if (!uses_step(sub[d])) continue;
      if (walked || sub[d].terms().size() != 1 || sub[d].terms()[0].coef < 1)
        sw.refuse(Kind::OutsideLanguage, "outside the language",
                  fmt::format("reads `{}` at `{}` in dimension {}: a recurrence reads a tensor "
                              "it does not write along `{}` in one dimension, forwards (`x[b, "
                              "{}]`, `x[b, 2*{} + 1]`)", what,
                              ir::print_affine(sub[d], s.loops.space.dims), d, var_, var_,
                              var_));
      walked = static_cast<std::int64_t>(d);
    }
    if (!walked) return {{"load", invariant(id)}, {"index", index}};
    const AffineExpr& a = sub[*walked];
    return {{"load", sliced(id, *walked, a.terms()[0].coef, a.constant_term(), s.line)},
            {"index", without(index, *walked)}};
  }

  std::int64_t invariant(std::int64_t id) {
    auto it = invariants_.find(id);
    if (it != invariants_.end()) return params_[it->second].body;
    const TraceTensor& x = c_.tt(id);
    Param p;
    p.how = ir::LoopInput::Invariant;
    p.outer = id;
    p.body = add_body_tensor(x.name.empty() ? fmt::format("t{}", id) : x.name, x.shape, x,
                             TraceRole::Input);
    invariants_[id] = params_.size();
    params_.push_back(p);
    return p.body;
  }

  std::int64_t sliced(std::int64_t id, std::int64_t axis, std::int64_t coef, std::int64_t offset,
                      int line) {
    const auto key = std::make_tuple(id, axis, coef, offset);
    auto it = sliced_.find(key);
    if (it != sliced_.end()) return params_[it->second].body;
    const TraceTensor& x = c_.tt(id);
    if (axis < 0 || axis >= static_cast<std::int64_t>(x.shape.size()))
      throw UserError(Kind::Parse, "a malformed loopir::recurrence op: a prior of another rank");
    Param p;
    p.how = ir::LoopInput::Sliced;
    p.outer = id, p.axis = axis, p.coef = coef, p.offset = offset, p.line = line;
    p.body = add_body_tensor(fmt::format("{}.{}", x.name.empty() ? fmt::format("t{}", id) : x.name,
                                         var_),
                             drop(x.shape, axis), x, TraceRole::Input);
    sliced_[key] = params_.size();
    params_.push_back(p);
    return p.body;
  }

  std::int64_t carried(std::size_t k, int line) {
    auto it = carried_.find(k);
    if (it != carried_.end()) return params_[it->second].body;
    const TraceTensor& x = c_.tt(stmts_[k].out);
    Param p;
    p.how = ir::LoopInput::Carried;
    p.statement = k, p.line = line;
    p.body = add_body_tensor(fmt::format("{}.prev", x.name.empty() ? name(stmts_[k]) : x.name),
                             drop(x.shape, stmts_[k].dim), x, TraceRole::Input);
    carried_[k] = params_.size();
    params_.push_back(p);
    return p.body;
  }

  // ------------------------------------------------------------ the repeat op

  void lower_body() {
    result_ = lower_loopir(body_);
    body_of_.assign(body_.tensors.size(), TensorId{});
    for (std::size_t g = 0; g < result_.trace_ids.size(); ++g) {
      const std::int64_t id = result_.trace_ids[g];
      if (id >= 0 && static_cast<std::size_t>(id) < body_of_.size())
        body_of_[id] = TensorId{static_cast<std::uint32_t>(g)};
    }
  }

  void emit() {
    c_.at(w_.line, w_.op);
    ir::RepeatOp r;
    r.trips = trips_;
    std::vector<TensorId> ins;
    for (const Param& p : params_) {
      const TensorId param = body_of_[p.body];
      if (!param.valid()) continue;  // the body never reads it
      switch (p.how) {
        case ir::LoopInput::Invariant:
          ins.push_back(c_.use(p.outer));
          r.inputs.push_back({ir::LoopInput::Invariant, param, 0, {}});
          break;
        case ir::LoopInput::Sliced:
          ins.push_back(slice_of_steps(p));
          r.inputs.push_back({ir::LoopInput::Sliced, param, p.axis, {}});
          break;
        case ir::LoopInput::Carried:
          ins.push_back(first_carried(p));
          r.inputs.push_back(
              {ir::LoopInput::Carried, param, 0, body_of_[stmts_[p.statement].body]});
          break;
      }
    }
    std::vector<TensorId> outs;
    std::vector<std::optional<TensorId>> partial(stmts_.size());
    for (std::size_t k = 0; k < stmts_.size(); ++k) {
      const Statement& s = stmts_[k];
      const TensorId value = body_of_[s.body];
      SOLAR_CHECK(value.valid(), "a recurrence statement's step value was not lifted");
      r.outputs.push_back({ir::LoopOutput::Stacked, value, s.dim});
      std::vector<std::int64_t> shape = c_.shape(s.out);
      if (s.offset + lo_ == 0 && trips_ == shape[s.dim]) {
        outs.push_back(c_.def(k));
      } else {
        shape[s.dim] = trips_;
        partial[k] = c_.temp("steps", shape, dtype(k));
        outs.push_back(*partial[k]);
      }
    }
    r.body = std::make_shared<const ir::Graph>(std::move(result_.graph));
    c_.repeat(std::move(ins), std::move(outs), std::move(r));
    for (std::size_t k = 0; k < stmts_.size(); ++k)
      if (partial[k]) join(k, *partial[k]);
  }

  // The elements of a sliced param's tensor its steps read: coef * (lo + j) + offset for
  // j in [0, trips) along the axis (the tensor itself when that is all of it).
  TensorId slice_of_steps(const Param& p) {
    TensorId x = c_.use(p.outer);
    std::vector<std::int64_t> shape = c_.t(x).shape;
    const __int128 first = static_cast<__int128>(p.coef) * lo_ + p.offset;
    const __int128 last = first + static_cast<__int128>(p.coef) * (trips_ - 1);
    if (first < 0 || last >= shape[p.axis])
      Where{c_, p.line, w_.op}.refuse(
          Kind::ShapeMismatch, "shape mismatch",
          fmt::format("`{}` is read at indices {}..{} of dimension {} on the steps of the "
                      "recurrence over `{}`, outside its size {} (guard `{}` so that the steps "
                      "stay inside)",
                      c_.t(x).name, static_cast<std::int64_t>(first),
                      static_cast<std::int64_t>(last), p.axis, var_, shape[p.axis], var_));
    if (first == 0 && p.coef == 1 && trips_ == shape[p.axis]) return x;
    std::vector<std::int64_t> starts(shape.size(), 0), ends = shape, steps(shape.size(), 1);
    starts[p.axis] = static_cast<std::int64_t>(first);
    ends[p.axis] = static_cast<std::int64_t>(last) + 1;
    steps[p.axis] = p.coef;
    shape[p.axis] = trips_;
    TensorId out = c_.temp("steps", shape, c_.t(x).dtype);
    c_.move(MoveKind::Slice, {x}, out, {{"starts", starts}, {"ends", ends}, {"steps", steps}});
    return out;
  }

  // A carried param's first value: its target's earlier value at the element before the
  // first step (a free view of that slice, or the fill).
  TensorId first_carried(const Param& p) {
    const Statement& s = stmts_[p.statement];
    const std::vector<std::int64_t>& shape = c_.shape(s.out);
    const std::int64_t at = lo_ + s.offset - 1;
    if (at < 0 || at >= shape[s.dim])
      Where{c_, p.line, w_.op}.refuse(
          Kind::ShapeMismatch, "shape mismatch",
          fmt::format("reads `{}` at the step before the first one, index {} of dimension {} "
                      "of size {}: guard the statement on `{}` (`if {} >= {}:`) or start its "
                      "loop later", name(s), at, s.dim, shape[s.dim], var_, var_,
                      step_value(lo_ + 1)));
    return part(p.statement, at, at + 1, true);
  }

  // Elements [from, to) of statement k's target along its step dimension as they were
  // before the recurrence: a view of the earlier version, or the fill (`squeeze`: without
  // the step dimension, for one element).
  TensorId part(std::size_t k, std::int64_t from, std::int64_t to, bool squeeze) {
    const Statement& s = stmts_[k];
    std::vector<std::int64_t> shape = c_.shape(s.out);
    shape[s.dim] = to - from;
    const ir::DType dt = dtype(k);
    const json& prior = s.st->at("target").at("prior");
    TensorId out;
    if (prior.is_object() && prior.contains("tensor")) {
      TensorId x = c_.use(int_value(prior["tensor"], "prior"));
      std::vector<std::int64_t> starts(shape.size(), 0), ends = c_.t(x).shape,
                                steps(shape.size(), 1);
      starts[s.dim] = from, ends[s.dim] = to;
      out = c_.temp("before", shape, dt);
      c_.move(MoveKind::Slice, {x}, out, {{"starts", starts}, {"ends", ends}, {"steps", steps}});
      if (!squeeze) return out;
      TensorId v = c_.temp("before", drop(shape, s.dim), dt);
      c_.move(MoveKind::View, {out}, v);
      return v;
    }
    const double fill = prior.is_object() ? number_value(prior.value("fill", json(0))).value_or(0)
                                          : 0;
    out = c_.temp("fill", squeeze ? drop(shape, s.dim) : shape, dt);
    c_.elementwise({}, out, num(fill));
    return out;
  }

  ir::DType dtype(std::size_t k) const { return Context::dtype_of(c_.tt(stmts_[k].out).dtype); }

  // Statement k's new version: the earlier value where the steps do not write, the stacked
  // steps where they do.
  void join(std::size_t k, TensorId steps) {
    const Statement& s = stmts_[k];
    const std::int64_t size = c_.shape(s.out)[s.dim], first = lo_ + s.offset,
                       end = first + trips_;
    std::vector<TensorId> parts;
    if (first > 0) parts.push_back(part(k, 0, first, false));
    parts.push_back(steps);
    if (end < size) parts.push_back(part(k, end, size, false));
    c_.move(MoveKind::Concat, std::move(parts), c_.def(k), {{"axis", s.dim}});
  }

  Context& c_;
  const json& args_;
  Where w_;
  std::string var_;
  std::int64_t steps_ = 0, lo_ = 0, trips_ = 0;
  std::vector<Statement> stmts_;
  OpTrace body_;
  std::set<std::string> names_;
  std::vector<Param> params_;
  std::map<std::int64_t, std::size_t> invariants_;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>, std::size_t> sliced_;
  std::map<std::size_t, std::size_t> carried_;
  LowerResult result_;
  std::vector<TensorId> body_of_;  // body trace id -> body graph tensor
};

}  // namespace

void lift_recurrence(Context& c) { RecurrenceLift(c).run(); }

}  // namespace solar::lower::detail
