// XLA's general gather and scatter as executor kernels (semantics: opaque_gather.h). Both
// walk the batch (scatter) positions of the index tensor; per position they compute the
// window start once and then copy or combine the window with running offsets.
#include "opaque_gather.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "solar/ir/attrs.h"
#include "solar/ir/shape.h"
#include "solar/util/errors.h"

namespace solar::exec {
namespace {

using ir::numel;
using ir::Shape;
using ir::shape_str;

[[noreturn]] void fail(const ir::OpaqueOp& op, const std::string& what) {
  throw UserError(UserError::Kind::InvalidGraph,
                  fmt::format("opaque \"{}\": {}", op.function, what));
}

// Attribute reads whose errors name the op as fail() does.
std::string where(const ir::OpaqueOp& op) { return fmt::format("opaque \"{}\": ", op.function); }
Shape list_attr(const ir::OpaqueOp& op, const char* key) {
  return ir::int_list_attr(op.attrs, key, where(op));
}
std::string string_attr(const ir::OpaqueOp& op, const char* key, const char* fallback) {
  return ir::string_attr(op.attrs, key, fallback, where(op));
}
double number_attr(const ir::OpaqueOp& op, const char* key, double fallback) {
  return ir::number_attr(op.attrs, key, fallback, where(op));
}

bool contains(const Shape& v, std::int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Checks that every entry of `dims` is a distinct dimension in [0, rank).
void need_dims(const ir::OpaqueOp& op, const Shape& dims, std::size_t rank, const char* what) {
  for (std::size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] < 0 || dims[k] >= static_cast<std::int64_t>(rank))
      fail(op, fmt::format("{} holds dimension {} outside [0, {})", what, dims[k], rank));
    for (std::size_t j = 0; j < k; ++j)
      if (dims[j] == dims[k]) fail(op, fmt::format("{} repeats dimension {}", what, dims[k]));
  }
}

enum class Mode { Clip, Fill };  // promise_in_bounds clamps as clip does (XLA's behaviour)

Mode mode_of(const ir::OpaqueOp& op) {
  const std::string m = string_attr(op, "mode", "clip");
  if (m == "clip" || m == "promise_in_bounds") return Mode::Clip;
  if (m == "fill_or_drop") return Mode::Fill;
  fail(op, fmt::format("mode \"{}\" is not one of clip, promise_in_bounds, fill_or_drop", m));
}

// The positions of an index tensor (all dimensions but the trailing index vector), visited
// in row-major order with their coordinates.
struct IndexWalk {
  const ir::OpaqueOp& op;
  const Buffer& indices;
  std::size_t nb;       // batch dimensions
  std::int64_t width;   // index vector length

  IndexWalk(const ir::OpaqueOp& o, const Buffer& idx) : op(o), indices(idx) {
    if (idx.storage() != Storage::I64 || idx.dtype() == ir::DType::Bool)
      fail(op, fmt::format("indices need an integer dtype, not {}", ir::dtype_name(idx.dtype())));
    if (idx.shape().empty()) fail(op, "indices need a trailing index-vector dimension");
    nb = idx.shape().size() - 1;
    width = idx.shape().back();
  }
  Shape batch_shape() const { return Shape(indices.shape().begin(), indices.shape().end() - 1); }

  // The window start of position g (coordinates `coord`) in an operand of shape xs with
  // window extents `win`: index_map from the index vector, batching dimensions from the
  // coordinates. Returns false when the start is out of range and mode is Fill.
  bool start(std::int64_t g, const Shape& coord, const Shape& index_map, const Shape& obatch,
             const Shape& ibatch, const Shape& xs, const Shape& win, Mode mode,
             Shape& out) const {
    std::fill(out.begin(), out.end(), 0);
    const std::int64_t* iv = indices.data<std::int64_t>() + g * width;
    bool inside = true;
    for (std::size_t k = 0; k < index_map.size(); ++k) {
      const std::int64_t d = index_map[k];
      const std::int64_t hi = xs[d] - win[d];
      std::int64_t s = iv[k];
      if (s < 0 || s > hi) {
        inside = false;
        s = std::clamp<std::int64_t>(s, 0, std::max<std::int64_t>(hi, 0));
      }
      out[d] = s;
    }
    for (std::size_t i = 0; i < obatch.size(); ++i) out[obatch[i]] = coord[ibatch[i]];
    return inside || mode == Mode::Clip;
  }
};

// Advances row-major coordinates `c` of `shape`; the last dimension moves fastest.
void next(Shape& c, const Shape& shape) {
  for (std::size_t d = shape.size(); d-- > 0;) {
    if (++c[d] < shape[d]) return;
    c[d] = 0;
  }
}

}  // namespace

