// Data-movement kernels: view, copy, permute, slice, concat, pad, gather, scatter, cast
// (docs/executor.md, "Data movement and opaque ops").
//
// Values are contiguous row-major in a 4- or 8-byte compute representation, and every kind
// but cast (and a bit-reinterpreting view) keeps the dtype, so most kinds move words without
// looking at them: one strided-copy engine (per output dimension: which input coordinate it
// reads) serves view/copy (broadcast and repeat), permute, slice and pad.
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "solar/exec/kernels.h"
#include "solar/ir/attrs.h"
#include "solar/ir/shape.h"
#include "solar/util/errors.h"

namespace solar::exec {
namespace {

using ir::MoveKind;

// Below this many output bytes a kernel runs on one thread: starting a team costs more.
constexpr std::int64_t kParallelBytes = std::int64_t{1} << 18;

int thread_count(const ExecContext& ctx) {
  return ctx.threads > 0 ? ctx.threads : omp_get_max_threads();
}

std::int64_t product(const std::vector<std::int64_t>& shape, std::size_t from, std::size_t to) {
  std::int64_t n = 1;
  for (std::size_t d = from; d < to; ++d) n *= shape[d];
  return n;
}

using ir::position_str;
using ir::row_major_strides;
using ir::shape_str;
using ir::tiles;

using ir::find_int_list;
using ir::int_attr;
using ir::string_attr;

const std::vector<std::int64_t>& need_list(const ir::MoveOp& m, const char* key) {
  const std::vector<std::int64_t>* v = find_int_list(m.attrs, key);
  if (!v)
    throw UserError(UserError::Kind::InvalidGraph,
                    fmt::format("{} needs the integer list attribute '{}'",
                                ir::move_kind_name(m.kind), key));
  return *v;
}

std::int64_t need_axis(const ir::MoveOp& m, std::size_t rank) {
  std::int64_t axis = int_attr(m.attrs, "axis", -1);
  if (axis < 0 || static_cast<std::size_t>(axis) >= rank)
    throw UserError(UserError::Kind::InvalidGraph,
                    fmt::format("{} needs an attribute axis in [0, {})",
                                ir::move_kind_name(m.kind), rank));
  return axis;
}

void need_shape(bool ok, const ir::MoveOp& m, const std::string& what) {
  if (!ok)
    throw UserError(UserError::Kind::InvalidGraph,
                    fmt::format("{}: {}", ir::move_kind_name(m.kind), what));
}

// ---- the strided-copy engine ------------------------------------------------------------

// How output coordinate o of one dimension reads the input: coordinate c = start + o * step,
// then c mod `modulo` when modulo > 0 (repeat), then the fill value when c is outside
// [0, in_extent) and in_extent >= 0 (pad). The input offset is c * in_stride (0: broadcast).
struct DimMap {
  std::int64_t extent = 1;
  std::int64_t in_stride = 0;
  std::int64_t start = 0;
  std::int64_t step = 1;
  std::int64_t modulo = 0;
  std::int64_t in_extent = -1;
};

// A transpose: the innermost output dimension reads the input with a stride while another
// output dimension `c` reads it contiguously. Row by row, every read would touch a new cache
// line; square tiles keep both the lines read and the lines written in cache. Returns false
// (nothing done) when the maps are not of that form.
template <class W>
bool transpose_tiles(const W* in, W* out, const std::vector<DimMap>& maps, int threads,
                     bool parallel) {
  constexpr std::int64_t kTile = 32;
  const std::size_t r = maps.size();
  const DimMap& inner = maps[r - 1];
  auto plain = [](const DimMap& m) { return m.modulo == 0 && m.in_extent < 0; };
  if (r < 2 || !plain(inner) || inner.in_stride == 0 || inner.step * inner.in_stride == 1 ||
      inner.extent < kTile)
    return false;
  std::size_t c = r;
  for (std::size_t d = 0; d + 1 < r; ++d)
    if (plain(maps[d]) && maps[d].step * maps[d].in_stride == 1 && maps[d].extent >= kTile) c = d;
  if (c == r) return false;
  std::vector<std::int64_t> out_stride(r, 1);
  for (std::size_t d = r - 1; d-- > 0;) out_stride[d] = out_stride[d + 1] * maps[d + 1].extent;
  std::int64_t outer = 1;
  for (std::size_t d = 0; d + 1 < r; ++d)
    if (d != c) outer *= maps[d].extent;
  const DimMap& mc = maps[c];
  const std::int64_t blocks = (mc.extent + kTile - 1) / kTile;
  const std::int64_t in_step = inner.step * inner.in_stride;
#pragma omp parallel for num_threads(threads) schedule(static) if (parallel)
  for (std::int64_t task = 0; task < outer * blocks; ++task) {
    std::int64_t rest = task / blocks;
    const std::int64_t i0 = (task % blocks) * kTile, i1 = std::min(mc.extent, i0 + kTile);
    std::int64_t in_off = inner.start * inner.in_stride + mc.start * mc.in_stride, out_off = 0;
    for (std::size_t d = r - 1; d-- > 0;) {
      if (d == c) continue;
      const DimMap& m = maps[d];
      const std::int64_t o = rest % m.extent;
      rest /= m.extent;
      in_off += (m.start + o * m.step) * m.in_stride;
      out_off += o * out_stride[d];
    }
    for (std::int64_t j0 = 0; j0 < inner.extent; j0 += kTile) {
      const std::int64_t j1 = std::min(inner.extent, j0 + kTile);
      for (std::int64_t i = i0; i < i1; ++i) {
        W* dst = out + out_off + i * out_stride[c];
        const W* src = in + in_off + i;  // dimension c reads the input contiguously
        for (std::int64_t j = j0; j < j1; ++j) dst[j] = src[j * in_step];
      }
    }
  }
  return true;
}

// out[o...] = in[map(o...)] over the output box; W is the storage word (4 or 8 bytes).
template <class W>
void strided_copy(const W* in, W* out, std::vector<DimMap> maps, W fill, int threads) {
  if (maps.empty()) maps.push_back(DimMap{});  // a scalar: one element at offset 0
  const std::size_t r = maps.size();
  const DimMap inner = maps[r - 1];
  const std::int64_t cols = inner.extent;
  std::int64_t rows = 1;
  for (std::size_t d = 0; d + 1 < r; ++d) rows *= maps[d].extent;
  if (rows == 0 || cols == 0) return;
  // Valid output range [lo, hi) of the inner dimension when it reads input coordinates in
  // order (no repeat): outside it, the fill.
  std::int64_t lo = 0, hi = cols;
  const bool inner_affine = inner.modulo == 0;
  if (inner_affine && inner.in_extent >= 0) {
    // start + o*step in [0, in_extent) with step >= 1.
    lo = std::clamp<std::int64_t>(
        inner.start >= 0 ? 0 : (-inner.start + inner.step - 1) / inner.step, 0, cols);
    hi = inner.in_extent - inner.start <= 0
             ? lo
             : std::clamp<std::int64_t>((inner.in_extent - inner.start + inner.step - 1) /
                                            inner.step,
                                        lo, cols);
  }
  const bool parallel = rows > 1 && rows * cols * static_cast<std::int64_t>(sizeof(W)) >=
                                        kParallelBytes;
  if (transpose_tiles(in, out, maps, threads, parallel)) return;
#pragma omp parallel for num_threads(threads) schedule(static) if (parallel)
  for (std::int64_t row = 0; row < rows; ++row) {
    W* dst = out + row * cols;
    // Input offset of this row, or the fill when a padded coordinate falls outside.
    std::int64_t base = 0;
    bool valid = true;
    std::int64_t rest = row;
    for (std::size_t d = r - 1; d-- > 0;) {
      const DimMap& m = maps[d];
      std::int64_t o = rest % m.extent;
      rest /= m.extent;
      std::int64_t c = m.start + o * m.step;
      if (m.modulo > 0) c %= m.modulo;
      if (m.in_extent >= 0 && (c < 0 || c >= m.in_extent)) valid = false;
      base += c * m.in_stride;
    }
    if (!valid) {
      std::fill(dst, dst + cols, fill);
      continue;
    }
    const W* src = in + base;
    if (!inner_affine) {  // repeat: input coordinate o mod modulo
      for (std::int64_t o = 0; o < cols; ++o) dst[o] = src[(o % inner.modulo) * inner.in_stride];
      continue;
    }
    std::fill(dst, dst + lo, fill);
    std::fill(dst + hi, dst + cols, fill);
    if (lo == hi) continue;
    const W* s = src + (inner.start + lo * inner.step) * inner.in_stride;  // reads dst[lo]
    const std::int64_t stride = inner.step * inner.in_stride;
    if (stride == 1) {
      std::memcpy(dst + lo, s, static_cast<std::size_t>(hi - lo) * sizeof(W));
    } else if (stride == 0) {
      std::fill(dst + lo, dst + hi, s[0]);
    } else {
      for (std::int64_t o = lo; o < hi; ++o) dst[o] = s[(o - lo) * stride];
    }
  }
}

// Dispatches on the storage word size (f32: 4 bytes; f64 and i64: 8).
void strided_copy(const Buffer& in, Buffer& out, std::vector<DimMap> maps, double fill,
                  int threads) {
  switch (out.storage()) {
    case Storage::F32: {
      float f = static_cast<float>(fill);
      strided_copy(in.data<std::uint32_t>(), out.data<std::uint32_t>(), std::move(maps),
                   std::bit_cast<std::uint32_t>(f), threads);
      return;
    }
    case Storage::F64:
      strided_copy(in.data<std::uint64_t>(), out.data<std::uint64_t>(), std::move(maps),
                   std::bit_cast<std::uint64_t>(fill), threads);
      return;
    case Storage::I64:
      strided_copy(in.data<std::uint64_t>(), out.data<std::uint64_t>(), std::move(maps),
                   std::bit_cast<std::uint64_t>(static_cast<std::int64_t>(fill)), threads);
      return;
  }
}

std::size_t word(const Buffer& b) { return storage_bytes(b.storage()); }

void copy_words(const Buffer& in, Buffer& out, int threads) {
  const std::int64_t n = out.num_elements();
  const std::size_t w = word(out);
  const char* src = static_cast<const char*>(in.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  const std::int64_t bytes = n * static_cast<std::int64_t>(w);
  if (bytes < kParallelBytes || threads <= 1) {
    std::memcpy(dst, src, static_cast<std::size_t>(bytes));
    return;
  }
  const std::int64_t chunk = (bytes + threads - 1) / threads;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t) {
    std::int64_t b = t * chunk, e = std::min(bytes, b + chunk);
    if (b < e) std::memcpy(dst + b, src + b, static_cast<std::size_t>(e - b));
  }
}

// ---- per kind ------------------------------------------------------------------------------

// Broadcast (expand) and repeat: each output dimension reads input coordinate o mod size,
// aligned on the right; missing leading input dimensions are broadcast.
void run_tile(const Buffer& in, Buffer& out, int threads) {
  const auto& is = in.shape();
  const auto& os = out.shape();
  const std::size_t off = os.size() - is.size();
  std::vector<std::int64_t> strides = row_major_strides(is);
  std::vector<DimMap> maps(os.size());
  for (std::size_t d = 0; d < os.size(); ++d) {
    maps[d].extent = os[d];
    if (d < off || is[d - off] == 1) continue;  // broadcast: stride 0
    maps[d].in_stride = strides[d - off];
    if (is[d - off] != os[d]) maps[d].modulo = is[d - off];
  }
  strided_copy(in, out, std::move(maps), 0, threads);
}

void run_view_or_copy(const ir::MoveOp& m, const Buffer& in, Buffer& out, int threads) {
  if (in.dtype() != out.dtype()) {
    // A view as another dtype reinterprets the bytes (the verifier keeps the size in bits).
    need_shape(m.kind == MoveKind::View && in.raw_bytes() == out.raw_bytes(), m,
               "a change of dtype keeps the size in bits (view only)");
    std::vector<unsigned char> raw(in.raw_bytes());
    in.to_raw(raw.data());
    Buffer tmp = Buffer::from_raw(out.dtype(), out.shape(), raw.data());
    copy_words(tmp, out, threads);
    return;
  }
  if (in.num_elements() == out.num_elements()) {
    copy_words(in, out, threads);  // a row-major reshape
    return;
  }
  need_shape(tiles(in.shape(), out.shape()), m,
             fmt::format("output {} is neither a reshape, a broadcast nor a repeat of input {}",
                         shape_str(out.shape()), shape_str(in.shape())));
  run_tile(in, out, threads);
}

void run_permute(const ir::MoveOp& m, const Buffer& in, Buffer& out, int threads) {
  const std::vector<std::int64_t>& perm = need_list(m, "perm");
  const auto& is = in.shape();
  need_shape(perm.size() == is.size() && out.shape().size() == is.size(), m,
             "perm, input and output ranks differ");
  std::vector<std::int64_t> strides = row_major_strides(is);
  std::vector<DimMap> maps(perm.size());
  for (std::size_t d = 0; d < perm.size(); ++d) {
    need_shape(perm[d] >= 0 && static_cast<std::size_t>(perm[d]) < is.size() &&
                   out.shape()[d] == is[perm[d]],
               m, fmt::format("perm {} does not map input {} to output {}", shape_str(perm),
                              shape_str(is), shape_str(out.shape())));
    maps[d].extent = out.shape()[d];
    maps[d].in_stride = strides[perm[d]];
  }
  strided_copy(in, out, std::move(maps), 0, threads);
}

void run_slice(const ir::MoveOp& m, const Buffer& in, Buffer& out, int threads) {
  const std::vector<std::int64_t>& starts = need_list(m, "starts");
  const std::size_t r = in.shape().size();
  std::vector<std::int64_t> ones(r, 1);
  const std::vector<std::int64_t>* steps = find_int_list(m.attrs, "steps");
  if (!steps) steps = &ones;
  need_shape(starts.size() == r && steps->size() == r && out.shape().size() == r, m,
             "starts/steps and the input and output ranks differ");
  std::vector<std::int64_t> strides = row_major_strides(in.shape());
  std::vector<DimMap> maps(r);
  for (std::size_t d = 0; d < r; ++d) {
    std::int64_t last = starts[d] + (out.shape()[d] - 1) * (*steps)[d];
    need_shape((*steps)[d] >= 1 && starts[d] >= 0 &&
                   (out.shape()[d] == 0 || last < in.shape()[d]),
               m, fmt::format("dimension {} reads outside the input {}", d, shape_str(in.shape())));
    maps[d] = DimMap{out.shape()[d], strides[d], starts[d], (*steps)[d], 0, -1};
  }
  strided_copy(in, out, std::move(maps), 0, threads);
}

// The fill value of a pad in the output's representation: rounded to a narrow float dtype;
// an integer dtype needs an integral value.
double pad_value(const ir::MoveOp& m, ir::DType dtype) {
  const double v = ir::number_attr(m.attrs, "value", 0, "pad ");
  switch (storage_for(dtype)) {
    case Storage::F32: return round_to_dtype(dtype, static_cast<float>(v));
    case Storage::F64: return v;
    case Storage::I64:
      if (!(std::trunc(v) == v && std::fabs(v) < 0x1p63))
        throw UserError(UserError::Kind::InvalidGraph,
                        fmt::format("pad value {} cannot fill an integer tensor ({})", v,
                                    ir::dtype_name(dtype)));
      return static_cast<double>(wrap_to_dtype(dtype, static_cast<std::int64_t>(v)));
  }
  return v;
}

void run_pad(const ir::MoveOp& m, const Buffer& in, Buffer& out, int threads) {
  const std::vector<std::int64_t>& pads = need_list(m, "pads");
  const std::size_t r = in.shape().size();
  need_shape(pads.size() == 2 * r && out.shape().size() == r, m,
             "pads needs two entries per dimension and the output the input's rank");
  std::vector<std::int64_t> strides = row_major_strides(in.shape());
  std::vector<DimMap> maps(r);
  for (std::size_t d = 0; d < r; ++d) {
    need_shape(out.shape()[d] == in.shape()[d] + pads[2 * d] + pads[2 * d + 1], m,
               fmt::format("dimension {} does not match pads {}", d, shape_str(pads)));
    // Negative pads crop: the start moves into the input.
    maps[d] = DimMap{out.shape()[d], strides[d], -pads[2 * d], 1, 0, in.shape()[d]};
  }
  strided_copy(in, out, std::move(maps), pad_value(m, out.dtype()), threads);
}

void run_concat(const ir::MoveOp& m, std::span<const Buffer* const> inputs, Buffer& out,
                int threads) {
  const auto& os = out.shape();
  const std::int64_t axis = need_axis(m, os.size());
  const std::int64_t outer = product(os, 0, axis);
  const std::int64_t inner = product(os, axis + 1, os.size());
  const std::size_t w = word(out);
  const std::int64_t out_row = os[axis] * inner;
  std::int64_t offset = 0;  // along the axis, in elements of a row
  std::int64_t total = 0;
  for (const Buffer* in : inputs) {
    const auto& is = in->shape();
    bool ok = is.size() == os.size();
    for (std::size_t d = 0; ok && d < is.size(); ++d)
      ok = static_cast<std::int64_t>(d) == axis || is[d] == os[d];
    need_shape(ok && in->storage() == out.storage(), m,
               fmt::format("input {} does not fit output {} along axis {}", shape_str(is),
                           shape_str(os), axis));
    total += is[axis];
  }
  need_shape(total == os[axis], m, "the inputs do not add up to the output along the axis");
  for (const Buffer* in : inputs) {
    const std::int64_t chunk = in->shape()[axis] * inner;
    const char* src = static_cast<const char*>(in->raw_data());
    char* dst = static_cast<char*>(out.raw_data()) + offset * w;
    const bool parallel = outer > 1 && outer * chunk * static_cast<std::int64_t>(w) >= kParallelBytes;
#pragma omp parallel for num_threads(threads) schedule(static) if (parallel)
    for (std::int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + o * out_row * w, src + o * chunk * w, static_cast<std::size_t>(chunk) * w);
    offset += chunk;
  }
}

// ---- gather / scatter ----------------------------------------------------------------------

// Index values normalized to [0, size): negative values count from the end (as PyTorch's
// indexing does); anything outside [-size, size) is a UserError naming the value and where
// it sits in the index.
std::vector<std::int64_t> normalized_indices(const Buffer& index, std::int64_t size,
                                             const char* kind, std::int64_t axis) {
  const std::int64_t n = index.num_elements();
  const std::int64_t* v = index.data<std::int64_t>();
  std::vector<std::int64_t> out(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t x = v[i];
    if (x < -size || x >= size)
      throw UserError(UserError::Kind::BadArgument,
                      fmt::format("{} index value {} at position {} of the index {} is out of "
                                  "range for axis {} of size {} (valid: {} .. {})",
                                  kind, x, position_str(i, index.shape()),
                                  shape_str(index.shape()), axis, size, -size, size - 1));
    out[i] = x < 0 ? x + size : x;
  }
  return out;
}

bool take_mode(const ir::MoveOp& m, const char* fallback) {
  std::string mode = string_attr(m.attrs, "mode", fallback);
  if (mode != "take" && mode != "elements")
    throw UserError(UserError::Kind::InvalidGraph,
                    fmt::format("{} mode \"{}\": use \"take\" or \"elements\"",
                                ir::move_kind_name(m.kind), mode));
  return mode == "take";
}

std::vector<std::int64_t> taken_shape(const std::vector<std::int64_t>& data,
                                      const std::vector<std::int64_t>& index, std::int64_t axis) {
  std::vector<std::int64_t> s(data.begin(), data.begin() + axis);
  s.insert(s.end(), index.begin(), index.end());
  s.insert(s.end(), data.begin() + axis + 1, data.end());
  return s;
}

void check_elements_index(const ir::MoveOp& m, const std::vector<std::int64_t>& index,
                          const std::vector<std::int64_t>& data, std::int64_t axis) {
  bool ok = index.size() == data.size();
  for (std::size_t d = 0; ok && d < index.size(); ++d)
    ok = static_cast<std::int64_t>(d) == axis || index[d] <= data[d];
  need_shape(ok, m, fmt::format("index {} does not fit data {} outside axis {}",
                                shape_str(index), shape_str(data), axis));
}

// For each flat position of `shape`, the offset of the same coordinates in a tensor with
// `strides`, except along `axis` (left out: the index supplies it).
template <class F>
void for_each_position(const std::vector<std::int64_t>& shape,
                       const std::vector<std::int64_t>& strides, std::int64_t axis, F&& f) {
  const std::size_t r = shape.size();
  std::int64_t n = product(shape, 0, r);
  std::vector<std::int64_t> pos(r, 0);
  std::int64_t off = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    f(i, off, pos);
    for (std::size_t d = r; d-- > 0;) {  // odometer, keeping `off` in step
      const std::int64_t s = static_cast<std::int64_t>(d) == axis ? 0 : strides[d];
      if (++pos[d] < shape[d]) {
        off += s;
        break;
      }
      off -= s * (shape[d] - 1);
      pos[d] = 0;
    }
  }
}

void run_gather(const ir::MoveOp& m, const Buffer& data, const Buffer& index, Buffer& out,
                int threads) {
  const auto& ds = data.shape();
  const std::int64_t axis = need_axis(m, ds.size());
  const std::size_t w = word(data);
  need_shape(data.storage() == out.storage(), m, "the output must have the data's dtype");
  std::vector<std::int64_t> idx = normalized_indices(index, ds[axis], "gather", axis);
  if (take_mode(m, "take")) {
    need_shape(out.shape() == taken_shape(ds, index.shape(), axis), m,
               fmt::format("take output {} must be data[:axis] + index + data[axis+1:] "
                           "(data {}, index {}, axis {})",
                           shape_str(out.shape()), shape_str(ds), shape_str(index.shape()), axis));
    const std::int64_t outer = product(ds, 0, axis), inner = product(ds, axis + 1, ds.size());
    const std::int64_t n = ds[axis], k = static_cast<std::int64_t>(idx.size());
    const std::size_t row = static_cast<std::size_t>(inner) * w;
    const char* src = static_cast<const char*>(data.raw_data());
    char* dst = static_cast<char*>(out.raw_data());
    const bool parallel = outer * k * static_cast<std::int64_t>(row) >= kParallelBytes;
#pragma omp parallel for num_threads(threads) schedule(static) if (parallel)
    for (std::int64_t t = 0; t < outer * k; ++t) {
      const std::int64_t a = t / k, j = t % k;
      std::memcpy(dst + t * row, src + (a * n + idx[j]) * row, row);
    }
    return;
  }
  check_elements_index(m, index.shape(), ds, axis);
  need_shape(out.shape() == index.shape(), m, "an elements gather has its index's shape");
  std::vector<std::int64_t> strides = row_major_strides(ds);
  const std::int64_t along = strides[axis];
  auto gather = [&](auto* dst, const auto* src) {
    for_each_position(index.shape(), strides, axis,
                      [&](std::int64_t i, std::int64_t off, const std::vector<std::int64_t>&) {
                        dst[i] = src[off + idx[i] * along];
                      });
  };
  if (w == 4) {
    gather(out.data<std::uint32_t>(), data.data<std::uint32_t>());
  } else {
    gather(out.data<std::uint64_t>(), data.data<std::uint64_t>());
  }
}

enum class ScatterReduce { None, Sum, Prod, Max, Min, Mean };

ScatterReduce scatter_reduce(const ir::MoveOp& m) {
  std::string r = string_attr(m.attrs, "reduce", "none");
  if (r == "none") return ScatterReduce::None;
  if (r == "sum") return ScatterReduce::Sum;
  if (r == "prod") return ScatterReduce::Prod;
  if (r == "max") return ScatterReduce::Max;
  if (r == "min") return ScatterReduce::Min;
  if (r == "mean") return ScatterReduce::Mean;
  throw UserError(UserError::Kind::InvalidGraph,
                  fmt::format("scatter reduce \"{}\": use none, sum, prod, max, min or mean", r));
}

// One reduction step in the compute type T (float, double, or int64 with wrap-around).
template <class T>
T combine(ScatterReduce r, T acc, T v) {
  switch (r) {
    case ScatterReduce::None: return v;
    case ScatterReduce::Sum: case ScatterReduce::Mean:
      if constexpr (std::is_integral_v<T>) {
        return static_cast<T>(static_cast<std::uint64_t>(acc) + static_cast<std::uint64_t>(v));
      } else {
        return acc + v;
      }
    case ScatterReduce::Prod:
      if constexpr (std::is_integral_v<T>) {
        return static_cast<T>(static_cast<std::uint64_t>(acc) * static_cast<std::uint64_t>(v));
      } else {
        return acc * v;
      }
    case ScatterReduce::Max:
      if constexpr (!std::is_integral_v<T>) {
        if (std::isnan(acc) || std::isnan(v)) return std::numeric_limits<T>::quiet_NaN();
      }
      return std::max(acc, v);
    case ScatterReduce::Min:
      if constexpr (!std::is_integral_v<T>) {
        if (std::isnan(acc) || std::isnan(v)) return std::numeric_limits<T>::quiet_NaN();
      }
      return std::min(acc, v);
  }
  return v;
}

// out = data, then for each source element (in row-major order) out[target] op= src. With
// include_self = 0 a written position starts from its first source value instead of data.
template <class T>
void scatter_into(T* out, const T* src, const std::vector<std::int64_t>& targets,
                  const std::vector<std::int64_t>& src_offsets, std::int64_t out_size,
                  ScatterReduce r, bool include_self) {
  if (r == ScatterReduce::None) {
    for (std::size_t i = 0; i < targets.size(); ++i) out[targets[i]] = src[src_offsets[i]];
    return;
  }
  std::vector<std::int64_t> count;
  if (r == ScatterReduce::Mean || !include_self)
    count.assign(static_cast<std::size_t>(out_size), include_self ? 1 : 0);
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const std::int64_t t = targets[i];
    const T v = src[src_offsets[i]];
    if (!include_self && count[t] == 0) {
      out[t] = v;
    } else {
      out[t] = combine(r, out[t], v);
    }
    if (!count.empty()) ++count[t];
  }
  if (r != ScatterReduce::Mean) return;
  for (std::int64_t t = 0; t < out_size; ++t) {
    if (count[t] <= 1) continue;  // untouched (or only itself): unchanged
    if constexpr (std::is_integral_v<T>) {
      // PyTorch divides integer means with floor rounding.
      T q = out[t] / count[t];
      if ((out[t] % count[t] != 0) && ((out[t] < 0) != (count[t] < 0))) --q;
      out[t] = q;
    } else {
      out[t] = out[t] / static_cast<T>(count[t]);
    }
  }
}

