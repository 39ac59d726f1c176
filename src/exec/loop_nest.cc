#include "loop_nest.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

#include "solar/util/errors.h"

namespace solar::exec {
namespace {

using ir::AffineExpr;
using ir::DType;
using ir::Expr;
using ir::ExprOp;
using ir::Reduce;

bool integer_closed(const Expr& e) {
  switch (e.op()) {
    case ExprOp::Operand: return true;
    case ExprOp::Const: {
      const double v = e.value();
      return std::isfinite(v) && v == std::nearbyint(v) && std::fabs(v) < 4.6e18;
    }
    case ExprOp::Add: case ExprOp::Sub: case ExprOp::Mul: case ExprOp::Max: case ExprOp::Min:
    case ExprOp::Lt: case ExprOp::Le: case ExprOp::Gt: case ExprOp::Ge: case ExprOp::Eq:
    case ExprOp::Ne: case ExprOp::Select: case ExprOp::Neg: case ExprOp::Abs:
    case ExprOp::Square: case ExprOp::Relu: case ExprOp::Floor: case ExprOp::Ceil:
    case ExprOp::Trunc: case ExprOp::RoundEven: case ExprOp::RoundAway: case ExprOp::Sign:
    case ExprOp::Rem: case ExprOp::Mod: case ExprOp::And: case ExprOp::Or: case ExprOp::Xor:
    case ExprOp::Not: case ExprOp::Shl: case ExprOp::Ashr: case ExprOp::Lshr:
    case ExprOp::Popcount: case ExprOp::Clz: case ExprOp::IDiv:
      for (const Expr& c : e.children())
        if (!integer_closed(c)) return false;
      return true;
    case ExprOp::Div: case ExprOp::Pow: case ExprOp::Exp: case ExprOp::Log: case ExprOp::Tanh:
    case ExprOp::Erf: case ExprOp::Rsqrt: case ExprOp::Sqrt: case ExprOp::Recip:
    case ExprOp::Sigmoid: case ExprOp::Sin: case ExprOp::Cos: case ExprOp::Atan:
    case ExprOp::Asin: case ExprOp::Acos: case ExprOp::Atan2: case ExprOp::F32Bits:
    case ExprOp::BitsF32: case ExprOp::ErfInv: case ExprOp::Lgamma: case ExprOp::Digamma:
      return false;
  }
  return false;
}

bool reinterprets_bits(const Expr& e) {
  if (e.op() == ExprOp::F32Bits || e.op() == ExprOp::BitsF32) return true;
  for (const Expr& c : e.children())
    if (reinterprets_bits(c)) return true;
  return false;
}

void collect_operands(const Expr& e, std::vector<char>& used) {
  if (e.op() == ExprOp::Operand) {
    used[static_cast<std::size_t>(e.operand_index())] = 1;
    return;
  }
  for (const Expr& c : e.children()) collect_operands(c, used);
}

int compile(const Expr& e, Program& p) {
  switch (e.op()) {
    case ExprOp::Operand: return e.operand_index();
    case ExprOp::Const: {
      const int slot = p.num_slots++;
      p.scalar.push_back(1);
      p.constants.emplace_back(slot, e.value());
      return slot;
    }
    case ExprOp::Add: case ExprOp::Sub: case ExprOp::Mul: case ExprOp::Div: case ExprOp::Max:
    case ExprOp::Min: case ExprOp::Pow: case ExprOp::Lt: case ExprOp::Le: case ExprOp::Gt:
    case ExprOp::Ge: case ExprOp::Eq: case ExprOp::Ne: case ExprOp::Select: case ExprOp::Neg:
    case ExprOp::Abs: case ExprOp::Square: case ExprOp::Relu: case ExprOp::Exp: case ExprOp::Log:
    case ExprOp::Tanh: case ExprOp::Erf: case ExprOp::Rsqrt: case ExprOp::Sqrt:
    case ExprOp::Recip: case ExprOp::Sigmoid: case ExprOp::Sin: case ExprOp::Cos:
    case ExprOp::Atan: case ExprOp::Asin: case ExprOp::Acos: case ExprOp::Atan2:
    case ExprOp::Floor: case ExprOp::Ceil: case ExprOp::Trunc: case ExprOp::RoundEven:
    case ExprOp::RoundAway: case ExprOp::Sign: case ExprOp::Rem: case ExprOp::Mod: case ExprOp::And:
    case ExprOp::Or: case ExprOp::Xor: case ExprOp::Not: case ExprOp::Shl: case ExprOp::Ashr:
    case ExprOp::Lshr: case ExprOp::Popcount: case ExprOp::Clz: case ExprOp::F32Bits:
    case ExprOp::BitsF32: case ExprOp::ErfInv: case ExprOp::Lgamma: case ExprOp::Digamma:
    case ExprOp::IDiv:
      break;
  }
  Instr in;
  in.op = e.op();
  int args[3] = {-1, -1, -1};
  bool scalar = true;
  for (std::size_t c = 0; c < e.children().size(); ++c) {
    args[c] = compile(e.children()[c], p);
    scalar = scalar && p.scalar[static_cast<std::size_t>(args[c])];
  }
  in.a = args[0];
  in.b = args[1];
  in.c = args[2];
  in.dst = p.num_slots++;
  p.scalar.push_back(scalar ? 1 : 0);
  p.code.push_back(in);
  return in.dst;
}

enum class Isa { Avx512, Avx2, Base };

Isa detect_isa() {
  if (const char* force = std::getenv("SOLAR_EXEC_ISA")) {  // testing the other executors
    if (std::string_view(force) == "base") return Isa::Base;
    if (std::string_view(force) == "avx2") return Isa::Avx2;
  }
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    return Isa::Avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::Avx2;
  return Isa::Base;
}

Isa isa() {
  static const Isa kIsa = detect_isa();
  return kIsa;
}

void execute_plan(const LoopPlan& plan) {
  switch (isa()) {
    case Isa::Avx512: isa_avx512::execute(plan); return;
    case Isa::Avx2: isa_avx2::execute(plan); return;
    case Isa::Base: isa_base::execute(plan); return;
  }
}

// Output indices that tasks may own: when the output map is one-to-one, all of them; else
// those that are exactly one output dimension's subscript (different values of such an index
// write different elements, so tasks over it never collide).
std::vector<char> owned_indices(const LoopTensor& out, const std::vector<std::int64_t>& out_stride,
                                const std::vector<std::int64_t>& extents, bool& one_to_one) {
  const std::size_t n_idx = extents.size();
  std::vector<char> owned(n_idx, 0);
  one_to_one = output_is_one_to_one(out_stride, extents);
  std::vector<char> in_output(n_idx, 0);
  for (const AffineExpr& a : out.subscript) {
    for (const ir::AffineTerm& t : a.terms()) in_output[static_cast<std::size_t>(t.index)] = 1;
    if (a.terms().size() == 1 && a.terms()[0].coef == 1)
      owned[static_cast<std::size_t>(a.terms()[0].index)] = 1;
  }
  if (one_to_one) return in_output;
  return owned;
}

[[noreturn]] void throw_not_integral(DType d) {
  throw UserError(UserError::Kind::BadArgument,
                  fmt::format("an einsum result stored into a {} tensor is NaN, infinite or outside "
                              "the range of {} (the executor refuses what C++ and the frameworks "
                              "leave undefined)",
                              ir::dtype_name(d), ir::dtype_name(d)));
}

}  // namespace

void tensor_strides(const LoopTensor& t, std::size_t n_idx, std::int64_t& base,
                    std::vector<std::int64_t>& stride) {
  const std::vector<std::int64_t> s = row_major_strides(t.shape);
  base = 0;
  stride.assign(n_idx, 0);
  for (std::size_t d = 0; d < t.subscript.size(); ++d) {
    base += s[d] * t.subscript[d].constant_term();
    for (const ir::AffineTerm& term : t.subscript[d].terms())
      stride[static_cast<std::size_t>(term.index)] += s[d] * term.coef;
  }
}

bool output_is_one_to_one(const std::vector<std::int64_t>& out_stride,
                          const std::vector<std::int64_t>& extents) {
  std::vector<std::pair<std::int64_t, std::int64_t>> axes;  // |stride|, extent
  for (std::size_t j = 0; j < extents.size(); ++j)  // reduced indices have stride 0
    if (extents[j] > 1 && out_stride[j] != 0) axes.emplace_back(std::llabs(out_stride[j]), extents[j]);
  std::sort(axes.begin(), axes.end(), std::greater<>());
  for (std::size_t k = 0; k + 1 < axes.size(); ++k)
    if (axes[k].first < axes[k + 1].first * axes[k + 1].second) return false;
  return true;
}

Storage compute_storage(const std::vector<Storage>& operand_storage, Storage output_storage,
                        const Expr& combine, const std::vector<std::optional<double>>& pads) {
  bool f64 = output_storage == Storage::F64 || reinterprets_bits(combine),
       f32 = output_storage == Storage::F32;
  for (Storage s : operand_storage) {
    f64 = f64 || s == Storage::F64;
    f32 = f32 || s == Storage::F32;
  }
  if (f64) return Storage::F64;
  if (f32) return Storage::F32;
  for (const std::optional<double>& p : pads)
    if (p && (!std::isfinite(*p) || *p != std::nearbyint(*p))) return Storage::F64;
  return integer_closed(combine) ? Storage::I64 : Storage::F64;
}

double reduce_identity(Reduce r, DType d) {
  const bool integer = !ir::is_float(d);
  auto int_range = [&](bool max_end) -> double {
    switch (d) {
      case DType::I64: return max_end ? 9.2233720368547758e18 : -9.2233720368547758e18;
      case DType::I32: return max_end ? 2147483647.0 : -2147483648.0;
      case DType::I16: return max_end ? 32767.0 : -32768.0;
      case DType::I8: return max_end ? 127.0 : -128.0;
      case DType::I4: return max_end ? 7.0 : -8.0;
      case DType::U8: return max_end ? 255.0 : 0.0;
      case DType::Bool: return max_end ? 1.0 : 0.0;
      case DType::F64: case DType::F32: case DType::TF32: case DType::BF16: case DType::F16:
      case DType::F8E4M3: case DType::F8E5M2: case DType::F6: case DType::F4:
        break;
    }
    return 0;
  };
  const double inf = std::numeric_limits<double>::infinity();
  switch (r) {
    case Reduce::None: case Reduce::Sum: case Reduce::Any: return 0;
    case Reduce::Prod: case Reduce::All: return 1;
    case Reduce::Max: return integer ? int_range(false) : -inf;
    case Reduce::Min: return integer ? int_range(true) : inf;
  }
  return 0;
}

void run_loop_nest(const LoopSpec& spec, int threads) {
  const std::size_t n_idx = spec.extents.size() == 0 ? 1 : spec.extents.size();
  LoopPlan p;
  p.extent = spec.extents;
  if (p.extent.empty()) p.extent.push_back(1);  // a scalar einsum: one virtual index
  for (std::int64_t e : p.extent) SOLAR_CHECK(e >= 1, "loop nest over an empty index");

  std::vector<Storage> storages;
  std::vector<std::optional<double>> pads;
  for (const LoopTensor& t : spec.operands) {
    storages.push_back(t.storage);
    pads.push_back(t.pad);
  }
  p.compute = spec.compute ? *spec.compute
                           : compute_storage(storages, spec.output.storage, spec.combine, pads);
  p.reduce = spec.reduce;
  p.ints = spec.ints;
  p.identity = reduce_identity(spec.reduce, spec.output_dtype);

  std::vector<char> used(spec.operands.size(), 0);
  collect_operands(spec.combine, used);
  for (std::size_t k = 0; k < spec.operands.size(); ++k) {
    const LoopTensor& t = spec.operands[k];
    PlanOperand op;
    op.data = t.data;
    op.storage = t.storage;
    op.used = used[k] != 0;
    op.pad = t.pad.value_or(0.0);
    tensor_strides(t, n_idx, op.base, op.stride);
    for (std::size_t d = 0; d < t.subscript.size(); ++d) {
      const AffineExpr& a = t.subscript[d];
      if (a.min_value(p.extent) >= 0 && a.max_value(p.extent) < t.shape[d]) continue;
      if (!t.pad)
        throw UserError(UserError::Kind::InvalidGraph,
                        fmt::format("einsum operand {} dimension {} is read outside [0, {}) and "
                                    "the operand has no pad value",
                                    k, d, t.shape[d]));
      PlanBound b;
      b.coef.assign(n_idx, 0);
      for (const ir::AffineTerm& term : a.terms()) b.coef[static_cast<std::size_t>(term.index)] = term.coef;
      b.constant = a.constant_term();
      b.size = t.shape[d];
      op.bounds.push_back(std::move(b));
    }
    p.operands.push_back(std::move(op));
  }
  for (const ir::AffineConstraint& c : spec.mask) {
    if (c.expr.min_value(p.extent) >= 0) continue;  // holds everywhere
    PlanConstraint pc;
    pc.coef.assign(n_idx, 0);
    for (const ir::AffineTerm& term : c.expr.terms()) pc.coef[static_cast<std::size_t>(term.index)] = term.coef;
    pc.constant = c.expr.constant_term();
    p.mask.push_back(std::move(pc));
  }
  tensor_strides(spec.output, n_idx, p.out_base, p.out_stride);
  p.out_storage = spec.output.storage;
  p.out_dtype = spec.output_dtype;

  bool one_to_one = true;
  const std::vector<char> owned = owned_indices(spec.output, p.out_stride, p.extent, one_to_one);
  std::vector<char> in_output(n_idx, 0);
  for (const AffineExpr& a : spec.output.subscript)
    for (const ir::AffineTerm& t : a.terms()) in_output[static_cast<std::size_t>(t.index)] = 1;

  // The innermost index: the one along which the most operands (and the output, when it is an
  // output index) move with unit stride; long extents break ties.
  int best = 0;
  double best_score = std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < n_idx; ++j) {
    double score = 0;
    for (const PlanOperand& op : p.operands) {
      if (!op.used || op.stride[j] == 0) continue;
      score += (op.stride[j] == 1 || op.stride[j] == -1) ? 0.0 : 1.0;
    }
    if (in_output[j]) score += std::llabs(p.out_stride[j]) == 1 ? -0.25 : 1.0;
    const std::int64_t e = p.extent[j];
    score += e == 1 ? 100.0 : e < 8 ? 2.0 : e < 64 ? 0.5 : 0.0;
    if (score < best_score || (score == best_score && e > p.extent[static_cast<std::size_t>(best)])) {
      best_score = score;
      best = static_cast<int>(j);
    }
  }
  p.v = best;
  const std::size_t v = static_cast<std::size_t>(best);
  if (!one_to_one) {
    // Which of several points writing one element would win is not defined by the IR.
    if (spec.reduce == Reduce::None)
      throw UserError(UserError::Kind::InvalidGraph,
                      "einsum with reduce none has an output subscript that sends several "
                      "iteration points to one element; name a reduction (sum, max, ...)");
    p.mode = LoopMode::Scatter;
  } else {
    p.mode = in_output[v] ? LoopMode::OutputInner : LoopMode::ReduceInner;
  }

