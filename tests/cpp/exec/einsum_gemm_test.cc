// The GEMM and im2col paths of run_einsum (src/exec/einsum_gemm.cc) against the naive
// reference: random contractions (batch, broadcast, transposed and permuted operands,
// operand-only reduced indices, constant subscripts, masks, dtypes) and random convolutions
// (1-D/2-D/3-D, strided, dilated, padded, grouped, depthwise, transposed), plus the chunked
// im2col and the masked-operand fallback.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

std::vector<DType> dtypes_of(const Case& c) {
  std::vector<DType> d;
  for (const Buffer& b : c.in) d.push_back(b.dtype());
  return d;
}

double compute_eps(const Case& c) {
  bool f64 = c.out_dtype == DType::F64;
  for (const Buffer& b : c.in) f64 = f64 || b.dtype() == DType::F64;
  return f64 ? 1e-12 : 3e-6;
}

// Where each index of a random contraction appears.
enum Where { kBatch, kFree0, kFree1, kK, kPre0, kPre1, kOutOnly };

// A random two-operand contraction sum(mul($0,$1)), big enough for BLAS most of the time.
Case random_contraction(std::mt19937& rng) {
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Case c;
  std::vector<Where> where;
  for (int q = uni(0, 2); q > 0; --q) where.push_back(kBatch);
  for (int q = uni(0, 2); q > 0; --q) where.push_back(kFree0);
  for (int q = uni(0, 2); q > 0; --q) where.push_back(kFree1);
  for (int q = uni(1, 2); q > 0; --q) where.push_back(kK);
  if (uni(0, 4) == 0) where.push_back(kPre0);
  if (uni(0, 4) == 0) where.push_back(kPre1);
  if (uni(0, 9) == 0) where.push_back(kOutOnly);
  std::shuffle(where.begin(), where.end(), rng);
  const int n = static_cast<int>(where.size());
  for (int j = 0; j < n; ++j) {
    const bool big = where[j] == kFree0 || where[j] == kFree1 || where[j] == kK;
    c.e.indices.push_back({"i" + std::to_string(j), big ? uni(1, 24) : uni(1, 4)});
  }
  // At most 100k iteration points, so that the reference stays fast.
  for (;;) {
    std::int64_t points = 1;
    for (const auto& d : c.e.indices) points *= d.extent;
    if (points <= 100000) break;
    auto largest = std::max_element(c.e.indices.begin(), c.e.indices.end(),
                                    [](const auto& a, const auto& b) { return a.extent < b.extent; });
    largest->extent = (largest->extent + 1) / 2;
  }
  const std::vector<std::int64_t> ext = c.e.extents();
  std::vector<int> ops[2], out;
  for (int j = 0; j < n; ++j) {
    switch (where[j]) {
      case kBatch:
        // A batch index missing from one operand broadcasts it (stride 0).
        if (uni(0, 4) != 0) ops[0].push_back(j);
        if (uni(0, 4) != 0) ops[1].push_back(j);
        out.push_back(j);
        break;
      case kFree0: ops[0].push_back(j); out.push_back(j); break;
      case kFree1: ops[1].push_back(j); out.push_back(j); break;
      case kK: ops[0].push_back(j); ops[1].push_back(j); break;
      case kPre0: ops[0].push_back(j); break;
      case kPre1: ops[1].push_back(j); break;
      case kOutOnly: out.push_back(j); break;
    }
  }
  const DType types[] = {DType::F32, DType::F32, DType::F32, DType::F32, DType::BF16, DType::F16, DType::F64};
  for (int k = 0; k < 2; ++k) {
    std::shuffle(ops[k].begin(), ops[k].end(), rng);  // transposed / permuted operands
    ir::Operand o;
    std::vector<std::int64_t> shape;
    for (int j : ops[k]) {
      o.subscript.push_back(AffineExpr::index(j));
      shape.push_back(ext[static_cast<std::size_t>(j)]);
    }
    if (uni(0, 7) == 0) {  // a constant subscript: the operand is a slice of a bigger tensor
      const std::size_t at = static_cast<std::size_t>(uni(0, static_cast<int>(shape.size())));
      o.subscript.insert(o.subscript.begin() + static_cast<std::ptrdiff_t>(at), AffineExpr::constant(2));
      shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(at), 3);
    }
    c.e.operands.push_back(o);
    c.in.push_back(testing::random_buffer(types[uni(0, 6)], shape, rng));
  }
  std::shuffle(out.begin(), out.end(), rng);
  for (int j : out) {
    c.e.output.push_back(AffineExpr::index(j));
    c.out_shape.push_back(ext[static_cast<std::size_t>(j)]);
  }
  c.e.combine = uni(0, 1) ? Expr::make(ExprOp::Mul, {Expr::operand(0), Expr::operand(1)})
                          : Expr::make(ExprOp::Mul, {Expr::operand(1), Expr::operand(0)});
  c.e.reduce = Reduce::Sum;
  if (uni(0, 3) == 0) {
    // A causal-style constraint between two indices of one operand, or of the output.
    const std::vector<int>& pool = uni(0, 1) ? ops[uni(0, 1)] : out;
    if (pool.size() >= 2) {
      const int a = pool[0], b = pool[1];
      c.e.mask.push_back({AffineExpr::make({{a, 1}, {b, -1}}, uni(-1, 1))});
    }
  }
  const DType outs[] = {DType::F32, DType::F32, DType::BF16, DType::F64};
  c.out_dtype = outs[uni(0, 3)];
  return c;
}