void run_xla_gather(const ir::OpaqueOp& op, std::span<const Buffer* const> inputs,
                    std::span<Buffer* const> outputs) {
  if (inputs.size() != 2 || outputs.size() != 1)
    fail(op, "takes (operand, indices) and has one output");
  const Buffer& x = *inputs[0];
  Buffer& out = *outputs[0];
  IndexWalk walk(op, *inputs[1]);
  const Shape xs = x.shape(), os = out.shape();
  const std::size_t R = xs.size();
  const Shape offset = list_attr(op, "offset_dims"),
              collapsed = list_attr(op, "collapsed_slice_dims"),
              smap = list_attr(op, "start_index_map"),
              obatch = list_attr(op, "operand_batching_dims"),
              ibatch = list_attr(op, "start_indices_batching_dims"),
              sizes = list_attr(op, "slice_sizes");
  const Mode mode = mode_of(op);
  if (out.dtype() != x.dtype())
    fail(op, fmt::format("output dtype {} differs from the operand's {}",
                         ir::dtype_name(out.dtype()), ir::dtype_name(x.dtype())));
  need_dims(op, offset, os.size(), "offset_dims");
  need_dims(op, collapsed, R, "collapsed_slice_dims");
  need_dims(op, smap, R, "start_index_map");
  need_dims(op, obatch, R, "operand_batching_dims");
  need_dims(op, ibatch, walk.nb, "start_indices_batching_dims");
  if (sizes.size() != R) fail(op, fmt::format("slice_sizes needs {} entries", R));
  if (static_cast<std::int64_t>(smap.size()) != walk.width)
    fail(op, fmt::format("the index vector has {} entries but start_index_map {}", walk.width,
                         smap.size()));
  if (obatch.size() != ibatch.size())
    fail(op, "operand_batching_dims and start_indices_batching_dims differ in length");
  Shape wdims;  // operand dimensions the offset dimensions walk
  for (std::size_t d = 0; d < R; ++d) {
    const auto dd = static_cast<std::int64_t>(d);
    if (sizes[d] < 0 || sizes[d] > xs[d])
      fail(op, fmt::format("slice size {} of dimension {} exceeds the operand {}", sizes[d], d,
                           shape_str(xs)));
    if (contains(collapsed, dd) || contains(obatch, dd)) {
      if (sizes[d] != 1)
        fail(op, fmt::format("collapsed or batching dimension {} needs slice size 1", d));
    } else {
      wdims.push_back(dd);
    }
  }
  if (wdims.size() != offset.size() || os.size() != walk.nb + offset.size())
    fail(op, fmt::format("output {} does not have {} batch and {} offset dimensions", shape_str(os),
                         walk.nb, wdims.size()));
  Shape bdims;  // output dimensions of the batch positions
  for (std::size_t d = 0; d < os.size(); ++d)
    if (!contains(offset, static_cast<std::int64_t>(d)))
      bdims.push_back(static_cast<std::int64_t>(d));
  const Shape bshape = walk.batch_shape();
  for (std::size_t j = 0; j < walk.nb; ++j)
    if (os[bdims[j]] != bshape[j])
      fail(op, fmt::format("output {} does not match the index batch {}", shape_str(os),
                           shape_str(bshape)));
  Shape win(R, 1), wshape;
  for (std::size_t k = 0; k < wdims.size(); ++k) {
    win[wdims[k]] = sizes[wdims[k]];
    wshape.push_back(sizes[wdims[k]]);
    if (os[offset[k]] != sizes[wdims[k]])
      fail(op, fmt::format("output dimension {} has extent {} but the slice {}", offset[k],
                           os[offset[k]], sizes[wdims[k]]));
  }
  const Shape xst = ir::row_major_strides(xs), ost = ir::row_major_strides(os);
  const std::int64_t nbatch = numel(bshape), nwin = numel(wshape);
  const double fill = number_attr(op, "fill_value", std::numeric_limits<double>::quiet_NaN());
  if (mode == Mode::Fill && x.storage() == Storage::I64 && !std::isfinite(fill))
    fail(op, "an integer gather with mode fill_or_drop needs a finite fill_value");
  with_type(x.storage(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    T* o = out.data<T>();
    Shape coord(walk.nb, 0), start(R, 0), w(wshape.size(), 0);
    for (std::int64_t g = 0; g < nbatch; ++g, next(coord, bshape)) {
      const bool live = walk.start(g, coord, smap, obatch, ibatch, xs, win, mode, start);
      std::int64_t obase = 0, ibase = 0;
      for (std::size_t j = 0; j < walk.nb; ++j) obase += coord[j] * ost[bdims[j]];
      for (std::size_t d = 0; d < R; ++d) ibase += start[d] * xst[d];
      std::fill(w.begin(), w.end(), 0);
      for (std::int64_t e = 0; e < nwin; ++e, next(w, wshape)) {
        std::int64_t oo = obase, io = ibase;
        for (std::size_t k = 0; k < w.size(); ++k) {
          oo += w[k] * ost[offset[k]];
          io += w[k] * xst[wdims[k]];
        }
        o[oo] = live ? in[io] : static_cast<T>(fill);
      }
    }
  });
  bring_to_dtype(out);
}

