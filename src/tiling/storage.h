// Private to the tiling module: a tensor's storage rule (cost/storage.h, storage_bits)
// evaluated on 128-bit element counts for the search's inner loop, and the whole-group tiles of
// 2:4 tensors.
#pragma once

#include <cstdint>
#include <optional>

#include "solar/cost/work.h"

#include "solar/tiling/problem.h"

namespace solar::tiling::detail {

using Wide = unsigned __int128;

// Positions per 2:4 group along a tensor's group dimension.
inline constexpr std::int64_t kGroup = 4;

// cost::storage_bits of one tensor with its zero fraction parsed once, for the search's inner
// loop: dense and 2:4 are a multiply; a bitmap adds a multiply and a division (below 2^64
// elements). Equal to cost::storage_bits wherever that does not overflow 128 bits.
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

  // The zeros of n elements, exactly as cost::tensor_bytes counts them (cost::zeros_of).
  Wide zeros(Wide n) const {
    // Below 2^64 elements the product of the decimal digits (< 10^17) cannot overflow.
    if (n >> 64 == 0 && decimal_) return n * decimal_->digits / decimal_->pow10;
    return cost::zeros_of(Count::from_raw(n), fraction_).raw();
  }

 private:
  StorageFormat format_;
  Wide width_;
  double fraction_ = 0;
  std::optional<cost::DecimalFraction> decimal_;  // the fraction's decimal digits (bitmaps)
};

// The ranks of `p` that a 2:4 tensor's group dimension reads (group_dim): tiles along them
// are not free to split groups, so the search neither drops them as batch ranks, merges them
// nor pins them to tile 1.
RankMask grouped_ranks(const TilingProblem& p);

}  // namespace solar::tiling::detail
