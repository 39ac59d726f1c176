// Integer division that rounds down or up, for any signs: the one definition every module uses.
#pragma once

#include <type_traits>

namespace solar {

// floor(a / b) for b != 0 and any sign of a and b (C++'s `/` truncates toward zero instead).
// T is any built-in integer type, __int128 included; a / b must not overflow (INT_MIN / -1).
template <typename T>
constexpr T floor_div(T a, T b) {
  T q = a / b;
  if constexpr (std::is_signed_v<T> || std::is_same_v<T, __int128>) {
    if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  }
  return q;
}

// ceil(a / b) for b != 0 and any sign of a and b.
template <typename T>
constexpr T ceil_div(T a, T b) {
  T q = a / b;
  if constexpr (std::is_signed_v<T> || std::is_same_v<T, __int128>) {
    if (a % b != 0 && ((a < 0) == (b < 0))) ++q;
  } else {
    if (a % b != 0) ++q;
  }
  return q;
}

}  // namespace solar
