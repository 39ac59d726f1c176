// Tensor values during execution: a shape, the declared dtype, and the values in a compute
// representation (f32 for fp32 and narrower floats, f64 for f64, i64 for integers and bool).
//
// Narrow floats (bf16, f16, fp8, fp6, fp4, tf32) are held in f32 after rounding to their own
// precision, so an op's result equals what a framework storing that dtype would hold.
// Integers (int4 .. int64, uint8) and bool are held as i64. Raw data in the declared dtype
// (bf16 bit patterns, packed int4, ...) is converted on the way in and out.
//
// Values are contiguous and row-major; owned memory is 64-byte aligned. Raw formats
// (docs/executor.md, "Dtypes"): f6 is OCP MX FP6 E2M3, one value per byte in the low 6 bits;
// f4 (OCP E2M1) and i4 are packed two per byte, low nibble first; f8e4m3 is OCP E4M3FN; bool
// is one byte per value (0 or 1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "solar/ir/dtype.h"

namespace solar::exec {

enum class Storage { F32, F64, I64 };

// Calls f(T{}) with T the C++ type of storage s (a tag: dispatch on a buffer's storage).
template <class F>
void with_type(Storage s, F&& f) {
  switch (s) {
    case Storage::F32: f(float{}); return;
    case Storage::F64: f(double{}); return;
    case Storage::I64: f(std::int64_t{}); return;
  }
}

Storage storage_for(ir::DType d);
std::size_t storage_bytes(Storage s);  // 4, 8, 8

class Buffer {
 public:
  Buffer() = default;
  // A zero-filled buffer owned by this object. Throws UserError(BadArgument) naming the
  // size when the allocation fails.
  static Buffer zeros(ir::DType dtype, std::vector<std::int64_t> shape);
  // Like zeros, but the contents are unspecified: for outputs a kernel overwrites entirely
  // (run_einsum writes every output element), sparing a zeroing pass over reused memory.
  static Buffer uninitialized(ir::DType dtype, std::vector<std::int64_t> shape);
  // A non-owning view of caller memory already in the compute representation (f32 for an
  // f32 tensor, ...): no copy. The caller keeps `data` alive while the buffer is used.
  static Buffer borrow(ir::DType dtype, std::vector<std::int64_t> shape, void* data);
  // Converts raw data in the declared dtype's storage format (bf16/f16 bit patterns, fp8
  // bytes, int4 two per byte low nibble first, bool bytes) into a new buffer.
  static Buffer from_raw(ir::DType dtype, std::vector<std::int64_t> shape, const void* raw);
  // Writes the values in the declared dtype's storage format (rounding to nearest even).
  void to_raw(void* raw) const;
  std::size_t raw_bytes() const;  // size of the declared-dtype storage format

  ir::DType dtype() const { return dtype_; }
  Storage storage() const { return storage_for(dtype_); }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  std::int64_t num_elements() const;
  bool defined() const { return data_ != nullptr; }

  template <class T> T* data() { return static_cast<T*>(data_); }
  template <class T> const T* data() const { return static_cast<const T*>(data_); }
  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }

  // Value i converted to double (tests and validation).
  double value(std::int64_t i) const;

  // Memory that this buffer owns (64-byte aligned), in bytes of the compute representation.
  std::size_t storage_size_bytes() const;

  // The executor's zero-copy views (docs/executor.md, "Running graphs"): the same memory seen
  // as `shape` (row-major), starting `offset` elements in. The result shares ownership with
  // this buffer (or borrows the same caller memory); the caller keeps offset + the new
  // element count within this buffer.
  Buffer alias(std::vector<std::int64_t> shape, std::int64_t offset = 0) const {
    Buffer b = *this;
    b.shape_ = std::move(shape);
    b.data_ = static_cast<char*>(data_) + offset * static_cast<std::int64_t>(
                                                       storage_bytes(storage()));
    return b;
  }
  // False for borrow()ed caller memory (and views of it), true for memory the buffer owns.
  bool owns_memory() const { return owner_ != nullptr; }

 private:
  static Buffer allocated(ir::DType dtype, std::vector<std::int64_t> shape, bool zero);

  ir::DType dtype_ = ir::DType::F32;
  std::vector<std::int64_t> shape_;
  std::shared_ptr<void> owner_;  // null for borrowed memory
  void* data_ = nullptr;
};

// Owned buffers of 1 MiB and more are whole memory mappings. When one is freed its mapping is
// kept for reuse, up to min(512 MiB, 1/16 of physical memory) in all, so that a chain of big
// intermediates does not page-fault fresh memory in at every op. release_buffer_cache()
// returns every kept mapping to the system (allocation does so itself before it fails);
// buffer_cache_bytes() is the size kept now.
void release_buffer_cache();
std::size_t buffer_cache_bytes();

// Rounds f32 values in place to the precision and range of `dtype` (round to nearest even;
// overflow to inf where the format has it, saturation for fp8 e4m3, fp6 and fp4, which have
// no inf). NaN stays NaN. No-op for f32 and f64; InternalError for integer and bool dtypes
// (they are held as i64: see wrap_to_dtype).
void round_to_dtype(ir::DType dtype, std::span<float> values);
// One value rounded as round_to_dtype does.
float round_to_dtype(ir::DType dtype, float value);

// Wraps i64 values in place to the range of an integer dtype the way a store to that type
// does (two's complement truncation: i8 200 -> -56; u8 -1 -> 255); bool becomes 0 or 1
// (nonzero -> 1). No-op for i64; InternalError for float dtypes.
void wrap_to_dtype(ir::DType dtype, std::span<std::int64_t> values);
std::int64_t wrap_to_dtype(ir::DType dtype, std::int64_t value);

// Brings a whole buffer's values into its dtype after a kernel wrote compute-type values:
// round_to_dtype for f32 storage, wrap_to_dtype for i64 storage, nothing for f64.
void bring_to_dtype(Buffer& out);

}  // namespace solar::exec
