// The elementwise builders: f of an op's operands, read the dialect's way (builders.h).
#include <utility>
#include <vector>

#include "builders.h"

namespace solar::lower::detail {

Fn pointwise(ReadTerm read, std::size_t arity,
             std::function<Expr(Context&, const std::vector<Expr>&)> f) {
  return [read = std::move(read), arity, f = std::move(f)](Context& c) {
    std::vector<TensorId> inputs;
    std::vector<Expr> terms;
    for (std::size_t k = 0; k < arity; ++k) terms.push_back(read(c, k, inputs));
    c.elementwise(inputs, c.def(0), f(c, terms));
  };
}

Fn unary(ReadTerm read, std::function<Expr(Context&, Expr)> f) {
  return pointwise(std::move(read), 1, [f = std::move(f)](Context& c, const std::vector<Expr>& x) {
    return f(c, x[0]);
  });
}

Fn unary(ReadTerm read, ExprOp op) {
  return unary(std::move(read), [op](Context&, Expr x) { return un(op, std::move(x)); });
}

}  // namespace solar::lower::detail
