#include "solar/exec/buffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "solar/util/errors.h"

namespace solar::exec {
namespace {

using ir::DType;

// Raw bytes -> buffer -> raw bytes.
template <class T>
Buffer from(DType d, std::vector<std::int64_t> shape, const std::vector<T>& raw) {
  return Buffer::from_raw(d, std::move(shape), raw.data());
}
template <class T>
std::vector<T> to(const Buffer& b, std::size_t count) {
  std::vector<T> raw(count);
  EXPECT_EQ(b.raw_bytes(), count * sizeof(T));
  b.to_raw(raw.data());
  return raw;
}
// A one-element buffer holding `v` in `d`, written back in raw form.
std::uint32_t raw_bits_of(DType d, float v) {
  Buffer b = Buffer::zeros(d, {1});
  b.data<float>()[0] = v;
  std::uint32_t raw = 0;
  b.to_raw(&raw);
  return raw;
}

TEST(Buffer, StorageOfEveryDtype) {
  EXPECT_EQ(storage_for(DType::F64), Storage::F64);
  for (DType d : {DType::F32, DType::TF32, DType::BF16, DType::F16, DType::F8E4M3,
                  DType::F8E5M2, DType::F6, DType::F4})
    EXPECT_EQ(storage_for(d), Storage::F32) << ir::dtype_name(d);
  for (DType d : {DType::I64, DType::I32, DType::I16, DType::I8, DType::I4, DType::U8, DType::Bool})
    EXPECT_EQ(storage_for(d), Storage::I64) << ir::dtype_name(d);
  EXPECT_EQ(storage_bytes(Storage::F32), 4u);
  EXPECT_EQ(storage_bytes(Storage::F64), 8u);
  EXPECT_EQ(storage_bytes(Storage::I64), 8u);
}

TEST(Buffer, ZerosAreAlignedAndZero) {
  // Small buffers come from aligned_alloc, large ones (>= 1 MiB) from mmap: test both.
  for (std::int64_t n : {std::int64_t{0}, std::int64_t{3}, std::int64_t{1000}, std::int64_t{1} << 20}) {
    Buffer b = Buffer::zeros(DType::F32, {n, 2});
    EXPECT_TRUE(b.defined());
    EXPECT_EQ(b.num_elements(), n * 2);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.raw_data()) % 64, 0u);
    EXPECT_EQ(b.storage_size_bytes(), static_cast<std::size_t>(n * 2 * 4));
    for (std::int64_t i = 0; i < b.num_elements(); i += 997) EXPECT_EQ(b.value(i), 0.0);
  }
  Buffer s = Buffer::zeros(DType::I8, {});  // a scalar has one element
  EXPECT_EQ(s.num_elements(), 1);
  EXPECT_EQ(s.value(0), 0.0);
}

TEST(Buffer, LargeBlocksAreReusedAndZeroedAgain) {
  release_buffer_cache();
  ASSERT_EQ(buffer_cache_bytes(), 0u);
  const std::int64_t n = std::int64_t{1} << 20;  // 4 MiB of f32
  void* first = nullptr;
  {
    Buffer a = Buffer::zeros(DType::F32, {n});
    first = a.raw_data();
    for (std::int64_t i = 0; i < n; ++i) a.data<float>()[i] = 7.0f;
  }
  EXPECT_EQ(buffer_cache_bytes(), static_cast<std::size_t>(n * 4));  // kept, not unmapped
  Buffer b = Buffer::zeros(DType::F32, {n});
  EXPECT_EQ(b.raw_data(), first);  // the same mapping, reused
  EXPECT_EQ(buffer_cache_bytes(), 0u);
  int nonzero = 0;
  for (std::int64_t i = 0; i < n; ++i) nonzero += b.data<float>()[i] != 0.0f;
  EXPECT_EQ(nonzero, 0);  // zeros() clears reused memory
  // A much larger request does not take a small cached block.
  { Buffer c = Buffer::zeros(DType::F32, {n}); }
  Buffer big = Buffer::uninitialized(DType::F32, {4 * n});
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(big.raw_data()) % 64, 0u);
  EXPECT_EQ(buffer_cache_bytes(), static_cast<std::size_t>(n * 4));
  release_buffer_cache();
  EXPECT_EQ(buffer_cache_bytes(), 0u);
}

