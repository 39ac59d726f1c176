// What the families of the aten table share beyond Context: the function type of a table
// entry, combine-expression shorthands, helpers several families use, and the registration
// hook of each family (one file per family; aten.cc builds the table and calls each hook once).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "context.h"
#include "op_table.h"
#include "solar/ir/shape.h"
#include "solar/lower/aten.h"
#include "solar/util/errors.h"

namespace solar::lower::detail {

// Lowers every op of `trace` with `table` (the dialect's; `dialect` names it in messages):
// an op the table lacks or cannot model becomes `unanalyzed` with the reason (or throws
// Unsupported with options.strict). Verifies the graph and maps graph tensors to trace ids.
LowerResult lower_with_table(const OpTrace& trace, const LowerOptions& options,
                             const Table& table, std::string_view dialect);

// Adds the masks of lower/masks.h to a lowered graph (aten and jax: the program's own masks;
// the loop language's nests already say which points they run) and stops comparing the
// tensors whose values it changed at points nothing reads.
void recognize_masks_in(LowerResult& r);

using ir::AffineExpr;
using ir::AffineTerm;
using ir::Expr;
using ir::ExprOp;
using ir::MoveKind;
using ir::numel;
using ir::Reduce;
using ir::Shape;
using ir::TensorId;
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

// Helpers more than one family uses (defined in the family file named).
// aten_reduce.cc: the number of elements `dims` of `shape` reduce (1 for a scalar).
std::int64_t reduced_count(const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& dims);
// aten_reduce.cc: an argmax/argmin (`what`) of `in` over `axis` (all dimensions without one):
// not an einsum; an opaque op that compares every element once.
void arg_reduce(Context& c, ir::TensorId in, ir::TensorId out, const char* what,
                std::optional<std::int64_t> axis = std::nullopt, ir::Attrs attrs = {});
// aten_reduce.cc: softmax (log-softmax with `log`) of `in` over `dim` into `out`, restricted to
// the points of `mask`.
void softmax_into(Context& c, ir::TensorId in, ir::TensorId out, std::int64_t dim, bool log,
                  const std::vector<ir::AffineConstraint>& mask = {});
// aten_conv.cc: the per-spatial-dimension list argument `name` (one value repeats; none is
// `dflt`), checked to have n entries.
std::vector<std::int64_t> per_dim(Context& c, const char* name, std::size_t n, std::int64_t dflt);
// aten_conv.cc: integer division rounding down / up (any signs).
std::int64_t floor_div(std::int64_t a, std::int64_t b);
std::int64_t ceil_div(std::int64_t a, std::int64_t b);
// aten_shape.cc: a view of the strided alias `in` (trace tensor `in_trace`) as output 0.
void alias_view(Context& c, ir::TensorId in, std::int64_t in_trace);
// aten_shape.cc: out = in[start:end:step] along `dim` (clamped as torch clamps), a copy.
void slice_into(Context& c, ir::TensorId in, ir::TensorId out, std::int64_t dim, std::int64_t start,
                std::int64_t end, std::int64_t step);

// The registration hook of each family, one per file; aten.cc builds the table from them.
void register_pointwise_ops(const Register& reg);  // aten_pointwise.cc
void register_reduction_ops(const Register& reg);  // aten_reduce.cc
void register_norm_ops(const Register& reg);       // aten_norm.cc
void register_matmul_ops(const Register& reg);     // aten_matmul.cc
void register_conv_ops(const Register& reg);       // aten_conv.cc
void register_pool_ops(const Register& reg);       // aten_pool.cc
void register_attention_ops(const Register& reg);  // aten_attention.cc
void register_shape_ops(const Register& reg);      // aten_shape.cc
void register_index_ops(const Register& reg);      // aten_index.cc
void register_random_ops(const Register& reg);     // aten_random.cc
void register_loss_ops(const Register& reg);       // aten_loss.cc
void register_rnn_ops(const Register& reg);        // aten_rnn.cc (LSTM/GRU/RNN as repeat ops)
// aten_math.cc: rounding, remainders, bitwise ops, inverse trigonometry, interpolation
// (linear to bicubic), k-th value selection and embedding_bag.
void register_math_ops(const Register& reg);
// aten_train.cc: the backward ops autograd records and the optimizer update ops (--train).
void register_training_ops(const Register& reg);

}  // namespace solar::lower::detail
