// The rounding, remainder, bit and bit-reinterpreting combine functions in the executor
// (src/exec/loop_ops.inc): exact integer semantics in the einsum's integer type (wrap-around,
// shifts by the width or more, arithmetic vs logical shifts), round half to even, and the
// f32 <-> int32 bit patterns. Expected values are written from the definitions.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include "exec/einsum_reference.h"
#include "exec/exec_fixtures.h"
#include "solar/util/errors.h"

namespace solar::exec {
namespace {

using ir::DType;
using testing::make;
using testing::run_text;
using testing::values;

constexpr double kI32Min = -2147483648.0, kI32Max = 2147483647.0;

// y[i] = COMBINE(a[i], b[i]) with the given dtypes, on the given values.
std::vector<double> binary(const std::string& combine, DType in, DType out, const std::vector<double>& a,
                           const std::vector<double>& b) {
  const std::int64_t n = static_cast<std::int64_t>(a.size());
  const std::string text = fmt::format(R"(
    a = {0}[{2}] input
    b = {0}[{2}] input
    y = {1}[{2}]{{output}} einsum [i={2}] none {3} (a[i], b[i]) -> [i])",
                                       ir::dtype_name(in), ir::dtype_name(out), n, combine);
  TensorMap r = run_text(text, {{"a", make(in, {n}, a)}, {"b", make(in, {n}, b)}});
  return values(r.at("y"));
}

std::vector<double> unary(const std::string& combine, DType in, DType out, const std::vector<double>& a) {
  const std::int64_t n = static_cast<std::int64_t>(a.size());
  const std::string text = fmt::format(R"(
    a = {0}[{2}] input
    y = {1}[{2}]{{output}} einsum [i={2}] none {3} (a[i]) -> [i])",
                                       ir::dtype_name(in), ir::dtype_name(out), n, combine);
  TensorMap r = run_text(text, {{"a", make(in, {n}, a)}});
  return values(r.at("y"));
}

TEST(ExprOps, IntegerArithmeticWrapsInTheEinsumsType) {
  // i32: INT32_MAX + 1 wraps to INT32_MIN; 65536 * 65536 = 2^32 wraps to 0.
  EXPECT_EQ(binary("add($0,$1)", DType::I32, DType::I32, {kI32Max, 65536}, {1, 0}),
            (std::vector<double>{kI32Min, 65536}));
  EXPECT_EQ(binary("mul($0,$1)", DType::I32, DType::I32, {65536, -65536}, {65536, 65536}),
            (std::vector<double>{0, 0}));
  // The wrap happens at every node, not only at the store: (x + 1) > x is false at INT32_MAX,
  // as C and torch compute it in int32 (a bool output does not widen the type).
  EXPECT_EQ(unary("gt(add($0,1),$0)", DType::I32, DType::Bool, {kI32Max, 5}),
            (std::vector<double>{0, 1}));
  // i64 keeps the product exactly.
  EXPECT_EQ(binary("mul($0,$1)", DType::I64, DType::I64, {65536}, {65536}),
            (std::vector<double>{65536.0 * 65536.0}));
  // u8: 200 + 100 = 300 mod 256 = 44; 3 - 5 = 254.
  EXPECT_EQ(binary("add($0,$1)", DType::U8, DType::U8, {200, 3}, {100, 0}), (std::vector<double>{44, 3}));
  EXPECT_EQ(binary("sub($0,$1)", DType::U8, DType::U8, {3}, {5}), (std::vector<double>{256 - 2}));
}

