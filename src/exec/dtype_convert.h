// Narrow floating-point formats of the executor: rounding f32 values to them and converting
// their bit patterns (private to src/exec; docs/executor.md, "Dtypes").
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace solar::exec {

// What the all-ones exponent field means in a format.
enum class Special {
  Ieee,        // inf (mantissa 0) and NaN (mantissa != 0): f16, bf16, tf32, e5m2
  NanOnly,     // only S.1111.111 is NaN, no inf, overflow saturates: OCP E4M3FN
  FiniteOnly,  // no inf, no NaN, overflow saturates: OCP MX E2M3 (fp6) and E2M1 (fp4)
};

// A binary floating-point format with `exp_bits` exponent bits, `man_bits` stored mantissa
// bits and the given bias; the derived fields drive the f32 bit tricks below.
struct MiniFloat {
  int exp_bits;
  int man_bits;
  int bias;
  Special special;
  int min_exp;          // exponent of the smallest normal value: 1 - bias
  int max_exp;          // exponent of the largest finite value
  float min_normal;     // 2^min_exp
  float max_value;      // largest finite value
  float overflow_value; // what a rounded magnitude above max_value becomes (inf or max)
  float sub_magic;      // 2^(min_exp - man_bits + 23): x + magic - magic rounds to the subnormal grid
  std::uint32_t shift;  // 23 - man_bits: f32 mantissa bits dropped
  std::uint32_t half_minus_1;  // 2^(shift-1) - 1
  std::uint32_t keep_mask;     // clears the dropped bits

  constexpr MiniFloat(int e, int m, int b, Special s)
      : exp_bits(e), man_bits(m), bias(b), special(s), min_exp(1 - b),
        max_exp((1 << e) - (s == Special::Ieee ? 2 : 1) - b),
        min_normal(pow2(1 - b)),
        max_value(std::bit_cast<float>(
            static_cast<std::uint32_t>(((1 << e) - (s == Special::Ieee ? 2 : 1) - b + 127) << 23) |
            (static_cast<std::uint32_t>((1 << m) - (s == Special::NanOnly ? 2 : 1)) << (23 - m)))),
        overflow_value(s == Special::Ieee ? std::bit_cast<float>(0x7f800000u) : max_value),
        sub_magic(pow2(1 - b - m + 23)),
        shift(static_cast<std::uint32_t>(23 - m)),
        half_minus_1((1u << (22 - m)) - 1),
        keep_mask(~((1u << (23 - m)) - 1)) {}

  static constexpr float pow2(int e) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(e + 127) << 23);
  }
};

inline constexpr MiniFloat kTF32{8, 10, 127, Special::Ieee};
inline constexpr MiniFloat kBF16{8, 7, 127, Special::Ieee};
inline constexpr MiniFloat kF16{5, 10, 15, Special::Ieee};
inline constexpr MiniFloat kE4M3{4, 3, 7, Special::NanOnly};    // max 448
inline constexpr MiniFloat kE5M2{5, 2, 15, Special::Ieee};      // max 57344
inline constexpr MiniFloat kE2M3{2, 3, 1, Special::FiniteOnly}; // fp6, max 7.5
inline constexpr MiniFloat kE2M1{2, 1, 1, Special::FiniteOnly}; // fp4, max 6

// Rounds an f32 value to the format (round to nearest, ties to even), with the format's
// overflow rule; NaN stays NaN. Branch-free so that loops over it vectorize.
[[gnu::always_inline]] inline float round_minifloat(const MiniFloat& m, float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = bits & 0x80000000u;
  const std::uint32_t abs = bits ^ sign;
  const float a = std::bit_cast<float>(abs);
  // Below the smallest normal the grid is uniform (step 2^(min_exp - man_bits)): adding a
  // power of two whose f32 ulp is that step rounds to it, and the subtraction is exact.
  const float sub = (a + m.sub_magic) - m.sub_magic;
  const float nrm = std::bit_cast<float>((abs + m.half_minus_1 + ((abs >> m.shift) & 1u)) & m.keep_mask);
  float r = a < m.min_normal ? sub : nrm;
  r = r > m.max_value ? m.overflow_value : r;
  const std::uint32_t out = std::bit_cast<std::uint32_t>(r) | sign;
  return std::bit_cast<float>(abs > 0x7f800000u ? bits : out);
}

void round_span_minifloat(const MiniFloat& m, float* values, std::size_t n);

// Bit pattern of a value already representable in the format (round_minifloat's result).
// NaN becomes the format's canonical NaN; callers reject NaN for FiniteOnly formats.
std::uint32_t encode_minifloat(const MiniFloat& m, float representable);
// Value of a bit pattern (the low 1 + exp_bits + man_bits bits).
float decode_minifloat(const MiniFloat& m, std::uint32_t bits);
// All 2^(1+exp_bits+man_bits) values of an 8-bit-or-narrower format, by bit pattern.
const float* minifloat_table(const MiniFloat& m);

inline float bf16_bits_to_float(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

}  // namespace solar::exec
