// run_einsum and the path diagnostics (src/exec/einsum.cc): exact known results, masks and the
// identity of unreached outputs, argument errors, and which path each kind of op takes.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "exec/einsum_reference.h"
#include "solar/exec/einsum_path.h"
#include "solar/exec/kernels.h"
#include "solar/ir/text.h"
#include "solar/util/errors.h"

namespace solar::exec {
namespace {

using ir::DType;
using testing::run;

// The einsum of the graph's only op, and the graph's tensors by name.
struct Parsed {
  ir::Graph g;
  const ir::EinsumOp& op() const { return g.ops().back().einsum(); }
  const ir::Tensor& out() const { return g.tensor(g.ops().back().outputs[0]); }
  const ir::Tensor& tensor(const std::string& name) const { return g.tensor(*g.find_tensor(name)); }
};
Parsed parse(const std::string& text) { return Parsed{ir::parse_graph(text)}; }

Buffer filled(DType d, std::vector<std::int64_t> shape, const std::function<double(std::int64_t)>& f) {
  Buffer b = Buffer::zeros(d, std::move(shape));
  for (std::int64_t i = 0; i < b.num_elements(); ++i) {
    switch (b.storage()) {
      case Storage::F32: b.data<float>()[i] = static_cast<float>(f(i)); break;
      case Storage::F64: b.data<double>()[i] = f(i); break;
      case Storage::I64: b.data<std::int64_t>()[i] = static_cast<std::int64_t>(f(i)); break;
    }
  }
  return b;
}

TEST(Einsum, IdentityMatmulIsExact) {
  Parsed p = parse(R"(
    a = f32[64,64] input
    b = f32[64,48] input
    c = f32[64,48]{output} einsum "mk,kn->mn" (a, b))");
  Buffer eye = filled(DType::F32, {64, 64}, [](std::int64_t i) { return i / 64 == i % 64 ? 1 : 0; });
  Buffer b = filled(DType::F32, {64, 48}, [](std::int64_t i) { return std::sin(0.37 * i) * 100; });
  Buffer c = run(p.op(), {&eye, &b}, DType::F32, {64, 48});
  EXPECT_EQ(last_einsum_run().path, EinsumPath::Gemm);
  for (std::int64_t i = 0; i < c.num_elements(); ++i) ASSERT_EQ(c.value(i), b.value(i)) << i;
}

TEST(Einsum, AReductionOverNothingIsItsIdentity) {
  Parsed p = parse(R"(
    a = f32[3,0] input
    s = f32[3]{output} einsum [i=3,j=0] sum $0 (a[i,j]) -> [i]
    m = f32[3]{output} einsum [i=3,j=0] max $0 (a[i,j]) -> [i])");
  Buffer a = Buffer::zeros(DType::F32, {3, 0});
  Buffer s = run(p.g.ops()[0].einsum(), {&a}, DType::F32, {3});
  Buffer m = run(p.g.ops()[1].einsum(), {&a}, DType::F32, {3});
  for (std::int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(s.value(i), 0.0);  // the empty sum
    EXPECT_EQ(m.value(i), -INFINITY);  // the empty max, as the identity of max
  }
}

TEST(Einsum, OnesMatmulSumsK) {
  Parsed p = parse(R"(
    a = f32[3,40,96] input
    b = f32[96,50] input
    c = f32[3,40,50]{output} einsum "bmk,kn->bmn" (a, b))");  // b broadcast over the batch
  Buffer a = filled(DType::F32, {3, 40, 96}, [](std::int64_t) { return 1; });
  Buffer b = filled(DType::F32, {96, 50}, [](std::int64_t) { return 1; });
  Buffer c = run(p.op(), {&a, &b}, DType::F32, {3, 40, 50});
  EXPECT_EQ(last_einsum_run().path, EinsumPath::Gemm);
  for (std::int64_t i = 0; i < c.num_elements(); ++i) ASSERT_EQ(c.value(i), 96.0);  // K
}

TEST(Einsum, IntegerMatmulIsExact) {
  Parsed p = parse(R"(
    a = i32[2,2] input
    b = i32[2,2] input
    c = i32[2,2]{output} einsum "mk,kn->mn" (a, b))");
  Buffer a = filled(DType::I32, {2, 2}, [](std::int64_t i) { return i + 1; });  // [[1,2],[3,4]]
  Buffer b = filled(DType::I32, {2, 2}, [](std::int64_t i) { return i + 5; });  // [[5,6],[7,8]]
  Buffer c = run(p.op(), {&a, &b}, DType::I32, {2, 2});
  EXPECT_EQ(last_einsum_run().path, EinsumPath::LoopNest);  // integers: the i64 loop nest
  EXPECT_EQ(c.value(0), 19);  // 1*5 + 2*7
  EXPECT_EQ(c.value(1), 22);  // 1*6 + 2*8
  EXPECT_EQ(c.value(2), 43);  // 3*5 + 4*7
  EXPECT_EQ(c.value(3), 50);  // 3*6 + 4*8

  // A larger one beyond f32's exact range: a[i,k] = i + k, b[k,j] = 1000003 * k * j.
  Parsed q = parse(R"(
    a = i64[6,300] input
    b = i64[300,5] input
    c = i64[6,5]{output} einsum "ik,kj->ij" (a, b))");
  Buffer a2 = filled(DType::I64, {6, 300}, [](std::int64_t i) { return i / 300 + i % 300; });
  Buffer b2 = filled(DType::I64, {300, 5}, [](std::int64_t i) { return 1000003 * (i / 5) * (i % 5); });
  Buffer c2 = run(q.op(), {&a2, &b2}, DType::I64, {6, 5});
  const std::int64_t s1 = 299 * 300 / 2, s2 = 299 * 300 * 599 / 6;  // sum k, sum k^2
  for (std::int64_t i = 0; i < 6; ++i)
    for (std::int64_t j = 0; j < 5; ++j)
      EXPECT_EQ(c2.data<std::int64_t>()[i * 5 + j], 1000003 * j * (i * s1 + s2)) << i << "," << j;
}

TEST(Einsum, IntegerOverflowWrapsToTheOutputDtype) {
  Parsed p = parse(R"(
    a = i8[4] input
    c = i8[]{output} einsum [k=4] sum mul($0,$0) (a[k]) -> [])");
  Buffer a = filled(DType::I8, {4}, [](std::int64_t) { return 10; });
  Buffer c = run(p.op(), {&a}, DType::I8, {});
  EXPECT_EQ(c.value(0), 400 - 512);  // 4 * 100 = 400 wraps to -112 in i8
}

// A 3x3 box filter with zero padding over an all-ones image counts the in-image neighbours.
TEST(Einsum, Conv3x3BoxFilterCountsNeighbours) {
  Parsed p = parse(R"(
    x = f32[2,4,8,8] input
    w = f32[16,4,3,3] input
    y = f32[2,16,8,8]{output} einsum [n=2,k=16,p=8,q=8,c=4,r=3,s=3] sum mul($0,$1) (x[n,c,p+r-1,q+s-1] pad 0, w[k,c,r,s]) -> [n,k,p,q])");
  Buffer x = filled(DType::F32, {2, 4, 8, 8}, [](std::int64_t) { return 1; });
  Buffer w = filled(DType::F32, {16, 4, 3, 3}, [](std::int64_t) { return 1; });
  Buffer y = run(p.op(), {&x, &w}, DType::F32, {2, 16, 8, 8});
  EXPECT_EQ(last_einsum_run().path, EinsumPath::Im2colGemm);
  auto span = [](std::int64_t i) { return 3 - (i == 0) - (i == 7); };  // rows/cols in range
  for (std::int64_t i = 0; i < y.num_elements(); ++i) {
    const std::int64_t pp = (i / 8) % 8, qq = i % 8;
    ASSERT_EQ(y.value(i), 4.0 * span(pp) * span(qq)) << i;  // C * rows * cols
  }
}

// The discrete Laplacian of a linear ramp vanishes inside the image.
TEST(Einsum, ConvLaplacianOfARampIsZeroInside) {
  Parsed p = parse(R"(
    x = f32[1,1,9,9] input
    w = f32[1,1,3,3] input
    y = f32[1,1,9,9]{output} einsum [n=1,k=1,p=9,q=9,c=1,r=3,s=3] sum mul($0,$1) (x[n,c,p+r-1,q+s-1] pad 0, w[k,c,r,s]) -> [n,k,p,q])");
  Buffer x = filled(DType::F32, {1, 1, 9, 9}, [](std::int64_t i) { return 3 * (i / 9) + 2 * (i % 9); });
  const double lap[9] = {0, 1, 0, 1, -4, 1, 0, 1, 0};
  Buffer w = filled(DType::F32, {1, 1, 3, 3}, [&](std::int64_t i) { return lap[i]; });
  Buffer y = run(p.op(), {&x, &w}, DType::F32, {1, 1, 9, 9});
  for (std::int64_t r = 1; r < 8; ++r)
    for (std::int64_t c = 1; c < 8; ++c) EXPECT_EQ(y.value(r * 9 + c), 0.0) << r << "," << c;
  // Top edge (row 0, inner column): the missing neighbour above is 0, so the sum lacks
  // x[-1][c] = 3*(-1) + 2c: y = -(2c - 3).
  for (std::int64_t c = 1; c < 8; ++c) EXPECT_EQ(y.value(c), -(2.0 * c - 3)) << c;
}

TEST(Einsum, CausalScoresAreZeroAboveTheDiagonal) {
  Parsed p = parse(R"(
    q = f32[2,32,16] input
    k = f32[2,32,16] input
    s = f32[2,32,32]{output} einsum [b=2,i=32,j=32,d=16] sum mul($0,$1) (q[b,i,d], k[b,j,d]) -> [b,i,j] where i >= j)");
  std::mt19937 rng(3);
  Buffer q = testing::random_buffer(DType::F32, {2, 32, 16}, rng);
  Buffer k = testing::random_buffer(DType::F32, {2, 32, 16}, rng);
  Buffer s = run(p.op(), {&q, &k}, DType::F32, {2, 32, 32});
  EXPECT_EQ(last_einsum_run().path, EinsumPath::Gemm);
  const auto want = testing::reference(p.op(), {&q, &k}, DType::F32, {2, 32, 32});
  EXPECT_EQ(testing::compare(s, want, 3e-6, "causal"), 0);
  for (std::int64_t i = 0; i < 32; ++i)
    for (std::int64_t j = i + 1; j < 32; ++j) EXPECT_EQ(s.value(i * 32 + j), 0.0);  // sum identity
}

TEST(Einsum, UnreachedOutputsHoldTheReductionIdentity) {
  // Rows 0 and 1 have no live j (j <= i - 2): max gives -inf, min +inf, prod 1, all 1.
  const std::pair<const char*, double> cases[] = {
      {"max", -INFINITY}, {"min", INFINITY}, {"prod", 1}, {"all", 1}, {"sum", 0}, {"any", 0}};
  Buffer x = filled(DType::F32, {6, 6}, [](std::int64_t i) { return 0.5 + i % 3; });
  for (const auto& [red, identity] : cases) {
    Parsed p = parse(std::string(R"(
      x = f32[6,6] input
      m = f32[6]{output} einsum [i=6,j=6] )") + red + R"( $0 (x[i,j]) -> [i] where j <= i - 2)");
    Buffer m = run(p.op(), {&x}, DType::F32, {6});
    EXPECT_EQ(m.value(0), identity) << red;
    EXPECT_EQ(m.value(1), identity) << red;
    const auto want = testing::reference(p.op(), {&x}, DType::F32, {6});
    EXPECT_EQ(testing::compare(m, want, 1e-6, red), 0);
  }
  // Integer max: the identity is the dtype's minimum.
  Parsed p = parse(R"(
    x = i8[3,3] input
    m = i8[3]{output} einsum [i=3,j=3] max $0 (x[i,j]) -> [i] where j <= i - 1)");
  Buffer xi = filled(DType::I8, {3, 3}, [](std::int64_t i) { return i; });
  EXPECT_EQ(run(p.op(), {&xi}, DType::I8, {3}).value(0), -128);
}

TEST(Einsum, OutputOutsideTheImageHoldsTheIdentity) {
  // out[2*i] for i < 4 reaches the even elements of an 8-vector; the odd ones keep 0.
  Parsed p = parse(R"(
    x = f32[4] input
    y = f32[8]{output} einsum [i=4] none add($0,1) (x[i]) -> [i*2])");
  Buffer x = filled(DType::F32, {4}, [](std::int64_t i) { return i; });
  Buffer y = run(p.op(), {&x}, DType::F32, {8});
  for (std::int64_t i = 0; i < 8; ++i) EXPECT_EQ(y.value(i), i % 2 ? 0.0 : i / 2 + 1.0) << i;
  // A constant output subscript writes one column; a max leaves -inf in the other.
  Parsed q = parse(R"(
    x = f32[3,4] input
    m = f32[3,2]{output} einsum [i=3,j=4] max $0 (x[i,j]) -> [i,1])");
  Buffer x2 = filled(DType::F32, {3, 4}, [](std::int64_t i) { return i; });
  Buffer m = run(q.op(), {&x2}, DType::F32, {3, 2});
  for (std::int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(m.value(2 * i), -INFINITY);
    EXPECT_EQ(m.value(2 * i + 1), 4.0 * i + 3);  // the row's last (largest) value
  }
}

TEST(Einsum, ScalarAndConstantEinsums) {
  Parsed p = parse(R"(
    x = f32[] input
    y = f32[]{output} einsum [] none mul($0,2) (x[]) -> [])");
  Buffer x = filled(DType::F32, {}, [](std::int64_t) { return 1.25; });
  EXPECT_EQ(run(p.op(), {&x}, DType::F32, {}).value(0), 2.5);

  ir::EinsumOp ones;  // no operands: a filled tensor
  ones.indices = {{"i", 5}, {"j", 3}};
  ones.output = {ir::AffineExpr::index(0), ir::AffineExpr::index(1)};
  ones.combine = ir::Expr::constant(1.5);
  Buffer y = run(ones, {}, DType::BF16, {5, 3});
  for (std::int64_t i = 0; i < 15; ++i) EXPECT_EQ(y.value(i), 1.5);
}

TEST(Einsum, NarrowOutputsAreRounded) {
  // 1 + 2^-9 is not a bf16 value: the output rounds to nearest even (1.0).
  Parsed p = parse(R"(
    x = f32[4] input
    y = bf16[4]{output} einsum [i=4] none add($0,0.001953125) (x[i]) -> [i])");
  Buffer x = filled(DType::F32, {4}, [](std::int64_t) { return 1; });
  Buffer y = run(p.op(), {&x}, DType::BF16, {4});
  for (std::int64_t i = 0; i < 4; ++i) EXPECT_EQ(y.value(i), 1.0);
  // The GEMM path rounds too: a bf16 matmul of values whose sum needs more than 8 bits.
  Parsed q = parse(R"(
    a = bf16[16,64] input
    b = bf16[64,16] input
    c = bf16[16,16]{output} einsum "mk,kn->mn" (a, b))");
  Buffer a = filled(DType::BF16, {16, 64}, [](std::int64_t i) { return i % 64 == 0 ? 256 : 1.0 / 64; });
  Buffer b = filled(DType::BF16, {64, 16}, [](std::int64_t) { return 1; });
  Buffer c = run(q.op(), {&a, &b}, DType::BF16, {16, 16});
  EXPECT_EQ(last_einsum_run().path, EinsumPath::Gemm);
  // 256 + 63/64 is nearer 256 than 258 (bf16 has 8 significant bits: steps of 2 above 256).
  for (std::int64_t i = 0; i < 256; ++i) ASSERT_EQ(c.value(i), 256.0) << i;
}

TEST(Einsum, BoolOutputsFromComparisons) {
  Parsed p = parse(R"(
    x = f32[5] input
    y = bool[5]{output} einsum [i=5] none gt($0,2) (x[i]) -> [i])");
  Buffer x = filled(DType::F32, {5}, [](std::int64_t i) { return i; });
  Buffer y = run(p.op(), {&x}, DType::Bool, {5});
  for (std::int64_t i = 0; i < 5; ++i) EXPECT_EQ(y.value(i), i > 2 ? 1.0 : 0.0);
}

TEST(Einsum, FloatResultsIntoIntegersTruncateOrAreRefused) {
  Parsed p = parse(R"(
    x = f32[4] input
    y = i8[4]{output} einsum [i=4] none mul($0,1.5) (x[i]) -> [i])");
  Buffer x = filled(DType::F32, {4}, [](std::int64_t i) { return -1.8 + i; });  // -1.8 .. 1.2
  Buffer y = run(p.op(), {&x}, DType::I8, {4});
  EXPECT_EQ(y.value(0), -2);  // -2.7 truncates toward zero
  EXPECT_EQ(y.value(1), -1);  // -1.2
  EXPECT_EQ(y.value(2), 0);   // 0.3
  EXPECT_EQ(y.value(3), 1);   // 1.8
  // 100 * 1.5 = 150 does not fit an i8; NaN fits no integer: refused, like the executor's cast.
  for (double bad : {100.0, static_cast<double>(NAN)}) {
    Buffer xb = filled(DType::F32, {4}, [&](std::int64_t) { return bad; });
    Buffer out = Buffer::zeros(DType::I8, {4});
    std::vector<const Buffer*> in = {&xb};
    try {
      run_einsum(p.op(), in, out, {});
      FAIL() << "expected UserError for " << bad;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("outside the range of i8"), std::string::npos) << e.what();
    }
  }
}

TEST(Einsum, ArgumentErrorsNameTheProblem) {
  Parsed p = parse(R"(
    a = f32[4,5] input
    b = f32[5,6] input
    c = f32[4,6]{output} einsum "mk,kn->mn" (a, b))");
  Buffer a = Buffer::zeros(DType::F32, {4, 5}), b = Buffer::zeros(DType::F32, {5, 6});
  Buffer c = Buffer::zeros(DType::F32, {4, 6});
  std::vector<const Buffer*> one = {&a};
  try {
    run_einsum(p.op(), one, c, {});
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("2 operands but 1 input"), std::string::npos) << e.what();
  }
  Buffer bad = Buffer::zeros(DType::F32, {5});
  std::vector<const Buffer*> two = {&a, &bad};
  try {
    run_einsum(p.op(), two, c, {});
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("input 1 has shape [5]"), std::string::npos) << e.what();
  }
  Buffer none;
  std::vector<const Buffer*> ok = {&a, &b};
  EXPECT_THROW(run_einsum(p.op(), ok, none, {}), UserError);
  // Several points writing one element with reduce none: refused, not silently overwritten.
  Parsed s = parse(R"(
    x = f32[3,3] input
    y = f32[5]{output} einsum [i=3,j=3] none $0 (x[i,j]) -> [i+j])");
  Buffer x = Buffer::zeros(DType::F32, {3, 3}), y = Buffer::zeros(DType::F32, {5});
  std::vector<const Buffer*> xs = {&x};
  try {
    run_einsum(s.op(), xs, y, {});
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("name a reduction"), std::string::npos) << e.what();
  }
}