  // Outer loops: owned output indices in the output's row-major order. Inner loops: the rest,
  // outermost where operands move fastest.
  for (std::size_t j = 0; j < n_idx; ++j) {
    if (j == v) continue;
    if (owned[j])
      p.outer.push_back(static_cast<int>(j));
    else
      p.inner.push_back(static_cast<int>(j));
  }
  std::stable_sort(p.outer.begin(), p.outer.end(), [&](int a, int b) {
    return std::llabs(p.out_stride[a]) > std::llabs(p.out_stride[b]);
  });
  auto weight = [&](int j) {
    std::int64_t w = 0;
    for (const PlanOperand& op : p.operands) w += std::llabs(op.stride[j]);
    return w;
  };
  std::stable_sort(p.inner.begin(), p.inner.end(), [&](int a, int b) { return weight(a) > weight(b); });

  for (PlanOperand& op : p.operands) {
    op.scalar = op.stride[v] == 0;
    for (const PlanBound& b : op.bounds) op.scalar = op.scalar && b.coef[v] == 0;
  }
  Program& prog = p.program;
  prog.num_slots = static_cast<int>(spec.operands.size());
  for (const PlanOperand& op : p.operands) prog.scalar.push_back(op.scalar ? 1 : 0);
  prog.result = compile(spec.combine, prog);

