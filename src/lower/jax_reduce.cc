// The jax table's reductions: reduce_{sum,max,min,prod,and,or}, argmax/argmin (the op
// library's arg-reduction) and the cumulative scans (its scan builder; reverse=True between
// two reversals).
#include <vector>

#include "jax_families.h"
#include "solar/util/errors.h"

namespace solar::lower::detail::jax {

namespace {

Fn reduction(Reduce r) {
  return [=](Context& c) {
    TensorId x = in(c, 0);
    Shape axes = ints(c, "axes");
    TensorId out = c.def(0);
    if (axes.empty()) return c.move(MoveKind::View, {x}, out);  // reduces nothing
    c.reduce(x, out, axes, r);
  };
}

Fn arg_reduction(const char* what) {
  return [=](Context& c) {
    TensorId x = in(c, 0);
    Shape axes = ints(c, "axes");
    if (axes.size() != 1) throw Unsupported("arg-reduction over other than one axis");
    TensorId out = c.def(0);
    arg_reduce(c, x, out, what, norm_dim(axes[0], c.t(x).shape.size()));
  };
}

// x reversed along `axis` into out (the op library's flip).
void reverse_into(Context& c, TensorId x, TensorId out, std::int64_t axis) {
  std::vector<bool> flipped(c.t(x).shape.size(), false);
  flipped[axis] = true;
  flip(c, x, out, flipped);
}

// cumsum/cumprod/cummax/cummin along `axis`; reverse=True is the forward scan between two
// reversals.
Fn cumulative(const char* what) {
  return [=](Context& c) {
    TensorId x = in(c, 0);
    TensorId out = c.def(0);
    const std::int64_t axis = norm_dim(c.int_arg("axis", 0), c.t(x).shape.size());
    const bool reverse = c.bool_arg("reverse", false);
    TensorId src = x, dst = out;
    if (reverse) {
      src = c.temp("reversed", c.t(x).shape, c.t(x).dtype);
      reverse_into(c, x, src, axis);
      dst = c.temp("scanned", c.t(out).shape, c.t(out).dtype);
    }
    scan(c, what, src, {dst}, axis);
    if (reverse) reverse_into(c, dst, out, axis);
  };
}

}  // namespace

void register_reduction_ops(const Register& reg) {
  reg("jax::reduce_sum", reduction(Reduce::Sum));
  reg("jax::reduce_max", reduction(Reduce::Max));
  reg("jax::reduce_min", reduction(Reduce::Min));
  reg("jax::reduce_prod", reduction(Reduce::Prod));
  reg("jax::reduce_and", reduction(Reduce::All));
  reg("jax::reduce_or", reduction(Reduce::Any));
  reg("jax::argmax", arg_reduction("argmax"));
  reg("jax::argmin", arg_reduction("argmin"));
  reg("jax::cumsum", cumulative("cumsum"));
  reg("jax::cumprod", cumulative("cumprod"));
  reg("jax::cummax", cumulative("cummax"));
  reg("jax::cummin", cumulative("cummin"));
}

}  // namespace solar::lower::detail::jax
