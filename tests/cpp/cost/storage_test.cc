#include "solar/cost/storage.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace solar::cost {
namespace {

using ir::DType;

// storage_bits follows its stated formulas (in 64-bit integers here), and tensor_bytes is it
// rounded up to bytes, for dense, 2:4 and bitmap tensors of every width and fractions whose
// double is not their decimal (0.3, 1e-05: zeros_of reads the decimal).
TEST(Storage, BitsFollowTheFormulasAndRoundUpToTensorBytes) {
  const std::vector<std::optional<ir::Sparsity>> sparsities = {
      std::nullopt,       ir::Sparsity{0, false},     ir::Sparsity{0.5, true},
      ir::Sparsity{0.75, true}, ir::Sparsity{0.3, false}, ir::Sparsity{1e-05, false},
      ir::Sparsity{0.9, false}, ir::Sparsity{1.0, false}, ir::Sparsity{0.375, false},
      ir::Sparsity{1.0 / 3, false}, ir::Sparsity{0.0625, false}};
  int checked = 0;
  for (ir::DType d : {ir::DType::BF16, ir::DType::F32, ir::DType::I4, ir::DType::F6,
                      ir::DType::F8E4M3, ir::DType::Bool})
    for (const auto& sp : sparsities) {
      ir::Tensor t;
      t.name = "t";
      t.dtype = d;
      t.sparsity = sp;
      const Storage st = storage_of(t);
      const std::uint64_t b = static_cast<std::uint64_t>(ir::dtype_bits(d));
      for (std::uint64_t n = 0; n <= 300; ++n) {
        std::uint64_t want = n * b;  // dense
        if (st.format == StorageFormat::Compressed24) want = (n + 1) / 2 * (b + 2);
        if (st.format == StorageFormat::Bitmap) {
          const std::uint64_t nnz = n - zeros_of(Count(n), st.zero_fraction).to_u64();
          want = std::min(n * b, (n + 7) / 8 * 8 + nnz * b);
        }
        const Count bits = storage_bits(st, ir::dtype_bits(d), Count(n));
        EXPECT_EQ(bits, Count(want)) << ir::dtype_name(d) << " n = " << n;
        EXPECT_EQ(bits.ceil_div(8), tensor_bytes(t, Count(n)));
        ++checked;
      }
    }
  EXPECT_GT(checked, 10000);
  // zeros=0.3 of 10 elements is 3 (the decimal), where floor(10 * 0.29999...) would be 2.
  EXPECT_EQ(zeros_of(Count(10), 0.3), Count(3));
}

TEST(Storage, FormatsFollowTheSparsityAnnotation) {
  ir::Tensor t;
  t.name = "w";
  t.dtype = ir::DType::BF16;
  EXPECT_EQ(storage_of(t).format, StorageFormat::Dense);
  t.sparsity = ir::Sparsity{0.5, true};
  EXPECT_EQ(storage_of(t), (Storage{StorageFormat::Compressed24, 0.5}));
  t.sparsity = ir::Sparsity{0.3, false};
  EXPECT_EQ(storage_of(t), (Storage{StorageFormat::Bitmap, 0.3}));
  t.sparsity = ir::Sparsity{0, false};
  EXPECT_EQ(storage_of(t).format, StorageFormat::Dense);
  t.sparsity = ir::Sparsity{1.5, false};
  try {
    storage_of(t);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::InvalidGraph);
    EXPECT_NE(std::string(e.what()).find("tensor 'w' has zero fraction 1.5"), std::string::npos);
  }
}

TEST(TensorBytes, WidthsAndSparsity) {
  ir::Tensor t;
  t.dtype = DType::F6;
  EXPECT_EQ(tensor_bytes(t, Count(5)), Count((5 * 6 + 7) / 8));  // 30 bits round up to 4 bytes
  t.dtype = DType::I4;
  EXPECT_EQ(tensor_bytes(t, Count(7)), Count(4));                 // 28 bits -> 4 bytes
  t.dtype = DType::BF16;
  t.sparsity = ir::Sparsity{0.5, true};
  // 2:4: half the values, each with a 2-bit index, rounded up to whole bytes.
  EXPECT_EQ(tensor_bytes(t, Count(100)), Count((50 * (16 + 2) + 7) / 8));
}