  p.block = p.mode == LoopMode::OutputInner ? 256 : 2048;
  p.block = std::min<std::int64_t>(p.block, p.extent[v]);

  std::int64_t points = 1;
  for (std::int64_t e : p.extent) points *= e;
  p.threads = points < (1 << 15) ? 1 : std::max(1, threads);

  // Outputs far larger than the caches are not read back before they leave them: stream.
  std::int64_t out_elements = 1;
  for (std::int64_t d : spec.output.shape) out_elements *= d;
  // Only whole, aligned cache lines: a line written partly by streaming and partly by normal
  // stores (a 56-float im2col row) is far slower than either.
  const std::int64_t width = static_cast<std::int64_t>(storage_bytes(p.out_storage));
  bool lines = p.out_base * width % 64 == 0 && p.extent[v] * width % 64 == 0 && p.block * width % 64 == 0;
  for (std::size_t j = 0; j < n_idx; ++j)
    if (j != v && p.out_stride[j] * width % 64 != 0) lines = false;
  p.stream = p.mode == LoopMode::OutputInner && p.out_stride[v] == 1 && lines &&
             out_elements * width >= (std::int64_t{16} << 20);
  std::atomic<bool> invalid{false};
  p.invalid_int = &invalid;
  if (p.mode != LoopMode::Scatter) {
    p.out = const_cast<void*>(spec.output.data);
    execute_plan(p);
    if (invalid) throw_not_integral(spec.output_dtype);
    return;
  }
  // Scatter: accumulate in the compute type over the whole output, then convert.
  std::int64_t n_out = 1;
  for (std::int64_t d : spec.output.shape) n_out *= d;
  const bool in_place = spec.output.storage == p.compute;
  Buffer acc;
  if (!in_place) {
    const DType acc_dtype = p.compute == Storage::F32   ? DType::F32
                            : p.compute == Storage::F64 ? DType::F64
                                                        : DType::I64;
    acc = Buffer::zeros(acc_dtype, spec.output.shape);
  }
  p.out = in_place ? const_cast<void*>(spec.output.data) : acc.raw_data();
  fill_storage(p.out, p.compute, n_out, p.identity, threads);
  p.out_storage = p.compute;
  execute_plan(p);
  convert_storage(p.out, p.compute, const_cast<void*>(spec.output.data), spec.output.storage,
                  spec.output_dtype, n_out, threads);
}

