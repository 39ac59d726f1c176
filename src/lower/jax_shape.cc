// The jax table's shape and data-movement primitives: broadcast_in_dim, reshape, squeeze,
// expand_dims, transpose, rev, slices (static and dynamic), dynamic_update_slice, concatenate,
// stack, split and pad (with interior padding).
#include <algorithm>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "jax_families.h"
#include "solar/util/errors.h"

namespace solar::lower::detail::jax {

namespace {

// broadcast_in_dim: the operand's dims land at broadcast_dimensions; a free view (first a
// reshape inserting the new size-1 dims, then a numpy broadcast).
void lower_broadcast_in_dim(Context& c) {
  TensorId out = c.def(0);
  const auto& o = operands(c);
  if (!o.empty() && !is_tensor(o[0])) {
    std::vector<TensorId> ins;
    return c.elementwise(ins, out, term(c, 0, ins));
  }
  TensorId x = in(c, 0);
  const Shape xs = c.t(x).shape, os = c.t(out).shape;
  Shape dims = ints(c, "broadcast_dimensions");
  if (dims.size() != xs.size()) throw Unsupported("broadcast_dimensions of the wrong length");
  Shape aligned(os.size(), 1);
  for (std::size_t k = 0; k < dims.size(); ++k) aligned[norm_dim(dims[k], os.size())] = xs[k];
  // Trailing dimensions (numpy's right alignment) broadcast in one view.
  bool trailing = true;
  for (std::size_t k = 0; k < dims.size(); ++k)
    trailing = trailing && dims[k] == static_cast<std::int64_t>(os.size() - xs.size() + k);
  TensorId v = x;
  if (aligned != xs && !trailing) {
    if (aligned == os) return c.move(MoveKind::View, {x}, out);
    v = c.temp("aligned", aligned, c.t(x).dtype);
    c.move(MoveKind::View, {x}, v);
  }
  c.move(MoveKind::View, {v}, out);
}

// reshape/squeeze/expand_dims: a free view; of a literal (a scalar the recorder folded), the
// constant written out.
void lower_view(Context& c) {
  const auto& o = operands(c);
  if (!o.empty() && !is_tensor(o[0])) {
    std::vector<TensorId> ins;
    TensorId out = c.def(0);
    return c.elementwise(ins, out, term(c, 0, ins));
  }
  c.move(MoveKind::View, {in(c, 0)}, c.def(0));
}

void lower_reshape(Context& c) {
  if (!c.a("dimensions").is_null()) throw Unsupported("reshape with a dimension order");
  lower_view(c);
}

void lower_transpose(Context& c) {
  c.move(MoveKind::Permute, {in(c, 0)}, c.def(0), {{"perm", ints(c, "permutation")}});
}

// rev: a copy reading in[n-1-i] along the reversed dimensions.
void lower_rev(Context& c) {
  TensorId x = in(c, 0);
  TensorId out = c.def(0);
  const Shape xs = c.t(x).shape;
  std::vector<bool> flipped(xs.size(), false);
  for (std::int64_t r : ints(c, "dimensions")) flipped[norm_dim(r, xs.size())] = true;
  flip(c, x, out, flipped);
}


void lower_slice(Context& c) {
  TensorId x = in(c, 0);
  const Shape xs = c.t(x).shape;
  Shape starts = ints(c, "start_indices"), ends = ints(c, "limit_indices"),
        steps = or_ones(ints(c, "strides"), xs.size());
  if (starts.size() != xs.size() || ends.size() != xs.size())
    throw Unsupported("slice of the wrong rank");
  slice_move(c, x, c.def(0), starts, ends, steps);
}

// The start of a dynamic slice along each dimension, clamped as XLA clamps it (the slice
// stays inside the operand); the recorder must have known every start.
Shape dynamic_starts(Context& c, std::size_t first, const Shape& xs, const Shape& sizes) {
  Shape starts;
  for (std::size_t d = 0; d < xs.size(); ++d) {
    std::optional<double> v = known(c, first + d);
    if (!v)
      throw Unsupported(fmt::format("the start of dimension {} is known only at run time "
                                    "(analyze with real inputs)", d));
    std::int64_t s = static_cast<std::int64_t>(*v);
    starts.push_back(std::clamp<std::int64_t>(s, 0, xs[d] - sizes[d]));
  }
  return starts;
}

void lower_dynamic_slice(Context& c) {
  TensorId x = in(c, 0);
  const Shape xs = c.t(x).shape;
  Shape sizes = ints(c, "slice_sizes");
  if (sizes.size() != xs.size()) throw Unsupported("slice_sizes of the wrong rank");
  Shape starts = dynamic_starts(c, 1, xs, sizes), ends;
  for (std::size_t d = 0; d < xs.size(); ++d) ends.push_back(starts[d] + sizes[d]);
  slice_move(c, x, c.def(0), starts, ends, Shape(xs.size(), 1));
}


void lower_dynamic_update_slice(Context& c) {
  TensorId x = in(c, 0), u = in(c, 1);
  const Shape xs = c.t(x).shape, us = c.t(u).shape;
  if (us.size() != xs.size()) throw Unsupported("update of another rank");
  Shape starts = dynamic_starts(c, 2, xs, us);
  TensorId out = c.def(0);
  bool whole = true;
  for (std::size_t d = 0; d < xs.size(); ++d) whole = whole && us[d] == xs[d];
  if (whole) return c.move(MoveKind::Copy, {u}, out);
  update_box(c, x, u, starts, 0, out);
}

void lower_concatenate(Context& c) {
  std::vector<TensorId> ins;
  for (std::size_t k = 0; k < n_operands(c); ++k) ins.push_back(in(c, k));
  TensorId out = c.def(0);
  if (ins.size() == 1) return c.move(MoveKind::Copy, ins, out);
  c.move(MoveKind::Concat, ins, out,
         {{"axis", norm_dim(c.int_arg("dimension", 0), c.t(out).shape.size())}});
}

// stack(operands, axis): each operand viewed with a size-1 dimension at `axis`, concatenated.
void lower_stack(Context& c) {
  TensorId out = c.def(0);
  const Shape os = c.t(out).shape;
  const std::int64_t axis = norm_dim(c.int_arg("axis", 0), os.size());
  std::vector<TensorId> rows;
  for (std::size_t k = 0; k < n_operands(c); ++k) {
    TensorId x = in(c, k);
    Shape s = c.t(x).shape;
    s.insert(s.begin() + axis, 1);
    TensorId v = c.temp("row", s, c.t(x).dtype);
    c.move(MoveKind::View, {x}, v);
    rows.push_back(v);
  }
  if (rows.size() == 1) return c.move(MoveKind::Copy, rows, out);
  c.move(MoveKind::Concat, rows, out, {{"axis", axis}});
}

void lower_split(Context& c) {
  TensorId x = in(c, 0);
  const Shape xs = c.t(x).shape;
  std::int64_t axis = norm_dim(c.int_arg("axis", 0), xs.size());
  std::int64_t at = 0;
  for (std::size_t k = 0; k < c.op().outputs.size(); ++k) {
    if (!c.out_id(k)) continue;
    TensorId o = c.def(k);
    std::int64_t len = c.t(o).shape[axis];
    Shape st(xs.size(), 0), en = xs;
    st[axis] = at, en[axis] = at + len;
    slice_move(c, x, o, st, en, Shape(xs.size(), 1));
    at += len;
  }
}


// pad(x, value) with (low, high, interior) per dimension; negative low/high crop; interior
// padding first spreads the elements (interior_pad), then the edges are padded.
void lower_pad(Context& c) {
  TensorId x = in(c, 0);
  std::optional<double> value = known(c, 1);
  if (!value) throw Unsupported("a padding value known only at run time");
  const auto& cfg = c.a("padding_config");
  const Shape xs = c.t(x).shape;
  const std::size_t r = xs.size();
  if (!cfg.is_array() || cfg.size() != r) throw Unsupported("padding_config of the wrong rank");
  Shape pads;
  TensorId cur = x;
  bool edges = false;
  for (std::size_t d = 0; d < r; ++d) {
    Shape t = int_list(cfg[d], "padding_config");
    if (t.size() != 3) throw Unsupported("padding_config entries are (low, high, interior)");
    if (t[2] < 0) throw Unsupported("negative interior padding");
    if (t[2] > 0 && xs[d] > 1) cur = interior_pad(c, cur, d, t[2], *value);
    pads.push_back(t[0]);
    pads.push_back(t[1]);
    edges = edges || t[0] != 0 || t[1] != 0;
  }
  TensorId out = c.def(0);
  if (!edges) return c.move(cur == x ? MoveKind::Copy : MoveKind::View, {cur}, out);
  c.move(MoveKind::Pad, {cur}, out, {{"pads", pads}, {"value", *value}});
}

}  // namespace

void slice_move(Context& c, TensorId x, TensorId out, Shape starts, Shape ends, Shape steps) {
  c.move(MoveKind::Slice, {x}, out, {{"starts", starts}, {"ends", ends}, {"steps", steps}});
}

// dynamic_update_slice: the operand with the update written over a box. Built as slices of
// the operand around the box and a concat per dimension the box does not cover (XLA updates
// in place; this copies the untouched part once more, which is stated in docs/jax-frontend.md).
TensorId update_box(Context& c, TensorId x, TensorId u, const Shape& starts, std::size_t d,
                    TensorId out) {
  const Shape xs = c.t(x).shape, us = c.t(u).shape;
  while (d < xs.size() && starts[d] == 0 && us[d] == xs[d]) ++d;
  if (d == xs.size()) throw Unsupported("dynamic_update_slice: no dimension left to split");
  if (!out.valid()) out = c.temp("updated", xs, c.t(x).dtype);
  std::vector<TensorId> parts;
  auto piece = [&](std::int64_t lo, std::int64_t hi) {
    Shape st(xs.size(), 0), en = xs, sh = xs;
    st[d] = lo, en[d] = hi, sh[d] = hi - lo;
    TensorId p = c.temp("part", sh, c.t(x).dtype);
    slice_move(c, x, p, st, en, Shape(xs.size(), 1));
    return p;
  };
  if (starts[d] > 0) parts.push_back(piece(0, starts[d]));
  // The middle: the operand's band along d with the rest of the box written into it.
  TensorId mid = u;
  bool more = false;
  for (std::size_t e = d + 1; e < xs.size(); ++e) more = more || starts[e] != 0 || us[e] != xs[e];
  if (more) {
    TensorId band = piece(starts[d], starts[d] + us[d]);
    mid = c.temp("band", c.t(band).shape, c.t(x).dtype);
    update_box(c, band, u, starts, d + 1, mid);
  }
  parts.push_back(mid);
  if (starts[d] + us[d] < xs[d]) parts.push_back(piece(starts[d] + us[d], xs[d]));
  if (parts.size() == 1) c.move(MoveKind::View, {parts[0]}, out);
  else c.move(MoveKind::Concat, parts, out, {{"axis", static_cast<std::int64_t>(d)}});
  return out;
}

// x with `interior` copies of `value` between neighbours along dimension d: x viewed with a
// new size-1 dimension after d, padded there to interior + 1, viewed back (n * (interior + 1)
// along d) and sliced to (n - 1) * (interior + 1) + 1: a pad and a slice (copies) between
// free views, plain moves that execute, whose bytes are those of the two copies.
TensorId interior_pad(Context& c, TensorId x, std::size_t d, std::int64_t interior, double value) {
  const Shape xs = c.t(x).shape;
  const ir::DType dt = c.t(x).dtype;
  const std::int64_t n = xs[d], step = interior + 1;
  Shape split = xs;
  split.insert(split.begin() + static_cast<std::ptrdiff_t>(d) + 1, 1);
  TensorId v = c.temp("split", split, dt);
  c.move(MoveKind::View, {x}, v);
  Shape pads(2 * split.size(), 0), padded = split;
  pads[2 * (d + 1) + 1] = interior;
  padded[d + 1] = step;
  TensorId p = c.temp("spread", padded, dt);
  c.move(MoveKind::Pad, {v}, p, {{"pads", pads}, {"value", value}});
  Shape flat = xs;
  flat[d] = n * step;
  TensorId f = c.temp("interleaved", flat, dt);
  c.move(MoveKind::View, {p}, f);
  Shape dilated = xs, starts(xs.size(), 0), ends = flat;
  dilated[d] = ends[d] = (n - 1) * step + 1;
  TensorId out = c.temp("dilated", dilated, dt);
  slice_move(c, f, out, starts, ends, Shape(xs.size(), 1));
  return out;
}

void register_shape_ops(const Register& reg) {
  reg("jax::broadcast_in_dim", lower_broadcast_in_dim);
  reg("jax::reshape", lower_reshape);
  reg("jax::squeeze", lower_view);
  reg("jax::expand_dims", lower_view);
  reg("jax::transpose", lower_transpose);
  reg("jax::rev", lower_rev);
  reg("jax::slice", lower_slice);
  reg("jax::dynamic_slice", lower_dynamic_slice);
  reg("jax::dynamic_update_slice", lower_dynamic_update_slice);
  reg("jax::concatenate", lower_concatenate);
  reg("jax::stack", lower_stack);
  reg("jax::split", lower_split);
  reg("jax::pad", lower_pad);
}

}  // namespace solar::lower::detail::jax
