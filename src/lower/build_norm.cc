// The normalization builders: softmax, log-softmax and safe softmax along one dimension
// (builders.h).
#include <limits>
#include <vector>

#include "builders.h"

namespace solar::lower::detail {

void softmax(Context& c, TensorId in, TensorId out, std::int64_t dim, Softmax kind,
             const std::vector<ir::AffineConstraint>& mask) {
  const Shape shape = c.t(in).shape;
  const ir::DType dt = c.t(out).dtype;
  Shape keep = shape;
  if (!keep.empty()) keep[dim] = 1;
  TensorId m = c.temp("max", keep, dt);
  c.reduce(in, m, {dim}, Reduce::Max, arg(0), mask);
  TensorId e = c.temp("exp", shape, dt);
  c.elementwise({in, m}, e, un(ExprOp::Exp, sub(arg(0), arg(1))), mask);
  TensorId s = c.temp("sum", keep, dt);
  c.reduce(e, s, {dim}, Reduce::Sum, arg(0), mask);
  switch (kind) {
    case Softmax::Plain:
      c.elementwise({e, s}, out, fn(ExprOp::Div, {arg(0), arg(1)}), mask);
      return;
    case Softmax::Log:
      c.elementwise({in, m, s}, out, sub(sub(arg(0), arg(1)), un(ExprOp::Log, arg(2))), mask);
      return;
    case Softmax::Safe:
      // A row of nothing but -inf has max -inf: its softmax is 0, not NaN.
      c.elementwise({e, s, m}, out,
                    fn(ExprOp::Select, {fn(ExprOp::Eq, {arg(2), num(-kInf)}), num(0),
                                        fn(ExprOp::Div, {arg(0), arg(1)})}),
                    mask);
      return;
  }
}

}  // namespace solar::lower::detail
