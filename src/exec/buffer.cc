#include "solar/exec/buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "dtype_convert.h"
#include "solar/ir/shape.h"
#include "solar/util/errors.h"

namespace solar::exec {

Storage storage_for(ir::DType d) {
  switch (d) {
    case ir::DType::F64: return Storage::F64;
    case ir::DType::F32: case ir::DType::TF32: case ir::DType::BF16: case ir::DType::F16:
    case ir::DType::F8E4M3: case ir::DType::F8E5M2: case ir::DType::F6: case ir::DType::F4:
      return Storage::F32;
    case ir::DType::I64: case ir::DType::I32: case ir::DType::I16: case ir::DType::I8:
    case ir::DType::I4: case ir::DType::U8: case ir::DType::Bool:
      return Storage::I64;
  }
  SOLAR_UNREACHABLE("unknown dtype");
}

std::size_t storage_bytes(Storage s) {
  switch (s) {
    case Storage::F32: return 4;
    case Storage::F64: return 8;
    case Storage::I64: return 8;
  }
  SOLAR_UNREACHABLE("unknown storage");
}

namespace {

// Element count of a shape; UserError for a negative extent or a count that overflows.
std::int64_t checked_elements(ir::DType dtype, const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0)
      throw UserError(UserError::Kind::BadArgument,
                      fmt::format("negative extent in tensor shape {}",
                                  ir::type_str(dtype, shape)));
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / d)
      throw UserError(UserError::Kind::BadArgument,
                      fmt::format("tensor {} has more than 2^63 elements",
                                  ir::type_str(dtype, shape)));
    n *= d;
  }
  return n;
}

constexpr std::size_t kAlign = 64;
// Large buffers are whole mmap'ed blocks: fresh zero pages cost nothing until written and can
// be transparent huge pages.
constexpr std::size_t kMmapThreshold = std::size_t{1} << 20;
constexpr std::size_t kPage = 4096;

// Freed large blocks, kept for reuse. A graph's chain of big intermediates (softmax over
// 4096x4096 allocates two 64 MiB results) would otherwise page-fault and zero fresh memory at
// every op: 7 ms per 64 MiB on the development VM, as much as the op itself. Bounded by
// min(512 MiB, 1/16 of physical memory); deliberately leaked so that buffers destroyed during
// static destruction still find it.
struct BlockCache {
  std::mutex mu;
  std::multimap<std::size_t, void*> blocks;  // mapped bytes -> address
  std::size_t bytes = 0;
  std::size_t cap = 0;
};
BlockCache& block_cache() {
  static BlockCache* c = [] {
    auto* cache = new BlockCache;
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    const std::size_t phys = pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) : 0;
    cache->cap = std::min<std::size_t>(std::size_t{512} << 20, phys / 16);
    return cache;
  }();
  return *c;
}

void release_block(void* p, std::size_t mapped) {
  BlockCache& c = block_cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.bytes + mapped <= c.cap) {
      c.blocks.emplace(mapped, p);
      c.bytes += mapped;
      return;
    }
  }
  munmap(p, mapped);
}

// A cached block of at least `bytes` (at most 1/8 larger), or null.
void* take_cached(std::size_t bytes, std::size_t& mapped) {
  BlockCache& c = block_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  auto it = c.blocks.lower_bound(bytes);
  if (it == c.blocks.end() || it->first > bytes + bytes / 8) return nullptr;
  mapped = it->first;
  void* p = it->second;
  c.bytes -= mapped;
  c.blocks.erase(it);
  return p;
}

// Zeroes a reused block with every thread: a 64 MiB memset is a few milliseconds.
void parallel_zero(void* p, std::size_t bytes) {
  auto* b = static_cast<unsigned char*>(p);
  const std::int64_t chunks = static_cast<std::int64_t>((bytes + (std::size_t{1} << 20) - 1) >> 20);
#pragma omp parallel for schedule(static) if (chunks > 4)
  for (std::int64_t k = 0; k < chunks; ++k) {
    const std::size_t lo = static_cast<std::size_t>(k) << 20;
    std::memset(b + lo, 0, std::min(bytes - lo, std::size_t{1} << 20));
  }
}