void fill_storage(void* data, Storage storage, std::int64_t n, double value, int threads) {
  const int t = n > (1 << 16) ? std::max(1, threads) : 1;
  switch (storage) {
    case Storage::F32: {
      float* d = static_cast<float*>(data);
      const float v = static_cast<float>(value);
#pragma omp parallel for schedule(static) num_threads(t) if (t > 1)
      for (std::int64_t i = 0; i < n; ++i) d[i] = v;
      return;
    }
    case Storage::F64: {
      double* d = static_cast<double*>(data);
#pragma omp parallel for schedule(static) num_threads(t) if (t > 1)
      for (std::int64_t i = 0; i < n; ++i) d[i] = value;
      return;
    }
    case Storage::I64: {
      std::int64_t* d = static_cast<std::int64_t*>(data);
      std::int64_t v = value >= 9.2233720368547758e18    ? std::numeric_limits<std::int64_t>::max()
                       : value <= -9.2233720368547758e18 ? std::numeric_limits<std::int64_t>::min()
                       : value != value                  ? 0
                                                         : static_cast<std::int64_t>(value);
#pragma omp parallel for schedule(static) num_threads(t) if (t > 1)
      for (std::int64_t i = 0; i < n; ++i) d[i] = v;
      return;
    }
  }
}

void convert_storage(const void* src, Storage src_storage, void* dst, Storage dst_storage,
                     DType dst_dtype, std::int64_t n, int threads) {
  bool ok = true;
  switch (isa()) {
    case Isa::Avx512: ok = isa_avx512::convert(src, src_storage, dst, dst_storage, dst_dtype, n, threads); break;
    case Isa::Avx2: ok = isa_avx2::convert(src, src_storage, dst, dst_storage, dst_dtype, n, threads); break;
    case Isa::Base: ok = isa_base::convert(src, src_storage, dst, dst_storage, dst_dtype, n, threads); break;
  }
  if (!ok) throw_not_integral(dst_dtype);
}

const char* loop_isa() {
  switch (isa()) {
    case Isa::Avx512: return "avx512";
    case Isa::Avx2: return "avx2";
    case Isa::Base: return "base";
  }
  return "base";
}

}  // namespace solar::exec