void run_scatter(const ir::MoveOp& m, const Buffer& data, const Buffer& index,
                 const Buffer& src, Buffer& out, int threads) {
  const auto& ds = data.shape();
  const std::int64_t axis = need_axis(m, ds.size());
  need_shape(out.shape() == ds && data.storage() == out.storage() &&
                 src.storage() == out.storage(),
             m, "the output must have the data's shape and dtype, and the source its dtype");
  const ScatterReduce reduce = scatter_reduce(m);
  const bool include_self = int_attr(m.attrs, "include_self", 1) != 0;
  std::vector<std::int64_t> idx = normalized_indices(index, ds[axis], "scatter", axis);
  // Flat targets in the output and source offsets, in source order (which fixes the result
  // of repeated targets: the last write wins for reduce none).
  std::vector<std::int64_t> targets, src_offsets;
  const std::vector<std::int64_t> dstrides = row_major_strides(ds);
  if (take_mode(m, "elements")) {
    need_shape(src.shape() == taken_shape(ds, index.shape(), axis), m,
               fmt::format("take source {} must be data[:axis] + index + data[axis+1:] "
                           "(data {}, index {}, axis {})",
                           shape_str(src.shape()), shape_str(ds), shape_str(index.shape()),
                           axis));
    const std::int64_t outer = product(ds, 0, axis), inner = product(ds, axis + 1, ds.size());
    const std::int64_t n = ds[axis], k = static_cast<std::int64_t>(idx.size());
    targets.reserve(static_cast<std::size_t>(outer * k * inner));
    for (std::int64_t a = 0; a < outer; ++a)
      for (std::int64_t j = 0; j < k; ++j)
        for (std::int64_t b = 0; b < inner; ++b) targets.push_back((a * n + idx[j]) * inner + b);
    src_offsets.resize(targets.size());
    for (std::size_t i = 0; i < targets.size(); ++i) src_offsets[i] = static_cast<std::int64_t>(i);
  } else {
    check_elements_index(m, index.shape(), ds, axis);
    need_shape(src.shape().size() == ds.size(), m, "an elements scatter's source has the data's rank");
    for (std::size_t d = 0; d < ds.size(); ++d)
      need_shape(index.shape()[d] <= src.shape()[d], m,
                 fmt::format("index {} is larger than the source {}", shape_str(index.shape()),
                             shape_str(src.shape())));
    const std::vector<std::int64_t> sstrides = row_major_strides(src.shape());
    targets.resize(idx.size());
    src_offsets.resize(idx.size());
    for_each_position(index.shape(), dstrides, axis,
                      [&](std::int64_t i, std::int64_t off, const std::vector<std::int64_t>& pos) {
                        targets[i] = off + idx[i] * dstrides[axis];
                        std::int64_t s = 0;
                        for (std::size_t d = 0; d < pos.size(); ++d) s += pos[d] * sstrides[d];
                        src_offsets[i] = s;
                      });
  }
  copy_words(data, out, threads);
  const std::int64_t n = out.num_elements();
  switch (out.storage()) {
    case Storage::F32:
      scatter_into(out.data<float>(), src.data<float>(), targets, src_offsets, n, reduce,
                   include_self);
      // Sums and products leave f32; the output holds values of its own dtype.
      round_to_dtype(out.dtype(), std::span<float>(out.data<float>(), static_cast<std::size_t>(n)));
      return;
    case Storage::F64:
      scatter_into(out.data<double>(), src.data<double>(), targets, src_offsets, n, reduce,
                   include_self);
      return;
    case Storage::I64:
      scatter_into(out.data<std::int64_t>(), src.data<std::int64_t>(), targets, src_offsets, n,
                   reduce, include_self);
      wrap_to_dtype(out.dtype(),
                    std::span<std::int64_t>(out.data<std::int64_t>(), static_cast<std::size_t>(n)));
      return;
  }
}

