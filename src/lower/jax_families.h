// What the families of the jax table share beyond Context and the op library (builders.h):
// reading an op's positional operands and its primitive parameters, helpers several families
// use, and the registration hook of each family (one file per family, as aten's; jax.cc
// builds the table from the hooks). The JAX recorder (python/solar/frontends/jax/) writes
// `args.operands` as the positional operand list (`{"tensor": id}` with an optional known
// `value`, or a number for a literal) and every primitive parameter as an argument by name.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "builders.h"
#include "context.h"
#include "op_table.h"

namespace solar::lower::detail::jax {

// ---- operands and parameters (jax_operands.cc)
const nlohmann::json& operands(Context& c);
std::size_t n_operands(Context& c);
bool is_tensor(const nlohmann::json& v);
// Operand k as a graph tensor (a literal there is an error of the recorder: Unsupported).
TensorId in(Context& c, std::size_t k);
// Operand k as a combine term: a tensor joins `inputs`, a literal is a constant.
Expr term(Context& c, std::size_t k, std::vector<TensorId>& inputs);
// The op library's reader of an op that has exactly `arity` operands (builders.h ReadTerm).
ReadTerm positional(std::size_t arity);
// The value of a scalar operand when the recorder knew it (a literal or a folded tensor).
std::optional<double> known(Context& c, std::size_t k);
// A list parameter of integers (null or absent: empty).
Shape ints(Context& c, const char* name);
Shape int_list(const nlohmann::json& v, const char* what);
// A list field of a dimension-numbers object (absent: empty).
Shape field(const nlohmann::json& dn, const char* key);
// [[lo, hi], ...] padding pairs, one per dimension (null: none).
using Pads = std::vector<std::pair<std::int64_t, std::int64_t>>;
Pads pad_pairs(const nlohmann::json& v, std::size_t n);
// A per-dimension parameter, all ones when absent.
Shape or_ones(Shape v, std::size_t n);
// The width of an unsigned operand held as the signed type of its width (uint16, uint32:
// the IR has no such types), 0 for any other operand.
int unsigned_bits(Context& c, std::size_t k);
// x (held signed) as i64 holding its unsigned value: x + 2^bits where x reads negative.
TensorId unsigned_wide(Context& c, TensorId x, int bits);

// ---- helpers of several families (defined in the family file named)
// jax_shape.cc: a slice move of x into out.
void slice_move(Context& c, TensorId x, TensorId out, Shape starts, Shape ends, Shape steps);
// jax_shape.cc: x with `interior` copies of `value` between neighbours along dimension d.
TensorId interior_pad(Context& c, TensorId x, std::size_t d, std::int64_t interior, double value);
// jax_shape.cc: x with the box at `starts` (dimensions from d on) replaced by u, into out (a
// new temporary when invalid); slices and concats.
TensorId update_box(Context& c, TensorId x, TensorId u, const Shape& starts, std::size_t d,
                    TensorId out);

// jax.cc: the table, which a loop's body lowers with too (jax_loop.cc).
const Table& table();

// ---- the registration hook of each family, one per file
void register_pointwise_ops(const Register& reg);  // jax_pointwise.cc: elementwise, casts
void register_reduction_ops(const Register& reg);  // jax_reduce.cc: reductions, arg-, cumulative
void register_matmul_ops(const Register& reg);     // jax_matmul.cc: dot_general
void register_window_ops(const Register& reg);     // jax_window.cc: convolution, reduce_window
void register_shape_ops(const Register& reg);      // jax_shape.cc: shapes and data movement
void register_index_ops(const Register& reg);      // jax_index.cc: gather/scatter, iota, sorts
void register_random_ops(const Register& reg);     // jax_random.cc: random bits
void register_loop_ops(const Register& reg);       // jax_loop.cc: loops, unrecorded control flow
void register_collective_ops(const Register& reg);  // jax_collective.cc: shard_map collectives

}  // namespace solar::lower::detail::jax
