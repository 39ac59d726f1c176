// The attention builder: scaled dot-product attention as QK^T, scale, mask, softmax and PV
// (builders.h).
#include <vector>

#include <fmt/format.h>

#include "builders.h"
#include "solar/util/errors.h"

namespace solar::lower::detail {

AttentionDims attention_dims(const Shape& qs, const Shape& ks, const Shape& vs) {
  const std::size_t r = qs.size();
  if (r < 3 || ks.size() != r || vs.size() != r)
    throw Unsupported("attention needs [..., H, L, E] operands");
  AttentionDims a{r,         qs[r - 3], ks[r - 3], qs[r - 2], ks[r - 2],
                  qs[r - 1], vs[r - 1], 0};
  if (a.Hk < 1 || a.Hq % a.Hk != 0)
    throw Unsupported("query heads are not a multiple of key heads");
  for (std::size_t d = 0; d + 3 < r; ++d)
    if (ks[d] != qs[d] || vs[d] != qs[d]) throw Unsupported("attention batch dimensions differ");
  a.grp = a.Hq / a.Hk;
  return a;
}

std::vector<ir::AffineConstraint> causal_mask(std::size_t rank, bool causal) {
  if (!causal) return {};
  return {{AffineExpr::make({AffineTerm{static_cast<ir::IndexPos>(rank - 2), 1},
                             AffineTerm{static_cast<ir::IndexPos>(rank - 1), -1}},
                            0)}};
}

void attention(Context& c, TensorId q, TensorId k, TensorId v, const TensorAt& mask_at,
               const TensorAt& out, double scale, bool causal) {
  c.set_contraction_hint(ir::ContractionHint::Attention);  // the framework's attention kernels
  const Shape qs = c.t(q).shape;
  // (named locals, not structured bindings: lambdas below capture them, which clang 14 refuses)
  const AttentionDims a = attention_dims(qs, c.t(k).shape, c.t(v).shape);
  const std::size_t r = a.rank;
  const std::int64_t Hk = a.Hk, L = a.L, S = a.S, E = a.E, Ev = a.Ev, grp = a.grp;
  const ir::DType dt = c.t(q).dtype;
  Shape sshape(qs.begin(), qs.end() - 1);
  sshape.push_back(S);

  // One contraction builder for Q K^T and P V.
  auto contract = [&](TensorId a, TensorId b, TensorId dst, std::int64_t inner, std::int64_t last,
                      bool qk) {
    Space s;
    std::vector<AffineExpr> batch;
    for (std::size_t d = 0; d + 3 < r; ++d)
      batch.push_back(ix(s.add(fmt::format("b{}", d), qs[d])));
    // Without GQA the head is a plain index (a plain subscript is what marks a matmul).
    ir::IndexPos hk = s.add("hk", Hk);
    AffineExpr h = ix(hk);
    if (grp > 1) h = AffineExpr::make({AffineTerm{hk, grp}, AffineTerm{s.add("j", grp), 1}}, 0);
    ir::IndexPos l = s.add("l", L);
    ir::IndexPos red = s.add(qk ? "e" : "s", inner), col = s.add(qk ? "s" : "ev", last);
    std::vector<AffineExpr> sa = batch, sb = batch, so = batch;
    sa.insert(sa.end(), {h, ix(l), ix(red)});
    sb.insert(sb.end(), {ix(hk), qk ? ix(col) : ix(red), qk ? ix(red) : ix(col)});
    so.insert(so.end(), {h, ix(l), ix(col)});
    std::vector<ir::AffineConstraint> mask;
    ir::IndexPos key = qk ? col : red;
    if (causal) mask.push_back({AffineExpr::make({AffineTerm{l, 1}, AffineTerm{key, -1}}, 0)});
    c.einsum({a, b}, dst, std::move(s), {sa, sb}, so, mul(arg(0), arg(1)), Reduce::Sum, mask);
  };
  const std::vector<ir::AffineConstraint> mask = causal_mask(r, causal);
  TensorId scores = c.temp("scores", sshape, dt);
  contract(q, k, scores, E, S, true);
  TensorId scaled_scores = c.temp("scaled", sshape, dt);
  if (mask_at) {
    TensorId m = mask_at();
    Expr x = mul(arg(0), num(scale));
    Expr y = c.t(m).dtype == ir::DType::Bool ? fn(ExprOp::Select, {arg(1), x, num(-kInf)})
                                             : add(x, arg(1));
    c.elementwise({scores, m}, scaled_scores, y, mask);
  } else {
    c.elementwise({scores}, scaled_scores, mul(arg(0), num(scale)), mask);
  }
  TensorId probs = c.temp("probs", sshape, dt);
  softmax(c, scaled_scores, probs, static_cast<std::int64_t>(r - 1), Softmax::Plain, mask);
  contract(probs, v, out(), S, Ev, false);
}

}  // namespace solar::lower::detail