TEST(ExprOps, ShiftsByTheWidthOrMoreShiftEverythingOut) {
  // shl: 1 << 31 is INT32_MIN in i32; counts >= 32 or < 0 give 0.
  EXPECT_EQ(binary("shl($0,$1)", DType::I32, DType::I32, {1, 1, 1, 3, -1}, {31, 32, -1, 1, 33}),
            (std::vector<double>{kI32Min, 0, 0, 6, 0}));
  // ashr: sign fill; counts out of range fill with the sign (-1 or 0).
  EXPECT_EQ(binary("ashr($0,$1)", DType::I32, DType::I32, {-8, -8, 8, -1, kI32Min}, {1, 40, 40, 31, 31}),
            (std::vector<double>{-4, -1, 0, -1, -1}));
  // lshr: zero fill of the 32-bit pattern: -8 = 0xfffffff8, >> 28 is 0xf = 15.
  EXPECT_EQ(binary("lshr($0,$1)", DType::I32, DType::I32, {-8, -1, -1, 16}, {28, 32, 0, 2}),
            (std::vector<double>{15, 0, -1, 4}));
  // i64: the 64-bit pattern. -1 >>> 60 = 15; 1 << 63 is INT64_MIN; 1 << 64 is 0.
  EXPECT_EQ(binary("lshr($0,$1)", DType::I64, DType::I64, {-1}, {60}), (std::vector<double>{15}));
  EXPECT_EQ(binary("shl($0,$1)", DType::I64, DType::I64, {1, 1}, {63, 64}),
            (std::vector<double>{-9223372036854775808.0, 0}));
  // u8: an arithmetic shift reads the bits as signed: 200 = 0xc8 = -56 as i8, >> 1 = -28 =
  // 0xe4 = 228; a logical shift gives 100.
  EXPECT_EQ(binary("ashr($0,$1)", DType::U8, DType::U8, {200}, {1}), (std::vector<double>{228}));
  EXPECT_EQ(binary("lshr($0,$1)", DType::U8, DType::U8, {200}, {1}), (std::vector<double>{100}));
}

TEST(ExprOps, ScalarOperandsTakeTheSamePath) {
  // The shifted value and count do not move along the innermost index (j): the executor
  // evaluates them once per block (apply_scalar) and must wrap the same way.
  TensorMap r = run_text(R"(
    a = i32[2] input
    b = i32[2] input
    y = i32[2,300]{output} einsum [i=2,j=300] none add(shl($0,$1),mul($0,0)) (a[i], b[i]) -> [i,j])",
                         {{"a", make(DType::I32, {2}, {1, kI32Max})}, {"b", make(DType::I32, {2}, {31, 1})}});
  const std::vector<double> y = values(r.at("y"));
  EXPECT_EQ(y[0], kI32Min);      // 1 << 31
  EXPECT_EQ(y[299], kI32Min);
  EXPECT_EQ(y[300], -2);         // 0x7fffffff << 1 = 0xfffffffe
}

TEST(ExprOps, BitwiseLogic) {
  EXPECT_EQ(binary("and($0,$1)", DType::I32, DType::I32, {12, -1, -8}, {10, 255, 7}),
            (std::vector<double>{8, 255, 0}));
  EXPECT_EQ(binary("or($0,$1)", DType::I32, DType::I32, {12, kI32Min}, {3, 1}),
            (std::vector<double>{15, kI32Min + 1}));
  EXPECT_EQ(binary("xor($0,$1)", DType::I32, DType::I32, {12, -1}, {10, 5}), (std::vector<double>{6, -6}));
  EXPECT_EQ(unary("not($0)", DType::I32, DType::I32, {0, 5, -1}), (std::vector<double>{-1, -6, 0}));
  EXPECT_EQ(unary("not($0)", DType::U8, DType::U8, {0, 5}), (std::vector<double>{255, 250}));
  // bool einsums: not is logical not.
  EXPECT_EQ(unary("not($0)", DType::Bool, DType::Bool, {0, 1}), (std::vector<double>{1, 0}));
}

TEST(ExprOps, PopcountAndClzCountTheTypesBits) {
  EXPECT_EQ(unary("popcount($0)", DType::I32, DType::I32, {0, 7, -1, kI32Min}),
            (std::vector<double>{0, 3, 32, 1}));
  EXPECT_EQ(unary("clz($0)", DType::I32, DType::I32, {0, 1, -1, 65536}),
            (std::vector<double>{32, 31, 0, 32 - 17}));
  EXPECT_EQ(unary("clz($0)", DType::I64, DType::I64, {1}), (std::vector<double>{63}));
  EXPECT_EQ(unary("popcount($0)", DType::I64, DType::I64, {-1}), (std::vector<double>{64}));
  EXPECT_EQ(unary("clz($0)", DType::U8, DType::U8, {1}), (std::vector<double>{7}));
}