TEST(Buffer, UninitializedHasTheShape) {
  Buffer u = Buffer::uninitialized(DType::BF16, {3, 5});
  EXPECT_EQ(u.num_elements(), 15);
  EXPECT_EQ(u.storage(), Storage::F32);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(u.raw_data()) % 64, 0u);
  EXPECT_THROW(Buffer::uninitialized(DType::F32, {-1}), UserError);
}

TEST(Buffer, AllocationFailureNamesTheSize) {
  // 2^40 * 2^20 f32 elements: 2^62 bytes, more than any address space.
  try {
    Buffer::zeros(DType::F32, {std::int64_t{1} << 40, std::int64_t{1} << 20});
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::BadArgument);
    EXPECT_NE(std::string(e.what()).find("4611686018427387904 bytes"), std::string::npos)
        << e.what();  // 2^62
    EXPECT_NE(std::string(e.what()).find("f32[1099511627776,1048576]"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(Buffer::zeros(DType::F32, {std::int64_t{1} << 62, 4}), UserError);
  try {
    Buffer::zeros(DType::F32, {2, -1});
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("negative extent"), std::string::npos) << e.what();
  }
}

TEST(Buffer, BorrowDoesNotCopy) {
  std::vector<float> mem = {1, 2, 3, 4, 5, 6};
  Buffer b = Buffer::borrow(DType::F32, {2, 3}, mem.data());
  EXPECT_EQ(b.data<float>(), mem.data());
  mem[4] = 42;
  EXPECT_EQ(b.value(4), 42.0);
  EXPECT_THROW(Buffer::borrow(DType::F32, {2}, nullptr), UserError);
}

TEST(Buffer, Bf16KnownBits) {
  // 1.0 = 0x3f80, -2.0 = 0xc000, the largest finite 0x7f7f, +inf 0x7f80.
  Buffer b = from<std::uint16_t>(DType::BF16, {4}, {0x3f80, 0xc000, 0x7f7f, 0x7f80});
  EXPECT_EQ(b.value(0), 1.0);
  EXPECT_EQ(b.value(1), -2.0);
  EXPECT_EQ(b.value(2), (2.0 - std::ldexp(1.0, -7)) * std::ldexp(1.0, 127));
  EXPECT_TRUE(std::isinf(b.value(3)));
  EXPECT_EQ(to<std::uint16_t>(b, 4), (std::vector<std::uint16_t>{0x3f80, 0xc000, 0x7f7f, 0x7f80}));
  // 1 + 2^-8 is the tie between 1.0 and 1 + 2^-7: even mantissa (1.0) wins.
  EXPECT_EQ(raw_bits_of(DType::BF16, 1.0f + std::ldexp(1.0f, -8)), 0x3f80u);
  // 1 + 3*2^-8 ties between 1+2^-7 (odd) and 1+2^-6 (even).
  EXPECT_EQ(raw_bits_of(DType::BF16, 1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82u);
}

TEST(Buffer, F16KnownBits) {
  // 65504 = 0x7bff is the largest finite; 2^-24 = 0x0001 the smallest subnormal; 2^-14 the
  // smallest normal 0x0400.
  Buffer b = from<std::uint16_t>(DType::F16, {5}, {0x7bff, 0x0001, 0x0400, 0x3c00, 0xfc00});
  EXPECT_EQ(b.value(0), 65504.0);
  EXPECT_EQ(b.value(1), std::ldexp(1.0, -24));
  EXPECT_EQ(b.value(2), std::ldexp(1.0, -14));
  EXPECT_EQ(b.value(3), 1.0);
  EXPECT_EQ(b.value(4), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(raw_bits_of(DType::F16, 65504.0f), 0x7bffu);
  EXPECT_EQ(raw_bits_of(DType::F16, 65519.0f), 0x7bffu);  // below the tie 65520: stays finite
  EXPECT_EQ(raw_bits_of(DType::F16, 65520.0f), 0x7c00u);  // the tie rounds to even: inf
  EXPECT_EQ(raw_bits_of(DType::F16, std::ldexp(1.0f, -25)), 0x0000u);      // tie to even 0
  EXPECT_EQ(raw_bits_of(DType::F16, 3 * std::ldexp(1.0f, -25)), 0x0002u);  // tie to even 2
  EXPECT_EQ(raw_bits_of(DType::F16, -0.0f), 0x8000u);
  EXPECT_EQ(raw_bits_of(DType::F16, std::nanf("")) & 0x7c00u, 0x7c00u);
  EXPECT_NE(raw_bits_of(DType::F16, std::nanf("")) & 0x03ffu, 0u);
}

TEST(Buffer, Tf32RoundsToTenMantissaBits) {
  const float one_plus = 1.0f + std::ldexp(1.0f, -10);
  EXPECT_EQ(round_to_dtype(DType::TF32, one_plus), one_plus);  // representable
  EXPECT_EQ(round_to_dtype(DType::TF32, 1.0f + std::ldexp(1.0f, -11)), 1.0f);  // tie: even
  EXPECT_EQ(round_to_dtype(DType::TF32, 1.0f + 3 * std::ldexp(1.0f, -11)),
            1.0f + std::ldexp(1.0f, -9));  // tie between odd and even: up to even
  // Raw tf32 travels as f32 bits; from_raw rounds extra bits away.
  std::vector<float> raw = {1.0f + std::ldexp(1.0f, -12)};
  Buffer b = Buffer::from_raw(DType::TF32, {1}, raw.data());
  EXPECT_EQ(b.value(0), 1.0);
  EXPECT_EQ(b.raw_bytes(), 4u);
}

TEST(Buffer, E4m3KnownBits) {
  // OCP E4M3FN: 448 = 0x7e is the largest finite value, 0x7f and 0xff are NaN, no inf.
  Buffer b = from<std::uint8_t>(DType::F8E4M3, {5}, {0x7e, 0x7f, 0xff, 0x01, 0x38});
  EXPECT_EQ(b.value(0), 448.0);
  EXPECT_TRUE(std::isnan(b.value(1)));
  EXPECT_TRUE(std::isnan(b.value(2)));
  EXPECT_EQ(b.value(3), std::ldexp(1.0, -9));  // smallest subnormal: 2^(1-7-3)
  EXPECT_EQ(b.value(4), 1.0);                  // exponent field 7 = bias
  EXPECT_EQ(raw_bits_of(DType::F8E4M3, 448.0f), 0x7eu);
  EXPECT_EQ(raw_bits_of(DType::F8E4M3, 500.0f), 0x7eu);  // saturates
  EXPECT_EQ(raw_bits_of(DType::F8E4M3, -1e30f), 0xfeu);  // saturates, keeps the sign
  EXPECT_EQ(raw_bits_of(DType::F8E4M3, std::numeric_limits<float>::infinity()), 0x7eu);
  EXPECT_EQ(raw_bits_of(DType::F8E4M3, std::nanf("")), 0x7fu);
  EXPECT_EQ(round_to_dtype(DType::F8E4M3, 1e6f), 448.0f);
}

TEST(Buffer, E5m2KnownBits) {
  // IEEE-like: 57344 = 1.75 * 2^15 = 0x7b is the largest finite, 0x7c is inf.
  Buffer b = from<std::uint8_t>(DType::F8E5M2, {3}, {0x7b, 0x7c, 0x3c});
  EXPECT_EQ(b.value(0), 57344.0);
  EXPECT_TRUE(std::isinf(b.value(1)));
  EXPECT_EQ(b.value(2), 1.0);
  EXPECT_EQ(raw_bits_of(DType::F8E5M2, 57344.0f), 0x7bu);
  EXPECT_EQ(raw_bits_of(DType::F8E5M2, 61440.0f), 0x7cu);  // the tie with 2^16 overflows
  EXPECT_EQ(raw_bits_of(DType::F8E5M2, 61439.0f), 0x7bu);
}

TEST(Buffer, F4ValuesAndPacking) {
  // E2M1 codes 0..7: 0, 0.5, 1, 1.5, 2, 3, 4, 6; 8..15 are the negatives. Low nibble first.
  const double kValues[] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  std::vector<std::uint8_t> raw = {0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe};
  Buffer b = from(DType::F4, {16}, raw);
  for (int c = 0; c < 16; ++c) {
    double want = c < 8 ? kValues[c] : -kValues[c - 8];
    EXPECT_EQ(b.value(c), want) << "code " << c;
  }
  EXPECT_EQ(to<std::uint8_t>(b, 8), raw);
  // Odd count: 3 values in 2 bytes, the unused high nibble is 0.
  Buffer odd = Buffer::zeros(DType::F4, {3});
  odd.data<float>()[0] = 6;    // 0x7
  odd.data<float>()[1] = -0.5; // 0x9
  odd.data<float>()[2] = 2.6f; // rounds to 3: 0x5
  EXPECT_EQ(to<std::uint8_t>(odd, 2), (std::vector<std::uint8_t>{0x97, 0x05}));
  EXPECT_EQ(round_to_dtype(DType::F4, 100.0f), 6.0f);   // saturates
  EXPECT_EQ(round_to_dtype(DType::F4, 0.25f), 0.0f);    // tie: even (0)
  EXPECT_EQ(round_to_dtype(DType::F4, 0.75f), 1.0f);    // tie: even (1.0 = 0x2)
  EXPECT_EQ(round_to_dtype(DType::F4, 2.5f), 2.0f);     // tie between 2 (0x4) and 3 (0x5)
  EXPECT_EQ(round_to_dtype(DType::F4, 5.0f), 4.0f);     // tie between 4 (0x6) and 6 (0x7)
  Buffer nan = Buffer::zeros(DType::F4, {1});
  nan.data<float>()[0] = std::nanf("");
  std::uint8_t byte = 0;
  try {
    nan.to_raw(&byte);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("NaN"), std::string::npos) << e.what();
  }
}

TEST(Buffer, F6IsE2m3OnePerByte) {
  // E2M3, bias 1: 7.5 = 0x1f largest, 0.125 = 0x01 smallest subnormal, 1.0 = 0x08.
  Buffer b = from<std::uint8_t>(DType::F6, {4}, {0x1f, 0x01, 0x08, 0x3f});
  EXPECT_EQ(b.value(0), 7.5);
  EXPECT_EQ(b.value(1), 0.125);
  EXPECT_EQ(b.value(2), 1.0);
  EXPECT_EQ(b.value(3), -7.5);
  EXPECT_EQ(b.raw_bytes(), 4u);
  EXPECT_EQ(to<std::uint8_t>(b, 4), (std::vector<std::uint8_t>{0x1f, 0x01, 0x08, 0x3f}));
  EXPECT_EQ(round_to_dtype(DType::F6, 9.0f), 7.5f);  // saturates
}

TEST(Buffer, Int4PackingSignExtends) {
  // -8..7 in 16 nibbles, low nibble first.
  Buffer b = Buffer::zeros(DType::I4, {16});
  for (int i = 0; i < 16; ++i) b.data<std::int64_t>()[i] = i - 8;
  std::vector<std::uint8_t> raw = to<std::uint8_t>(b, 8);
  EXPECT_EQ(raw[0], 0x98);  // -8 = 0x8 low, -7 = 0x9 high
  EXPECT_EQ(raw[7], 0x76);  // 6 low, 7 high
  Buffer back = from(DType::I4, {16}, raw);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(back.value(i), i - 8);
}

TEST(Buffer, IntegerWidthsAndBool) {
  Buffer i8 = from<std::uint8_t>(DType::I8, {2}, {0xff, 0x80});
  EXPECT_EQ(i8.value(0), -1);
  EXPECT_EQ(i8.value(1), -128);
  Buffer u8 = from<std::uint8_t>(DType::U8, {1}, {0xff});
  EXPECT_EQ(u8.value(0), 255);
  Buffer i16 = from<std::int16_t>(DType::I16, {1}, {-30000});
  EXPECT_EQ(i16.value(0), -30000);
  Buffer i32 = from<std::int32_t>(DType::I32, {1}, {-2000000000});
  EXPECT_EQ(i32.value(0), -2000000000);
  EXPECT_EQ(to<std::int32_t>(i32, 1), std::vector<std::int32_t>{-2000000000});
  Buffer i64 = from<std::int64_t>(DType::I64, {1}, {std::int64_t{1} << 50});
  EXPECT_EQ(i64.data<std::int64_t>()[0], std::int64_t{1} << 50);
  Buffer bl = from<std::uint8_t>(DType::Bool, {3}, {0, 1, 7});
  EXPECT_EQ(bl.value(2), 1);  // any nonzero byte is true
  EXPECT_EQ(to<std::uint8_t>(bl, 3), (std::vector<std::uint8_t>{0, 1, 1}));
}

TEST(Buffer, WrapToDtype) {
  EXPECT_EQ(wrap_to_dtype(DType::I8, 200), -56);  // 200 - 256
  EXPECT_EQ(wrap_to_dtype(DType::U8, -1), 255);
  EXPECT_EQ(wrap_to_dtype(DType::I4, 9), -7);     // 9 - 16
  EXPECT_EQ(wrap_to_dtype(DType::I16, 40000), 40000 - 65536);
  EXPECT_EQ(wrap_to_dtype(DType::Bool, -3), 1);
  std::vector<std::int64_t> v = {128, -129};
  wrap_to_dtype(DType::I8, v);
  EXPECT_EQ(v, (std::vector<std::int64_t>{-128, 127}));
  EXPECT_THROW(wrap_to_dtype(DType::F32, 1), InternalError);
  std::vector<float> f = {1};
  EXPECT_THROW(round_to_dtype(DType::I32, f), InternalError);
}

// Every bit pattern of the 8-bit and 16-bit formats decodes to a value that encodes back to
// the same pattern (NaNs to a NaN).
TEST(Buffer, RoundTripEveryPattern) {
  for (DType d : {DType::F8E4M3, DType::F8E5M2}) {
    for (int p = 0; p < 256; ++p) {
      std::uint8_t in = static_cast<std::uint8_t>(p), out = 0;
      Buffer b = Buffer::from_raw(d, {1}, &in);
      b.to_raw(&out);
      if (std::isnan(b.value(0))) {
        Buffer again = Buffer::from_raw(d, {1}, &out);
        EXPECT_TRUE(std::isnan(again.value(0))) << ir::dtype_name(d) << " " << p;
      } else {
        EXPECT_EQ(out, in) << ir::dtype_name(d) << " pattern " << p;
      }
    }
  }
  for (DType d : {DType::F16, DType::BF16}) {
    std::vector<std::uint16_t> in(65536), out(65536);
    for (int p = 0; p < 65536; ++p) in[p] = static_cast<std::uint16_t>(p);
    Buffer b = Buffer::from_raw(d, {65536}, in.data());
    b.to_raw(out.data());
    int mismatches = 0;
    for (int p = 0; p < 65536; ++p)
      if (!std::isnan(b.value(p)) && out[p] != in[p]) ++mismatches;
    EXPECT_EQ(mismatches, 0) << ir::dtype_name(d);
  }
  for (DType d : {DType::F6, DType::F4}) {
    const int n = d == DType::F6 ? 64 : 16;
    for (int p = 0; p < n; ++p) {
      std::uint8_t in = static_cast<std::uint8_t>(p), out = 0;
      Buffer b = Buffer::from_raw(d, {1}, &in);
      b.to_raw(&out);
      EXPECT_EQ(out, in) << ir::dtype_name(d) << " pattern " << p;
    }
  }
}

// The format parameters of the reference rounding below, written from the format specs.
struct Format {
  DType dtype;
  int man_bits;
  int min_exp;     // exponent of the smallest normal
  double max;      // largest finite value
  bool has_inf;    // overflow goes to inf; otherwise it saturates at max
};
const Format kFormats[] = {
    {DType::TF32, 10, -126, (2 - std::ldexp(1.0, -10)) * std::ldexp(1.0, 127), true},
    {DType::BF16, 7, -126, (2 - std::ldexp(1.0, -7)) * std::ldexp(1.0, 127), true},
    {DType::F16, 10, -14, 65504, true},
    {DType::F8E4M3, 3, -6, 448, false},
    {DType::F8E5M2, 2, -14, 57344, true},
    {DType::F6, 3, 0, 7.5, false},
    {DType::F4, 1, 0, 6, false},
};

// Obvious reference: scale to an integer count of ulps in double, rint (round half to even in
// the default rounding mode), scale back; then the format's overflow rule.
double reference_round(const Format& f, double x) {
  if (std::isnan(x)) return x;
  double a = std::fabs(x);
  if (std::isinf(a)) return std::copysign(f.has_inf ? a : f.max, x);
  int e = a == 0 ? f.min_exp : std::max(static_cast<int>(std::floor(std::log2(a))), f.min_exp);
  if (a != 0 && std::ldexp(1.0, e) > a) --e;  // guard log2 rounding near powers of two
  if (a != 0 && std::ldexp(1.0, e + 1) <= a) ++e;
  e = std::max(e, f.min_exp);
  double ulp = std::ldexp(1.0, e - f.man_bits);
  double r = std::nearbyint(a / ulp) * ulp;
  if (r > f.max) r = f.has_inf ? std::numeric_limits<double>::infinity() : f.max;
  return std::copysign(r, x);
}

TEST(Buffer, RoundToDtypeIsNearestEvenOnRandomValues) {
  std::mt19937 rng(1234);
  for (const Format& f : kFormats) {
    std::vector<float> xs;
    std::uniform_int_distribution<std::uint32_t> any_bits(0, 0xffffffffu);
    std::uniform_real_distribution<double> in_range(-2 * f.max, 2 * f.max);
    std::uniform_int_distribution<int> exp_pick(f.min_exp - f.man_bits - 2,
                                                std::min(f.min_exp + 40, 127));
    std::uniform_int_distribution<int> mant(0, (1 << f.man_bits) - 1);
    for (int i = 0; i < 3000; ++i) {
      float v = std::bit_cast<float>(any_bits(rng));
      if (!std::isnan(v)) xs.push_back(v);
      xs.push_back(static_cast<float>(in_range(rng)));
      // Exact ties: halfway between consecutive representable values.
      int e = exp_pick(rng);
      double lo = std::ldexp(1.0 + std::ldexp(mant(rng), -f.man_bits), e);
      double tie = lo + std::ldexp(1.0, e - f.man_bits - 1);
      if (std::fabs(tie) < 3e38) xs.push_back(static_cast<float>(i % 2 ? tie : -tie));
      double sub_tie = std::ldexp(mant(rng) + 0.5, f.min_exp - f.man_bits);
      xs.push_back(static_cast<float>(sub_tie));
    }
    std::vector<float> got = xs;
    round_to_dtype(f.dtype, got);
    int bad = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      double want = reference_round(f, xs[i]);
      if (std::bit_cast<std::uint32_t>(got[i]) != std::bit_cast<std::uint32_t>(static_cast<float>(want))) {
        if (++bad <= 5)
          ADD_FAILURE() << ir::dtype_name(f.dtype) << ": round(" << xs[i] << ") = " << got[i]
                        << ", want " << want;
      }
    }
    EXPECT_EQ(bad, 0) << ir::dtype_name(f.dtype);
    // Rounding is idempotent: a rounded value is representable.
    std::vector<float> again = got;
    round_to_dtype(f.dtype, again);
    EXPECT_EQ(std::memcmp(again.data(), got.data(), got.size() * 4), 0) << ir::dtype_name(f.dtype);
  }
}

TEST(Buffer, RoundToDtypeKeepsNan) {
  for (const Format& f : kFormats)
    EXPECT_TRUE(std::isnan(round_to_dtype(f.dtype, std::nanf("")))) << ir::dtype_name(f.dtype);
}

}  // namespace
}  // namespace solar::exec