TEST(EinsumGemm, RandomContractionsMatchTheReference) {
  std::mt19937 rng(4242);
  std::map<EinsumPath, int> paths;
  for (int iter = 0; iter < 300; ++iter) {
    Case c = random_contraction(rng);
    const std::vector<DType> dts = dtypes_of(c);
    const EinsumPath path = einsum_path(c.e, dts, c.out_dtype);
    paths[path]++;
    const auto want = reference(c.e, ptrs(c.in), c.out_dtype, c.out_shape);
    const Buffer got = run(c.e, ptrs(c.in), c.out_dtype, c.out_shape);
    EXPECT_EQ(last_einsum_run().path, path) << "the predicted path was not taken";
    EXPECT_EQ(compare(got, want, compute_eps(c), "contraction " + std::to_string(iter)), 0)
        << testing::describe(c.e, ptrs(c.in), c.out_dtype, c.out_shape);
  }
  EXPECT_GT(paths[EinsumPath::Gemm], 100);      // most of them go to BLAS
  EXPECT_GT(paths[EinsumPath::LoopNest], 10);   // small ones and mixed masks do not
}

struct ConvShape {
  int dims, n, groups, cg, kg, size, r, stride, dilation, pad;
};

// y[n, g*Kg+k, p...] = sum_{c, r...} x[n, g*Cg+c, p*s + r*d - pad...] * w[g*Kg+k, c, r...]
Case make_conv(const ConvShape& s, std::mt19937& rng, DType dtype = DType::F32) {
  Case c;
  const int p_ext = (s.size + 2 * s.pad - s.dilation * (s.r - 1) - 1) / s.stride + 1;
  enum { N, G, K, C };
  c.e.indices = {{"n", s.n}, {"g", s.groups}, {"k", s.kg}, {"c", s.cg}};
  for (int d = 0; d < s.dims; ++d) c.e.indices.push_back({"p" + std::to_string(d), p_ext});
  for (int d = 0; d < s.dims; ++d) c.e.indices.push_back({"r" + std::to_string(d), s.r});
  ir::Operand x, w;
  x.subscript = {AffineExpr::index(N), AffineExpr::make({{G, s.cg}, {C, 1}}, 0)};
  w.subscript = {AffineExpr::make({{G, s.kg}, {K, 1}}, 0), AffineExpr::index(C)};
  c.e.output = {AffineExpr::index(N), AffineExpr::make({{G, s.kg}, {K, 1}}, 0)};
  std::vector<std::int64_t> xs = {s.n, s.groups * s.cg}, ws = {s.groups * s.kg, s.cg};
  c.out_shape = {s.n, s.groups * s.kg};
  for (int d = 0; d < s.dims; ++d) {
    const int p = 4 + d, r = 4 + s.dims + d;
    x.subscript.push_back(AffineExpr::make({{p, s.stride}, {r, s.dilation}}, -s.pad));
    w.subscript.push_back(AffineExpr::index(r));
    c.e.output.push_back(AffineExpr::index(p));
    xs.push_back(s.size);
    ws.push_back(s.r);
    c.out_shape.push_back(p_ext);
  }
  x.pad = 0.0;
  c.e.operands = {x, w};
  c.e.combine = Expr::make(ExprOp::Mul, {Expr::operand(0), Expr::operand(1)});
  c.e.reduce = Reduce::Sum;
  c.in.push_back(testing::random_buffer(dtype, xs, rng));
  c.in.push_back(testing::random_buffer(dtype, ws, rng));
  c.out_dtype = dtype;
  return c;
}