TEST(Einsum, PathOfEachKindOfOp) {
  auto path = [](const std::string& text, std::vector<DType> in = {}, DType out = DType::F32) {
    Parsed p = parse(text);
    return einsum_path(p.op(), in, out);
  };
  EXPECT_EQ(path(R"(
    a = f32[64,64] input
    b = f32[64,64] input
    c = f32[64,64] einsum "mk,kn->mn" (a, b))"), EinsumPath::Gemm);
  EXPECT_EQ(path(R"(
    a = f32[8,64,64] input
    b = f32[8,64,64] input
    c = f32[8,64,64] einsum "bmk,bnk->bmn" (a, b))"), EinsumPath::Gemm);  // transposed B
  EXPECT_EQ(path(R"(
    a = f64[64,64] input
    b = f64[64,64] input
    c = f64[64,64] einsum "mk,kn->mn" (a, b))", {DType::F64, DType::F64}, DType::F64),
            EinsumPath::Gemm);
  EXPECT_EQ(path(R"(
    a = i32[64,64] input
    b = i32[64,64] input
    c = i32[64,64] einsum "mk,kn->mn" (a, b))", {DType::I32, DType::I32}, DType::I32),
            EinsumPath::LoopNest);  // integer contractions accumulate in i64
  EXPECT_EQ(path(R"(
    a = f32[4,4] input
    b = f32[4,4] input
    c = f32[4,4] einsum "mk,kn->mn" (a, b))"), EinsumPath::LoopNest);  // too small for BLAS
  EXPECT_EQ(path(R"(
    a = f32[512,64] input
    b = f32[512,64] input
    c = f32[512] einsum "bk,bk->b" (a, b))"), EinsumPath::LoopNest);  // batched dot products
  EXPECT_EQ(path(R"(
    x = f32[8,64,56,56] input
    w = f32[64,64,3,3] input
    y = f32[8,64,56,56] einsum [n=8,k=64,p=56,q=56,c=64,r=3,s=3] sum mul($0,$1) (x[n,c,p+r-1,q+s-1] pad 0, w[k,c,r,s]) -> [n,k,p,q])"),
            EinsumPath::Im2colGemm);
  EXPECT_EQ(path(R"(
    p = f32[128,128] input
    v = f32[128,64] input
    o = f32[128,64] einsum [q=128,d=64,k=128] sum mul($0,$1) (p[q,k], v[k,d]) -> [q,d] where q >= k)"),
            EinsumPath::Gemm);  // the mask zeroes P's masked points
  EXPECT_EQ(path(R"(
    a = f32[64,64] input
    b = f32[64,64] input
    c = f32[64,64] einsum [m=64,n=64,k=64] sum mul($0,$1) (a[m,k], b[k,n]) -> [m,n] where m + n >= k)"),
            EinsumPath::LoopNest);  // a constraint across both operands
  EXPECT_EQ(path(R"(
    x = f32[64,64] input
    y = f32[64,64] einsum [i=64,j=64] none exp($0) (x[i,j]) -> [i,j])"), EinsumPath::LoopNest);
  EXPECT_EQ(einsum_path_name(EinsumPath::Gemm), "gemm");
  EXPECT_EQ(einsum_path_name(EinsumPath::Im2colGemm), "im2col_gemm");
  EXPECT_EQ(einsum_path_name(EinsumPath::LoopNest), "loop_nest");
}

}  // namespace
}  // namespace solar::exec
