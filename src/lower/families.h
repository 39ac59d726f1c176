// What the families of the aten table share beyond Context and the op library (builders.h):
// reading named arguments as combine terms, helpers several families use (the gradient
// helpers among them: families.cc), and the registration hook of each family (one file per
// family, each op's backward beside its forward; aten.cc builds the table from the hooks).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "builders.h"
#include "context.h"
#include "op_table.h"
#include "solar/ir/shape.h"
#include "solar/lower/aten.h"
#include "solar/util/errors.h"
#include "solar/util/int_math.h"

namespace solar::lower::detail {

// A tensor-or-scalar argument as a combine term: a tensor joins `inputs`; None is `dflt`.
ir::Expr operand(Context& c, const char* name, std::vector<ir::TensorId>& inputs, double dflt = 0);

// aten's unary operand: `self`, which must be a tensor (a ReadTerm, builders.h).
ir::Expr self_tensor(Context& c, std::size_t k, std::vector<ir::TensorId>& inputs);
// f(self) elementwise, f given as a combine builder.
inline Fn unary(std::function<ir::Expr(Context&, ir::Expr)> f) {
  return unary(self_tensor, std::move(f));
}
inline Fn unary(ir::ExprOp op) { return unary(self_tensor, op); }

// alpha * x, leaving x alone when alpha is 1.
inline ir::Expr scaled(double alpha, ir::Expr x) {
  return alpha == 1 ? x : mul(num(alpha), std::move(x));
}

// Helpers more than one family uses (defined in the family file named).
// aten_reduce.cc: the number of elements `dims` of `shape` reduce (1 for a scalar).
std::int64_t reduced_count(const std::vector<std::int64_t>& shape,
                           const std::vector<std::int64_t>& dims);
// aten_conv.cc: the per-spatial-dimension list argument `name` (one value repeats; none is
// `dflt`), checked to have n entries.
std::vector<std::int64_t> per_dim(Context& c, const char* name, std::size_t n, std::int64_t dflt);
// aten_shape.cc: a view of the strided alias `in` (trace tensor `in_trace`) as output 0.
void alias_view(Context& c, ir::TensorId in, std::int64_t in_trace);
// aten_shape.cc: out = in[start:end:step] along `dim` (clamped as torch clamps), a copy.
void slice_into(Context& c, ir::TensorId in, ir::TensorId out, std::int64_t dim, std::int64_t start,
                std::int64_t end, std::int64_t step);
// aten_pointwise.cc: a factory op (zeros, ones, full, new_zeros...) that writes `value` (or the
// number argument `value_arg`) and reads nothing.
Fn fill(std::optional<double> value, const char* value_arg = nullptr);

// The gradient helpers of the backward ops (families.cc).
// `e >= 0` and `e <= hi` as mask constraints.
void within(std::vector<ir::AffineConstraint>& mask, const ir::AffineExpr& e, std::int64_t hi);
// A broadcasting einsum over the iteration space `full`: each input is aligned right against
// `full` (size-1 dimensions broadcast), dimensions with red[d] are reduced (the output drops
// them, or keeps them as size 1 when its rank is full's rank). `mask` uses full's positions.
void bcast(Context& c, std::vector<ir::TensorId> ins, ir::TensorId out, const Shape& full,
           const std::vector<bool>& red, ir::Expr combine, ir::Reduce r,
           std::vector<ir::AffineConstraint> mask = {});
// Every dimension of a rank-`rank` space reduced but `keep_dim`.
std::vector<bool> all_but(std::size_t rank, std::size_t keep_dim);
// A view of `t` with another shape of the same element count (or `t` when it has it).
ir::TensorId reshaped(Context& c, ir::TensorId t, Shape shape, const char* what);
// A zero-filled temporary (a constant-writing einsum, as torch's zeros).
ir::TensorId zeros(Context& c, Shape shape, ir::DType dt, const char* what = "zeros");
// Whether the trace asks for output k (an output_mask entry false: the output is None).
bool wants(Context& c, std::size_t k);
// Whether a trace tensor is available: a graph source, or the output of a lowered op (an
// output the forward's lowering left undefined is not).
bool produced(Context& c, std::int64_t id);

// The registration hook of each family, one per file; aten.cc builds the table from them.
// Each file holds its forward ops and their backward ops (recorded by `--train`), each backward
// exact (the executor reproduces PyTorch's CPU result) or Unsupported; docs/torch-training.md
// lists them.
void register_pointwise_ops(const Register& reg);  // aten_pointwise.cc (with activations)
void register_reduction_ops(const Register& reg);  // aten_reduce.cc (with softmax)
void register_norm_ops(const Register& reg);       // aten_norm.cc
void register_matmul_ops(const Register& reg);     // aten_matmul.cc
void register_conv_ops(const Register& reg);       // aten_conv.cc (with im2col/col2im)
void register_pool_ops(const Register& reg);       // aten_pool.cc (with nearest upsampling)
void register_attention_ops(const Register& reg);  // aten_attention.cc
void register_shape_ops(const Register& reg);      // aten_shape.cc
void register_pad_ops(const Register& reg);        // aten_pad.cc (constant, edge padding)
void register_index_ops(const Register& reg);      // aten_index.cc (with embedding)
void register_random_ops(const Register& reg);     // aten_random.cc (with dropout)
void register_loss_ops(const Register& reg);       // aten_loss.cc
void register_rnn_ops(const Register& reg);        // aten_rnn.cc (LSTM/GRU/RNN as repeat ops)
void register_scan_ops(const Register& reg);       // aten_scan.cc (Mamba's selective scan)
// aten_collective.cc: torch.distributed's collectives under the fake process group.
void register_c10d_ops(const Register& reg);
// aten_math.cc: rounding, remainders, bitwise ops, inverse trigonometry, interpolation
// (linear to bicubic), k-th value selection and embedding_bag.
void register_math_ops(const Register& reg);
// aten_optimizer.cc: the update ops of optimizer steps (addcmul, addcdiv, lerp).
void register_optimizer_ops(const Register& reg);

}  // namespace solar::lower::detail