// Unstructured sparsity: min(dense, ceil(n/8) bitmap bytes + ceil(nnz * bits / 8)) with
// nnz = ceil(n * (1 - f)).

TEST(TensorBytes, UnstructuredSparsityUsesTheBitmapFormatWhenSmaller) {
  ir::Tensor t;
  t.dtype = DType::BF16;
  t.sparsity = ir::Sparsity{0.9, false};
  // n = 100: bitmap ceil(100/8) = 13 bytes, nnz = 10 values of 2 bytes.
  EXPECT_EQ(tensor_bytes(t, Count(100)), Count((100 + 7) / 8 + 10 * 2));
  // n = 101: nnz = ceil(101 * 0.1) = ceil(10.1) = 11; bitmap ceil(101/8) = 13.
  EXPECT_EQ(tensor_bytes(t, Count(101)), Count((101 + 7) / 8 + 11 * 2));
  // zeros=0.3 is read as 3/10 (the decimal the IR prints): 10 elements keep 7 nonzeros.
  t.sparsity = ir::Sparsity{0.3, false};
  EXPECT_EQ(tensor_bytes(t, Count(10)), Count((10 + 7) / 8 + 7 * 2));
  // f = 1: only the bitmap.
  t.sparsity = ir::Sparsity{1.0, false};
  EXPECT_EQ(tensor_bytes(t, Count(64)), Count(64 / 8));
  // f = 0: dense.
  t.sparsity = ir::Sparsity{0.0, false};
  EXPECT_EQ(tensor_bytes(t, Count(64)), Count(64 * 2));
  // A small zero fraction does not pay for the bitmap: int4 at f = 0.1 keeps 90 of 100
  // values, 13 + 45 bytes > 50 dense bytes.
  t.dtype = DType::I4;
  t.sparsity = ir::Sparsity{0.1, false};
  EXPECT_EQ(tensor_bytes(t, Count(100)), Count(100 * 4 / 8));
  // f32 at f = 0.5: a 1000-bit bitmap and 500 values of 4 bytes.
  t.dtype = DType::F32;
  t.sparsity = ir::Sparsity{0.5, false};
  EXPECT_EQ(tensor_bytes(t, Count(1000)), Count(1000 / 8 + 500 * 4));
}

TEST(TensorBytes, UnstructuredSparsityIsExactForHugeTensors) {
  const Count two40(std::uint64_t{1} << 40);
  ir::Tensor t;
  t.dtype = DType::I8;
  t.sparsity = ir::Sparsity{0.25, false};
  // n = 2^80: nnz = 3/4 of it = 6 * 2^77 values of one byte; bitmap 2^77 bytes.
  const Count two77 = two40 * Count(std::uint64_t{1} << 37);
  EXPECT_EQ(tensor_bytes(t, two40 * two40), two77 + Count(6) * two77);
  // n = 2^120, f = 0.375 (n * 375 needs more than 128 bits, so f is taken in binary, where
  // it is exactly 3/8): nnz = 5 * 2^117; bitmap 2^117 bytes.
  t.sparsity = ir::Sparsity{0.375, false};
  const Count two117 = two77 * two40;
  EXPECT_EQ(tensor_bytes(t, two40 * two40 * two40), two117 + Count(5) * two117);
}

TEST(TensorBytes, ZeroFractionOutsideZeroToOneIsAnInvalidGraph) {
  ir::Tensor t;
  t.name = "w";
  t.dtype = DType::F32;
  t.sparsity = ir::Sparsity{1.5, false};
  try {
    tensor_bytes(t, Count(8));
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), UserError::Kind::InvalidGraph);
    EXPECT_NE(std::string(e.what()).find("tensor 'w' has zero fraction 1.5"), std::string::npos);
  }
}

}  // namespace
}  // namespace solar::cost