std::shared_ptr<void> allocate(std::size_t bytes, bool zero) {
  if (bytes >= kMmapThreshold) {
    const std::size_t want = (bytes + kPage - 1) / kPage * kPage;
    std::size_t mapped = 0;
    void* p = take_cached(want, mapped);
    if (p != nullptr) {
      if (zero) parallel_zero(p, bytes);
    } else {
      mapped = want;
      p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) {  // cached blocks may be what is missing
        release_buffer_cache();
        p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      }
      if (p == MAP_FAILED) return nullptr;
#ifdef MADV_HUGEPAGE
      madvise(p, mapped, MADV_HUGEPAGE);
#endif
    }
    return std::shared_ptr<void>(p, [mapped](void* q) { release_block(q, mapped); });
  }
  std::size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  if (rounded == 0) rounded = kAlign;  // a zero-element buffer still has a valid pointer
  void* p = std::aligned_alloc(kAlign, rounded);
  if (p == nullptr) return nullptr;
  if (zero) std::memset(p, 0, rounded);
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

// The raw format of a narrow float dtype; nullptr for f32/f64 and non-floats.
const MiniFloat* minifloat_of(ir::DType d) {
  switch (d) {
    case ir::DType::TF32: return &kTF32;
    case ir::DType::BF16: return &kBF16;
    case ir::DType::F16: return &kF16;
    case ir::DType::F8E4M3: return &kE4M3;
    case ir::DType::F8E5M2: return &kE5M2;
    case ir::DType::F6: return &kE2M3;
    case ir::DType::F4: return &kE2M1;
    case ir::DType::F64: case ir::DType::F32: case ir::DType::I64: case ir::DType::I32:
    case ir::DType::I16: case ir::DType::I8: case ir::DType::I4: case ir::DType::U8:
    case ir::DType::Bool:
      return nullptr;
  }
  return nullptr;
}

std::int64_t sign_extend4(unsigned nibble) {
  return static_cast<std::int64_t>(static_cast<int>(nibble & 0xf) ^ 8) - 8;
}

}  // namespace

Buffer Buffer::zeros(ir::DType dtype, std::vector<std::int64_t> shape) {
  return allocated(dtype, std::move(shape), true);
}

Buffer Buffer::uninitialized(ir::DType dtype, std::vector<std::int64_t> shape) {
  return allocated(dtype, std::move(shape), false);
}

Buffer Buffer::allocated(ir::DType dtype, std::vector<std::int64_t> shape, bool zero) {
  std::int64_t n = checked_elements(dtype, shape);
  std::size_t width = storage_bytes(storage_for(dtype));
  if (static_cast<std::uint64_t>(n) > std::numeric_limits<std::size_t>::max() / width / 2)
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("tensor {} ({} elements) is too large to allocate",
                                ir::type_str(dtype, shape), n));
  std::size_t bytes = static_cast<std::size_t>(n) * width;
  Buffer b;
  b.owner_ = allocate(bytes, zero);
  if (!b.owner_)
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("cannot allocate {} bytes for tensor {} ({} elements of {} bytes "
                                "each in the executor's compute representation): out of memory",
                                bytes, ir::type_str(dtype, shape), n, width));
  b.dtype_ = dtype;
  b.shape_ = std::move(shape);
  b.data_ = b.owner_.get();
  return b;
}

Buffer Buffer::borrow(ir::DType dtype, std::vector<std::int64_t> shape, void* data) {
  checked_elements(dtype, shape);
  if (data == nullptr)
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("null data for borrowed tensor {}", ir::type_str(dtype, shape)));
  Buffer b;
  b.dtype_ = dtype;
  b.shape_ = std::move(shape);
  b.data_ = data;
  return b;
}

std::int64_t Buffer::num_elements() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape_) n *= d;
  return n;
}

std::size_t Buffer::storage_size_bytes() const {
  return static_cast<std::size_t>(num_elements()) * storage_bytes(storage());
}

