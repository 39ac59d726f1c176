// The helpers the aten families share (families.h): aten's unary operand and the gradient
// helpers of the backward ops.
#include "families.h"

#include <fmt/format.h>

namespace solar::lower::detail {

ir::Expr self_tensor(Context& c, std::size_t, std::vector<TensorId>& inputs) {
  Expr x = operand(c, "self", inputs);
  if (inputs.empty()) throw Unsupported("no tensor operand");
  return x;
}

void within(std::vector<ir::AffineConstraint>& mask, const AffineExpr& e, std::int64_t hi) {
  mask.push_back({e});
  std::vector<AffineTerm> neg;
  for (const AffineTerm& t : e.terms()) neg.push_back({t.index, -t.coef});
  mask.push_back({AffineExpr::make(neg, hi - e.constant_term())});
}

void bcast(Context& c, std::vector<TensorId> ins, TensorId out, const Shape& full,
           const std::vector<bool>& red, Expr combine, Reduce r,
           std::vector<ir::AffineConstraint> mask) {
  Space s;
  std::vector<AffineExpr> pos;
  for (std::size_t d = 0; d < full.size(); ++d) {
    pos.push_back(ix(s.add(fmt::format("{}{}", red[d] ? "r" : "i", d), full[d])));
  }
  std::vector<std::vector<AffineExpr>> subs;
  for (TensorId in : ins) {
    const Shape& sh = c.t(in).shape;
    if (sh.size() > full.size())
      throw Unsupported(
          fmt::format("operand of rank {} does not broadcast to rank {}", sh.size(), full.size()));
    std::vector<AffineExpr> sub;
    for (std::size_t d = 0; d < sh.size(); ++d) {
      std::size_t fd = d + full.size() - sh.size();
      if (sh[d] == full[fd])
        sub.push_back(pos[fd]);
      else if (sh[d] == 1)
        sub.push_back(zero());
      else
        throw Unsupported(fmt::format("operand dimension {} of size {} does not broadcast to {}", d,
                                      sh[d], full[fd]));
    }
    subs.push_back(std::move(sub));
  }
  const Shape& os = c.t(out).shape;
  std::vector<AffineExpr> osub;
  const bool keep = os.size() == full.size();
  for (std::size_t d = 0; d < full.size(); ++d) {
    if (!red[d])
      osub.push_back(pos[d]);
    else if (keep)
      osub.push_back(zero());
  }
  if (osub.size() != os.size()) throw Unsupported("reduction output rank does not match");
  c.einsum(std::move(ins), out, std::move(s), std::move(subs), std::move(osub), std::move(combine),
           r, std::move(mask));
}

std::vector<bool> all_but(std::size_t rank, std::size_t keep_dim) {
  std::vector<bool> red(rank, true);
  red[keep_dim] = false;
  return red;
}

TensorId reshaped(Context& c, TensorId t, Shape shape, const char* what) {
  if (c.t(t).shape == shape) return t;
  if (numel(c.t(t).shape) != numel(shape))
    throw Unsupported(fmt::format("{} has an unexpected shape", what));
  TensorId v = c.temp(what, std::move(shape), c.t(t).dtype);
  c.move(MoveKind::View, {t}, v);
  return v;
}

TensorId zeros(Context& c, Shape shape, ir::DType dt, const char* what) {
  TensorId z = c.temp(what, std::move(shape), dt);
  c.elementwise({}, z, num(0));
  return z;
}

bool wants(Context& c, std::size_t k) { return c.out_id(k).has_value(); }

bool produced(Context& c, std::int64_t id) {
  const auto& done = c.tensor_map();
  if (static_cast<std::size_t>(id) < done.size() && done[id].valid()) return true;
  switch (c.tt(id).role) {
    case TraceRole::Input:
    case TraceRole::Parameter:
    case TraceRole::Buffer:
    case TraceRole::Constant:
      return true;
    case TraceRole::Intermediate:
    case TraceRole::Output:
      return false;
  }
  return false;
}

}  // namespace solar::lower::detail
