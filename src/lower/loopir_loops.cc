// The shared part of the loop language's lifting (loopir_loops.h).
#include "loopir_loops.h"

#include <algorithm>
#include <cmath>

namespace solar::lower::detail::loopir {

void index_overflow() { throw IndexOverflow{}; }

std::int64_t checked(std::int64_t v) {
  if (v <= -kIndexLimit || v >= kIndexLimit) index_overflow();
  return v;
}
std::int64_t checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) index_overflow();
  return checked(r);
}

namespace {

// `e` when its coefficients and constant are within the limit.
const AffineExpr& limited(const AffineExpr& e) {
  for (const AffineTerm& t : e.terms()) checked(t.coef);
  checked(e.constant_term());
  return e;
}

}  // namespace

AffineExpr combine(const AffineExpr& a, const AffineExpr& b, std::int64_t scale_b) {
  try {
    return limited(limited(a) + limited(scale_b * limited(b)));
  } catch (const ir::AffineOverflow&) {
    index_overflow();
  }
}
AffineExpr scaled(const AffineExpr& a, std::int64_t k) { return combine(AffineExpr(), a, k); }
AffineExpr constant(std::int64_t v) { return AffineExpr::constant(checked(v)); }

// ---------------------------------------------------------------- the loops

std::int64_t int_value(const json& v, const char* what) {
  if (v.is_number_integer() &&
      !(v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t{INT64_MAX}))
    return v.get<std::int64_t>();
  throw UserError(Kind::Parse, fmt::format("a malformed loopir op: {} is {}, not an integer",
                                           what, v.dump()));
}
std::int64_t int_field(const json& j, const char* key, std::int64_t dflt) {
  auto it = j.find(key);
  return it == j.end() ? dflt : int_value(*it, key);
}
int line_field(const json& j, int dflt) {
  return static_cast<int>(std::clamp<std::int64_t>(int_field(j, "line", dflt), 0, INT32_MAX));
}

std::optional<double> tree_number(const json& t) {
  if (t.is_number()) return t.get<double>();
  if (t.is_object() && t.contains("float")) return number_value(t);
  return std::nullopt;
}

std::optional<AffineExpr> affine_of(const json& t, const Loops& loops) {
  if (std::optional<double> x = tree_number(t)) {
    if (!std::isfinite(*x) || std::floor(*x) != *x) return std::nullopt;
    if (std::fabs(*x) >= static_cast<double>(kIndexLimit)) index_overflow();
    return constant(static_cast<std::int64_t>(*x));
  }
  if (!t.is_object()) return std::nullopt;
  if (auto v = t.find("var"); v != t.end() && v->is_string()) {
    auto it = loops.vars.find(v->get<std::string>());
    if (it == loops.vars.end()) return std::nullopt;
    return it->second;
  }
  auto f = t.find("fn");
  auto args = t.find("args");
  if (f == t.end() || args == t.end() || !args->is_array()) return std::nullopt;
  std::vector<AffineExpr> xs;
  for (const json& a : *args) {
    std::optional<AffineExpr> x = affine_of(a, loops);
    if (!x) return std::nullopt;
    xs.push_back(std::move(*x));
  }
  const std::string name = f->get<std::string>();
  if (name == "neg" && xs.size() == 1) return scaled(xs[0], -1);
  if ((name == "add" || name == "sub") && xs.size() == 2)
    return combine(xs[0], xs[1], name == "add" ? 1 : -1);
  if (name == "mul" && xs.size() == 2) {
    if (xs[0].is_constant()) return scaled(xs[1], xs[0].constant_term());
    if (xs[1].is_constant()) return scaled(xs[0], xs[1].constant_term());
  }
  return std::nullopt;
}

std::vector<std::int64_t> extents(const Space& s) {
  std::vector<std::int64_t> out;
  for (const ir::IndexDim& d : s.dims) out.push_back(d.extent);
  return out;
}

Loops loops_of(const json& loops_json, const Where& w) {
  Loops loops;
  for (const json& lp : loops_json) {
    const std::string var = lp.at("var").get<std::string>();
    Where at{w.c, line_field(lp, w.line), w.op};
    std::optional<AffineExpr> start = affine_of(lp.at("start"), loops);
    std::optional<AffineExpr> stop = affine_of(lp.at("stop"), loops);
    if (!start || !stop)
      at.refuse(Kind::NonConstantBound, "non-constant bound",
                fmt::format("the bounds of the loop over `{}` are not constants nor affine in "
                            "the enclosing loops' variables", var));
    const std::int64_t step = int_field(lp, "step", 1);
    if (step < 1 || step >= kIndexLimit)
      at.refuse(Kind::NonConstantBound, "non-constant bound",
                fmt::format("the loop over `{}` has step {}", var, step));
    const std::vector<std::int64_t> ext = extents(loops.space);
    if (start->is_constant() && stop->is_constant()) {
      const std::int64_t span = checked_add(stop->constant_term(), -start->constant_term());
      const std::int64_t count = span <= 0 ? 0 : (span - 1) / step + 1;
      if (count == 0)
        at.refuse(Kind::ShapeMismatch, "shape mismatch",
                  fmt::format("the loop over `{}` runs no iteration", var));
      IndexPos p = loops.space.add(var, count);
      loops.vars[var] = combine(*start, AffineExpr::index(p), step);
      continue;
    }
    if (step != 1)
      at.refuse(Kind::NonConstantBound, "non-constant bound",
                fmt::format("the loop over `{}` depends on outer loops and has step {}", var,
                            step));
    // A triangular loop: the widest range, with the bounds as mask constraints.
    const std::int64_t lo = checked(start->min_value(ext)), hi = checked(stop->max_value(ext));
    if (hi <= lo)
      at.refuse(Kind::ShapeMismatch, "shape mismatch",
                fmt::format("the loop over `{}` runs no iteration", var));
    IndexPos p = loops.space.add(var, checked_add(hi, -lo));
    AffineExpr v = combine(constant(lo), AffineExpr::index(p), 1);
    loops.mask.push_back({combine(v, *start, -1)});                    // v - start >= 0
    loops.mask.push_back({combine(combine(*stop, v, -1), constant(-1), 1)});  // stop - 1 - v >= 0
    loops.vars[var] = std::move(v);
  }
  return loops;
}

}  // namespace solar::lower::detail::loopir
