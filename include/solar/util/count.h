// Exact work and traffic counts: 128-bit integers with overflow-checked arithmetic.
#pragma once

#include <cstdint>
#include <string>

namespace solar {

// A non-negative exact count (MACs, FLOPs, bytes, bits). 128 bits hold ~3.4e38, so a
// trillion-parameter training step (~1e19 FLOP) is far inside the range; every operation
// is still checked and throws InternalError instead of wrapping.
class Count {
 public:
  using Rep = unsigned __int128;

  constexpr Count() = default;
  constexpr Count(std::uint64_t v) : v_(v) {}  // NOLINT: implicit from small integers is intended
  static Count from_signed(std::int64_t v);    // throws UserError on a negative value
  static constexpr Count from_raw(Rep v) {     // any 128-bit value
    Count c;
    c.v_ = v;
    return c;
  }

  Rep raw() const { return v_; }
  double to_double() const { return static_cast<double>(v_); }
  bool fits_u64() const { return v_ <= UINT64_MAX; }
  std::uint64_t to_u64() const;  // throws InternalError when it does not fit
  std::string str() const;       // exact decimal

  Count& operator+=(Count o);
  Count& operator-=(Count o);  // throws InternalError on underflow
  Count& operator*=(Count o);
  friend Count operator+(Count a, Count b) { return a += b; }
  friend Count operator-(Count a, Count b) { return a -= b; }
  friend Count operator*(Count a, Count b) { return a *= b; }
  // Integer division rounding up (bits -> bytes).
  Count ceil_div(std::uint64_t d) const;

  friend auto operator<=>(Count a, Count b) = default;
  friend bool operator==(Count a, Count b) = default;

 private:
  Rep v_ = 0;
};

}  // namespace solar
