// Private to the tiling module: a tensor's storage rule (problem.h, Storage) evaluated on
// 128-bit element counts, and the whole-group tiles of 2:4 tensors.
#pragma once

#include <cstdint>

#include "solar/tiling/problem.h"

namespace solar::tiling::detail {

using Wide = unsigned __int128;

// Positions per 2:4 group along a tensor's group dimension.
inline constexpr std::int64_t kGroup = 4;

// storage_bits of one tensor with its zero fraction parsed once, for the search's inner loop:
// dense and 2:4 are a multiply; a bitmap adds a multiply and a division (below 2^64 elements).
class StorageRule {
 public:
  StorageRule(const Storage& storage, int bits);
  explicit StorageRule(const TensorAccess& a) : StorageRule(a.storage, a.bits) {}
  // Bits of `elements` elements (problem.h, storage_bits).
  Wide bits(Wide elements) const {
    switch (format_) {
      case StorageFormat::Dense: return elements * width_;
      case StorageFormat::Compressed24: return (elements + 1) / 2 * (width_ + 2);
      case StorageFormat::Bitmap: {
        const Wide dense = elements * width_;
        const Wide bitmap = (elements + 7) / 8 * 8 + (elements - zeros(elements)) * width_;
        return dense < bitmap ? dense : bitmap;
      }
    }
    return elements * width_;
  }
  bool dense() const { return format_ == StorageFormat::Dense; }

  // floor(n * f): the zeros of n elements, exactly as cost::tensor_bytes counts them.
  Wide zeros(Wide n) const {
    // Below 2^64 elements the product of the decimal digits (< 10^17) cannot overflow.
    if (n >> 64 == 0) return n * mul_ / div_;
    return slow_zeros(n);
  }

 private:
  Wide slow_zeros(Wide n) const;

  StorageFormat format_;
  Wide width_;
  double fraction_ = 0;
  // The fraction as its shortest round-trip decimal digits_ / 10^exp10_ (exp10_ > 38: too
  // small for 128 bits), and as the pair zeros() uses below 2^64 elements.
  Wide digits_ = 0;
  int exp10_ = 0;
  Wide mul_ = 0, div_ = 1;
};

// A Count from its 128-bit representation.
inline Count wide_count(Wide v) {
  return Count(static_cast<std::uint64_t>(v >> 64)) * Count(std::uint64_t{1} << 32) *
             Count(std::uint64_t{1} << 32) +
         Count(static_cast<std::uint64_t>(v));
}

// The ranks of `p` that a 2:4 tensor's group dimension reads (group_dim): tiles along them
// are not free to split groups, so the search neither drops them as batch ranks, merges them
// nor pins them to tile 1.
RankMask grouped_ranks(const TilingProblem& p);

}  // namespace solar::tiling::detail