// ---- cast ----------------------------------------------------------------------------------

// A float value stored into an integer dtype: truncated toward zero. Values the destination
// cannot hold (NaN, inf, out of its range) have no defined result in C++ or in the
// frameworks (x86 gives INT_MIN, ARM saturates), so they are refused rather than guessed.
std::int64_t float_to_int(double v, ir::DType to, std::int64_t i) {
  if (to == ir::DType::Bool) return v != 0 ? 1 : 0;  // NaN is nonzero: true
  double t = std::trunc(v);
  bool fits = std::isfinite(t) && t >= -0x1p63 && t < 0x1p63;
  if (fits) {
    auto x = static_cast<std::int64_t>(t);
    fits = wrap_to_dtype(to, x) == x;
  }
  if (!fits)
    throw UserError(UserError::Kind::BadArgument,
                    fmt::format("cast of {} (element {}) to {} is undefined: the value is not "
                                "finite or outside the range of {}",
                                v, i, ir::dtype_name(to), ir::dtype_name(to)));
  return static_cast<std::int64_t>(t);
}

void run_cast(const Buffer& in, Buffer& out, int threads) {
  const std::int64_t n = out.num_elements();
  const auto un = static_cast<std::size_t>(n);
  const bool parallel = n * 8 >= kParallelBytes;
  const ir::DType to = out.dtype();
  auto each = [&](auto f) {
#pragma omp parallel for num_threads(threads) schedule(static) if (parallel)
    for (std::int64_t i = 0; i < n; ++i) f(i);
  };
  switch (out.storage()) {
    case Storage::F32: {
      // In chunks, each converted and rounded by one thread while it is in cache.
      float* o = out.data<float>();
      constexpr std::int64_t kChunk = 1 << 14;
      const std::int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for num_threads(threads) schedule(static) if (parallel)
      for (std::int64_t k = 0; k < chunks; ++k) {
        const std::int64_t b = k * kChunk, e = std::min(n, b + kChunk);
        switch (in.storage()) {
          case Storage::F32: std::copy(in.data<float>() + b, in.data<float>() + e, o + b); break;
          case Storage::F64:
            for (std::int64_t i = b; i < e; ++i) o[i] = static_cast<float>(in.data<double>()[i]);
            break;
          case Storage::I64:
            for (std::int64_t i = b; i < e; ++i) o[i] = static_cast<float>(in.data<std::int64_t>()[i]);
            break;
        }
        round_to_dtype(to, std::span<float>(o + b, static_cast<std::size_t>(e - b)));
      }
      return;
    }
    case Storage::F64: {
      double* o = out.data<double>();
      switch (in.storage()) {
        case Storage::F32: { const float* x = in.data<float>(); each([&](std::int64_t i) { o[i] = x[i]; }); break; }
        case Storage::F64: { const double* x = in.data<double>(); each([&](std::int64_t i) { o[i] = x[i]; }); break; }
        case Storage::I64: { const std::int64_t* x = in.data<std::int64_t>(); each([&](std::int64_t i) { o[i] = static_cast<double>(x[i]); }); break; }
      }
      return;
    }
    case Storage::I64: {
      std::int64_t* o = out.data<std::int64_t>();
      switch (in.storage()) {
        case Storage::F32: case Storage::F64:
          // Sequential: the first undefined value throws (no exception may leave a team).
          for (std::int64_t i = 0; i < n; ++i) o[i] = float_to_int(in.value(i), to, i);
          return;
        case Storage::I64: {
          const std::int64_t* x = in.data<std::int64_t>();
          each([&](std::int64_t i) { o[i] = x[i]; });
          wrap_to_dtype(to, std::span<std::int64_t>(o, un));
          return;
        }
      }
    }
  }
}

