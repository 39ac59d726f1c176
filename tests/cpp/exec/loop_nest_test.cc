// The loop nest path of run_einsum (src/exec/loop_nest.cc, loop_exec.inc) against the naive
// reference: elementwise, broadcast, every reduction, masks, pads and sliding windows,
// scatter-form outputs, every combine op and the dtypes.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>

#include "exec/einsum_reference.h"
#include "solar/exec/einsum_path.h"
#include "solar/exec/kernels.h"

namespace solar::exec {
namespace {

using ir::AffineExpr;
using ir::DType;
using ir::Expr;
using ir::ExprOp;
using ir::Reduce;
using testing::compare;
using testing::reference;
using testing::run;

struct Case {
  ir::EinsumOp e;
  std::vector<Buffer> in;
  DType out_dtype = DType::F32;
  std::vector<std::int64_t> out_shape;
};

std::vector<const Buffer*> ptrs(const std::vector<Buffer>& v) {
  std::vector<const Buffer*> p;
  for (const Buffer& b : v) p.push_back(&b);
  return p;
}

// A random leaf: an operand or a small constant (an integer one in integer einsums, which
// then compute in i64).
Expr leaf(std::mt19937& rng, int n_ops, bool integer = false) {
  std::uniform_int_distribution<int> pick(0, n_ops + 1);
  const int k = pick(rng);
  if (k < n_ops) return Expr::operand(k);
  std::uniform_int_distribution<int> c(-4, 4);
  return Expr::constant(integer ? c(rng) : c(rng) * 0.5);
}

Expr un(ExprOp op, Expr a) { return Expr::make(op, {std::move(a)}); }
Expr bi(ExprOp op, Expr a, Expr b) { return Expr::make(op, {std::move(a), std::move(b)}); }
// |x| + 0.5: a positive argument for log, sqrt, division and powers.
Expr positive(Expr a) { return bi(ExprOp::Add, un(ExprOp::Abs, std::move(a)), Expr::constant(0.5)); }

// A random combine expression of bounded depth whose values stay finite on inputs in [-2, 2].
// `integer`: only ops that keep integers integers.
Expr random_expr(std::mt19937& rng, int n_ops, int depth, bool integer) {
  if (depth == 0) return leaf(rng, n_ops, integer);
  static const ExprOp kFloatOps[] = {
      ExprOp::Add, ExprOp::Sub, ExprOp::Mul, ExprOp::Div, ExprOp::Max, ExprOp::Min, ExprOp::Pow,
      ExprOp::Lt, ExprOp::Le, ExprOp::Gt, ExprOp::Ge, ExprOp::Eq, ExprOp::Ne, ExprOp::Select,
      ExprOp::Neg, ExprOp::Abs, ExprOp::Square, ExprOp::Relu, ExprOp::Exp, ExprOp::Log,
      ExprOp::Tanh, ExprOp::Erf, ExprOp::Rsqrt, ExprOp::Sqrt, ExprOp::Recip, ExprOp::Sigmoid,
      ExprOp::Sin, ExprOp::Cos};
  static const ExprOp kIntOps[] = {ExprOp::Add, ExprOp::Sub, ExprOp::Mul, ExprOp::Max,
                                   ExprOp::Min, ExprOp::Lt, ExprOp::Ge, ExprOp::Eq,
                                   ExprOp::Ne, ExprOp::Select, ExprOp::Neg, ExprOp::Abs,
                                   ExprOp::Square, ExprOp::Relu};
  const ExprOp op = integer ? kIntOps[std::uniform_int_distribution<int>(0, 13)(rng)]
                            : kFloatOps[std::uniform_int_distribution<int>(0, 27)(rng)];
  auto sub = [&] { return random_expr(rng, n_ops, depth - 1, integer); };
  // Squash nested values into [-2, 2] so that exp, pow and products stay finite.
  auto squashed = [&] { return integer ? sub() : un(ExprOp::Tanh, sub()); };
  switch (op) {
    case ExprOp::Lt: case ExprOp::Le: case ExprOp::Gt: case ExprOp::Ge: case ExprOp::Eq:
    case ExprOp::Ne:
      // Comparisons on leaves only: f32 and the f64 reference then agree exactly.
      return bi(op, leaf(rng, n_ops, integer), leaf(rng, n_ops, integer));
    case ExprOp::Select:
      return Expr::make(op, {bi(ExprOp::Gt, leaf(rng, n_ops, integer), leaf(rng, n_ops, integer)), sub(), sub()});
    case ExprOp::Div: return bi(op, sub(), positive(squashed()));
    case ExprOp::Pow: return bi(op, positive(squashed()), leaf(rng, 0));
    case ExprOp::Log: case ExprOp::Sqrt: case ExprOp::Rsqrt: case ExprOp::Recip:
      return un(op, positive(squashed()));
    case ExprOp::Exp: case ExprOp::Square: return un(op, squashed());
    case ExprOp::Mul: return bi(op, squashed(), squashed());
    case ExprOp::Add: case ExprOp::Sub: case ExprOp::Max: case ExprOp::Min:
      return bi(op, sub(), sub());
    case ExprOp::Neg: case ExprOp::Abs: case ExprOp::Relu: case ExprOp::Tanh: case ExprOp::Erf:
    case ExprOp::Sigmoid: case ExprOp::Sin: case ExprOp::Cos:
      return un(op, sub());
    case ExprOp::Operand: case ExprOp::Const:
    // Not generated here (expr_ops_test.cc covers them).
    case ExprOp::Atan: case ExprOp::Asin: case ExprOp::Acos: case ExprOp::Atan2:
    case ExprOp::Floor: case ExprOp::Ceil: case ExprOp::Trunc: case ExprOp::RoundEven:
    case ExprOp::RoundAway: case ExprOp::Sign: case ExprOp::Rem: case ExprOp::Mod: case ExprOp::And:
    case ExprOp::Or: case ExprOp::Xor: case ExprOp::Not: case ExprOp::Shl: case ExprOp::Ashr:
    case ExprOp::Lshr: case ExprOp::Popcount: case ExprOp::Clz: case ExprOp::F32Bits:
    case ExprOp::BitsF32: case ExprOp::ErfInv: case ExprOp::Lgamma: case ExprOp::Digamma:
    case ExprOp::IDiv:
      break;
  }
  return leaf(rng, n_ops);
}

// A random einsum for the loop nest: 1-4 indices, 1-3 operands over random index subsets
// (broadcast), sliding-window and strided subscripts with pads, an output over a random
// subset of the indices, any reduction, an optional mask, and random dtypes.
Case random_case(std::mt19937& rng, bool allow_scatter) {
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Case c;
  const int n_idx = uni(1, 4);
  for (int j = 0; j < n_idx; ++j) {
    // Mostly small; sometimes longer than a block (256/512) so that blocking and the
    // per-block pad intervals are exercised.
    std::int64_t e = uni(0, 9) == 0 ? uni(300, 700) : uni(1, 7);
    c.e.indices.push_back({"i" + std::to_string(j), e});
  }
  std::int64_t total = 1;
  for (const auto& d : c.e.indices) total *= d.extent;
  while (total > 20000) {  // keep the reference fast
    for (auto& d : c.e.indices)
      if (d.extent > 7) { total /= d.extent; d.extent = uni(2, 7); total *= d.extent; break; }
  }
  const std::vector<std::int64_t> ext = c.e.extents();
  const bool integer = uni(0, 5) == 0;
  const DType float_types[] = {DType::F32, DType::F32, DType::F32, DType::BF16, DType::F16, DType::F64};
  const DType int_types[] = {DType::I32, DType::I8, DType::I64, DType::U8};
  const int n_ops = uni(1, 3);
  for (int k = 0; k < n_ops; ++k) {
    ir::Operand o;
    std::vector<std::int64_t> shape;
    bool needs_pad = false;
    for (int j = 0; j < n_idx; ++j) {
      if (uni(0, 3) == 0) continue;  // broadcast along j
      const int form = uni(0, 5);
      if (form == 0 && n_idx > 1) {
        // Sliding window: i_j + i_w - 1 over a tensor dim of extent e_j (reads pad at edges).
        const int w = (j + 1) % n_idx;
        o.subscript.push_back(AffineExpr::make({{j, 1}, {w, 1}}, -1));
        shape.push_back(ext[j]);
        needs_pad = true;
      } else if (form == 1) {
        // Strided and flipped: e_j - 1 - 2*i_j over a dim of extent 2*e_j (half pad).
        o.subscript.push_back(AffineExpr::make({{j, -2}}, ext[j] - 1));
        shape.push_back(2 * ext[j]);
        needs_pad = true;
      } else {
        o.subscript.push_back(AffineExpr::index(j));
        shape.push_back(ext[j]);
      }
    }
    if (uni(0, 6) == 0) {  // a constant subscript into an extra dimension
      o.subscript.push_back(AffineExpr::constant(1));
      shape.push_back(3);
    }
    if (needs_pad) o.pad = integer ? -1.0 : (uni(0, 3) == 0 ? -INFINITY : 0.25);
    // Random dimension order.
    std::vector<std::size_t> perm(shape.size());
    for (std::size_t d = 0; d < perm.size(); ++d) perm[d] = d;
    std::shuffle(perm.begin(), perm.end(), rng);
    ir::Operand po = o;
    std::vector<std::int64_t> pshape = shape;
    for (std::size_t d = 0; d < perm.size(); ++d) {
      po.subscript[d] = o.subscript[perm[d]];
      pshape[d] = shape[perm[d]];
    }
    c.e.operands.push_back(po);
    const DType dt = integer ? int_types[uni(0, 3)] : float_types[uni(0, 5)];
    c.in.push_back(testing::random_buffer(dt, pshape, rng));
  }
  // Output: a random subset of the indices in random order.
  std::vector<int> out_idx;
  for (int j = 0; j < n_idx; ++j)
    if (uni(0, 2) != 0) out_idx.push_back(j);
  std::shuffle(out_idx.begin(), out_idx.end(), rng);
  if (allow_scatter && out_idx.size() >= 2 && uni(0, 2) == 0) {
    // Scatter form: out[a + b] (several points per element, like a transposed convolution).
    const int a = out_idx.back();
    out_idx.pop_back();
    const int b = out_idx.back();
    out_idx.pop_back();
    for (int j : out_idx) {
      c.e.output.push_back(AffineExpr::index(j));
      c.out_shape.push_back(ext[j]);
    }
    c.e.output.push_back(AffineExpr::make({{a, 1}, {b, 1}}, 0));
    c.out_shape.push_back(ext[a] + ext[b] - 1);
  } else {
    for (int j : out_idx) {
      c.e.output.push_back(AffineExpr::index(j));
      c.out_shape.push_back(ext[j]);
    }
  }
  // Every index must appear somewhere: add unused ones to the first operand as plain dims.
  for (int j = 0; j < n_idx; ++j) {
    bool used = false;
    for (const auto& o : c.e.operands)
      for (const auto& a : o.subscript)
        for (const auto& t : a.terms()) used = used || t.index == j;
    for (const auto& a : c.e.output)
      for (const auto& t : a.terms()) used = used || t.index == j;
    if (!used) {
      c.e.operands[0].subscript.push_back(AffineExpr::index(j));
      std::vector<std::int64_t> shape = c.in[0].shape();
      shape.push_back(ext[j]);
      c.in[0] = testing::random_buffer(c.in[0].dtype(), shape, rng);
    }
  }
  const bool has_reduced = !c.e.reduced_indices().empty();
  const Reduce reds[] = {Reduce::Sum, Reduce::Max, Reduce::Min, Reduce::Prod, Reduce::Any, Reduce::All};
  const bool scatter = c.e.output.size() > 0 && c.e.output.back().terms().size() > 1;
  // Reduce none needs a one-to-one output (several points writing one element is refused).
  c.e.reduce = (!has_reduced && !scatter && uni(0, 1) == 0) ? Reduce::None : reds[uni(0, 5)];
  if (integer && c.e.reduce == Reduce::Prod) c.e.reduce = Reduce::Max;  // no i64 overflow
  c.e.combine = random_expr(rng, n_ops, uni(0, 3), integer);
  // Every operand must be used by the combine.
  for (int k = 0; k < n_ops; ++k) {
    std::function<bool(const Expr&)> uses = [&](const Expr& x) {
      if (x.op() == ExprOp::Operand) return x.operand_index() == k;
      for (const Expr& ch : x.children())
        if (uses(ch)) return true;
      return false;
    };
    if (!uses(c.e.combine))
      c.e.combine = bi(ExprOp::Add, c.e.combine, integer ? Expr::operand(k) : un(ExprOp::Tanh, Expr::operand(k)));
  }
  if (n_idx >= 2 && uni(0, 2) == 0) {
    const int a = uni(0, n_idx - 1), b = (a + 1) % n_idx;
    c.e.mask.push_back({AffineExpr::make({{a, 1}, {b, -1}}, uni(-1, 1))});
  }
  c.out_dtype = integer ? (uni(0, 3) == 0 ? DType::Bool : int_types[uni(0, 3)])
                        : float_types[uni(0, 5)];
  if (c.e.reduce == Reduce::Prod && !integer)
    c.e.combine = un(ExprOp::Tanh, c.e.combine);  // keep long products in range
  return c;
}

double compute_eps(const Case& c) {
  bool f64 = c.out_dtype == DType::F64;
  for (const Buffer& b : c.in) f64 = f64 || b.dtype() == DType::F64;
  return f64 ? 1e-12 : 2e-5;
}

TEST(LoopNest, RandomEinsumsMatchTheReference) {
  std::mt19937 rng(20240601);
  std::map<Reduce, int> seen;
  int checked = 0;
  for (int iter = 0; iter < 400; ++iter) {
    Case c = random_case(rng, false);
    ASSERT_EQ(einsum_path(c.e), EinsumPath::LoopNest);
    seen[c.e.reduce]++;
    const auto want = reference(c.e, ptrs(c.in), c.out_dtype, c.out_shape);
    const Buffer got = run(c.e, ptrs(c.in), c.out_dtype, c.out_shape);
    EXPECT_EQ(compare(got, want, compute_eps(c), "case " + std::to_string(iter)), 0)
        << testing::describe(c.e, ptrs(c.in), c.out_dtype, c.out_shape);
    ++checked;
  }
  EXPECT_EQ(checked, 400);
  for (Reduce r : {Reduce::None, Reduce::Sum, Reduce::Max, Reduce::Min, Reduce::Prod, Reduce::Any,
                   Reduce::All})
    EXPECT_GT(seen[r], 5) << ir::reduce_name(r);  // the generator covers every reduction
}

TEST(LoopNest, RandomScatterOutputsMatchTheReference) {
  std::mt19937 rng(777);
  int scatter = 0;
  for (int iter = 0; iter < 200; ++iter) {
    Case c = random_case(rng, true);
    bool affine_out = false;
    for (const auto& a : c.e.output) affine_out = affine_out || a.terms().size() > 1;
    scatter += affine_out;
    const auto want = reference(c.e, ptrs(c.in), c.out_dtype, c.out_shape);
    const Buffer got = run(c.e, ptrs(c.in), c.out_dtype, c.out_shape);
    EXPECT_EQ(compare(got, want, compute_eps(c), "scatter case " + std::to_string(iter)), 0)
        << testing::describe(c.e, ptrs(c.in), c.out_dtype, c.out_shape);
  }
  EXPECT_GT(scatter, 30);
}

TEST(LoopNest, OneAndTwoThreadsAgreeExactly) {
  std::mt19937 rng(99);
  for (int iter = 0; iter < 60; ++iter) {
    Case c = random_case(rng, true);
    const Buffer one = run(c.e, ptrs(c.in), c.out_dtype, c.out_shape, 1);
    const Buffer two = run(c.e, ptrs(c.in), c.out_dtype, c.out_shape, 2);
    for (std::int64_t i = 0; i < one.num_elements(); ++i) {
      const double a = one.value(i), b = two.value(i);
      EXPECT_TRUE(a == b || (std::isnan(a) && std::isnan(b))) << "case " << iter << " element " << i;
    }
  }
}

// Every special function over a wide range, against the f64 library in the reference: the
// vectorized f32 versions are within a few ulp.
TEST(LoopNest, SpecialFunctionsAreAccurate) {
  std::vector<float> xs;
  for (int i = -4000; i <= 4000; ++i) xs.push_back(static_cast<float>(i) * 0.0127f);
  for (float x : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-6f, 88.0f, -88.0f, -100.0f, -104.0f, 89.0f,
                  1e30f, -1e30f, INFINITY, -INFINITY})
    xs.push_back(x);
  const std::int64_t n = static_cast<std::int64_t>(xs.size());
  Buffer in = Buffer::zeros(DType::F32, {n});
  std::copy(xs.begin(), xs.end(), in.data<float>());
  struct Fn { ExprOp op; double rel; double abs; };
  // exp flushes results below 2^-126 (x < -87.34) to 0: absolute error < 1.2e-38.
  const Fn fns[] = {{ExprOp::Exp, 3e-7, 1.2e-38}, {ExprOp::Log, 3e-7, 1e-7},
                    {ExprOp::Tanh, 3e-7, 1e-38}, {ExprOp::Erf, 5e-7, 1e-38},
                    {ExprOp::Sigmoid, 5e-7, 1e-38}, {ExprOp::Sqrt, 1.2e-7, 0},
                    {ExprOp::Rsqrt, 2.4e-7, 0}, {ExprOp::Recip, 1.2e-7, 0},
                    {ExprOp::Sin, 1.2e-7, 1e-7}, {ExprOp::Cos, 1.2e-7, 1e-7}};
  for (const Fn& f : fns) {
    ir::EinsumOp e;
    e.indices = {{"i", n}};
    e.operands = {{{AffineExpr::index(0)}, std::nullopt}};
    e.output = {AffineExpr::index(0)};
    e.combine = un(f.op, Expr::operand(0));
    const Buffer got = run(e, {&in}, DType::F32, {n});
    int bad = 0;
    double worst = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const double x = xs[static_cast<std::size_t>(i)];
      const double want = static_cast<float>(testing::ref_expr(e.combine, {x}));
      const double g = got.value(i);
      if (std::isnan(want) && std::isnan(g)) continue;
      if (std::isinf(want) && g == want) continue;
      const double err = std::fabs(g - want);
      const double tol = f.rel * std::fabs(want) + f.abs;
      if (std::fabs(want) > 0) worst = std::max(worst, err / std::fabs(want));
      if (!(err <= tol) && ++bad <= 3)
        ADD_FAILURE() << ir::expr_op_name(f.op) << "(" << x << ") = " << g << ", want " << want;
    }
    EXPECT_EQ(bad, 0) << ir::expr_op_name(f.op) << " worst relative error " << worst;
  }
}

}  // namespace
}  // namespace solar::exec