ConvShape random_conv_shape(std::mt19937& rng) {
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  ConvShape s;
  s.dims = uni(1, 3);
  s.n = uni(1, 2);
  s.groups = uni(0, 2) == 0 ? uni(2, 4) : 1;
  const bool depthwise = s.groups > 1 && uni(0, 2) == 0;
  s.cg = depthwise ? 1 : uni(1, s.dims == 3 ? 4 : 8);
  s.kg = depthwise ? 1 : uni(1, s.dims == 3 ? 4 : 12);
  s.size = s.dims == 3 ? uni(3, 6) : s.dims == 2 ? uni(3, 10) : uni(3, 30);
  s.r = uni(1, 3);
  s.stride = uni(1, 2);
  s.dilation = uni(1, 2);
  s.pad = uni(0, s.dilation * (s.r - 1));
  if (s.size + 2 * s.pad < s.dilation * (s.r - 1) + 1) s.size = s.dilation * (s.r - 1) + 1;
  return s;
}

TEST(EinsumGemm, RandomConvolutionsMatchTheReference) {
  std::mt19937 rng(1717);
  std::map<EinsumPath, int> paths;
  for (int iter = 0; iter < 150; ++iter) {
    const ConvShape s = random_conv_shape(rng);
    Case c = make_conv(s, rng, iter % 7 == 0 ? DType::BF16 : DType::F32);
    const EinsumPath path = einsum_path(c.e, dtypes_of(c), c.out_dtype);
    paths[path]++;
    const auto want = reference(c.e, ptrs(c.in), c.out_dtype, c.out_shape);
    const Buffer got = run(c.e, ptrs(c.in), c.out_dtype, c.out_shape);
    EXPECT_EQ(last_einsum_run().path, path) << "the predicted path was not taken";
    EXPECT_EQ(compare(got, want, compute_eps(c), "conv " + std::to_string(iter)), 0)
        << testing::describe(c.e, ptrs(c.in), c.out_dtype, c.out_shape);
  }
  EXPECT_GT(paths[EinsumPath::Im2colGemm], 20);
  EXPECT_GT(paths[EinsumPath::LoopNest], 10);
}

TEST(EinsumGemm, ChunkedIm2colMatchesTheReference) {
  // A budget far below one image's im2col matrix forces chunks along n and then along the
  // output rows (the outermost index of the GEMM's N group).
  std::mt19937 rng(5);
  const std::size_t saved = materialize_budget_bytes();
  for (std::size_t budget : {std::size_t{1}, std::size_t{2048}, std::size_t{5000}}) {
    set_materialize_budget_bytes(budget);
    for (const ConvShape& s : {ConvShape{2, 3, 1, 6, 8, 9, 3, 1, 1, 1},
                               ConvShape{2, 2, 2, 4, 5, 11, 3, 2, 1, 1},
                               ConvShape{1, 1, 1, 8, 16, 40, 5, 1, 2, 4}}) {
      Case c = make_conv(s, rng);
      ASSERT_EQ(einsum_path(c.e), EinsumPath::Im2colGemm);
      const auto want = reference(c.e, ptrs(c.in), c.out_dtype, c.out_shape);
      const Buffer got = run(c.e, ptrs(c.in), c.out_dtype, c.out_shape);
      EXPECT_EQ(last_einsum_run().path, EinsumPath::Im2colGemm);
      EXPECT_GT(last_einsum_run().chunks, 1) << "budget " << budget;
      EXPECT_EQ(compare(got, want, compute_eps(c), "chunked conv"), 0) << "budget " << budget;
    }
  }
  set_materialize_budget_bytes(saved);
}