std::string inputs_text(std::size_t n) { return n == 1 ? "1 input" : fmt::format("{} inputs", n); }

}  // namespace

void run_move(const ir::MoveOp& m, std::span<const Buffer* const> inputs, Buffer& output,
              const ExecContext& ctx) {
  std::size_t want = 1;
  switch (m.kind) {
    case MoveKind::View: case MoveKind::Copy: case MoveKind::Permute: case MoveKind::Slice:
    case MoveKind::Pad: case MoveKind::Cast:
      want = 1;
      break;
    case MoveKind::Concat: want = inputs.empty() ? 1 : inputs.size(); break;
    case MoveKind::Gather: want = 2; break;
    case MoveKind::Scatter: want = 3; break;
  }
  if (inputs.size() != want)
    throw UserError(UserError::Kind::InvalidGraph,
                    fmt::format("{} takes {}, got {}", ir::move_kind_name(m.kind),
                                inputs_text(want), inputs.size()));
  const Buffer& x = *inputs[0];
  if (m.kind != MoveKind::Cast && m.kind != MoveKind::View && m.kind != MoveKind::Concat)
    need_shape(x.dtype() == output.dtype(), m, "the output must keep the input's dtype");
  if (m.kind == MoveKind::Gather || m.kind == MoveKind::Scatter)
    need_shape(inputs[1]->storage() == Storage::I64, m, "the index must be an integer tensor");
  const int threads = thread_count(ctx);
  switch (m.kind) {
    case MoveKind::View: case MoveKind::Copy: run_view_or_copy(m, x, output, threads); return;
    case MoveKind::Permute: run_permute(m, x, output, threads); return;
    case MoveKind::Slice: run_slice(m, x, output, threads); return;
    case MoveKind::Concat: run_concat(m, inputs, output, threads); return;
    case MoveKind::Pad: run_pad(m, x, output, threads); return;
    case MoveKind::Gather: run_gather(m, x, *inputs[1], output, threads); return;
    case MoveKind::Scatter: run_scatter(m, x, *inputs[1], *inputs[2], output, threads); return;
    case MoveKind::Cast:
      need_shape(x.shape() == output.shape(), m, "a cast keeps the shape");
      run_cast(x, output, threads);
      return;
  }
}

}  // namespace solar::exec
