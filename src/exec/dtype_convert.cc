#include "dtype_convert.h"

#include <array>
#include <cmath>
#include <limits>

#include "solar/util/errors.h"

namespace solar::exec {

void round_span_minifloat(const MiniFloat& m, float* values, std::size_t n) {
  const MiniFloat f = m;  // a local copy keeps the fields in registers
  for (std::size_t i = 0; i < n; ++i) values[i] = round_minifloat(f, values[i]);
}

std::uint32_t encode_minifloat(const MiniFloat& m, float r) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(r);
  const std::uint32_t sign = (bits >> 31) << (m.exp_bits + m.man_bits);
  const std::uint32_t abs = bits & 0x7fffffffu;
  const std::uint32_t all_exp = (1u << m.exp_bits) - 1;
  const std::uint32_t man_mask = (1u << m.man_bits) - 1;
  if (abs > 0x7f800000u) {
    switch (m.special) {
      case Special::Ieee: return sign | (all_exp << m.man_bits) | (1u << (m.man_bits - 1));
      case Special::NanOnly: return sign | (all_exp << m.man_bits) | man_mask;
      case Special::FiniteOnly: break;
    }
    SOLAR_UNREACHABLE("NaN in a format without NaN");
  }
  if (abs == 0x7f800000u) {
    SOLAR_CHECK(m.special == Special::Ieee, "inf in a format without inf");
    return sign | (all_exp << m.man_bits);
  }
  const float a = std::bit_cast<float>(abs);
  if (a < m.min_normal) {
    // Subnormal (or zero): the mantissa counts steps of 2^(min_exp - man_bits); exact.
    const float steps = std::ldexp(a, m.man_bits - m.min_exp);
    return sign | static_cast<std::uint32_t>(steps);
  }
  const int e = static_cast<int>(abs >> 23) - 127;
  const std::uint32_t field = static_cast<std::uint32_t>(e + m.bias);
  return sign | (field << m.man_bits) | ((abs >> m.shift) & man_mask);
}

float decode_minifloat(const MiniFloat& m, std::uint32_t bits) {
  const int width = 1 + m.exp_bits + m.man_bits;
  const bool negative = (bits >> (width - 1)) & 1u;
  const std::uint32_t field = (bits >> m.man_bits) & ((1u << m.exp_bits) - 1);
  const std::uint32_t man = bits & ((1u << m.man_bits) - 1);
  const std::uint32_t all_exp = (1u << m.exp_bits) - 1;
  float v;
  if (m.special == Special::Ieee && field == all_exp) {
    v = man == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  } else if (m.special == Special::NanOnly && field == all_exp && man == (1u << m.man_bits) - 1) {
    v = std::numeric_limits<float>::quiet_NaN();
  } else if (field == 0) {
    v = std::ldexp(static_cast<float>(man), m.min_exp - m.man_bits);
  } else {
    v = std::ldexp(1.0f + std::ldexp(static_cast<float>(man), -m.man_bits),
                   static_cast<int>(field) - m.bias);
  }
  return negative ? -v : v;
}

namespace {
template <int kBits>
std::array<float, (1 << kBits)> make_table(const MiniFloat& m) {
  std::array<float, (1 << kBits)> t{};
  for (std::uint32_t b = 0; b < t.size(); ++b) t[b] = decode_minifloat(m, b);
  return t;
}
}  // namespace

const float* minifloat_table(const MiniFloat& m) {
  static const auto e4m3 = make_table<8>(kE4M3);
  static const auto e5m2 = make_table<8>(kE5M2);
  static const auto e2m3 = make_table<6>(kE2M3);
  static const auto e2m1 = make_table<4>(kE2M1);
  if (m.exp_bits == 4 && m.man_bits == 3) return e4m3.data();
  if (m.exp_bits == 5 && m.man_bits == 2) return e5m2.data();
  if (m.exp_bits == 2 && m.man_bits == 3) return e2m3.data();
  if (m.exp_bits == 2 && m.man_bits == 1) return e2m1.data();
  SOLAR_UNREACHABLE("no decode table for this format");
}

}  // namespace solar::exec
