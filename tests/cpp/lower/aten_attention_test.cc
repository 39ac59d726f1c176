// Tests of the aten table's fused attention (src/lower/aten_attention.cc): its gradient, lowered from hand-written traces; work is checked
// by formula.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lower/lowering_checks.h"

namespace solar::lower {
namespace {

using namespace testing;  // lowering_checks.h
using Trace = TraceBuilder;

// Without a produced logsumexp (the forward's lowering defines only the attention output),
// the probabilities are a full softmax of the recomputed scores.
TEST(AtenAttention, AttentionBackwardRecomputesSoftmaxWithoutLogsumexp) {
  Trace t;
  int q = t.tensor({1, 2, 4, 8}, "input"), lse = t.tensor({1, 2, 4}),
      gq = t.tensor({1, 2, 4, 8}, "output");
  t.op("aten::_scaled_dot_product_flash_attention_for_cpu_backward.default",
       {{"grad_out", T(q)},
        {"query", T(q)},
        {"key", T(q)},
        {"value", T(q)},
        {"out", T(q)},
        {"logsumexp", T(lse)},
        {"dropout_p", 0.0},
        {"is_causal", false}},
       {gq, nullptr, nullptr});
  LowerResult r = lower_ok(t);
  int maxes = 0;
  for (const ir::Op& op : r.graph.ops())
    maxes += op.kind() == ir::OpKind::Einsum && op.einsum().reduce == ir::Reduce::Max;
  EXPECT_EQ(maxes, 1);  // the softmax's row max
}

// Causal attention backward: QKᵀ (recomputed), dV, dP, dQ, dK are contractions over the
// live (l, s) pairs, L(L+1)/2 per head; with GQA, dK and dV sum the group's query heads.
TEST(AtenAttention, CausalGqaAttentionBackwardCountsLivePairs) {
  const std::int64_t B = 2, Hq = 4, Hk = 2, L = 6, E = 8;
  Trace t;
  int q = t.tensor({B, Hq, L, E}, "input"), k = t.tensor({B, Hk, L, E}, "input"),
      v = t.tensor({B, Hk, L, E}, "input"), o = t.tensor({B, Hq, L, E}, "input"),
      go = t.tensor({B, Hq, L, E}, "input"), lse = t.tensor({B, Hq, L}, "input");
  int gq = t.tensor({B, Hq, L, E}, "output"), gk = t.tensor({B, Hk, L, E}, "output"),
      gv = t.tensor({B, Hk, L, E}, "output");
  t.op("aten::_scaled_dot_product_flash_attention_for_cpu_backward.default",
       {{"grad_out", T(go)},
        {"query", T(q)},
        {"key", T(k)},
        {"value", T(v)},
        {"out", T(o)},
        {"logsumexp", T(lse)},
        {"dropout_p", 0.0},
        {"is_causal", true},
        {"attn_mask", nullptr},
        {"scale", nullptr}},
       {gq, gk, gv});
  LowerResult r = lower_ok(t);
  const std::int64_t pairs = L * (L + 1) / 2;
  // every query head does each of the five products once, plus D = rowsum(dO ∘ O), a dot
  // product per query row
  EXPECT_EQ(macs(r.graph), 5 * B * Hq * pairs * E + B * Hq * L * E);
  EXPECT_EQ(producer(r.graph, gk, r).einsum().reduced_indices().size(), 2u);  // j and l
}

// The CUDA memory-efficient kernel's backward: an additive bias, its gradient dS / scale,
// and a logsumexp padded to a multiple of 32 rows (not [.., L]: the softmax is recomputed).
TEST(AtenAttention, EfficientAttentionBackwardGivesTheBiasGradient) {
  const std::int64_t B = 1, H = 2, L = 5, E = 4;
  Trace t;
  int q = t.tensor({B, H, L, E}, "input"), bias = t.tensor({B, H, L, L}, "input"),
      lse = t.tensor({B, H, 32}, "input"), seed = t.tensor({}, "input", "int64");
  int gq = t.tensor({B, H, L, E}, "output"), gk = t.tensor({B, H, L, E}, "output"),
      gv = t.tensor({B, H, L, E}, "output"), gb = t.tensor({B, H, L, L}, "output");
  t.op("aten::_scaled_dot_product_efficient_attention_backward.default",
       {{"grad_out_", T(q)},
        {"query", T(q)},
        {"key", T(q)},
        {"value", T(q)},
        {"attn_bias", T(bias)},
        {"out", T(q)},
        {"logsumexp", T(lse)},
        {"philox_seed", T(seed)},
        {"philox_offset", T(seed)},
        {"dropout_p", 0.0},
        {"grad_input_mask", {true, true, true, true}},
        {"is_causal", false},
        {"scale", 0.5}},
       {gq, gk, gv, gb});
  LowerResult r = lower_ok(t);
  const ir::EinsumOp& db = producer(r.graph, gb, r).einsum();
  EXPECT_EQ(db.reduce, ir::Reduce::None);
  EXPECT_EQ(db.combine.children()[1].value(), 2.0);  // 1 / scale
  EXPECT_EQ(macs(r.graph), 5 * B * H * L * L * E + B * H * L * E);
}

TEST(AtenAttention, AttentionBackwardWithDropoutIsUnanalyzed) {
  Trace t;
  int q = t.tensor({1, 1, 4, 8}, "input"), o = t.tensor({1, 1, 4, 8}, "output");
  t.op("aten::_scaled_dot_product_flash_attention_for_cpu_backward.default",
       {{"grad_out", T(q)},
        {"query", T(q)},
        {"key", T(q)},
        {"value", T(q)},
        {"out", T(q)},
        {"logsumexp", T(q)},
        {"dropout_p", 0.1},
        {"is_causal", false}},
       {o, nullptr, nullptr});
  LowerResult r = lower_aten(t.build());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("dropout inside attention"), std::string::npos);
}

}  // namespace
}  // namespace solar::lower
