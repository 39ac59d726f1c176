#include "solar/cost/storage.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "affine_count.h"

namespace solar::cost {

namespace {

// floor(n * f) for 0 <= f <= 1, exact for the binary value of f: f = m / 2^s with an integer
// mantissa m < 2^53 and s >= 53; the product n * m (up to 181 bits) is kept as a high part
// and a low 64-bit part before the shift.
Count floor_mul_binary(Count n, double f) {
  using U = unsigned __int128;
  int exp = 0;
  const double frac = std::frexp(f, &exp);  // f = frac * 2^exp, frac in [0.5, 1), exp <= 0
  const U m = static_cast<U>(std::ldexp(frac, 53));  // exact: a double has 53 mantissa bits
  const int shift = 53 - exp;                        // f = m / 2^shift
  const U lo = static_cast<U>(static_cast<std::uint64_t>(n.raw())) * m;  // < 2^117
  const U hi = (n.raw() >> 64) * m;                                      // < 2^117
  const U low = static_cast<std::uint64_t>(lo);  // n * m = high * 2^64 + low
  const U high = hi + (lo >> 64);
  // The quotient is at most n, so it fits in 128 bits whichever way it is assembled.
  U q = 0;
  if (shift < 64)
    q = (high << (64 - shift)) | (low >> shift);
  else if (shift < 64 + 128)
    q = high >> (shift - 64);
  return Count::from_raw(q);
}


}  // namespace

Storage storage_of(const ir::Tensor& t) {
  // 2:4 first, then a nonzero fraction of unstructured zeros.
  Storage s;
  if (!t.sparsity) return s;
  s.zero_fraction = t.sparsity->zero_fraction;
  if (t.sparsity->structured_2_4) {
    s.format = StorageFormat::Compressed24;
  } else if (s.zero_fraction != 0) {
    if (!(s.zero_fraction >= 0 && s.zero_fraction <= 1))
      detail::invalid(fmt::format("tensor '{}' has zero fraction {}, outside [0, 1]", t.name,
                                  s.zero_fraction));
    s.format = StorageFormat::Bitmap;
  }
  return s;
}

Count storage_bits(const Storage& storage, int bits, Count elements) {
  const Count width(static_cast<std::uint64_t>(bits));
  switch (storage.format) {
    case StorageFormat::Dense: return elements * width;
    case StorageFormat::Compressed24:
      // 2 of every 4 values kept (as sparse tensor cores read them), each with a 2-bit index.
      return elements.ceil_div(2) * (width + Count(2));
    case StorageFormat::Bitmap: {
      // A bitmap of one bit per element (whole bytes) plus the nonzeros packed, when that is
      // smaller than dense (it is not for f <= 1/bits).
      const Count nonzeros = elements - zeros_of(elements, storage.zero_fraction);
      return std::min(elements * width, elements.ceil_div(8) * Count(8) + nonzeros * width);
    }
  }
  return elements * width;
}

Count tensor_bytes(const ir::Tensor& t, Count elements) {
  return storage_bits(storage_of(t), ir::dtype_bits(t.dtype), elements).ceil_div(8);
}

std::optional<DecimalFraction> decimal_fraction(double f) {
  SOLAR_CHECK(f >= 0 && f <= 1, fmt::format("zero fraction {} outside [0, 1]", f));
  // "0.3", "0.0125", "1e-05", "1.5e-07": digits p and a power of ten k with f = p / 10^k.
  const std::string text = fmt::format("{}", f);
  const std::size_t e = text.find('e');
  int k = e == std::string::npos ? 0 : -std::stoi(text.substr(e + 1));
  unsigned __int128 p = 0;
  bool fractional = false;
  for (char c : text.substr(0, e)) {
    if (c == '.') {
      fractional = true;
      continue;
    }
    p = p * 10 + static_cast<unsigned>(c - '0');  // at most 17 significant digits
    if (fractional) ++k;
  }
  if (k < 0 || k > 38) return std::nullopt;
  unsigned __int128 pow10 = 1;
  for (int i = 0; i < k; ++i) pow10 *= 10;
  return DecimalFraction{p, pow10};
}

Count zeros_of(Count n, double f) {
  if (f == 1) return n;
  if (f == 0) return Count(0);
  unsigned __int128 product = 0;
  if (std::optional<DecimalFraction> d = decimal_fraction(f))
    if (!__builtin_mul_overflow(n.raw(), d->digits, &product))
      return Count::from_raw(product / d->pow10);
  return floor_mul_binary(n, f);
}

}  // namespace solar::cost