std::size_t Buffer::raw_bytes() const {
  std::size_t n = static_cast<std::size_t>(num_elements());
  switch (dtype_) {
    case ir::DType::F4: case ir::DType::I4: return (n + 1) / 2;
    case ir::DType::F6: return n;  // one value per byte, low 6 bits
    case ir::DType::F64: case ir::DType::F32: case ir::DType::TF32: case ir::DType::BF16:
    case ir::DType::F16: case ir::DType::F8E4M3: case ir::DType::F8E5M2: case ir::DType::I64:
    case ir::DType::I32: case ir::DType::I16: case ir::DType::I8: case ir::DType::U8:
    case ir::DType::Bool:
      return n * static_cast<std::size_t>(ir::dtype_bits(dtype_)) / 8;
  }
  SOLAR_UNREACHABLE("unknown dtype");
}

Buffer Buffer::from_raw(ir::DType dtype, std::vector<std::int64_t> shape, const void* raw) {
  Buffer b = zeros(dtype, std::move(shape));
  const std::int64_t n = b.num_elements();
  if (n > 0 && raw == nullptr)
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("null raw data for tensor {}", ir::type_str(dtype, b.shape_)));
  const auto* bytes = static_cast<const std::uint8_t*>(raw);
  float* f = b.storage() == Storage::F32 ? b.data<float>() : nullptr;
  std::int64_t* q = b.storage() == Storage::I64 ? b.data<std::int64_t>() : nullptr;
  auto load = [&](auto tag, std::int64_t i) {
    decltype(tag) v;
    std::memcpy(&v, bytes + i * sizeof(v), sizeof(v));
    return v;
  };
  switch (dtype) {
    case ir::DType::F64:
      if (n > 0) std::memcpy(b.data<double>(), raw, static_cast<std::size_t>(n) * 8);
      break;
    case ir::DType::F32:
      if (n > 0) std::memcpy(f, raw, static_cast<std::size_t>(n) * 4);
      break;
    case ir::DType::TF32:
      // tf32 travels as f32 bits; values with more than 10 mantissa bits are rounded.
      if (n > 0) std::memcpy(f, raw, static_cast<std::size_t>(n) * 4);
      round_to_dtype(dtype, std::span<float>(f, static_cast<std::size_t>(n)));
      break;
    case ir::DType::BF16:
      for (std::int64_t i = 0; i < n; ++i) f[i] = bf16_bits_to_float(load(std::uint16_t{}, i));
      break;
    case ir::DType::F16:
      for (std::int64_t i = 0; i < n; ++i) f[i] = decode_minifloat(kF16, load(std::uint16_t{}, i));
      break;
    case ir::DType::F8E4M3: case ir::DType::F8E5M2: case ir::DType::F6: {
      const float* table = minifloat_table(*minifloat_of(dtype));
      const unsigned mask = dtype == ir::DType::F6 ? 0x3f : 0xff;
      for (std::int64_t i = 0; i < n; ++i) f[i] = table[bytes[i] & mask];
      break;
    }
    case ir::DType::F4: {
      const float* table = minifloat_table(kE2M1);
      for (std::int64_t i = 0; i < n; ++i)
        f[i] = table[(bytes[i / 2] >> (4 * (i & 1))) & 0xf];
      break;
    }
    case ir::DType::I64:
      if (n > 0) std::memcpy(q, raw, static_cast<std::size_t>(n) * 8);
      break;
    case ir::DType::I32:
      for (std::int64_t i = 0; i < n; ++i) q[i] = load(std::int32_t{}, i);
      break;
    case ir::DType::I16:
      for (std::int64_t i = 0; i < n; ++i) q[i] = load(std::int16_t{}, i);
      break;
    case ir::DType::I8:
      for (std::int64_t i = 0; i < n; ++i) q[i] = static_cast<std::int8_t>(bytes[i]);
      break;
    case ir::DType::I4:
      for (std::int64_t i = 0; i < n; ++i) q[i] = sign_extend4(bytes[i / 2] >> (4 * (i & 1)));
      break;
    case ir::DType::U8:
      for (std::int64_t i = 0; i < n; ++i) q[i] = bytes[i];
      break;
    case ir::DType::Bool:
      for (std::int64_t i = 0; i < n; ++i) q[i] = bytes[i] != 0;
      break;
  }
  return b;
}