TEST(ExprOps, RoundingHalfToEvenAndHalfAway) {
  const std::vector<double> x{0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, -2.6};
  EXPECT_EQ(unary("round_even($0)", DType::F32, DType::F32, x),
            (std::vector<double>{0, 2, 2, -0.0, -2, -2, 2, -3}));
  EXPECT_EQ(unary("round_away($0)", DType::F32, DType::F32, x),
            (std::vector<double>{1, 2, 3, -1, -2, -3, 2, -3}));
  EXPECT_EQ(unary("floor($0)", DType::F32, DType::F32, {-1.5, 1.5}), (std::vector<double>{-2, 1}));
  EXPECT_EQ(unary("ceil($0)", DType::F32, DType::F32, {-1.5, 1.5}), (std::vector<double>{-1, 2}));
  EXPECT_EQ(unary("trunc($0)", DType::F64, DType::F64, {-1.5, 1.5}), (std::vector<double>{-1, 1}));
  // round_even(-0.5) is -0: its sign survives.
  EXPECT_TRUE(std::signbit(unary("round_even($0)", DType::F32, DType::F32, {-0.5})[0]));
  // Integers are already integral.
  EXPECT_EQ(unary("round_even($0)", DType::I64, DType::I64, {9007199254740994.0, -7}),
            (std::vector<double>{9007199254740994.0, -7}));
}

TEST(ExprOps, RemaindersTruncatedAndFloored) {
  // rem: the sign of the dividend; mod: the sign of the divisor.
  EXPECT_EQ(binary("rem($0,$1)", DType::F32, DType::F32, {-7, 7, 7.5}, {3, -3, 2}),
            (std::vector<double>{-1, 1, 1.5}));
  EXPECT_EQ(binary("mod($0,$1)", DType::F32, DType::F32, {-7, 7, -7.5}, {3, -3, 2}),
            (std::vector<double>{2, -2, 0.5}));
  EXPECT_TRUE(std::isnan(binary("rem($0,$1)", DType::F32, DType::F32, {1}, {0})[0]));
  EXPECT_EQ(binary("rem($0,$1)", DType::I32, DType::I32, {-7, 7, 7}, {3, -3, 0}),
            (std::vector<double>{-1, 1, 7}));  // integer x % 0 is x (XLA's rule)
  EXPECT_EQ(binary("mod($0,$1)", DType::I32, DType::I32, {-7, 7, -6}, {3, -3, 3}),
            (std::vector<double>{2, -2, 0}));
  // idiv: truncated; x / 0 is -1 (XLA's rule); INT_MIN / -1 wraps to INT_MIN in i32.
  EXPECT_EQ(binary("idiv($0,$1)", DType::I32, DType::I32, {-7, 7, 7, kI32Min, 5}, {2, -2, 0, -1, 7}),
            (std::vector<double>{-3, -3, -1, kI32Min, 0}));
  // exact past 2^53 in i64 (no float division): (2^62 + 1) / 1 and / 3
  EXPECT_EQ(binary("idiv($0,$1)", DType::I64, DType::I64, {4611686018427387904.0}, {3}),
            (std::vector<double>{1537228672809129301.0}));
  EXPECT_EQ(binary("idiv($0,$1)", DType::F32, DType::F32, {-7.5, 7.5}, {2, 2}), (std::vector<double>{-3, 3}));
  // INT_MIN % -1 does not trap.
  EXPECT_EQ(binary("rem($0,$1)", DType::I32, DType::I32, {kI32Min}, {-1}), (std::vector<double>{0}));
}

TEST(ExprOps, SignAndAtan2) {
  const std::vector<double> s = unary("sign($0)", DType::F32, DType::F32, {-3, 0, 2.5, NAN});
  EXPECT_EQ(s[0], -1);
  EXPECT_EQ(s[1], 0);
  EXPECT_EQ(s[2], 1);
  EXPECT_TRUE(std::isnan(s[3]));  // NaN stays NaN
  EXPECT_EQ(unary("sign($0)", DType::I32, DType::I32, {-7, 0, 9}), (std::vector<double>{-1, 0, 1}));
  const std::vector<double> a = binary("atan2($0,$1)", DType::F64, DType::F64, {1, 1, -1, 0}, {1, -1, -1, -1});
  EXPECT_DOUBLE_EQ(a[0], M_PI / 4);
  EXPECT_DOUBLE_EQ(a[1], 3 * M_PI / 4);
  EXPECT_DOUBLE_EQ(a[2], -3 * M_PI / 4);
  EXPECT_DOUBLE_EQ(a[3], M_PI);
}

