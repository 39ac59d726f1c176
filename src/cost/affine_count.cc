#include "affine_count.h"

#include <fmt/format.h>

#include "solar/util/errors.h"

namespace solar::cost::detail {

Count to_count(I128 v) {
  SOLAR_CHECK(v >= 0, "negative count in the cost model");
  // hi * 2^64 + lo, written as hi * (2^64 - 1) + hi + lo so every factor fits in 64 bits.
  const auto u = static_cast<unsigned __int128>(v);
  const Count hi(static_cast<std::uint64_t>(u >> 64));
  return hi * Count(UINT64_MAX) + hi + Count(static_cast<std::uint64_t>(u));
}

[[noreturn]] void invalid(const std::string& message) {
  throw UserError(UserError::Kind::InvalidGraph, message);
}

void check_indices(const ir::AffineExpr& expr, std::size_t num_indices, std::string_view where) {
  for (const ir::AffineTerm& t : expr.terms())
    if (t.index < 0 || static_cast<std::size_t>(t.index) >= num_indices)
      invalid(fmt::format("{} uses index position {} but the einsum has {} indices", where,
                          t.index, num_indices));
}

void check_magnitude(const ir::AffineExpr& expr, const std::vector<std::int64_t>& ext,
                     std::string_view where) {
  constexpr I128 kLimit = I128{1} << 120;
  I128 m = expr.constant_term() < 0 ? -I128{expr.constant_term()} : I128{expr.constant_term()};
  for (const ir::AffineTerm& t : expr.terms()) {
    const I128 a = t.coef < 0 ? -I128{t.coef} : I128{t.coef};
    m += a * std::max<I128>(ext[t.index] - 1, 0);  // a product < 2^126: m stays < 2^127
    if (m > kLimit)
      invalid(fmt::format("{} takes values beyond 2^120: coefficients or extents are too large",
                          where));
  }
}

std::vector<std::int64_t> checked_extents(const ir::EinsumOp& e) {
  std::vector<std::int64_t> ext = e.extents();
  for (std::size_t i = 0; i < ext.size(); ++i)
    if (ext[i] < 0)
      invalid(fmt::format("einsum index '{}' has a negative extent {}", e.indices[i].name, ext[i]));
  return ext;
}

}  // namespace solar::cost::detail