void Buffer::to_raw(void* raw) const {
  const std::int64_t n = num_elements();
  if (n == 0) return;
  SOLAR_CHECK(data_ != nullptr, "to_raw of an undefined buffer");
  auto* bytes = static_cast<std::uint8_t*>(raw);
  const float* f = storage() == Storage::F32 ? data<float>() : nullptr;
  const std::int64_t* q = storage() == Storage::I64 ? data<std::int64_t>() : nullptr;
  auto store = [&](auto v, std::int64_t i) { std::memcpy(bytes + i * sizeof(v), &v, sizeof(v)); };
  auto encode = [&](const MiniFloat& m, std::int64_t i) -> std::uint32_t {
    float r = round_minifloat(m, f[i]);
    if (std::isnan(r) && m.special == Special::FiniteOnly)
      throw UserError(UserError::Kind::BadArgument,
                      fmt::format("element {} of a {} tensor is NaN, which {} cannot represent",
                                  i, ir::type_str(dtype_, shape_), ir::dtype_name(dtype_)));
    return encode_minifloat(m, r);
  };
  switch (dtype_) {
    case ir::DType::F64: std::memcpy(raw, data_, static_cast<std::size_t>(n) * 8); break;
    case ir::DType::F32: std::memcpy(raw, data_, static_cast<std::size_t>(n) * 4); break;
    case ir::DType::TF32:
      for (std::int64_t i = 0; i < n; ++i) store(round_minifloat(kTF32, f[i]), i);
      break;
    case ir::DType::BF16:
      for (std::int64_t i = 0; i < n; ++i) store(static_cast<std::uint16_t>(encode(kBF16, i)), i);
      break;
    case ir::DType::F16:
      for (std::int64_t i = 0; i < n; ++i) store(static_cast<std::uint16_t>(encode(kF16, i)), i);
      break;
    case ir::DType::F8E4M3: case ir::DType::F8E5M2: case ir::DType::F6: {
      const MiniFloat& m = *minifloat_of(dtype_);
      for (std::int64_t i = 0; i < n; ++i) bytes[i] = static_cast<std::uint8_t>(encode(m, i));
      break;
    }
    case ir::DType::F4:
      std::memset(raw, 0, raw_bytes());
      for (std::int64_t i = 0; i < n; ++i)
        bytes[i / 2] |= static_cast<std::uint8_t>(encode(kE2M1, i) << (4 * (i & 1)));
      break;
    case ir::DType::I64: std::memcpy(raw, data_, static_cast<std::size_t>(n) * 8); break;
    case ir::DType::I32:
      for (std::int64_t i = 0; i < n; ++i)
        store(static_cast<std::int32_t>(static_cast<std::uint32_t>(q[i])), i);
      break;
    case ir::DType::I16:
      for (std::int64_t i = 0; i < n; ++i)
        store(static_cast<std::int16_t>(static_cast<std::uint16_t>(q[i])), i);
      break;
    case ir::DType::I8: case ir::DType::U8:
      for (std::int64_t i = 0; i < n; ++i) bytes[i] = static_cast<std::uint8_t>(q[i]);
      break;
    case ir::DType::I4:
      std::memset(raw, 0, raw_bytes());
      for (std::int64_t i = 0; i < n; ++i)
        bytes[i / 2] |= static_cast<std::uint8_t>((q[i] & 0xf) << (4 * (i & 1)));
      break;
    case ir::DType::Bool:
      for (std::int64_t i = 0; i < n; ++i) bytes[i] = q[i] != 0;
      break;
  }
}

