// How a tensor stores its elements, and how many bits a number of them take: the one rule every
// byte count of the cost and tiling modules uses (docs/cost.md, "Bytes").
#pragma once

#include <optional>

#include "solar/ir/graph.h"
#include "solar/util/count.h"

namespace solar::cost {

enum class StorageFormat {
  Dense,         // bits per element (sub-byte widths packed)
  Compressed24,  // 2:4 structured: half the values kept (ceil(n/2)), each with a 2-bit index
  Bitmap,        // unstructured zeros: the smaller of dense and a bit per element (whole
                 // bytes) followed by the nonzeros, packed
};

struct Storage {
  StorageFormat format = StorageFormat::Dense;
  // The tensor's zero fraction (2:4: at least 0.5; Bitmap: > 0; Dense: 0). A product-sum may
  // skip the points with a zero operand, which the provable bounds allow for.
  double zero_fraction = 0;
  friend bool operator==(const Storage&, const Storage&) = default;
};

// The storage of tensor `t` from its sparsity annotation: 2:4 first, then a nonzero fraction
// of unstructured zeros as a bitmap. Throws UserError(InvalidGraph) for a zero fraction
// outside [0, 1].
Storage storage_of(const ir::Tensor& t);

// Bits of `elements` elements in a storage: dense n * bits; 2:4 ceil(n/2) * (bits + 2);
// bitmap min(n * bits, 8 * ceil(n/8) + nnz * bits) with nnz = n - zeros_of(n, f). Sums over
// tensors are rounded to bytes once.
Count storage_bits(const Storage& storage, int bits, Count elements);

// Bytes of `elements` elements of `t` at its own width: storage_bits rounded up to whole
// bytes. Dense, ceil(n * dtype_bits / 8) with sub-byte widths packed; 2:4 structured sparsity
// in its compressed format, ceil(ceil(n/2) * (dtype_bits + 2) / 8) (half the values, a 2-bit
// index each; a footprint is assumed to cover whole groups of 4); an unstructured zero
// fraction f > 0 as the smaller of dense and a bitmap format, ceil(n/8) +
// ceil(nnz * dtype_bits / 8) (the fraction assumed to hold for any footprint: zeros spread
// evenly).
Count tensor_bytes(const ir::Tensor& t, Count elements);

// The zeros among n elements of a tensor with zero fraction f (0 <= f <= 1): floor(n * f),
// exact for f read as its shortest round-trip decimal, the number the IR's text and JSON
// forms print (zeros=0.3 is 3/10, so 10 elements hold 3 zeros, where the double nearest 0.3,
// a little below it, would give 2). Beyond 128-bit products (more than ~10^21 elements) it
// is exact for the binary value instead.
Count zeros_of(Count n, double f);

// f as digits / pow10, its shortest round-trip decimal ("0.3" is 3 / 10); nullopt when the
// power of ten passes 10^38. For callers that evaluate zeros_of in a tight loop.
struct DecimalFraction {
  unsigned __int128 digits = 0;
  unsigned __int128 pow10 = 1;
};
std::optional<DecimalFraction> decimal_fraction(double f);

}  // namespace solar::cost
