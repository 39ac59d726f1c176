// Private to lower/: what the lifting of a loop nest (loopir_nest.cc) and of a recurrence
// (loopir_recurrence.cc) share — index arithmetic kept within ±2^62, the loops of a nest as
// the index positions of an einsum, the integers and lines of a trace op, and where a
// refusal points (docs/loop-language.md, "Lifting rules").
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "context.h"
#include "solar/util/errors.h"

namespace solar::lower::detail::loopir {

using json = nlohmann::json;
using Kind = UserError::Kind;
using ir::IndexPos;

// Index arithmetic stays within ±kIndexLimit (2^62): coefficients, constants and extents, so
// that no bound of an expression over a box overflows 64 bits. A trace past it (the recorder
// refuses such programs first) is refused, never computed with an overflow.
inline constexpr std::int64_t kIndexLimit = std::int64_t{1} << 62;

// Thrown by the arithmetic below; the nest, statement or recurrence being lifted refuses it
// with its line (kIndexOverflow).
struct IndexOverflow {};
inline constexpr const char* kIndexOverflow =
    "index arithmetic (a coefficient, constant or bound of the loops and subscripts) leaves "
    "the range of ±2^62";
[[noreturn]] void index_overflow();

// v, a + b: within ±kIndexLimit, else IndexOverflow.
std::int64_t checked(std::int64_t v);
std::int64_t checked_add(std::int64_t a, std::int64_t b);
// a + scale_b * b, every operand, product and sum within the limit.
AffineExpr combine(const AffineExpr& a, const AffineExpr& b, std::int64_t scale_b);
AffineExpr scaled(const AffineExpr& a, std::int64_t k);
AffineExpr constant(std::int64_t v);

// Where a statement's problems are reported: the trace op's file, the statement's line.
struct Where {
  const Context& c;
  int line;
  std::string op;
  [[noreturn]] void refuse(Kind kind, const std::string& rule, const std::string& what) const {
    throw UserError(kind, fmt::format("{}: {}", rule, what), Origin{c.op().file, line, op});
  }
};

// The loop variables: each is an affine expression over the einsum's index positions.
struct Loops {
  Space space;
  std::map<std::string, AffineExpr> vars;
  std::vector<AffineConstraint> mask;  // triangular bounds
};

// An integer of the trace (a tensor id, a step, a line): a JSON integer within 64 bits; any
// other value is a malformed op (never converted: a float past the range would be undefined).
std::int64_t int_value(const json& v, const char* what);
std::int64_t int_field(const json& j, const char* key, std::int64_t dflt);
int line_field(const json& j, int dflt);

// A number of an expression tree (a JSON number or {"float": "inf"}), else nullopt.
std::optional<double> tree_number(const json& t);

// An index tree (integers, loop variables, + - and * by a constant) as an affine expression
// over the loops' index positions; nullopt when it is not affine.
std::optional<AffineExpr> affine_of(const json& t, const Loops& loops);

std::vector<std::int64_t> extents(const Space& s);

// The loops of a nest (record.py's `{var, start, stop, step, line}`, outermost first) as
// index positions: `range(a, b, s)` is v = a + s*v'; a bound affine in outer loops gives the
// index its widest extent and mask constraints. Refuses (at `w`, each loop's line) bounds
// that are not affine and loops that run no iteration.
Loops loops_of(const json& loops_json, const Where& w);

}  // namespace solar::lower::detail::loopir
