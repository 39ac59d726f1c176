// The aten table's fused attention: scaled_dot_product_attention and its backend ops (flash,
// efficient, cuDNN, math) as QK^T, scale, mask, softmax and PV.
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

// SDPA (every backend's aten op): scores = Q K^T (GQA: query head hk*grp + j reads key head
// hk), scale, mask (causal: key s <= query l, top-left aligned as torch does), softmax, P V.
void lower_sdpa(Context& c) {
  c.set_contraction_hint(ir::ContractionHint::Attention);  // the framework's attention kernels
  TensorId q = c.use_arg("query"), k = c.use_arg("key"), v = c.use_arg("value");
  if (c.num_arg("dropout_p", 0) != 0) throw Unsupported("dropout inside attention");
  const auto qs = c.t(q).shape, ks = c.t(k).shape, vs = c.t(v).shape;
  const std::size_t r = qs.size();
  if (r < 3 || ks.size() != r || vs.size() != r) throw Unsupported("attention needs [..., H, L, E] operands");
  const std::int64_t Hq = qs[r - 3], Hk = ks[r - 3], L = qs[r - 2], S = ks[r - 2], E = qs[r - 1],
                     Ev = vs[r - 1];
  if (Hk < 1 || Hq % Hk != 0) throw Unsupported("query heads are not a multiple of key heads");
  const std::int64_t grp = Hq / Hk;
  const bool causal = c.bool_arg("is_causal", false);
  double scale = c.has("scale") ? c.num_arg("scale", 1) : 1 / std::sqrt(static_cast<double>(E));
  ir::DType dt = c.t(q).dtype;
  std::vector<std::int64_t> sshape(qs.begin(), qs.end() - 1);
  sshape.push_back(S);

  // One contraction builder for Q K^T and P V.
  auto contract = [&](TensorId a, TensorId b, TensorId out, std::int64_t inner, std::int64_t last,
                      bool qk) {
    Space s;
    std::vector<AffineExpr> batch;
    for (std::size_t d = 0; d + 3 < r; ++d) {
      if (ks[d] != qs[d]) throw Unsupported("attention batch dimensions differ");
      batch.push_back(ix(s.add(fmt::format("b{}", d), qs[d])));
    }
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
    c.einsum({a, b}, out, std::move(s), {sa, sb}, so, mul(arg(0), arg(1)), Reduce::Sum, mask);
  };
  // Causal mask over a [..., L, S] elementwise/reduction space: index l is r-2, s is r-1.
  std::vector<ir::AffineConstraint> mask;
  if (causal)
    mask.push_back({AffineExpr::make({AffineTerm{static_cast<ir::IndexPos>(r - 2), 1},
                                      AffineTerm{static_cast<ir::IndexPos>(r - 1), -1}}, 0)});
  TensorId scores = c.temp("scores", sshape, dt);
  contract(q, k, scores, E, S, true);
  TensorId scaled_scores = c.temp("scaled", sshape, dt);
  const char* mask_arg = c.has("attn_mask") ? "attn_mask" : c.has("attn_bias") ? "attn_bias" : nullptr;
  if (mask_arg) {
    TensorId m = c.use_arg(mask_arg);
    Expr x = mul(arg(0), num(scale));
    Expr y = c.t(m).dtype == ir::DType::Bool ? fn(ExprOp::Select, {arg(1), x, num(-kInf)})
                                             : add(x, arg(1));
    c.elementwise({scores, m}, scaled_scores, y, mask);
  } else {
    c.elementwise({scores}, scaled_scores, mul(arg(0), num(scale)), mask);
  }
  TensorId probs = c.temp("probs", sshape, dt);
  softmax_into(c, scaled_scores, probs, static_cast<std::int64_t>(r - 1), false, mask);
  contract(probs, v, c.def(0), S, Ev, false);
}

}  // namespace

void register_attention_ops(const Register& reg) {
  for (std::string_view name :
       {"aten::scaled_dot_product_attention.default",
        "aten::_scaled_dot_product_flash_attention_for_cpu.default",
        "aten::_scaled_dot_product_flash_attention.default",
        "aten::_scaled_dot_product_efficient_attention.default",
        "aten::_scaled_dot_product_cudnn_attention.default",
        "aten::_scaled_dot_product_attention_math.default"})
    reg(name, lower_sdpa);
}

}  // namespace solar::lower::detail
