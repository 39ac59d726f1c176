// The executor's general einsum engine: a strided loop nest over the iteration space that
// evaluates the combine expression a block of the innermost index at a time (private to
// src/exec; docs/executor.md, "Einsum kernels").
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

#include "solar/exec/buffer.h"
#include "solar/ir/affine.h"
#include "solar/ir/expr.h"
#include "solar/ir/graph.h"
#include "solar/ir/integer_type.h"
#include "solar/ir/shape.h"
#include "solar/util/int_math.h"  // for the ISA-specific executors (loop_exec.inc)

namespace solar::exec {

// A tensor as the loop nest reads or writes it: contiguous row-major memory of `shape` in the
// `storage` representation, indexed through one affine expression per dimension.
struct LoopTensor {
  const void* data = nullptr;
  Storage storage = Storage::F32;
  std::vector<std::int64_t> shape;
  std::vector<ir::AffineExpr> subscript;
  std::optional<double> pad;  // operands only: the value read outside the tensor
};

// The integer type an einsum's combine works in (ir/integer_type.h, the rule the analyses of
// combines share).
using IntType = ir::IntegerType;
using ir::integer_type;

// One einsum over raw tensors; ir::EinsumOp semantics (include/solar/ir/graph.h), except
// that when the output map is one-to-one, output elements outside the image of the iteration
// box are left untouched (callers fill them: the GEMM path writes chunks of one output with
// several loop nests). When it is not one-to-one (scatter), the whole output is first filled
// with the reduction's identity.
struct LoopSpec {
  std::vector<std::int64_t> extents;  // per index
  std::vector<LoopTensor> operands;
  LoopTensor output;                  // `data` is written (const_cast)
  ir::DType output_dtype = ir::DType::F32;
  ir::Expr combine;
  ir::Reduce reduce = ir::Reduce::None;
  std::vector<ir::AffineConstraint> mask;
  std::optional<Storage> compute;  // the arithmetic type; chosen from the dtypes when empty
  IntType ints;                    // the integer type of the combine (integer_type)
};

// The arithmetic type of an einsum (docs/executor.md): f64 when any operand or the output is
// f64, or when the combine reinterprets bits (f32_bits, bits_f32: f64 holds every f32 and
// every 32-bit integer exactly); f32 when any is another float; i64 for all-integer einsums
// whose combine needs no division, power or special function and whose constants and pads
// are integers; f64 else.
Storage compute_storage(const std::vector<Storage>& operand_storage, Storage output_storage,
                        const ir::Expr& combine, const std::vector<std::optional<double>>& pads);

// The value an output element that no live point reaches holds (graph.h): sum 0, prod 1,
// max -inf, min +inf, any 0, all 1; 0 for reduce none. Integer dtypes use their range ends.
double reduce_identity(ir::Reduce r, ir::DType output_dtype);

// Row-major element strides of a shape (solar/ir/shape.h).
using ir::row_major_strides;
// Per-index element strides and the base offset of a tensor read through affine subscripts:
// element offset = base + sum_j stride[j] * i[j].
void tensor_strides(const LoopTensor& t, std::size_t n_idx, std::int64_t& base,
                    std::vector<std::int64_t>& stride);
// True when distinct values of the output indices (those with a nonzero output stride; the
// reduced ones have stride 0) always reach distinct elements: sorted by |stride|, each stride
// is at least the span of the next.
bool output_is_one_to_one(const std::vector<std::int64_t>& out_stride,
                          const std::vector<std::int64_t>& extents);

// Runs the loop nest with up to `threads` OpenMP threads.
void run_loop_nest(const LoopSpec& spec, int threads);

// Fills `n` elements of `data` (in `storage`) with `value` converted to that storage.
void fill_storage(void* data, Storage storage, std::int64_t n, double value, int threads);

// ---- the plan handed to the ISA-specific executors (loop_exec.inc and its parts) ----

// One instruction of a compiled combine expression over slots: operands first, then
// constants, then temporaries. `scalar[slot]` says whether a slot holds one value for the
// whole block (a constant, or an operand that does not move along the innermost index).
struct Instr {
  ir::ExprOp op;
  int dst = -1, a = -1, b = -1, c = -1;
};
struct Program {
  int num_slots = 0;
  std::vector<Instr> code;
  std::vector<std::pair<int, double>> constants;  // slot, value
  std::vector<char> scalar;                        // per slot
  int result = -1;
};

struct PlanBound {  // 0 <= sum coef[j]*i[j] + constant < size
  std::vector<std::int64_t> coef;
  std::int64_t constant = 0;
  std::int64_t size = 0;
};
struct PlanConstraint {  // sum coef[j]*i[j] + constant >= 0
  std::vector<std::int64_t> coef;
  std::int64_t constant = 0;
};
struct PlanOperand {
  const void* data = nullptr;
  Storage storage = Storage::F32;
  std::int64_t base = 0;               // element offset at the origin of the iteration space
  std::vector<std::int64_t> stride;    // per index
  std::vector<PlanBound> bounds;       // only the dimensions that can leave the tensor
  double pad = 0;
  bool used = true;                    // referenced by the combine expression
  bool scalar = false;                 // does not move along the innermost index
};

enum class LoopMode {
  OutputInner,  // innermost index is an output index; reductions accumulate a block of outputs
  ReduceInner,  // innermost index is reduced; each output element reduces its own blocks
  Scatter,      // the output map is not one-to-one: accumulate into a zero-based buffer
};

struct LoopPlan {
  Storage compute = Storage::F32;
  std::vector<std::int64_t> extent;
  std::vector<PlanOperand> operands;
  std::vector<PlanConstraint> mask;
  Program program;
  IntType ints;  // the combine's integer type (results wrap to it in i64 compute)
  ir::Reduce reduce = ir::Reduce::None;
  LoopMode mode = LoopMode::OutputInner;
  std::vector<int> outer;  // parallel loops (owned output indices), outermost first
  std::vector<int> inner;  // per-task loops (reduced or scattered indices), outermost first
  int v = 0;               // the innermost index
  std::int64_t block = 256;
  // The output: in `out_storage` (OutputInner/ReduceInner), or the compute-typed accumulation
  // buffer `acc` for Scatter (converted into `out` afterwards by the caller).
  void* out = nullptr;
  Storage out_storage = Storage::F32;
  ir::DType out_dtype = ir::DType::F32;
  std::int64_t out_base = 0;
  std::vector<std::int64_t> out_stride;
  double identity = 0;
  bool stream = false;  // write the output with non-temporal stores (large, OutputInner)
  int threads = 1;
  // Set when a float result did not fit its integer output dtype (NaN, inf, out of range).
  std::atomic<bool>* invalid_int = nullptr;
};

// The ISA-specific executors, one per instruction set the library is compiled for.
namespace isa_avx512 { void execute(const LoopPlan& plan); }
namespace isa_avx2 { void execute(const LoopPlan& plan); }
namespace isa_base { void execute(const LoopPlan& plan); }
namespace isa_avx512 {
bool convert(const void* src, Storage src_storage, void* dst, Storage dst_storage,
             ir::DType dst_dtype, std::int64_t n, int threads);
}
namespace isa_avx2 {
bool convert(const void* src, Storage src_storage, void* dst, Storage dst_storage,
             ir::DType dst_dtype, std::int64_t n, int threads);
}
namespace isa_base {
bool convert(const void* src, Storage src_storage, void* dst, Storage dst_storage,
             ir::DType dst_dtype, std::int64_t n, int threads);
}

// Converts `n` contiguous values between storages, rounding to `dst_dtype` (narrow floats,
// integer wrap-around, bool); the fastest executor the CPU supports. Throws UserError when a
// float does not fit an integer dtype (NaN, inf, out of range), as the executor's cast does.
void convert_storage(const void* src, Storage src_storage, void* dst, Storage dst_storage,
                     ir::DType dst_dtype, std::int64_t n, int threads);

// Which instruction set the executors use on this CPU: "avx512", "avx2" or "base".
const char* loop_isa();

}  // namespace solar::exec