TEST(EinsumGemm, TransposedConvolutionInBothForms) {
  std::mt19937 rng(31);
  const int n = 2, c_in = 8, k_out = 16, len = 9, r = 3;
  // Scatter form, stride 2: y[n, k, i*2 + t] += x[n, c, i] * w[c, k, t] (loop nest).
  {
    Case c;
    c.e.indices = {{"n", n}, {"k", k_out}, {"i", len}, {"t", r}, {"c", c_in}};
    c.e.operands = {{{AffineExpr::index(0), AffineExpr::index(4), AffineExpr::index(2)}, std::nullopt},
                    {{AffineExpr::index(4), AffineExpr::index(1), AffineExpr::index(3)}, std::nullopt}};
    c.e.output = {AffineExpr::index(0), AffineExpr::index(1), AffineExpr::make({{2, 2}, {3, 1}}, 0)};
    c.e.combine = Expr::make(ExprOp::Mul, {Expr::operand(0), Expr::operand(1)});
    c.e.reduce = Reduce::Sum;
    c.in = {testing::random_buffer(DType::F32, {n, c_in, len}, rng),
            testing::random_buffer(DType::F32, {c_in, k_out, r}, rng)};
    c.out_shape = {n, k_out, (len - 1) * 2 + r};
    EXPECT_EQ(einsum_path(c.e), EinsumPath::LoopNest);
    const auto want = reference(c.e, ptrs(c.in), c.out_dtype, c.out_shape);
    EXPECT_EQ(compare(run(c.e, ptrs(c.in), c.out_dtype, c.out_shape), want, 3e-6, "scatter"), 0);
  }
  // Gather form, stride 1: y[n, k, o] = sum x[n, c, o - t] (pad 0) * w[c, k, t] (im2col).
  {
    Case c;
    c.e.indices = {{"n", n}, {"k", k_out}, {"o", len + r - 1}, {"t", r}, {"c", c_in}};
    c.e.operands = {{{AffineExpr::index(0), AffineExpr::index(4), AffineExpr::make({{2, 1}, {3, -1}}, 0)}, 0.0},
                    {{AffineExpr::index(4), AffineExpr::index(1), AffineExpr::index(3)}, std::nullopt}};
    c.e.output = {AffineExpr::index(0), AffineExpr::index(1), AffineExpr::index(2)};
    c.e.combine = Expr::make(ExprOp::Mul, {Expr::operand(0), Expr::operand(1)});
    c.e.reduce = Reduce::Sum;
    c.in = {testing::random_buffer(DType::F32, {n, c_in, len}, rng),
            testing::random_buffer(DType::F32, {c_in, k_out, r}, rng)};
    c.out_shape = {n, k_out, len + r - 1};
    EXPECT_EQ(einsum_path(c.e), EinsumPath::Im2colGemm);
    const auto want = reference(c.e, ptrs(c.in), c.out_dtype, c.out_shape);
    EXPECT_EQ(compare(run(c.e, ptrs(c.in), c.out_dtype, c.out_shape), want, 3e-6, "gather"), 0);
    EXPECT_EQ(last_einsum_run().path, EinsumPath::Im2colGemm);
  }
}

// P.V with a causal mask over the P operand: zeroing P's masked points is exact only while V
// is finite; with an inf in V the kernel falls back to the loop nest and stays exact.
TEST(EinsumGemm, MaskedOperandWithInfFallsBackExactly) {
  std::mt19937 rng(8);
  const int s = 24, d = 16;
  Case c;
  c.e.indices = {{"q", s}, {"d", d}, {"k", s}};
  c.e.operands = {{{AffineExpr::index(0), AffineExpr::index(2)}, std::nullopt},
                  {{AffineExpr::index(2), AffineExpr::index(1)}, std::nullopt}};
  c.e.output = {AffineExpr::index(0), AffineExpr::index(1)};
  c.e.combine = Expr::make(ExprOp::Mul, {Expr::operand(0), Expr::operand(1)});
  c.e.reduce = Reduce::Sum;
  c.e.mask = {{AffineExpr::make({{0, 1}, {2, -1}}, 0)}};  // q >= k
  c.in = {testing::random_buffer(DType::F32, {s, s}, rng), testing::random_buffer(DType::F32, {s, d}, rng)};
  EXPECT_EQ(einsum_path(c.e), EinsumPath::Gemm);
  c.out_shape = {s, d};
  auto want = reference(c.e, ptrs(c.in), c.out_dtype, c.out_shape);
  EXPECT_EQ(compare(run(c.e, ptrs(c.in), c.out_dtype, c.out_shape), want, 3e-6, "finite"), 0);
  EXPECT_EQ(last_einsum_run().path, EinsumPath::Gemm);
  // V's last row (k = s-1) is inf: only q = s-1 reaches it.
  for (int j = 0; j < d; ++j) c.in[1].data<float>()[(s - 1) * d + j] = INFINITY;
  want = reference(c.e, ptrs(c.in), c.out_dtype, c.out_shape);
  const Buffer got = run(c.e, ptrs(c.in), c.out_dtype, c.out_shape);
  EXPECT_EQ(last_einsum_run().path, EinsumPath::LoopNest);
  EXPECT_EQ(compare(got, want, 3e-6, "inf"), 0);
  EXPECT_TRUE(std::isfinite(got.value(0)));  // q = 0 does not reach the inf row
}

