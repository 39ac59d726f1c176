#include "solar/util/count.h"

#include <algorithm>

#include "solar/util/errors.h"

namespace solar {

Count Count::from_signed(std::int64_t v) {
  if (v < 0) throw UserError(UserError::Kind::BadArgument, "negative count " + std::to_string(v));
  return Count(static_cast<std::uint64_t>(v));
}

std::uint64_t Count::to_u64() const {
  SOLAR_CHECK(fits_u64(), "count " + str() + " does not fit in 64 bits");
  return static_cast<std::uint64_t>(v_);
}

std::string Count::str() const {
  if (v_ == 0) return "0";
  std::string s;
  for (Rep v = v_; v != 0; v /= 10) s.push_back(static_cast<char>('0' + static_cast<int>(v % 10)));
  std::reverse(s.begin(), s.end());
  return s;
}

Count& Count::operator+=(Count o) {
  SOLAR_CHECK(!__builtin_add_overflow(v_, o.v_, &v_), "count overflow in addition");
  return *this;
}

Count& Count::operator-=(Count o) {
  SOLAR_CHECK(o.v_ <= v_, "count underflow in subtraction");
  v_ -= o.v_;
  return *this;
}

Count& Count::operator*=(Count o) {
  SOLAR_CHECK(!__builtin_mul_overflow(v_, o.v_, &v_), "count overflow in multiplication");
  return *this;
}

Count Count::ceil_div(std::uint64_t d) const {
  SOLAR_CHECK(d != 0, "division by zero");
  Count r;
  r.v_ = v_ / d + (v_ % d != 0 ? 1 : 0);
  return r;
}

}  // namespace solar
