// The jax table's reading of operands and primitive parameters (jax_families.h).
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "jax_families.h"
#include "solar/util/errors.h"

namespace solar::lower::detail::jax {

const nlohmann::json& operands(Context& c) {
  const auto& v = c.a("operands");
  if (!v.is_array()) throw Unsupported("the op has no operand list");
  return v;
}
std::size_t n_operands(Context& c) { return operands(c).size(); }

bool is_tensor(const nlohmann::json& v) { return v.is_object() && v.contains("tensor"); }

// Operand k as a graph tensor (a literal there is an error of the recorder: Unsupported).
TensorId in(Context& c, std::size_t k) {
  const auto& ops = operands(c);
  if (k >= ops.size() || !is_tensor(ops[k]))
    throw Unsupported(fmt::format("operand {} is not a tensor", k));
  return c.use(ops[k]["tensor"].get<std::int64_t>());
}

// Operand k as a combine term: a tensor joins `inputs`, a literal is a constant.
Expr term(Context& c, std::size_t k, std::vector<TensorId>& inputs) {
  const auto& ops = operands(c);
  if (k >= ops.size()) throw Unsupported(fmt::format("operand {} is missing", k));
  if (is_tensor(ops[k])) {
    inputs.push_back(c.use(ops[k]["tensor"].get<std::int64_t>()));
    return arg(static_cast<int>(inputs.size() - 1));
  }
  if (std::optional<double> x = number_value(ops[k])) return num(*x);
  throw Unsupported(fmt::format("operand {} is neither a tensor nor a number", k));
}

// The value of a scalar operand when the recorder knew it (a literal or a folded tensor).
std::optional<double> known(Context& c, std::size_t k) {
  const auto& ops = operands(c);
  if (k >= ops.size()) return std::nullopt;
  if (is_tensor(ops[k])) {
    if (ops[k].contains("value")) return number_value(ops[k]["value"]);
    return std::nullopt;
  }
  return number_value(ops[k]);
}

// A list parameter of integers (null or absent: empty).
Shape ints(Context& c, const char* name) { return c.ints(name); }

Shape int_list(const nlohmann::json& v, const char* what) {
  Shape out;
  if (v.is_null()) return out;
  if (!v.is_array()) throw Unsupported(fmt::format("'{}' is not a list", what));
  for (const auto& x : v) {
    if (!x.is_number_integer()) throw Unsupported(fmt::format("'{}' holds a non-integer", what));
    out.push_back(x.get<std::int64_t>());
  }
  return out;
}

// A list field of a dimension-numbers object (absent: empty).
Shape field(const nlohmann::json& dn, const char* key) {
  return int_list(dn.value(key, nlohmann::json()), key);
}

// [[lo, hi], ...] padding pairs.
using Pads = std::vector<std::pair<std::int64_t, std::int64_t>>;
Pads pad_pairs(const nlohmann::json& v, std::size_t n) {
  Pads out;
  if (v.is_null()) return Pads(n, {0, 0});
  if (!v.is_array()) throw Unsupported("padding is not a list of (low, high) pairs");
  for (const auto& p : v) {
    if (!p.is_array() || p.size() < 2 || !p[0].is_number_integer() || !p[1].is_number_integer())
      throw Unsupported("padding is not a list of (low, high) pairs");
    out.emplace_back(p[0].get<std::int64_t>(), p[1].get<std::int64_t>());
  }
  if (out.size() != n) throw Unsupported("padding has the wrong number of dimensions");
  return out;
}

Shape or_ones(Shape v, std::size_t n) {
  if (v.empty()) v.assign(n, 1);
  if (v.size() != n) throw Unsupported("a per-dimension parameter has the wrong length");
  return v;
}

// The width of an unsigned operand held as the signed type of its width (uint16, uint32:
// the IR has no such types), 0 for any other operand.
int unsigned_bits(Context& c, std::size_t k) {
  const auto& o = operands(c);
  if (k >= o.size() || !is_tensor(o[k])) return 0;
  const std::string& d = c.tt(o[k]["tensor"].get<std::int64_t>()).dtype;
  return d == "uint32" ? 32 : d == "uint16" ? 16 : 0;
}

// x (held signed) as i64 holding its unsigned value: x + 2^bits where x reads negative.
TensorId unsigned_wide(Context& c, TensorId x, int bits) {
  TensorId w = c.temp("unsigned", c.t(x).shape, ir::DType::I64);
  c.elementwise({x}, w, fn(ExprOp::Select, {fn(ExprOp::Lt, {arg(0), num(0)}),
                                            add(arg(0), num(std::ldexp(1.0, bits))), arg(0)}));
  return w;
}

ReadTerm positional(std::size_t arity) {
  return [arity](Context& c, std::size_t k, std::vector<TensorId>& inputs) {
    if (k == 0 && n_operands(c) != arity)
      throw Unsupported(fmt::format("expects {} operands", arity));
    return term(c, k, inputs);
  };
}

}  // namespace solar::lower::detail::jax