void run_xla_scatter(const ir::OpaqueOp& op, std::span<const Buffer* const> inputs,
                     std::span<Buffer* const> outputs) {
  if (inputs.size() != 3 || outputs.size() != 1)
    fail(op, "takes (operand, indices, updates) and has one output");
  const Buffer& x = *inputs[0];
  const Buffer& u = *inputs[2];
  Buffer& out = *outputs[0];
  IndexWalk walk(op, *inputs[1]);
  const Shape xs = x.shape(), us = u.shape();
  const std::size_t R = xs.size();
  const Shape uwin = list_attr(op, "update_window_dims"),
              inserted = list_attr(op, "inserted_window_dims"),
              smap = list_attr(op, "scatter_dims_to_operand_dims"),
              obatch = list_attr(op, "operand_batching_dims"),
              ibatch = list_attr(op, "scatter_indices_batching_dims");
  // XLA clamps a scatter's start only when JAX asks for "clip" (it clamps the indices
  // itself); otherwise a window that does not fit is skipped.
  const Mode mode = string_attr(op, "mode", "fill_or_drop") == "clip" ? Mode::Clip : Mode::Fill;
  mode_of(op);  // rejects an unknown mode
  const std::string combine = string_attr(op, "combine", "none");
  if (combine != "none" && combine != "sum" && combine != "prod" && combine != "min" &&
      combine != "max")
    fail(op, fmt::format("combine \"{}\" is not one of none, sum, prod, min, max", combine));
  if (out.dtype() != x.dtype() || out.shape() != xs || u.dtype() != x.dtype())
    fail(op, "the output and the updates need the operand's dtype (and the output its shape)");
  need_dims(op, uwin, us.size(), "update_window_dims");
  need_dims(op, inserted, R, "inserted_window_dims");
  need_dims(op, smap, R, "scatter_dims_to_operand_dims");
  need_dims(op, obatch, R, "operand_batching_dims");
  need_dims(op, ibatch, walk.nb, "scatter_indices_batching_dims");
  if (static_cast<std::int64_t>(smap.size()) != walk.width)
    fail(op, fmt::format("the index vector has {} entries but scatter_dims_to_operand_dims {}",
                         walk.width, smap.size()));
  if (obatch.size() != ibatch.size())
    fail(op, "operand_batching_dims and scatter_indices_batching_dims differ in length");
  Shape wdims;
  for (std::size_t d = 0; d < R; ++d) {
    const auto dd = static_cast<std::int64_t>(d);
    if (!contains(inserted, dd) && !contains(obatch, dd)) wdims.push_back(dd);
  }
  if (wdims.size() != uwin.size() || us.size() != walk.nb + uwin.size())
    fail(op, fmt::format("updates {} do not have {} scatter and {} window dimensions",
                         shape_str(us), walk.nb, wdims.size()));
  Shape sdims;  // update dimensions of the scatter positions
  for (std::size_t d = 0; d < us.size(); ++d)
    if (!contains(uwin, static_cast<std::int64_t>(d)))
      sdims.push_back(static_cast<std::int64_t>(d));
  const Shape bshape = walk.batch_shape();
  for (std::size_t j = 0; j < walk.nb; ++j)
    if (us[sdims[j]] != bshape[j])
      fail(op, fmt::format("updates {} do not match the index batch {}", shape_str(us),
                           shape_str(bshape)));
  Shape win(R, 1), wshape;
  for (std::size_t k = 0; k < wdims.size(); ++k) {
    win[wdims[k]] = us[uwin[k]];
    wshape.push_back(us[uwin[k]]);
    if (us[uwin[k]] > xs[wdims[k]])
      fail(op, fmt::format("update window dimension {} ({}) exceeds operand dimension {} ({})",
                           uwin[k], us[uwin[k]], wdims[k], xs[wdims[k]]));
  }
  const Shape xst = ir::row_major_strides(xs), ust = ir::row_major_strides(us);
  const std::int64_t nbatch = numel(bshape), nwin = numel(wshape);
  with_type(x.storage(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    const T* up = u.data<T>();
    T* o = out.data<T>();
    std::copy(in, in + x.num_elements(), o);
    auto apply = [&](T& dst, T v) {
      if (combine == "none") {
        dst = v;
      } else if (combine == "sum") {
        if constexpr (std::is_integral_v<T>)
          dst = static_cast<T>(static_cast<std::uint64_t>(dst) + static_cast<std::uint64_t>(v));
        else
          dst += v;
      } else if (combine == "prod") {
        if constexpr (std::is_integral_v<T>)
          dst = static_cast<T>(static_cast<std::uint64_t>(dst) * static_cast<std::uint64_t>(v));
        else
          dst *= v;
      } else {
        // lax.max/min propagate NaN.
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(dst) || std::isnan(v)) {
            dst = std::numeric_limits<T>::quiet_NaN();
            return;
          }
        }
        dst = combine == "max" ? std::max(dst, v) : std::min(dst, v);
      }
    };
    Shape coord(walk.nb, 0), start(R, 0), w(wshape.size(), 0);
    for (std::int64_t g = 0; g < nbatch; ++g, next(coord, bshape)) {
      if (!walk.start(g, coord, smap, obatch, ibatch, xs, win, mode, start)) continue;
      std::int64_t ubase = 0, obase = 0;
      for (std::size_t j = 0; j < walk.nb; ++j) ubase += coord[j] * ust[sdims[j]];
      for (std::size_t d = 0; d < R; ++d) obase += start[d] * xst[d];
      std::fill(w.begin(), w.end(), 0);
      for (std::int64_t e = 0; e < nwin; ++e, next(w, wshape)) {
        std::int64_t uo = ubase, oo = obase;
        for (std::size_t k = 0; k < w.size(); ++k) {
          uo += w[k] * ust[uwin[k]];
          oo += w[k] * xst[wdims[k]];
        }
        apply(o[oo], up[uo]);
      }
    }
  });
  bring_to_dtype(out);
}

}  // namespace solar::exec
