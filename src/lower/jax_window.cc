// The jax table's window primitives: conv_general_dilated (the op library's convolution)
// and reduce_window_{sum,max,min} (its window reduction).
#include <utility>
#include <vector>

#include "jax_families.h"
#include "solar/util/errors.h"

namespace solar::lower::detail::jax {

namespace {

// conv_general_dilated with dimension numbers, strides, padding, lhs/rhs dilation, feature
// and batch groups (builders.h's convolution).
void lower_conv(Context& c) {
  TensorId x = in(c, 0), w = in(c, 1);
  TensorId out = c.def(0);
  const std::size_t rank = c.t(x).shape.size();
  if (rank < 3 || c.t(w).shape.size() != rank || c.t(out).shape.size() != rank)
    throw Unsupported("convolution needs operands of equal rank >= 3");
  const std::size_t nd = rank - 2;
  ConvLayout layout;
  const auto& dn = c.a("dimension_numbers");
  if (dn.is_object()) {
    layout.lhs = field(dn, "lhs_spec");
    layout.rhs = field(dn, "rhs_spec");
    layout.out = field(dn, "out_spec");
  } else if (dn.is_array() && dn.size() == 3) {
    layout.lhs = int_list(dn[0], "lhs_spec");
    layout.rhs = int_list(dn[1], "rhs_spec");
    layout.out = int_list(dn[2], "out_spec");
  } else if (dn.is_null()) {
    layout = ConvLayout::identity(rank);
  } else {
    throw Unsupported("unreadable convolution dimension numbers");
  }
  if (layout.lhs.size() != rank || layout.rhs.size() != rank || layout.out.size() != rank)
    throw Unsupported("convolution dimension numbers of the wrong rank");
  Shape stride = or_ones(ints(c, "window_strides"), nd), ld = or_ones(ints(c, "lhs_dilation"), nd),
        rd = or_ones(ints(c, "rhs_dilation"), nd);
  auto pad = pad_pairs(c.a("padding"), nd);
  std::vector<WindowDim> window;
  for (std::size_t d = 0; d < nd; ++d)
    window.push_back({.stride = stride[d], .dilation = rd[d], .pad_lo = pad[d].first,
                      .input_dilation = ld[d]});
  convolution(c, x, w, out, layout, window, c.int_arg("feature_group_count", 1),
              c.int_arg("batch_group_count", 1));
}

// reduce_window_{sum,max,min} (pooling): out[p..] = REDUCE_r in[p*stride + r*dilation - lo],
// reads outside the input yield the reduction's identity. Base dilation bd (the input seen
// with bd - 1 holes between neighbours) is first made explicit: the input is spread with the
// identity in the holes (interior_pad, copies), so every window tap is counted, as for the
// padding; the window einsum then reads the dilated input.
// A dimension the window leaves alone (size 1, stride 1, no padding) is a plain index.
Fn reduce_window(Reduce r) {
  return [=](Context& c) {
    TensorId x = in(c, 0);
    TensorId out = c.def(0);
    const Shape os = c.t(out).shape;
    const std::size_t rank = c.t(x).shape.size();
    Shape win = ints(c, "window_dimensions");
    Shape stride = or_ones(ints(c, "window_strides"), rank),
          bd = or_ones(ints(c, "base_dilation"), rank),
          wd = or_ones(ints(c, "window_dilation"), rank);
    auto pad = pad_pairs(c.a("padding"), rank);
    if (win.size() != rank || os.size() != rank) throw Unsupported("window of the wrong rank");
    const double identity = r == Reduce::Max ? -kInf : r == Reduce::Min ? kInf : 0;
    for (std::size_t d = 0; d < rank; ++d) {
      if (bd[d] < 1) throw Unsupported("reduce_window with base dilation below 1");
      if (bd[d] > 1 && c.t(x).shape[d] > 1) x = interior_pad(c, x, d, bd[d] - 1, identity);
    }
    const Shape xs = c.t(x).shape;
    std::vector<std::int64_t> sizes;
    std::vector<WindowDim> window;
    for (std::size_t d = 0; d < rank; ++d) {
      const bool plain = win[d] == 1 && stride[d] == 1 && pad[d].first == 0 &&
                         pad[d].second == 0 && xs[d] == os[d];
      sizes.push_back(plain ? 0 : win[d]);
      window.push_back({.stride = stride[d], .dilation = wd[d], .pad_lo = pad[d].first});
    }
    window_reduce(c, x, out, sizes, window, r, identity);
  };
}

}  // namespace

void register_window_ops(const Register& reg) {
  reg("jax::conv_general_dilated", lower_conv);
  reg("jax::reduce_window_sum", reduce_window(Reduce::Sum));
  reg("jax::reduce_window_max", reduce_window(Reduce::Max));
  reg("jax::reduce_window_min", reduce_window(Reduce::Min));
}

}  // namespace solar::lower::detail::jax