double Buffer::value(std::int64_t i) const {
  SOLAR_CHECK(data_ != nullptr && i >= 0 && i < num_elements(), "Buffer::value out of range");
  switch (storage()) {
    case Storage::F32: return data<float>()[i];
    case Storage::F64: return data<double>()[i];
    case Storage::I64: return static_cast<double>(data<std::int64_t>()[i]);
  }
  SOLAR_UNREACHABLE("unknown storage");
}

void round_to_dtype(ir::DType dtype, std::span<float> values) {
  switch (dtype) {
    case ir::DType::F64: case ir::DType::F32: return;
    case ir::DType::BF16: round_span_minifloat(kBF16, values.data(), values.size()); return;
    case ir::DType::TF32: round_span_minifloat(kTF32, values.data(), values.size()); return;
    case ir::DType::F16: round_span_minifloat(kF16, values.data(), values.size()); return;
    case ir::DType::F8E4M3: round_span_minifloat(kE4M3, values.data(), values.size()); return;
    case ir::DType::F8E5M2: round_span_minifloat(kE5M2, values.data(), values.size()); return;
    case ir::DType::F6: round_span_minifloat(kE2M3, values.data(), values.size()); return;
    case ir::DType::F4: round_span_minifloat(kE2M1, values.data(), values.size()); return;
    case ir::DType::I64: case ir::DType::I32: case ir::DType::I16: case ir::DType::I8:
    case ir::DType::I4: case ir::DType::U8: case ir::DType::Bool:
      break;
  }
  SOLAR_UNREACHABLE(fmt::format("round_to_dtype on {} values: integers are held as i64",
                                ir::dtype_name(dtype)));
}

float round_to_dtype(ir::DType dtype, float value) {
  round_to_dtype(dtype, std::span<float>(&value, 1));
  return value;
}

std::int64_t wrap_to_dtype(ir::DType dtype, std::int64_t v) {
  switch (dtype) {
    case ir::DType::I64: return v;
    case ir::DType::I32: return static_cast<std::int32_t>(static_cast<std::uint32_t>(v));
    case ir::DType::I16: return static_cast<std::int16_t>(static_cast<std::uint16_t>(v));
    case ir::DType::I8: return static_cast<std::int8_t>(static_cast<std::uint8_t>(v));
    case ir::DType::I4: return sign_extend4(static_cast<unsigned>(v & 0xf));
    case ir::DType::U8: return static_cast<std::uint8_t>(v);
    case ir::DType::Bool: return v != 0;
    case ir::DType::F64: case ir::DType::F32: case ir::DType::TF32: case ir::DType::BF16:
    case ir::DType::F16: case ir::DType::F8E4M3: case ir::DType::F8E5M2: case ir::DType::F6:
    case ir::DType::F4:
      break;
  }
  SOLAR_UNREACHABLE(fmt::format("wrap_to_dtype on {} values: floats are held as f32/f64",
                                ir::dtype_name(dtype)));
}

void wrap_to_dtype(ir::DType dtype, std::span<std::int64_t> values) {
  if (dtype == ir::DType::I64) return;
  wrap_to_dtype(dtype, std::int64_t{0});  // rejects float dtypes even for empty spans
  for (std::int64_t& v : values) v = wrap_to_dtype(dtype, v);
}

void bring_to_dtype(Buffer& out) {
  const auto n = static_cast<std::size_t>(out.num_elements());
  switch (out.storage()) {
    case Storage::F32: round_to_dtype(out.dtype(), std::span<float>(out.data<float>(), n)); return;
    case Storage::F64: return;
    case Storage::I64:
      wrap_to_dtype(out.dtype(), std::span<std::int64_t>(out.data<std::int64_t>(), n));
      return;
  }
}

void release_buffer_cache() {
  BlockCache& c = block_cache();
  std::multimap<std::size_t, void*> blocks;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    blocks.swap(c.blocks);
    c.bytes = 0;
  }
  for (const auto& [mapped, p] : blocks) munmap(p, mapped);
}

std::size_t buffer_cache_bytes() {
  BlockCache& c = block_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.bytes;
}

}  // namespace solar::exec
