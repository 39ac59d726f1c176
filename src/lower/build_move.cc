// The data-movement builders: flips (builders.h).
#include <vector>

#include <fmt/format.h>

#include "builders.h"

namespace solar::lower::detail {

void flip(Context& c, TensorId in, TensorId out, const std::vector<bool>& flipped) {
  const Shape shape = c.t(in).shape;
  Space s;
  std::vector<AffineExpr> si, so;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    ir::IndexPos i = s.add(fmt::format("i{}", d), shape[d]);
    so.push_back(ix(i));
    si.push_back(d < flipped.size() && flipped[d]
                     ? AffineExpr::make({AffineTerm{i, -1}}, shape[d] - 1)
                     : ix(i));
  }
  c.einsum({in}, out, std::move(s), {si}, so, arg(0), Reduce::None);
}

}  // namespace solar::lower::detail
