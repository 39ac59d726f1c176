// What the families of the aten table share beyond Context: the function type of a table
// entry, combine-expression shorthands, and the registration hooks of families that live
// in their own file (aten.cc builds the table and calls each hook once).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "context.h"
#include "solar/ir/shape.h"
#include "solar/lower/aten.h"
#include "solar/util/errors.h"

namespace solar::lower::detail {

// One table entry: lowers the current op of the Context (throws Unsupported to leave it
// unanalyzed).
using Fn = std::function<void(Context&)>;
using Register = std::function<void(std::string_view, Fn)>;
using Table = std::unordered_map<std::string_view, Fn>;

// Lowers every op of `trace` with `table` (the dialect's; `dialect` names it in messages):
// an op the table lacks or cannot model becomes `unanalyzed` with the reason (or throws
// Unsupported with options.strict). Verifies the graph and maps graph tensors to trace ids.
LowerResult lower_with_table(const OpTrace& trace, const LowerOptions& options,
                             const Table& table, std::string_view dialect);

// Adds the masks of lower/masks.h to a lowered graph (aten and jax: the program's own masks;
// the loop language's nests already say which points they run) and stops comparing the
// tensors whose values it changed at points nothing reads.
void recognize_masks_in(LowerResult& r);

using ir::numel;
using ir::Shape;
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// A tensor-or-scalar argument as a combine term: a tensor joins `inputs`; None is `dflt`.
ir::Expr operand(Context& c, const char* name, std::vector<ir::TensorId>& inputs, double dflt = 0);

inline ir::Expr mul(ir::Expr a, ir::Expr b) { return fn(ir::ExprOp::Mul, {std::move(a), std::move(b)}); }
inline ir::Expr add(ir::Expr a, ir::Expr b) { return fn(ir::ExprOp::Add, {std::move(a), std::move(b)}); }
inline ir::Expr sub(ir::Expr a, ir::Expr b) { return fn(ir::ExprOp::Sub, {std::move(a), std::move(b)}); }
inline ir::Expr un(ir::ExprOp op, ir::Expr a) { return fn(op, {std::move(a)}); }
// f(self) elementwise, f given as a combine builder; `self` may not be a number.
inline Fn unary(std::function<ir::Expr(Context&, ir::Expr)> f) {
  return [f](Context& c) {
    std::vector<ir::TensorId> in;
    ir::Expr x = operand(c, "self", in);
    if (in.empty()) throw Unsupported("no tensor operand");
    c.elementwise(in, c.def(0), f(c, x));
  };
}
inline Fn unary(ir::ExprOp op) {
  return unary([op](Context&, ir::Expr x) { return un(op, std::move(x)); });
}

// alpha * x, leaving x alone when alpha is 1.
inline ir::Expr scaled(double alpha, ir::Expr x) {
  return alpha == 1 ? x : mul(num(alpha), std::move(x));
}

// aten_train.cc: the backward ops autograd records and the optimizer update ops (--train).
void register_training_ops(const Register& reg);
// aten_math.cc: rounding, remainders, bitwise ops, inverse trigonometry, interpolation
// (linear to bicubic), k-th value selection and embedding_bag.
void register_math_ops(const Register& reg);

}  // namespace solar::lower::detail