TEST(ExprOps, BitcastBetweenF32AndInt32) {
  // 1.0f = 0x3f800000 = 1065353216; -2.0f = 0xc0000000 = -1073741824 as int32.
  EXPECT_EQ(unary("f32_bits($0)", DType::F32, DType::I32, {1.0, -2.0, 0.0}),
            (std::vector<double>{1065353216, -1073741824, 0}));
  EXPECT_EQ(unary("bits_f32($0)", DType::I32, DType::F32, {1065353216, -1073741824}),
            (std::vector<double>{1.0, -2.0}));
  // Round trip of arbitrary f32 values, NaN payloads aside.
  std::mt19937 rng(5);
  std::uniform_int_distribution<std::uint32_t> bits(0, 0x7f7fffffu);
  std::vector<double> x;
  for (int i = 0; i < 64; ++i) x.push_back(std::bit_cast<float>(bits(rng) | (i % 2 ? 0x80000000u : 0u)));
  const std::vector<double> i32 = unary("f32_bits($0)", DType::F32, DType::I32, x);
  EXPECT_EQ(unary("bits_f32($0)", DType::I32, DType::F32, i32), x);
  // The RNG idiom: (bits >> 9) | 0x3f800000 is a float in [1, 2).
  const std::vector<double> u = unary("bits_f32(or(lshr($0,9),1065353216))", DType::I32, DType::F32,
                                      {0, -1});
  EXPECT_EQ(u[0], 1.0);
  EXPECT_EQ(u[1], 2.0 - std::ldexp(1.0, -23));  // all 23 mantissa bits set
}

TEST(ExprOps, ErfinvLgammaDigamma) {
  // Known values: erfinv(0.5) = 0.476936276204469873; lgamma(0.5) = log(sqrt(pi));
  // digamma(1) = -(Euler's gamma); digamma(0.5) = -gamma - 2 log 2.
  const double euler = 0.57721566490153286;
  const std::vector<double> e = unary("erfinv($0)", DType::F64, DType::F64, {0.5, -0.5, 0, 1, -1, 1.5});
  EXPECT_NEAR(e[0], 0.476936276204469873, 1e-15);
  EXPECT_NEAR(e[1], -0.476936276204469873, 1e-15);
  EXPECT_EQ(e[2], 0);
  EXPECT_EQ(e[3], INFINITY);
  EXPECT_EQ(e[4], -INFINITY);
  EXPECT_TRUE(std::isnan(e[5]));
  EXPECT_NEAR(unary("lgamma($0)", DType::F64, DType::F64, {0.5})[0], 0.5 * std::log(M_PI), 1e-15);
  const std::vector<double> d = unary("digamma($0)", DType::F64, DType::F64, {1, 0.5, 0, -2, -0.5, 30});
  EXPECT_NEAR(d[0], -euler, 1e-13);  // the recurrence's rounding: a few ulp of its 10 terms
  EXPECT_NEAR(d[1], -euler - 2 * std::log(2.0), 1e-13);
  EXPECT_EQ(d[2], -INFINITY);
  EXPECT_TRUE(std::isnan(d[3]));
  EXPECT_NEAR(d[4], -euler - 2 * std::log(2.0) + 2, 1e-13);  // psi(x+1) = psi(x) + 1/x at -0.5
  // Over a range, against the reference's bisection and finite differences.
  std::vector<double> ys, xs;
  for (int i = -99; i <= 99; ++i) ys.push_back(i / 100.0 + (i % 7) * 1e-4);
  for (int i = 1; i <= 200; ++i) xs.push_back(i * 0.173 - 12.5 + 1e-3);  // negative too
  const std::vector<double> ge = unary("erfinv($0)", DType::F64, DType::F64, ys);
  for (std::size_t i = 0; i < ys.size(); ++i)
    EXPECT_NEAR(ge[i], testing::ref_expr(ir::Expr::make(ir::ExprOp::ErfInv, {ir::Expr::operand(0)}), {ys[i]}),
                1e-12) << ys[i];
  const std::vector<double> gd = unary("digamma($0)", DType::F64, DType::F64, xs);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (xs[i] <= 0) continue;  // the reference differentiates lgamma: positive x only
    const double want = testing::ref_expr(ir::Expr::make(ir::ExprOp::Digamma, {ir::Expr::operand(0)}), {xs[i]});
    EXPECT_NEAR(gd[i], want, 1e-7 * std::max(1.0, std::fabs(want))) << xs[i];
  }
  // Negative non-integers by the recurrence psi(x) = psi(x + 1) - 1/x.
  const std::vector<double> neg = unary("sub(digamma(add($0,1)),recip($0))", DType::F64, DType::F64, {-2.5, -0.3});
  const std::vector<double> direct = unary("digamma($0)", DType::F64, DType::F64, {-2.5, -0.3});
  EXPECT_NEAR(direct[0], neg[0], 1e-12);
  EXPECT_NEAR(direct[1], neg[1], 1e-12);
  // f32 compute: within f32 rounding of the f64 value.
  EXPECT_NEAR(unary("erfinv($0)", DType::F32, DType::F32, {0.5})[0], 0.476936276204469873, 1e-7);
}