// An index repeated within an operand (a diagonal) is one strided axis: A[k,k,i] reads the
// diagonal of its first two dimensions.
TEST(EinsumGemm, RepeatedIndexReadsTheDiagonal) {
  std::mt19937 rng(21);
  Case c;
  c.e.indices = {{"i", 40}, {"j", 30}, {"k", 24}};
  c.e.operands = {{{AffineExpr::index(2), AffineExpr::index(2), AffineExpr::index(0)}, std::nullopt},
                  {{AffineExpr::index(2), AffineExpr::index(1)}, std::nullopt}};
  c.e.output = {AffineExpr::index(0), AffineExpr::index(1)};
  c.e.combine = Expr::make(ExprOp::Mul, {Expr::operand(0), Expr::operand(1)});
  c.e.reduce = Reduce::Sum;
  c.in = {testing::random_buffer(DType::F32, {24, 24, 40}, rng),
          testing::random_buffer(DType::F32, {24, 30}, rng)};
  c.out_shape = {40, 30};
  const auto want = reference(c.e, ptrs(c.in), c.out_dtype, c.out_shape);
  EXPECT_EQ(compare(run(c.e, ptrs(c.in), c.out_dtype, c.out_shape), want, 3e-6, "diagonal"), 0);
  EXPECT_EQ(last_einsum_run().path, EinsumPath::Gemm);
}

// Many small GEMMs (parallel over batches, single-threaded BLAS) and one big one (threaded
// BLAS) give the same values as one thread.
TEST(EinsumGemm, ThreadCountsAgree) {
  std::mt19937 rng(12);
  for (auto [b, m] : {std::pair{64, 16}, std::pair{1, 160}}) {
    Case c;
    c.e.indices = {{"b", b}, {"m", m}, {"n", m}, {"k", m}};
    c.e.operands = {{{AffineExpr::index(0), AffineExpr::index(1), AffineExpr::index(3)}, std::nullopt},
                    {{AffineExpr::index(0), AffineExpr::index(3), AffineExpr::index(2)}, std::nullopt}};
    c.e.output = {AffineExpr::index(0), AffineExpr::index(1), AffineExpr::index(2)};
    c.e.combine = Expr::make(ExprOp::Mul, {Expr::operand(0), Expr::operand(1)});
    c.e.reduce = Reduce::Sum;
    c.in = {testing::random_buffer(DType::F32, {b, m, m}, rng),
            testing::random_buffer(DType::F32, {b, m, m}, rng)};
    c.out_shape = {b, m, m};
    ASSERT_EQ(einsum_path(c.e), EinsumPath::Gemm);
    const Buffer one = run(c.e, ptrs(c.in), DType::F32, c.out_shape, 1);
    EXPECT_EQ(last_einsum_run().path, EinsumPath::Gemm);
    const Buffer two = run(c.e, ptrs(c.in), DType::F32, c.out_shape, 2);
    const auto want = reference(c.e, ptrs(c.in), c.out_dtype, c.out_shape);
    EXPECT_EQ(compare(one, want, 3e-6, "1 thread"), 0);
    EXPECT_EQ(compare(two, want, 3e-6, "2 threads"), 0);
  }
}

}  // namespace
}  // namespace solar::exec
