// The aten table's fused attention: scaled_dot_product_attention and its backend ops (flash,
// efficient, cuDNN, math) as QK^T, scale, mask, softmax and PV, and their gradients.
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

// SDPA (every backend's aten op): the attention builder (builders.h).
void lower_sdpa(Context& c) {
  TensorId q = c.use_arg("query"), k = c.use_arg("key"), v = c.use_arg("value");
  if (c.num_arg("dropout_p", 0) != 0) throw Unsupported("dropout inside attention");
  const std::int64_t E = c.t(q).shape.empty() ? 1 : c.t(q).shape.back();
  const double scale =
      c.has("scale") ? c.num_arg("scale", 1) : 1 / std::sqrt(static_cast<double>(E));
  const char* mask_arg = c.has("attn_mask")   ? "attn_mask"
                         : c.has("attn_bias") ? "attn_bias"
                                              : nullptr;
  TensorAt mask;
  if (mask_arg) mask = [&c, mask_arg] { return c.use_arg(mask_arg); };
  attention(c, q, k, v, mask, [&c] { return c.def(0); }, scale, c.bool_arg("is_causal", false));
}

// ---------------------------------------------------------------- gradients

// Scaled-dot-product attention backward (every backend's op; [..., H, L, E] operands, GQA:
// query head hk*grp + j reads key head hk). With P recomputed from Q, K (and logsumexp when
// the forward's lowering produced it):
//   dV = Pᵀ dO,  dP = dO Vᵀ,  D = rowsum(dO ∘ O),  dS = scale · P ∘ (dP − D),
//   dQ = dS K,   dK = dSᵀ Q   (and d(bias) = dS / scale for an additive mask).
// A causal mask (key s <= query l, torch's top-left alignment) masks every step, so the
// MACs are the live (l, s) pairs only.
void lower_sdpa_backward(Context& c) {
  c.set_contraction_hint(ir::ContractionHint::Attention);  // the framework's attention kernels
  const char* gname = c.has("grad_out") ? "grad_out" : "grad_out_";
  TensorId dO = c.use_arg(gname), q = c.use_arg("query"), k = c.use_arg("key"),
           v = c.use_arg("value"), o = c.use_arg("out");
  if (c.num_arg("dropout_p", 0) != 0) throw Unsupported("dropout inside attention (random mask)");
  const Shape qs = c.t(q).shape;
  // (named locals, not structured bindings: lambdas below capture them, which clang 14 refuses)
  const AttentionDims a = attention_dims(qs, c.t(k).shape, c.t(v).shape);
  const std::size_t r = a.rank;
  const std::int64_t Hk = a.Hk, L = a.L, S = a.S, E = a.E, Ev = a.Ev, grp = a.grp;
  const bool causal = c.bool_arg("is_causal", false);
  const double scale =
      c.has("scale") ? c.num_arg("scale", 1) : 1 / std::sqrt(static_cast<double>(E));
  ir::DType dt = c.t(q).dtype;
  Shape sshape(qs.begin(), qs.end() - 1);
  sshape.push_back(S);

  // Named-index contraction: each operand and the output list index names; "h" is the
  // query head hk*grp + j.
  std::map<std::string, std::int64_t> extent{{"hk", Hk}, {"j", grp}, {"l", L},
                                             {"s", S},   {"e", E},   {"ev", Ev}};
  auto contract = [&](std::vector<TensorId> ins, std::vector<std::vector<std::string>> subs_n,
                      TensorId out, std::vector<std::string> out_n, Expr combine) {
    Space s;
    std::map<std::string, ir::IndexPos> at;
    std::vector<AffineExpr> batch;
    for (std::size_t d = 0; d + 3 < r; ++d)
      batch.push_back(ix(s.add(fmt::format("b{}", d), qs[d])));
    auto sub_of = [&](const std::vector<std::string>& names) {
      std::vector<AffineExpr> sub = batch;
      for (const std::string& nm : names) {
        if (nm == "h") {
          for (const char* part : {"hk", "j"})
            if (!at.count(part)) at[part] = s.add(part, extent[part]);
          sub.push_back(AffineExpr::make({AffineTerm{at["hk"], grp}, AffineTerm{at["j"], 1}}, 0));
        } else {
          if (!at.count(nm)) at[nm] = s.add(nm, extent[nm]);
          sub.push_back(ix(at[nm]));
        }
      }
      return sub;
    };
    std::vector<std::vector<AffineExpr>> subs;
    for (const auto& names : subs_n) subs.push_back(sub_of(names));
    std::vector<AffineExpr> so = sub_of(out_n);
    std::vector<AffineConstraint> mask;
    if (causal)
      mask.push_back({AffineExpr::make({AffineTerm{at["l"], 1}, AffineTerm{at["s"], -1}}, 0)});
    c.einsum(std::move(ins), out, std::move(s), std::move(subs), std::move(so), std::move(combine),
             Reduce::Sum, mask);
  };
  // Causal mask over a [..., L, S] elementwise space.
  const std::vector<AffineConstraint> emask = causal_mask(r, causal);

  // Scores and probabilities.
  TensorId scores = c.temp("scores", sshape, dt);
  contract({q, k}, {{"h", "l", "e"}, {"hk", "s", "e"}}, scores, {"h", "l", "s"},
           mul(arg(0), arg(1)));
  const char* mask_arg = c.has("attn_mask")   ? "attn_mask"
                         : c.has("attn_bias") ? "attn_bias"
                                              : nullptr;
  std::vector<TensorId> sins{scores};
  Expr logits = mul(arg(0), num(scale));
  if (mask_arg) {
    TensorId m = c.use_arg(mask_arg);
    sins.push_back(m);
    logits =
        c.t(m).dtype == ir::DType::Bool ? sel(arg(1), logits, num(-kInf)) : add(logits, arg(1));
  }
  TensorId probs = c.temp("probs", sshape, dt);
  const std::int64_t lse_id = c.trace_id("logsumexp");
  const bool have_lse = produced(c, lse_id) && c.shape(lse_id) == Shape(qs.begin(), qs.end() - 1);
  if (have_lse) {
    Shape lshape(qs.begin(), qs.end() - 1);
    lshape.push_back(1);
    sins.push_back(reshaped(c, c.use(lse_id), lshape, "lse"));
    c.elementwise(sins, probs, un(ExprOp::Exp, sub(logits, arg(static_cast<int>(sins.size() - 1)))),
                  emask);
  } else {
    // the forward's lowering left logsumexp unproduced: recompute the softmax
    TensorId sc = c.temp("logits", sshape, dt);
    c.elementwise(sins, sc, logits, emask);
    softmax(c, sc, probs, static_cast<std::int64_t>(r - 1), Softmax::Plain, emask);
  }
  // dV = Pᵀ dO (summed over the query heads of a group)
  if (wants(c, 2))
    contract({probs, dO}, {{"h", "l", "s"}, {"h", "l", "ev"}}, c.def(2), {"hk", "s", "ev"},
             mul(arg(0), arg(1)));
  if (!wants(c, 0) && !wants(c, 1) && !wants(c, 3)) return;
  TensorId dP = c.temp("dprobs", sshape, dt);
  contract({dO, v}, {{"h", "l", "ev"}, {"hk", "s", "ev"}}, dP, {"h", "l", "s"},
           mul(arg(0), arg(1)));
  Shape dshape(qs.begin(), qs.end() - 1);
  dshape.push_back(1);
  TensorId D = c.temp("rowdot", dshape, dt);
  Shape oshape(qs.begin(), qs.end() - 1);
  oshape.push_back(Ev);
  std::vector<bool> red(r, false);
  red[r - 1] = true;
  bcast(c, {dO, o}, D, oshape, red, mul(arg(0), arg(1)), Reduce::Sum);
  TensorId dS = c.temp("dscores", sshape, dt);
  c.elementwise({probs, dP, D}, dS, mul(num(scale), mul(arg(0), sub(arg(1), arg(2)))), emask);
  if (wants(c, 0))
    contract({dS, k}, {{"h", "l", "s"}, {"hk", "s", "e"}}, c.def(0), {"h", "l", "e"},
             mul(arg(0), arg(1)));
  if (wants(c, 1))
    contract({dS, q}, {{"h", "l", "s"}, {"h", "l", "e"}}, c.def(1), {"hk", "s", "e"},
             mul(arg(0), arg(1)));
  if (wants(c, 3)) {
    TensorId out = c.def(3);
    if (c.t(out).shape != sshape) throw Unsupported("a broadcast attention-bias gradient");
    c.elementwise({dS}, out, mul(arg(0), num(1 / scale)), emask);
  }
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
  for (std::string_view name :
       {"aten::_scaled_dot_product_flash_attention_for_cpu_backward.default",
        "aten::_scaled_dot_product_flash_attention_backward.default",
        "aten::_scaled_dot_product_efficient_attention_backward.default",
        "aten::_scaled_dot_product_cudnn_attention_backward.default"})
    reg(name, lower_sdpa_backward);
}

}  // namespace solar::lower::detail