// Random integer combines of the new ops against the reference (which wraps with its own
// __int128 arithmetic).
TEST(ExprOps, RandomIntegerCombinesMatchTheReference) {
  std::mt19937 rng(31337);
  using ir::Expr;
  using ir::ExprOp;
  const ExprOp bin_ops[] = {ExprOp::Add, ExprOp::Mul, ExprOp::And, ExprOp::Or, ExprOp::Xor,
                            ExprOp::Shl, ExprOp::Ashr, ExprOp::Lshr, ExprOp::Rem, ExprOp::Mod,
                            ExprOp::Sub, ExprOp::IDiv};
  const ExprOp un_ops[] = {ExprOp::Not, ExprOp::Popcount, ExprOp::Clz, ExprOp::Neg, ExprOp::Sign,
                           ExprOp::Abs, ExprOp::Square};
  std::function<Expr(int)> gen = [&](int depth) -> Expr {
    if (depth == 0) {
      const int k = std::uniform_int_distribution<int>(0, 2)(rng);
      return k < 2 ? Expr::operand(k) : Expr::constant(std::uniform_int_distribution<int>(-3, 40)(rng));
    }
    if (std::uniform_int_distribution<int>(0, 2)(rng) == 0)
      return Expr::make(un_ops[std::uniform_int_distribution<int>(0, 6)(rng)], {gen(depth - 1)});
    return Expr::make(bin_ops[std::uniform_int_distribution<int>(0, 11)(rng)], {gen(depth - 1), gen(depth - 1)});
  };
  const DType types[] = {DType::I32, DType::I64, DType::U8, DType::I8, DType::I16};
  for (int iter = 0; iter < 150; ++iter) {
    const DType dt = types[iter % 5];
    ir::EinsumOp e;
    e.indices = {{"i", 64}};
    e.operands = {{{ir::AffineExpr::index(0)}, std::nullopt}, {{ir::AffineExpr::index(0)}, std::nullopt}};
    e.output = {ir::AffineExpr::index(0)};
    e.combine = gen(std::uniform_int_distribution<int>(1, 4)(rng));
    const std::int64_t lo = dt == DType::U8 ? 0 : -(std::int64_t{1} << (ir::dtype_bits(dt) - 1));
    const std::int64_t hi = dt == DType::U8 ? 255 : (std::int64_t{1} << (ir::dtype_bits(dt) - 1)) - 1;
    std::uniform_int_distribution<std::int64_t> val(lo, hi), small(-2, 70);
    std::vector<double> a, b;
    for (int i = 0; i < 64; ++i) {
      a.push_back(static_cast<double>(i % 3 ? val(rng) : small(rng)));
      b.push_back(static_cast<double>(i % 2 ? small(rng) : val(rng)));
    }
    if (dt == DType::U8) {  // u8 tensors hold 0..255
      for (double& v : a) v = std::fabs(v);
      for (double& v : b) v = std::fabs(v);
    }
    if (dt == DType::I64) {  // the reference's doubles hold 53 bits: keep i64 values there
      for (double& v : a) v = std::fmod(v, 4503599627370496.0);
      for (double& v : b) v = std::fmod(v, 4503599627370496.0);
    }
    const Buffer ba = make(dt, {64}, a), bb = make(dt, {64}, b);
    const auto want = testing::reference(e, {&ba, &bb}, dt, {64});
    const Buffer got = testing::run(e, {&ba, &bb}, dt, {64});
    if (dt == DType::I64) continue;  // products past 2^53 leave the reference's precision
    EXPECT_EQ(testing::compare(got, want, 0, "case " + std::to_string(iter)), 0)
        << testing::describe(e, {&ba, &bb}, dt, {64});
  }
}

}  // namespace
}  // namespace solar::exec
