// The aten table's data movement: views and strided aliases (view, reshape, transpose,
// permute, as_strided...), slices and splits (and the gradients of slice and select), copies
// and casts, cat/stack, flip, roll, triangles, diag_embed and pixel_shuffle.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "context.h"
#include "families.h"
#include "solar/util/errors.h"

namespace solar::lower::detail {

namespace {

// torch's view rule (ATen's computeStride): the strides that view a tensor of (old_shape,
// old_strides) as `shape` without a copy, or nullopt when no such view exists.
std::optional<std::vector<std::int64_t>> view_strides(const std::vector<std::int64_t>& old_shape,
                                                      const std::vector<std::int64_t>& old_strides,
                                                      const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> st(shape.size(), 1);
  if (old_shape.empty()) return st;
  if (numel(old_shape) == 0) return std::nullopt;
  auto view_d = static_cast<std::int64_t>(shape.size()) - 1;
  std::int64_t chunk = old_strides.back(), tensor_n = 1, view_n = 1;
  for (auto d = static_cast<std::int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    tensor_n *= old_shape[d];
    if (d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != tensor_n * chunk)) {
      while (view_d >= 0 && (view_n < tensor_n || shape[view_d] == 1)) {
        st[view_d] = view_n * chunk;
        view_n *= shape[view_d];
        --view_d;
      }
      if (view_n != tensor_n) return std::nullopt;
      if (d > 0) {
        chunk = old_strides[d - 1];
        tensor_n = 1;
        view_n = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return st;
}

// A view (view, reshape, expand, squeeze...): free. Of a plain tensor, a row-major reshape or
// broadcast move; of a strided alias, another alias.
void lower_view(Context& c) {
  std::int64_t x = c.trace_id("self");
  TensorId in = c.use(x);
  if (c.is_alias(in)) return alias_view(c, in, x);
  TensorId out = c.def(0);
  std::int64_t a = numel(c.t(in).shape), b = numel(c.t(out).shape);
  if (a != b && a != 1) {
    const auto& is = c.t(in).shape;
    const auto& os = c.t(out).shape;
    bool bcast = is.size() <= os.size();
    for (std::size_t d = 0; bcast && d < is.size(); ++d) {
      std::int64_t o = os[d + os.size() - is.size()];
      bcast = is[d] == o || is[d] == 1;
    }
    if (!bcast) throw Unsupported("a view that is neither a reshape nor a broadcast");
  }
  c.move(MoveKind::View, {in}, out);
}

// Permuting views (t, transpose, permute, numpy_T, mT...): a strided alias whose strides are
// the input's, permuted. `perm[d]`: the input dimension that output dimension d reads.
void permuted_view(Context& c, const std::vector<std::int64_t>& perm) {
  std::int64_t x = c.trace_id("self");
  TensorId in = c.use(x);
  Context::Strided s = c.layout(in, x);
  std::vector<std::int64_t> st;
  for (std::int64_t p : perm) st.push_back(s.strides.at(static_cast<std::size_t>(p)));
  s.strides = st;
  c.alias_output(0, in, std::move(s));
}

std::vector<std::int64_t> identity_perm(std::size_t r) {
  std::vector<std::int64_t> p(r);
  for (std::size_t d = 0; d < r; ++d) p[d] = static_cast<std::int64_t>(d);
  return p;
}

void lower_transpose(Context& c) {
  const std::size_t r = c.shape(c.trace_id("self")).size();
  std::vector<std::int64_t> p = identity_perm(r);
  if (r >= 2) std::swap(p[norm_dim(c.int_arg("dim0", 0), r)], p[norm_dim(c.int_arg("dim1", 1), r)]);
  permuted_view(c, p);
}

void lower_t(Context& c) {
  const std::size_t r = c.shape(c.trace_id("self")).size();
  std::vector<std::int64_t> p = identity_perm(r);
  if (r == 2) std::swap(p[0], p[1]);
  permuted_view(c, p);
}

void lower_permute(Context& c) {
  const std::size_t r = c.shape(c.trace_id("self")).size();
  std::vector<std::int64_t> p = c.ints("dims");
  if (p.size() != r) throw Unsupported("permute with a wrong number of dimensions");
  for (std::int64_t& d : p) d = norm_dim(d, r);
  permuted_view(c, p);
}

void lower_reverse_dims(Context& c) {  // numpy_T
  std::vector<std::int64_t> p = identity_perm(c.shape(c.trace_id("self")).size());
  std::reverse(p.begin(), p.end());
  permuted_view(c, p);
}

void lower_last_two_swapped(Context& c) {  // mT, mH of a real tensor
  const std::size_t r = c.shape(c.trace_id("self")).size();
  if (r < 2) throw Unsupported("mT of a tensor of rank < 2");
  std::vector<std::int64_t> p = identity_perm(r);
  std::swap(p[r - 1], p[r - 2]);
  permuted_view(c, p);
}

// unfold(dimension, size, step): windows along one dimension as a new last dimension.
void lower_unfold(Context& c) {
  std::int64_t x = c.trace_id("self");
  TensorId in = c.use(x);
  Context::Strided s = c.layout(in, x);
  const std::size_t r = c.t(in).shape.size();
  std::int64_t d = norm_dim(c.int_arg("dimension", 0), r);
  std::int64_t step = c.int_arg("step", 1);
  if (step < 1) throw Unsupported("unfold with a step below 1");
  std::int64_t st = r == 0 ? 1 : s.strides[d];
  if (r > 0) s.strides[d] = st * step;
  s.strides.push_back(st);
  c.alias_output(0, in, std::move(s));
}

// diagonal(offset, dim1, dim2): the two dimensions replaced by one diagonal at the end.
void lower_diagonal(Context& c) {
  std::int64_t x = c.trace_id("self");
  TensorId in = c.use(x);
  Context::Strided s = c.layout(in, x);
  const std::size_t r = c.t(in).shape.size();
  std::int64_t d1 = norm_dim(c.int_arg("dim1", 0), r), d2 = norm_dim(c.int_arg("dim2", 1), r);
  if (d1 == d2) throw Unsupported("diagonal over one dimension twice");
  std::int64_t off = c.int_arg("offset", 0);
  s.offset += off >= 0 ? off * s.strides[d2] : -off * s.strides[d1];
  std::vector<std::int64_t> st;
  for (std::size_t d = 0; d < r; ++d)
    if (static_cast<std::int64_t>(d) != d1 && static_cast<std::int64_t>(d) != d2) st.push_back(s.strides[d]);
  st.push_back(s.strides[d1] + s.strides[d2]);
  s.strides = st;
  c.alias_output(0, in, std::move(s));
}

// as_strided(size, stride, storage_offset) (and in-place as_strided_): strides and offset
// are in storage elements, so the viewed tensor must be contiguous in the trace (or an alias
// over such a tensor).
void lower_as_strided(Context& c) {
  std::int64_t x = c.trace_id("self");
  TensorId in = c.use(x);
  const TraceTensor& xt = c.tt(x);
  if (!c.is_alias(in) && !xt.strides.empty()) {
    std::int64_t want = 1;
    for (std::size_t d = xt.shape.size(); d-- > 0;) {
      if (xt.shape[d] != 1 && xt.strides[d] != want)
        throw Unsupported("as_strided of a tensor that is not contiguous in memory");
      want *= xt.shape[d];
    }
  }
  Context::Strided s = c.layout(in, x);
  std::int64_t storage_offset = c.has("storage_offset") ? c.int_arg("storage_offset", 0) : xt.storage_offset;
  s.strides = c.ints("stride");
  s.offset = storage_offset - s.root_offset;
  if (s.strides.size() != c.tt(*c.out_id(0)).shape.size()) throw Unsupported("as_strided rank mismatch");
  c.alias_output(0, in, std::move(s));
}

// as_strided_scatter(self, src, size, stride, storage_offset): self with the elements of
// self.as_strided(size, stride, storage_offset) (offsets relative to self's first element,
// self seen row-major, as torch's functional form clones it) replaced by src. The capture
// records it for a write through one view that another view must see (capture.py, _Trace).
// Graph: the offsets (an opaque "strided_offsets"), then a scatter into self flattened.
void lower_as_strided_scatter(Context& c) {
  TensorId self = c.use_arg("self");
  TensorId src = c.use_arg("src");
  const auto size = c.ints("size"), stride = c.ints("stride");
  const std::int64_t offset = c.int_arg("storage_offset", 0);
  const ir::Tensor& st = c.t(self);
  const std::int64_t n = numel(st.shape), m = numel(size);
  if (stride.size() != size.size() || c.t(src).shape != size)
    throw Unsupported("as_strided_scatter: src's shape differs from size, or stride's rank");
  if (m == 0) {  // nothing scattered: self as it is
    c.elementwise({self}, c.def(0), arg(0));
    return;
  }
  std::int64_t lo = offset, hi = offset;
  for (std::size_t d = 0; d < size.size(); ++d)
    (stride[d] < 0 ? lo : hi) += (size[d] - 1) * stride[d];
  if (lo < 0 || hi >= n)
    throw Unsupported(fmt::format("as_strided_scatter reaches elements [{}, {}] outside the {} "
                                  "of self", lo, hi, n));
  const ir::DType dt = st.dtype;
  if (c.t(src).dtype != dt) {
    TensorId cast = c.temp("src_cast", size, dt);
    c.move(MoveKind::Cast, {src}, cast);
    src = cast;
  }
  TensorId offsets = c.temp("offsets", size, ir::DType::I64);
  ir::OpaqueOp o;
  o.function = "strided_offsets";
  o.vector_flops = Count(m);
  o.special_ops = Count(0);
  o.bytes = c.t(offsets).size_bytes();
  o.assumption = "one multiply-add per written element (offset + sum_d j_d*stride_d); writes "
                 "the offsets once";
  o.attrs = {{"strides", stride}, {"offset", offset}};
  c.opaque({}, {offsets}, std::move(o));
  TensorId flat_self = c.temp("flat", {n}, dt), flat_src = c.temp("flat_src", {m}, dt),
           flat_idx = c.temp("flat_offsets", {m}, ir::DType::I64),
           out_flat = c.temp("scattered", {n}, dt);
  c.move(MoveKind::View, {self}, flat_self);
  c.move(MoveKind::View, {src}, flat_src);
  c.move(MoveKind::View, {offsets}, flat_idx);
  c.move(MoveKind::Scatter, {flat_self, flat_idx, flat_src}, out_flat,
         {{"axis", std::int64_t{0}}, {"mode", std::string("elements")},
          {"reduce", std::string("none")}});
  c.move(MoveKind::View, {out_flat}, c.def(0));
}

// A slice (or, with `drop`, a select) of a strided alias: output k is another alias.
void alias_slice(Context& c, TensorId in, std::int64_t x, std::size_t k, std::int64_t dim,
                 std::int64_t start, std::int64_t end, std::int64_t step, bool drop) {
  Context::Strided s = c.layout(in, x);
  std::int64_t size = c.t(in).shape[dim];
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<std::int64_t>(start, 0, size);
  (void)end;
  s.offset += start * s.strides[dim];
  if (drop) s.strides.erase(s.strides.begin() + dim);
  else s.strides[dim] *= step;
  c.alias_output(k, in, std::move(s));
}

void lower_slice(Context& c) {
  std::int64_t x = c.trace_id("self");
  std::int64_t dim = norm_dim(c.int_arg("dim", 0), c.shape(x).size());
  std::int64_t big = std::numeric_limits<std::int64_t>::max();
  TensorId in = c.use(x);
  if (c.is_alias(in))
    return alias_slice(c, in, x, 0, dim, c.int_arg("start", 0), c.int_arg("end", big),
                       c.int_arg("step", 1), false);
  slice_into(c, in, c.def(0), dim, c.int_arg("start", 0), c.int_arg("end", big),
             c.int_arg("step", 1));
}

void lower_select(Context& c) {
  std::int64_t x = c.trace_id("self");
  const auto shape = c.shape(x);
  std::int64_t dim = norm_dim(c.int_arg("dim", 0), shape.size());
  std::int64_t i = c.int_arg("index", 0);
  if (i < 0) i += shape[dim];
  TensorId in = c.use(x);
  if (c.is_alias(in)) return alias_slice(c, in, x, 0, dim, i, i + 1, 1, true);
  std::vector<std::int64_t> one = shape;
  one[dim] = 1;
  TensorId s = c.temp("slice", one, c.t(in).dtype);
  slice_into(c, in, s, dim, i, i + 1, 1);
  c.move(MoveKind::View, {s}, c.def(0));
}

// split / split_with_sizes / unbind / chunk: one slice (and view for unbind) per output.
void lower_split(Context& c, bool unbind) {
  std::int64_t x = c.trace_id("self");
  const auto shape = c.shape(x);
  std::int64_t dim = norm_dim(c.int_arg("dim", 0), shape.size());
  TensorId in = c.use(x);
  const bool alias = c.is_alias(in);
  std::int64_t at = 0;
  for (std::size_t k = 0; k < c.op().outputs.size(); ++k) {
    if (!c.out_id(k)) continue;
    const auto& os = c.tt(*c.out_id(k)).shape;
    std::int64_t len = unbind ? 1 : os[dim];
    if (alias) {
      alias_slice(c, in, x, k, dim, at, at + len, 1, unbind);
    } else if (unbind) {
      std::vector<std::int64_t> one = shape;
      one[dim] = 1;
      TensorId s = c.temp("slice", one, c.t(in).dtype);
      slice_into(c, in, s, dim, at, at + 1, 1);
      c.move(MoveKind::View, {s}, c.def(k));
    } else {
      slice_into(c, in, c.def(k), dim, at, at + len, 1);
    }
    at += len;
  }
}

// clone / _to_copy / copy_: a copy, or a cast when the dtype changes.
void lower_copy(Context& c, const char* src) {
  TensorId in = c.use_arg(src);
  TensorId out = c.def(0);
  bool cast = c.t(in).dtype != c.t(out).dtype;
  if (cast && c.t(in).shape != c.t(out).shape) throw Unsupported("a broadcasting copy that casts");
  c.move(cast ? MoveKind::Cast : MoveKind::Copy, {in}, out);
}

void lower_cat(Context& c) {
  std::vector<TensorId> ins;
  for (std::int64_t id : c.trace_ids("tensors"))
    if (numel(c.shape(id)) != 0 || c.shape(id).size() != 1) ins.push_back(c.use(id));  // legacy [0]
  TensorId out = c.def(0);
  std::int64_t dim = norm_dim(c.int_arg("dim", 0), c.t(out).shape.size());
  c.move(MoveKind::Concat, ins, out, {{"axis", dim}});
}

// stack: each input viewed with a new size-1 axis, then concatenated along it.
void lower_stack(Context& c) {
  std::vector<TensorId> ins;
  TensorId out = c.def(0);
  const auto os = c.t(out).shape;
  std::int64_t dim = norm_dim(c.int_arg("dim", 0), os.size());
  for (std::int64_t id : c.trace_ids("tensors")) {
    TensorId x = c.use(id);
    std::vector<std::int64_t> shape = c.t(x).shape;
    shape.insert(shape.begin() + dim, 1);
    TensorId v = c.temp("unsqueezed", shape, c.t(x).dtype);
    c.move(MoveKind::View, {x}, v);
    ins.push_back(v);
  }
  c.move(MoveKind::Concat, ins, out, {{"axis", dim}});
}

// flip: a copy that reads each flipped dimension backwards (subscript L-1-i).
void lower_flip(Context& c) {
  TensorId in = c.use_arg("self");
  TensorId out = c.def(0);
  const auto shape = c.t(in).shape;
  std::vector<bool> flipped(shape.size(), false);
  for (std::int64_t d : c.ints("dims")) flipped[norm_dim(d, shape.size())] = true;
  flip(c, in, out, flipped);
}

// roll: out[i] = in[(i - shift) mod L] per rolled dimension. With a two-valued index u per
// dimension, out[i] = sum_u in[i - shift + L*u] masked to the one u whose read lands inside
// [0, L): one live point per output element, so the op reads and writes each element once
// and does no arithmetic. Without dims, the flattened tensor is rolled.
void lower_roll(Context& c) {
  TensorId in = c.use_arg("self");
  TensorId out = c.def(0);
  std::vector<std::int64_t> shifts = c.ints("shifts"), dims = c.ints("dims");
  std::vector<std::int64_t> shape = c.t(in).shape;
  TensorId src = in, dst = out;
  if (dims.empty()) {
    if (shifts.size() != 1) throw Unsupported("roll without dims takes one shift");
    shape = {numel(shape)};
    src = c.temp("flat", shape, c.t(in).dtype);
    c.move(MoveKind::View, {in}, src);
    dst = c.temp("rolled", shape, c.t(out).dtype);
    dims = {0};
  }
  if (shifts.size() != dims.size()) throw Unsupported("roll with unequal shifts and dims");
  std::vector<std::int64_t> shift(shape.size(), 0);
  for (std::size_t k = 0; k < dims.size(); ++k) {
    std::int64_t d = norm_dim(dims[k], shape.size());
    if (shape[d] == 0) continue;  // nothing to roll
    shift[d] = ((shift[d] + shifts[k]) % shape[d] + shape[d]) % shape[d];
  }
  Space s;
  std::vector<AffineExpr> si, so;
  std::vector<ir::AffineConstraint> mask;
  std::vector<ir::IndexPos> is;
  for (std::size_t d = 0; d < shape.size(); ++d) is.push_back(s.add(fmt::format("i{}", d), shape[d]));
  bool padded = false;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    so.push_back(ix(is[d]));
    if (shift[d] == 0) {
      si.push_back(ix(is[d]));
      continue;
    }
    padded = true;
    ir::IndexPos u = s.add(fmt::format("u{}", d), 2);
    AffineExpr read = AffineExpr::make({AffineTerm{is[d], 1}, AffineTerm{u, shape[d]}}, -shift[d]);
    si.push_back(read);
    mask.push_back({read});
    mask.push_back({AffineExpr::make({AffineTerm{is[d], -1}, AffineTerm{u, -shape[d]}},
                                     shape[d] - 1 + shift[d])});
  }
  c.einsum({src}, dst, std::move(s), {si}, so, arg(0), padded ? Reduce::Sum : Reduce::None, mask,
           {padded ? std::optional<double>(0.0) : std::nullopt});
  if (dst != out) c.move(MoveKind::View, {dst}, out);
}

// triu/tril: a masked elementwise copy over the last two dimensions; the masked-out
// points hold 0, the identity of reduce none.
Fn triangle(bool upper) {
  return [=](Context& c) {
    TensorId in = c.use_arg("self");
    TensorId out = c.def(0);
    const std::size_t r = c.t(out).shape.size();
    if (r < 2) throw Unsupported("triu/tril of a rank < 2 tensor");
    std::int64_t k = c.int_arg("diagonal", 0);
    auto row = static_cast<ir::IndexPos>(r - 2), col = static_cast<ir::IndexPos>(r - 1);
    // upper: col - row - k >= 0; lower: row - col + k >= 0
    AffineExpr e = upper ? AffineExpr::make({AffineTerm{col, 1}, AffineTerm{row, -1}}, -k)
                         : AffineExpr::make({AffineTerm{row, 1}, AffineTerm{col, -1}}, k);
    c.elementwise({in}, out, arg(0), {{e}});
  };
}

// diag_embed(x, offset, dim1, dim2): x's last dimension on a diagonal of two new dimensions,
// a masked copy (off-diagonal points hold 0).
void lower_diag_embed(Context& c) {
  TensorId in = c.use_arg("self");
  TensorId out = c.def(0);
  const auto os = c.t(out).shape;
  const std::size_t r = os.size();
  std::int64_t d1 = norm_dim(c.int_arg("dim1", -2), r), d2 = norm_dim(c.int_arg("dim2", -1), r);
  std::int64_t off = c.int_arg("offset", 0);
  if (d1 == d2) throw Unsupported("diag_embed over one dimension twice");
  if (d1 > d2) std::swap(d1, d2), off = -off;
  Space s;
  std::vector<AffineExpr> so, si;
  std::vector<ir::IndexPos> idx;
  for (std::size_t d = 0; d < r; ++d) {
    idx.push_back(s.add(fmt::format("i{}", d), os[d]));
    so.push_back(ix(idx.back()));
  }
  for (std::size_t d = 0; d < r; ++d)
    if (static_cast<std::int64_t>(d) != d1 && static_cast<std::int64_t>(d) != d2) si.push_back(ix(idx[d]));
  // the diagonal's position along x's last dimension: i1 when off >= 0 (i2 = i1 + off),
  // else i2; written through the other index (i2 - off, i1 + off) so that a nonzero offset
  // is an affine read, the diagonal's length being the output's minus |off|
  si.push_back(off >= 0 ? AffineExpr::make({AffineTerm{idx[d2], 1}}, -off)
                        : AffineExpr::make({AffineTerm{idx[d1], 1}}, off));
  AffineExpr e = AffineExpr::make({AffineTerm{idx[d2], 1}, AffineTerm{idx[d1], -1}}, -off);
  AffineExpr ne = AffineExpr::make({AffineTerm{idx[d2], -1}, AffineTerm{idx[d1], 1}}, off);
  c.einsum({in}, out, std::move(s), {si}, so, arg(0), Reduce::None, {{e}, {ne}}, {0.0});
}

// pixel_shuffle(r): out[.., c, h*r+i, w*r+j] = in[.., c*r*r + i*r + j, h, w] (a copy);
// pixel_unshuffle is its inverse.
void lower_pixel_shuffle(Context& c, bool shuffle) {
  TensorId in = c.use_arg("self");
  TensorId out = c.def(0);
  const std::int64_t f = c.int_arg(shuffle ? "upscale_factor" : "downscale_factor", 1);
  const auto big = shuffle ? c.t(out).shape : c.t(in).shape;   // [.., C, H*r, W*r]
  const std::size_t r = big.size();
  if (r < 3 || big[r - 2] % f != 0 || big[r - 1] % f != 0) throw Unsupported("pixel shuffle shape");
  Space s;
  std::vector<AffineExpr> lead;
  for (std::size_t d = 0; d + 3 < r; ++d) lead.push_back(ix(s.add(fmt::format("b{}", d), big[d])));
  ir::IndexPos ch = s.add("c", big[r - 3]), h = s.add("h", big[r - 2] / f), i = s.add("i", f),
               w = s.add("w", big[r - 1] / f), j = s.add("j", f);
  std::vector<AffineExpr> sbig = lead, ssmall = lead;
  sbig.insert(sbig.end(), {ix(ch), AffineExpr::make({AffineTerm{h, f}, AffineTerm{i, 1}}, 0),
                           AffineExpr::make({AffineTerm{w, f}, AffineTerm{j, 1}}, 0)});
  ssmall.insert(ssmall.end(),
                {AffineExpr::make({AffineTerm{ch, f * f}, AffineTerm{i, f}, AffineTerm{j, 1}}, 0), ix(h), ix(w)});
  if (shuffle) c.einsum({in}, out, std::move(s), {ssmall}, sbig, arg(0), Reduce::None);
  else c.einsum({in}, out, std::move(s), {sbig}, ssmall, arg(0), Reduce::None);
}

// ---------------------------------------------------------------- gradients

// slice_backward: zeros of the input's size with grad placed at start::step along dim.
void lower_slice_backward(Context& c) {
  TensorId g = c.use_arg("grad_output");
  const Shape sizes = c.ints("input_sizes");
  const std::int64_t dim = norm_dim(c.int_arg("dim", 0), sizes.size());
  const std::int64_t step = c.int_arg("step", 1), size = sizes[dim];
  std::int64_t start = c.int_arg("start", 0), end = c.int_arg("end", size);
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<std::int64_t>(start, 0, size);
  end = std::clamp<std::int64_t>(end, start, size);
  if (step < 1) throw Unsupported("slice with a non-positive step");
  const Shape gs = c.t(g).shape;
  if (gs.size() != sizes.size() || gs[dim] != (end - start + step - 1) / step)
    throw Unsupported("slice gradient does not match the slice");
  TensorId out = c.def(0);
  if (step == 1) {
    std::vector<std::int64_t> pads(2 * sizes.size(), 0);
    pads[2 * dim] = start;
    pads[2 * dim + 1] = size - end;
    return c.move(MoveKind::Pad, {g}, out, {{"pads", pads}, {"value", 0.0}});
  }
  // out[.., i, ..] = sum_q g[.., q, ..] where i == start + q*step: masked, so the points no
  // q reaches hold the sum's identity 0
  Space s;
  std::vector<AffineExpr> sg, so;
  std::vector<AffineConstraint> mask;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (static_cast<std::int64_t>(d) != dim) {
      AffineExpr a = ix(s.add(fmt::format("d{}", d), sizes[d]));
      sg.push_back(a);
      so.push_back(a);
      continue;
    }
    ir::IndexPos i = s.add("i", size), q = s.add("q", gs[d]);
    within(mask, AffineExpr::make({AffineTerm{i, 1}, AffineTerm{q, -step}}, -start), 0);
    sg.push_back(ix(q));
    so.push_back(ix(i));
  }
  c.einsum({g}, out, std::move(s), {sg}, so, arg(0), Reduce::Sum, mask);
}

// select_backward: grad viewed with the selected dim of size 1, padded to the input size.
void lower_select_backward(Context& c) {
  TensorId g = c.use_arg("grad_output");
  const Shape sizes = c.ints("input_sizes");
  const std::int64_t dim = norm_dim(c.int_arg("dim", 0), sizes.size());
  std::int64_t index = c.int_arg("index", 0);
  if (index < 0) index += sizes[dim];
  Shape one = sizes;
  one[dim] = 1;
  TensorId gv = reshaped(c, g, one, "grad_row");
  std::vector<std::int64_t> pads(2 * sizes.size(), 0);
  pads[2 * dim] = index;
  pads[2 * dim + 1] = sizes[dim] - 1 - index;
  c.move(MoveKind::Pad, {gv}, c.def(0), {{"pads", pads}, {"value", 0.0}});
}

}  // namespace

// A view (reshape, squeeze, expand...) of a strided alias: its layout by torch's rules.
void alias_view(Context& c, TensorId in, std::int64_t in_trace) {
  Context::Strided s = c.layout(in, in_trace);
  const auto is = c.t(in).shape;
  const auto os = c.tt(*c.out_id(0)).shape;
  if (numel(is) == numel(os)) {
    std::optional<std::vector<std::int64_t>> st = view_strides(is, s.strides, os);
    if (!st) {  // torch copies here (reshape of a non-viewable layout)
      TensorId copy = c.materialize(in);
      return c.move(MoveKind::View, {copy}, c.def(0));
    }
    s.strides = *st;
    c.alias_output(0, in, std::move(s));
    return;
  }
  // expand: new leading dimensions and broadcast size-1 dimensions read with stride 0
  if (os.size() < is.size()) throw Unsupported("a view that drops elements of a strided view");
  std::vector<std::int64_t> st(os.size(), 0);
  for (std::size_t d = 0; d < is.size(); ++d) {
    std::size_t od = d + os.size() - is.size();
    if (is[d] == os[od]) st[od] = s.strides[d];
    else if (is[d] != 1) throw Unsupported("a view that is neither a reshape nor a broadcast");
  }
  s.strides = st;
  c.alias_output(0, in, std::move(s));
}

void slice_into(Context& c, TensorId in, TensorId out, std::int64_t dim, std::int64_t start,
                std::int64_t end, std::int64_t step) {
  const auto& shape = c.t(in).shape;
  std::int64_t size = shape[dim];
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<std::int64_t>(start, 0, size);
  end = std::clamp<std::int64_t>(end, start, size);
  std::vector<std::int64_t> starts(shape.size(), 0), ends = shape, steps(shape.size(), 1);
  starts[dim] = start;
  ends[dim] = end;
  steps[dim] = step;
  c.move(MoveKind::Slice, {in}, out, {{"starts", starts}, {"ends", ends}, {"steps", steps}});
}

void register_shape_ops(const Register& reg) {
  // Data movement.
  for (std::string_view name :
       {"aten::view.default", "aten::_unsafe_view.default", "aten::reshape.default",
        "aten::expand.default", "aten::squeeze.dim", "aten::squeeze.dims", "aten::squeeze.default",
        "aten::unsqueeze.default", "aten::alias.default", "aten::detach.default",
        "aten::_reshape_alias.default", "aten::lift_fresh.default",
        "aten::flatten.using_ints", "aten::unflatten.int", "aten::expand_as.default",
        "aten::view_as.default", "aten::unsqueeze_.default", "aten::squeeze_.dim",
        "aten::squeeze_.default", "aten::squeeze_.dims", "aten::detach_.default"})
    reg(name, lower_view);
  reg("aten::t.default", lower_t);
  reg("aten::t_.default", lower_t);
  reg("aten::transpose.int", lower_transpose);
  reg("aten::transpose_.default", lower_transpose);
  reg("aten::permute.default", lower_permute);
  reg("aten::numpy_T.default", lower_reverse_dims);
  reg("aten::mT.default", lower_last_two_swapped);
  reg("aten::adjoint.default", lower_last_two_swapped);
  reg("aten::unfold.default", lower_unfold);
  reg("aten::diagonal.default", lower_diagonal);
  reg("aten::as_strided.default", lower_as_strided);
  reg("aten::as_strided_.default", lower_as_strided);
  reg("aten::as_strided_scatter.default", lower_as_strided_scatter);
  reg("aten::slice.Tensor", lower_slice);
  reg("aten::select.int", lower_select);
  reg("aten::split.Tensor", [](Context& c) { lower_split(c, false); });
  reg("aten::split_with_sizes.default", [](Context& c) { lower_split(c, false); });
  reg("aten::chunk.default", [](Context& c) { lower_split(c, false); });
  reg("aten::unbind.int", [](Context& c) { lower_split(c, true); });
  reg("aten::unsafe_split.Tensor", [](Context& c) { lower_split(c, false); });
  reg("aten::unsafe_split_with_sizes.default", [](Context& c) { lower_split(c, false); });
  reg("aten::unsafe_chunk.default", [](Context& c) { lower_split(c, false); });
  reg("aten::stack.default", lower_stack);
  reg("aten::clone.default", [](Context& c) { lower_copy(c, "self"); });
  reg("aten::contiguous.default", [](Context& c) { lower_copy(c, "self"); });
  reg("aten::_to_copy.default", [](Context& c) { lower_copy(c, "self"); });
  reg("aten::copy_.default", [](Context& c) { lower_copy(c, "src"); });
  reg("aten::copy.default", [](Context& c) { lower_copy(c, "src"); });
  reg("aten::repeat.default", [](Context& c) { lower_copy(c, "self"); });
  reg("aten::cat.default", lower_cat);
  reg("aten::triu.default", triangle(true));
  reg("aten::tril.default", triangle(false));
  reg("aten::triu_.default", triangle(true));
  reg("aten::tril_.default", triangle(false));
  reg("aten::flip.default", lower_flip);
  reg("aten::roll.default", lower_roll);
  reg("aten::diag_embed.default", lower_diag_embed);
  reg("aten::pixel_shuffle.default", [](Context& c) { lower_pixel_shuffle(c, true); });
  reg("aten::pixel_unshuffle.default", [](Context& c) { lower_pixel_shuffle(c, false); });
  reg("aten::slice_backward.default", lower_slice_backward);
  reg("aten::select_backward.default", lower_select_backward);
}

}  // namespace solar::lower::detail
